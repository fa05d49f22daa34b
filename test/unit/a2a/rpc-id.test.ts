/**
 * The caller's id read from the top level of a body without parsing the rest (a2a/rpc-id.ts): what
 * JSON.parse reads for a whole body, and for a body cut anywhere either the id or nothing, never another.
 */
import fc from 'fast-check';
import { echoableId, ID_SCAN_BYTES, leadingId, refusalId } from '../../../src/a2a/rpc-id';

const b = (s: string): Buffer => Buffer.from(s, 'utf8');
const id: fc.Arbitrary<unknown> = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.constant(null), fc.boolean(), fc.object(), fc.array(fc.integer()));

describe('leadingId', () => {
  test('a whole JSON object: the id JSON.parse reads, whatever the members around it, spacing or escapes', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.option(id, { nil: undefined }), fc.nat(), fc.boolean(), (members, value, at, pretty) => {
        const entries: Array<[string, unknown]> = Object.entries(members).filter(([k]) => k !== 'id' && k !== '__proto__');
        if (value !== undefined) entries.splice(at % (entries.length + 1), 0, ['id', value]);
        const text = pretty ? JSON.stringify(Object.fromEntries(entries), null, 2) : JSON.stringify(Object.fromEntries(entries));
        const parsed = JSON.parse(text) as { id?: unknown };
        expect(leadingId(b(text))).toEqual(echoableId(parsed.id));
      }),
      { numRuns: 2_000 },
    );
  });

  test('a body cut anywhere: the id when it was read whole before the cut, else null', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.oneof(fc.string(), fc.integer()), fc.nat(), (members, value, cut) => {
        const text = JSON.stringify({ jsonrpc: '2.0', id: value, ...members, params: { id: 'inner', message: 'x'.repeat(50) } });
        const bytes = b(text).subarray(0, cut % (b(text).length + 1));
        const got = leadingId(bytes);
        expect(got === null || got === value).toBe(true);
      }),
      { numRuns: 2_000 },
    );
    const whole = '{"jsonrpc":"2.0","id":71,"params":{"text":"' + 'x'.repeat(100) + '"}}';
    expect(leadingId(b(whole.slice(0, whole.indexOf('71') + 1)))).toBeNull();
    expect(leadingId(b(whole.slice(0, whole.indexOf('71') + 3)))).toBe(71);
    expect(leadingId(b(whole.slice(0, 60)))).toBe(71);
  });

  test.each([
    ['duplicate ids: the last wins, as JSON.parse', '{"id":1,"x":[{"id":9}],"id":2}', 2],
    ['an escaped key', '{"\\u0069d":"a"}', 'a'],
    ['an escaped quote in a string before the id', '{"m":"a\\"}","id":3}', 3],
    ['brackets inside strings of a nested value', '{"params":{"t":"}}]]{{"},"id":4}', 4],
    ['an id only inside params', '{"params":{"id":5}}', null],
    ['an id that is an object', '{"id":{"x":1}}', null],
    ['a fractional id (echoed, as the proxy echoes it elsewhere)', '{"id":1.5}', 1.5],
    ['an id of 1e400', '{"id":1e400}', null],
    ['a byte order mark first', '\ufeff{"id":6}', null],
    ['an array', '[{"id":6}]', null],
    ['not JSON before the id', '{"a":x,"id":6}', null],
    ['a missing colon', '{"a" 1,"id":6}', null],
    ['empty', '', null],
    ['an empty object', '{}', null],
  ])('%s', (_n, text, want) => {
    expect(leadingId(b(text))).toEqual(want);
  });

  test('one pass over a deep body (no recursion)', () => {
    const deep = `{"params":${'['.repeat(200_000)}${']'.repeat(200_000)},"id":"deep"}`;
    expect(leadingId(b(deep))).toBe('deep');
  });
});

describe('refusalId: the id of a large body in bounded work', () => {
  const large = (s: string): string => s.replace('FILL', 'x'.repeat(2 * ID_SCAN_BYTES));

  test('its id first or last (as SDK clients write it, after params): the id JSON.parse reads, whatever the spacing and escapes', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.integer(), fc.double(), fc.constant(null)),
        fc.string(),
        fc.boolean(),
        fc.boolean(),
        (value, name, first, pretty) => {
          const params = { text: 'x'.repeat(2 * ID_SCAN_BYTES), [name]: `"id":${JSON.stringify(value)}}` };
          const obj = first ? { id: value, jsonrpc: '2.0', params } : { jsonrpc: '2.0', params, id: value };
          const text = pretty ? JSON.stringify(obj, null, 2) : JSON.stringify(obj);
          expect(refusalId(b(text))).toEqual(echoableId((JSON.parse(text) as { id: unknown }).id));
        },
      ),
      { numRuns: 300 },
    );
  });

  test('a last member that only looks like an id is never read as one', () => {
    // The id is elsewhere, or inside a string, a nested object, an escaped name: the first ID_SCAN_BYTES decide.
    expect(refusalId(b(large('{"id":1,"params":{"t":"FILL","id":2}}')))).toBe(1);
    expect(refusalId(b(large(String.raw`{"id":1,"t":"FILL,\"id\":2"}`)))).toBe(1);
    expect(refusalId(b(large(String.raw`{"id":1,"p":"FILL","x\"id":2}`)))).toBe(1);
    expect(refusalId(b(large(String.raw`{"id":1,"p":"FILL","id":"a\"b"}`)))).toBe('a"b');
    expect(refusalId(b(large('{"id":1,"p":["FILL",{"id":2}]}')))).toBe(1);
    expect(refusalId(b(large('{"id":1,"p":"FILL","id":[2]}')))).toBeNull();
    expect(refusalId(b(large('["FILL",{"id":2}]')))).toBeNull();
  });

  test('a large body whose id lies between two large members names none', () => {
    expect(refusalId(b(large('{"a":"FILL","id":3,"b":"FILL"}')))).toBeNull();
    expect(leadingId(b(large('{"a":"FILL","id":3,"b":"FILL"}')))).toBe(3);
  });

  test('a small body is read whole, as leadingId reads it', () => {
    expect(refusalId(b('{"a":"x","id":3,"b":"y"}'))).toBe(3);
  });
});
