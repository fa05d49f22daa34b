/**
 * A guardian answer that names a member twice in one object is refused (JSON.parse keeps the last, a
 * guardian's parser may keep the first). Generated: any JSON value serialised by JSON.stringify (no
 * duplicates possible) is found clean, with any indentation; the same value with one member of one of
 * its objects written again, under any spelling of its name (escapes), is found out; and interpret()
 * refuses such an answer where it accepts the clean one.
 */
import fc from 'fast-check';
import { duplicateKey } from '../../../src/aos/duplicate-keys';
import { interpret } from '../../../src/aos/guardian';
import { json, objects, withDuplicate } from '../../helpers/json-duplicates';

const ID = '0b6c1d1e-4c1b-4f6e-9a51-2f0d1b1f7a11';
const RUNS = 2000;

describe('duplicateKey', () => {
  test('examples', () => {
    expect(duplicateKey('{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}')).toBeUndefined();
    expect(duplicateKey('{"d":"x","d":1}')).toBe('d');
    expect(duplicateKey('{"dec\\u0069sion":"deny","decision":"allow"}')).toBe('decision');
    expect(duplicateKey('{"a":"b\\":","\\"":1, "x" : {"\\"" : 2}}')).toBeUndefined();
    expect(duplicateKey('{"a\\\\":1,"a\\\\" \n : 2}')).toBe('a\\');
    expect(duplicateKey('["a","a",{"a":["a"]}]')).toBeUndefined();
  });

  test('any value JSON.stringify writes is clean, with any indentation', () => {
    fc.assert(
      fc.property(json.value, fc.constantFrom(undefined, 1, 2, '\t'), (v, indent) => {
        expect(duplicateKey(JSON.stringify(v, null, indent))).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  test('one member written twice, in any object, under any spelling, is found', () => {
    const withObject = json.value.filter((v) => objects(v).some((o) => Object.keys(o).length > 0));
    fc.assert(
      fc.property(withObject, fc.nat(), fc.nat(), fc.nat({ max: 255 }), (v, pick, keyPick, mask) => {
        const candidates = objects(v).filter((o) => Object.keys(o).length > 0);
        const target = candidates[pick % candidates.length] as Record<string, unknown>;
        const keys = Object.keys(target);
        const key = keys[keyPick % keys.length] as string;
        const text = withDuplicate(v, target, key, mask);
        JSON.parse(text); // still valid JSON
        expect(duplicateKey(text)).toBe(key);
      }),
      { numRuns: RUNS },
    );
  });

  test('a huge object is scanned in linear time (no quadratic name search)', () => {
    const o: Record<string, number> = {};
    for (let i = 0; i < 100_000; i++) o[`k${i}`] = i;
    const text = JSON.stringify({ result: { payload: o } });
    expect(duplicateKey(text)).toBeUndefined();
    expect(duplicateKey(`${text.slice(0, -3)},"k7":0}}}`)).toBe('k7');
  });
});

describe('interpret refuses an answer with a duplicate member', () => {
  const clean = (decision: string) => `{"jsonrpc":"2.0","id":"${ID}","result":{"decision":"${decision}","message":"m"}}`;
  test.each([
    ['decision', `{"jsonrpc":"2.0","id":"${ID}","result":{"decision":"deny","message":"m","decision":"allow"}}`],
    ['escaped decision', `{"jsonrpc":"2.0","id":"${ID}","result":{"dec\\u0069sion":"deny","message":"m","decision":"allow"}}`],
    ['result', `{"jsonrpc":"2.0","id":"${ID}","result":{"decision":"deny","message":"m"},"result":{"decision":"allow","message":"m"}}`],
    ['id', `{"jsonrpc":"2.0","id":"other","id":"${ID}","result":{"decision":"allow","message":"m"}}`],
    [
      'a member deep in a modify',
      `{"jsonrpc":"2.0","id":"${ID}","result":{"decision":"modify","message":"m","modifiedRequest":{"params":{"payload":{"a":1,"a":2}}}}}`,
    ],
  ])('%s', (_what, body) => {
    const r = interpret({ status: 200, body }, ID);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.kind).toBe('json');
      expect(r.detail).toMatch(/twice in one object/);
    }
  });

  test('the positive control: the same answers without the duplicate are accepted', () => {
    for (const d of ['allow', 'deny', 'modify']) expect(interpret({ status: 200, body: clean(d) }, ID).ok).toBe(true);
    expect(interpret({ status: 200, body: clean('allow') }, ID)).toEqual({ ok: true, result: { decision: 'allow', message: 'm' } });
  });
});
