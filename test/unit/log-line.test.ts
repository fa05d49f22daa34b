import fc from 'fast-check';
import pino from 'pino';
import { createLogger, plainText, writeLine } from '../../src/log';
import { auditRecord, type CallFacts } from '../../src/observe/audit';

/** A destination that keeps what it is given. */
function capture(): { write(s: string): void; lines: string[] } {
  const lines: string[] = [];
  return { lines, write: (s: string) => void lines.push(s) };
}

/** pino's line and writeLine's for the same fields, time set equal (the clock may tick between them). */
function both(level: 'info' | 'warn', fields: Record<string, unknown>, msg: string, logLevel = 'info'): [string[], string[]] {
  const ref = capture();
  const fast = capture();
  createLogger(logLevel, ref)[level](fields, msg);
  writeLine(createLogger(logLevel, fast), level, fields, msg);
  const untimed = (ls: string[]) => ls.map((l) => l.replace(/"time":\d+/, '"time":0'));
  return [untimed(fast.lines), untimed(ref.lines)];
}

const text = fc.oneof(
  { weight: 6, arbitrary: fc.string() },
  { weight: 2, arbitrary: fc.string({ unit: 'binary' }) }, // any code point: escapes, non-ASCII
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('\ud800', '\udfff', 'a', '"', '\\', '\n', '\u2028', '\x7f') }) }, // lone surrogates and escapes
  { weight: 1, arbitrary: fc.string({ minLength: 90, maxLength: 130 }) }, // pino escapes strings over 100 characters another way
);
const value = fc.oneof(
  text, fc.integer(), fc.double(), fc.constantFrom(NaN, Infinity, -Infinity, -0, 0.1 + 0.2, 1e21), fc.boolean(), fc.constant(null), fc.constant(undefined),
  fc.jsonValue(), fc.array(text), fc.record({ name: text, url: text, version: text, verified: fc.boolean() }),
);
const fields = fc.dictionary(fc.oneof({ weight: 8, arbitrary: fc.constantFrom('method', 'wireMethod', 'outcome', 'a2aId', 'peer', 'hooks', 'totalMs') }, { weight: 1, arbitrary: text }), value, { maxKeys: 12 });

describe('writeLine writes what pino writes', () => {
  test('generated fields and values: the same bytes (time aside)', () => {
    fc.assert(fc.property(fc.constantFrom('info' as const, 'warn' as const), fields, (level, f) => {
      const [fast, ref] = both(level, f, 'a2a call');
      expect(fast).toEqual(ref);
    }), { numRuns: 5000 });
  });

  test('audit records of generated calls: the same bytes', () => {
    const hook = fc.record({
      side: fc.constantFrom('client' as const, 'server' as const), phase: fc.constantFrom('request' as const, 'response' as const),
      decision: fc.constantFrom('allow', 'deny', 'modify', 'failOpen', 'failClosed', 'shadow'), envelopeId: fc.uuid(), guardianMs: fc.double({ min: 0, max: 1e4, noNaN: true }),
      reasonCode: fc.option(fc.array(text), { nil: undefined }), message: fc.option(text, { nil: undefined }),
      failure: fc.option(fc.constantFrom('connect', 'timeout', 'schema', 'cancelled'), { nil: undefined }), detail: fc.option(text, { nil: undefined }),
    });
    const facts: fc.Arbitrary<CallFacts> = fc.record({
      method: fc.constantFrom('message/send', 'tasks/get'), wireMethod: text, binding: fc.constantFrom('jsonrpc', 'rest', 'grpc'), role: fc.constantFrom('server', 'client', 'both'),
      decision: fc.constantFrom('allow', 'deny', 'refused', 'error'), hooks: fc.array(hook, { maxLength: 3 }),
      peer: fc.option(fc.record({ name: text, url: text, version: text, verified: fc.boolean() }), { nil: undefined }),
      remoteAddress: fc.option(fc.constantFrom('127.0.0.1', '::1', '::ffff:10.0.0.1'), { nil: undefined }),
      traceId: fc.option(fc.stringMatching(/^[0-9a-f]{32}$/), { nil: undefined }), spanId: fc.option(fc.stringMatching(/^[0-9a-f]{16}$/), { nil: undefined }),
      a2aId: fc.oneof(text, fc.integer(), fc.constant(null), fc.string({ minLength: 250, maxLength: 300 })), upstreamStatus: fc.option(fc.integer({ min: 100, max: 599 }), { nil: null }),
      forwarded: fc.boolean(), upstreamMs: fc.option(fc.double({ min: 0, max: 1e5, noNaN: true }), { nil: undefined }), totalMs: fc.double({ min: 0, max: 1e5, noNaN: true }),
      finished: fc.boolean(), events: fc.nat(1000), error: fc.option(text, { nil: undefined }),
    });
    fc.assert(fc.property(facts, (f) => {
      const r = auditRecord(f);
      const [fast, ref] = both(r.level, r.fields, 'a2a call');
      expect(fast).toEqual(ref);
    }), { numRuns: 3000 });
  });

  test('plain fields take the hand-written path (pino is not called), and the line parses back to the fields', () => {
    const out = capture();
    const logger = createLogger('info', out);
    const info = jest.spyOn(logger, 'info');
    const fields = { method: 'message/send', a2aId: 7, peer: { name: 'n', verified: false }, skipped: undefined, totalMs: 1.25 };
    writeLine(logger, 'info', fields, 'a2a call');
    expect(info).not.toHaveBeenCalled();
    expect(JSON.parse(out.lines[0] as string)).toEqual({ level: 30, time: expect.any(Number), service: 'a2a-guard', method: 'message/send', a2aId: 7, peer: { name: 'n', verified: false }, totalMs: 1.25, msg: 'a2a call' });
  });

  test('a level that is off writes nothing; a warn line passes an info level', () => {
    expect(both('info', { a: 1 }, 'a2a call', 'warn')).toEqual([[], []]);
    const [fast, ref] = both('warn', { a: 1 }, 'a2a call', 'info');
    expect(fast).toEqual(ref);
    expect(fast).toHaveLength(1);
  });

  test('values pino writes its own way: a toJSON that gives undefined, an Error under "err", a request-like object, an inherited key', () => {
    const cases: Record<string, unknown>[] = [
      { a2aId: 1, id: { toJSON: () => undefined }, totalMs: 2 }, // pino leaves the field out; "id":undefined would not be JSON
      { err: new Error('boom'), method: 'm' }, // pino's error serializer: type, message, stack
      { err: { message: 'not an Error' } },
      { method: 'GET', headers: { host: 'h' }, socket: { remoteAddress: '::1' } }, // pino logs it as an HTTP request
      { setHeader: () => undefined, statusCode: 200 },
      Object.assign(Object.create({ inherited: 'x' }) as Record<string, unknown>, { own: 1 }),
    ];
    for (const fields of cases) {
      const [fast, ref] = both('info', fields, 'a2a call');
      expect([fields, fast]).toEqual([fields, ref]);
      for (const line of fast) expect(() => JSON.parse(line) as unknown).not.toThrow();
    }
  });

  test('a circular value and a logger createLogger did not make: pino writes them', () => {
    const loop: Record<string, unknown> = { a: 1 };
    loop.self = loop;
    const [fast, ref] = both('info', { loop }, 'a2a call');
    expect(fast).toEqual(ref);
    const out = capture();
    writeLine(pino({ level: 'info', base: { other: 1 } }, out), 'info', { a: 'x' }, 'a2a call');
    expect(JSON.parse(out.lines[0] as string)).toMatchObject({ other: 1, a: 'x', msg: 'a2a call' });
  });
});

describe('plainText', () => {
  test('is true exactly for text JSON.stringify writes as it is, without a surrogate (the loop under 8 characters, the regex from 8)', () => {
    const unit = fc.constantFrom('a', 'é', '"', '\\', '\n', '\x00', '\x1f', '\x7f', '\u2028', '\ud800', '\udfff', '\ud83d\ude00', '/', ' ');
    const any = fc.oneof(text, fc.string({ unit, maxLength: 7 }), fc.string({ unit, minLength: 8, maxLength: 40 }), fc.string({ unit: 'binary', minLength: 6, maxLength: 10 }));
    fc.assert(fc.property(any, (s) => {
      expect([s, plainText(s)]).toEqual([s, !/[\ud800-\udfff]/.test(s) && JSON.stringify(s) === `"${s}"`]);
    }), { numRuns: 5000 });
  });
});
