import fc from 'fast-check';
import pino from 'pino';
import { Metrics } from '../../src/admin/metrics';
import { operationForMethod, type Operation } from '../../src/a2a/operations';
import { jsonRpcCodec } from '../../src/a2a/bindings/jsonrpc';
import { Cancellation } from '../../src/core/cancel';
import type { VerifiedIdentity } from '../../src/identity/types';
import * as log from '../../src/runtime/log';
import { createLogger, plainText, writeLine } from '../../src/runtime/log';
import { auditRecord, type AuditPeer, type AuditRecord, type CallFacts } from '../../src/observe/audit';
import type { ChainLink } from '../../src/observe/decision-log';
import { NOOP_TRACER } from '../../src/observe/tracing';
import { auditMembers, writeAuditLine } from '../../src/proxy/audit-line';
import { finishCall, openExchange, type HookRecord } from '../../src/proxy/call';

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
  const untimed = (ls: string[]) => ls.map((l) => l.replace(/"time":"[^"]*"/, '"time":0'));
  return [untimed(fast.lines), untimed(ref.lines)];
}

const text = fc.oneof(
  { weight: 6, arbitrary: fc.string() },
  { weight: 2, arbitrary: fc.string({ unit: 'binary' }) }, // any code point: escapes, non-ASCII
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('\ud800', '\udfff', 'a', '"', '\\', '\n', '\u2028', '\x7f') }) }, // lone surrogates and escapes
  { weight: 1, arbitrary: fc.string({ minLength: 90, maxLength: 130 }) }, // pino escapes strings over 100 characters another way
);
const value = fc.oneof(
  text,
  fc.integer(),
  fc.double(),
  fc.constantFrom(NaN, Infinity, -Infinity, -0, 0.1 + 0.2, 1e21),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.jsonValue(),
  fc.array(text),
  fc.record({ name: text, url: text, version: text, verified: fc.boolean() }),
);
const fields = fc.dictionary(
  fc.oneof({ weight: 8, arbitrary: fc.constantFrom('method', 'wireMethod', 'outcome', 'a2aId', 'peer', 'hooks', 'totalMs') }, { weight: 1, arbitrary: text }),
  value,
  { maxKeys: 12 },
);

describe('writeLine writes what pino writes', () => {
  test('generated fields and values: the same bytes (time aside)', () => {
    fc.assert(
      fc.property(fc.constantFrom('info' as const, 'warn' as const), fields, (level, f) => {
        const [fast, ref] = both(level, f, 'a2a call');
        expect(fast).toEqual(ref);
      }),
      { numRuns: 5000 },
    );
  });

  test('audit records of generated calls: the same bytes', () => {
    const hook = fc.record({
      side: fc.constantFrom('client' as const, 'server' as const),
      phase: fc.constantFrom('request' as const, 'response' as const),
      decision: fc.constantFrom('allow', 'deny', 'modify', 'failOpen', 'failClosed', 'shadow'),
      envelopeId: fc.uuid(),
      guardianMs: fc.double({ min: 0, max: 1e4, noNaN: true }),
      reasonCode: fc.option(fc.array(text), { nil: undefined }),
      message: fc.option(text, { nil: undefined }),
      failure: fc.option(fc.constantFrom('connect', 'timeout', 'schema', 'cancelled'), { nil: undefined }),
      detail: fc.option(text, { nil: undefined }),
    });
    const facts: fc.Arbitrary<CallFacts> = fc.record({
      method: fc.constantFrom('message/send', 'tasks/get'),
      wireMethod: text,
      binding: fc.constantFrom('jsonrpc', 'rest', 'grpc'),
      role: fc.constantFrom('server', 'client', 'both'),
      decision: fc.constantFrom('allow', 'deny', 'refused', 'error'),
      hooks: fc.array(hook, { maxLength: 3 }),
      peer: fc.option(fc.record({ name: text, url: text, version: text, verified: fc.boolean() }), { nil: undefined }),
      remoteAddress: fc.option(fc.constantFrom('127.0.0.1', '::1', '::ffff:10.0.0.1'), { nil: undefined }),
      traceId: fc.option(fc.stringMatching(/^[0-9a-f]{32}$/), { nil: undefined }),
      spanId: fc.option(fc.stringMatching(/^[0-9a-f]{16}$/), { nil: undefined }),
      a2aId: fc.oneof(text, fc.integer(), fc.constant(null), fc.string({ minLength: 250, maxLength: 300 })),
      upstreamStatus: fc.option(fc.integer({ min: 100, max: 599 }), { nil: null }),
      forwarded: fc.boolean(),
      upstreamMs: fc.option(fc.double({ min: 0, max: 1e5, noNaN: true }), { nil: undefined }),
      totalMs: fc.double({ min: 0, max: 1e5, noNaN: true }),
      finished: fc.boolean(),
      events: fc.nat(1000),
      error: fc.option(text, { nil: undefined }),
    });
    fc.assert(
      fc.property(facts, (f) => {
        const r = auditRecord(f);
        const [fast, ref] = both(r.level, r.fields, 'a2a call');
        expect(fast).toEqual(ref);
      }),
      { numRuns: 3000 },
    );
  });

  test('plain fields take the hand-written path (pino is not called), and the line parses back to the fields', () => {
    const out = capture();
    const logger = createLogger('info', out);
    const info = jest.spyOn(logger, 'info');
    const fields = { method: 'message/send', a2aId: 7, peer: { name: 'n', verified: false }, skipped: undefined, totalMs: 1.25 };
    writeLine(logger, 'info', fields, 'a2a call');
    expect(info).not.toHaveBeenCalled();
    expect(JSON.parse(out.lines[0] as string)).toEqual({
      level: 'info',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      service: 'a2a-guard',
      method: 'message/send',
      a2aId: 7,
      peer: { name: 'n', verified: false },
      totalMs: 1.25,
      msg: 'a2a call',
    });
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
    const any = fc.oneof(
      text,
      fc.string({ unit, maxLength: 7 }),
      fc.string({ unit, minLength: 8, maxLength: 40 }),
      fc.string({ unit: 'binary', minLength: 6, maxLength: 10 }),
    );
    fc.assert(
      fc.property(any, (s) => {
        expect([s, plainText(s)]).toEqual([s, !/[\ud800-\udfff]/.test(s) && JSON.stringify(s) === `"${s}"`]);
      }),
      { numRuns: 5000 },
    );
  });
});

describe('the audit line (writeAuditLine) writes what pino writes for its record', () => {
  const untimed = (ls: string[]) => ls.map((l) => l.replace(/"time":"[^"]*"/, '"time":0'));

  interface Run {
    readonly facts: CallFacts;
    readonly identity: VerifiedIdentity | undefined;
    readonly peerLiteral: boolean;
    readonly logLevel: string;
    readonly decisionLog: boolean;
  }

  /** writeAuditLine's line, pino's line for the fields of the record it returned, and whether writeLine or pino wrote the first. */
  function audit(run: Run): { fast: string[]; ref: string[]; generic: boolean; record: AuditRecord } {
    const fast = capture();
    const ref = capture();
    const logger = createLogger(run.logLevel, fast);
    const info = jest.spyOn(logger, 'info');
    const warn = jest.spyOn(logger, 'warn');
    const line = jest.spyOn(log, 'writeLine');
    let seq = 0;
    const decisionLog = run.decisionLog ? (): ChainLink => ({ seq: ++seq, hash: 'ab'.repeat(32) }) : undefined;
    try {
      const record = writeAuditLine({ logger, metrics: new Metrics(), decisionLog }, run.facts, run.identity, run.peerLiteral);
      createLogger(run.logLevel, ref)[record.level](record.fields, 'a2a call');
      const generic = line.mock.calls.length + info.mock.calls.length + warn.mock.calls.length > 0;
      return { fast: untimed(fast.lines), ref: untimed(ref.lines), generic, record };
    } finally {
      line.mockRestore();
    }
  }

  // A few values that repeat (the line's head is kept by them), and generated ones.
  const method = fc.oneof(fc.constantFrom('message/send', 'tasks/get', 'message/stream'), text);
  const peerValues = fc.record({
    name: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('unknown', 'Agent A', 'b') }, { weight: 1, arbitrary: text }),
    url: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('unknown', 'https://a.example/') }, { weight: 1, arbitrary: text }),
    version: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('unknown', '1.0.0') }, { weight: 1, arbitrary: text }),
    verified: fc.boolean(),
  });
  // Milliseconds: any double, two-decimal ones (rounding's own), large ones (past the digits msText writes itself).
  const ms = fc.oneof(
    fc.double({ min: 0, max: 1e5, noNaN: true }),
    fc.double(),
    fc.integer({ min: 0, max: 1e6 }).map((k) => k / 100),
    fc.double({ min: 1e6, max: 1e13, noNaN: true }),
    fc.constantFrom(0, -0, 0.005, 0.015, 1.005, 9999999.995, 10000000, -1, NaN, Infinity),
  );
  const hook = fc.record({
    side: fc.constantFrom('client' as const, 'server' as const),
    phase: fc.constantFrom('request' as const, 'response' as const),
    decision: fc.oneof(
      { weight: 4, arbitrary: fc.constant('allow') },
      { weight: 1, arbitrary: fc.constantFrom('deny', 'modify', 'failOpen', 'failClosed', 'shadow') },
    ),
    envelopeId: fc.oneof(fc.uuid(), text),
    guardianMs: ms,
    reasonCode: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.array(text, { maxLength: 2 }) }),
    message: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: text }),
    failure: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('connect', 'timeout', 'cancelled') }),
    detail: fc.option(text, { nil: undefined }),
  });
  const anyFacts: fc.Arbitrary<CallFacts> = fc.record({
    method,
    wireMethod: fc.oneof(fc.constantFrom('SendMessage', 'GetTask', 'message/send'), text),
    binding: fc.constantFrom('jsonrpc', 'rest', 'grpc'),
    role: fc.constantFrom('server', 'client', 'both'),
    decision: fc.constantFrom('allow', 'modify', 'deny', 'refused', 'error'),
    hooks: fc.oneof({ weight: 4, arbitrary: fc.array(hook, { maxLength: 1 }) }, { weight: 1, arbitrary: fc.array(hook, { minLength: 2, maxLength: 3 }) }),
    peer: fc.option(peerValues, { nil: undefined, freq: 8 }),
    remoteAddress: fc.option(fc.oneof(fc.constantFrom('127.0.0.1', '::1', '::ffff:10.0.0.1'), text), { nil: undefined, freq: 8 }),
    traceId: fc.option(fc.oneof(fc.stringMatching(/^[0-9a-f]{32}$/), text), { nil: undefined }),
    spanId: fc.option(fc.stringMatching(/^[0-9a-f]{16}$/), { nil: undefined }),
    a2aId: fc.oneof(
      text,
      fc.integer(),
      fc.double(),
      fc.constant(null),
      fc.constant(undefined),
      fc.string({ minLength: 250, maxLength: 300 }),
      fc.constant({ id: 1 }),
    ),
    upstreamStatus: fc.option(fc.integer({ min: 100, max: 599 }), { nil: null }),
    forwarded: fc.boolean(),
    upstreamMs: fc.option(ms, { nil: undefined }),
    totalMs: ms,
    finished: fc.boolean(),
    events: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(1000) }),
    error: fc.option(text, { nil: undefined, freq: 6 }),
  });
  // Calls the fast line writes unless a generated value needs escaping: at most one hook, allowed, no failure, events or error.
  const plainHook = fc.record({
    side: fc.constantFrom('client' as const, 'server' as const),
    phase: fc.constant('request' as const),
    decision: fc.constantFrom('allow', 'modify', 'shadow'),
    envelopeId: fc.oneof({ weight: 4, arbitrary: fc.uuid() }, { weight: 1, arbitrary: text }),
    guardianMs: ms,
    reasonCode: fc.oneof(
      { weight: 2, arbitrary: fc.constantFrom(undefined, []) },
      { weight: 1, arbitrary: fc.array(fc.oneof(fc.constantFrom('PII', 'POLICY_1'), text), { maxLength: 3 }) },
    ),
    message: fc.oneof({ weight: 2, arbitrary: fc.constantFrom(undefined, 'ok', 'allowed by policy') }, { weight: 1, arbitrary: text }),
    failure: fc.constantFrom(undefined, 'cancelled'),
  });
  const plainFacts: fc.Arbitrary<CallFacts> = fc.record({
    method,
    wireMethod: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('SendMessage', 'GetTask', 'message/send') }, { weight: 1, arbitrary: text }),
    binding: fc.constantFrom('jsonrpc', 'rest', 'grpc'),
    role: fc.constantFrom('server', 'client', 'both'),
    decision: fc.constantFrom('allow', 'modify'),
    hooks: fc.array(plainHook, { maxLength: 1 }),
    peer: fc.option(peerValues, { nil: undefined, freq: 8 }),
    remoteAddress: fc.option(fc.constantFrom('127.0.0.1', '::1', '::ffff:10.0.0.1', '10.1.2.3'), { nil: undefined, freq: 8 }),
    traceId: fc.option(fc.stringMatching(/^[0-9a-f]{32}$/), { nil: undefined }),
    spanId: fc.option(fc.stringMatching(/^[0-9a-f]{16}$/), { nil: undefined }),
    a2aId: fc.oneof(fc.integer(), fc.uuid(), fc.constant(null), fc.constant(undefined), fc.double(), text),
    upstreamStatus: fc.option(fc.integer({ min: 100, max: 599 }), { nil: null }),
    forwarded: fc.boolean(),
    upstreamMs: fc.option(ms, { nil: undefined }),
    totalMs: ms,
    finished: fc.boolean(),
    events: fc.constant(0),
    error: fc.constant(undefined),
  });
  const facts = fc.oneof(plainFacts, anyFacts);
  const identity: fc.Arbitrary<VerifiedIdentity | undefined> = fc.option(
    fc.record({
      source: fc.constantFrom('assertion' as const, 'mtls' as const, 'oidc' as const, 'local' as const),
      subject: fc.oneof(fc.constantFrom('spiffe://example.org/agent-a', 'agent-b'), text),
      agent: fc.record({ id: text, name: text, url: text, version: text }),
    }),
    { nil: undefined },
  );

  test('generated calls, callers, log levels and decision logs: the same bytes', () => {
    const runs = fc.record({
      facts,
      identity,
      peerLiteral: fc.boolean(),
      logLevel: fc.constantFrom('info', 'info', 'info', 'warn', 'debug', 'silent'),
      decisionLog: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    });
    let here = 0;
    fc.assert(
      fc.property(runs, (run) => {
        const { fast, ref, generic } = audit(run);
        expect(fast).toEqual(ref);
        if (!generic && fast.length > 0) here++;
      }),
      { numRuns: 4000 },
    );
    // Not vacuous: the fast line wrote many of them (judged ~15 %: 604-634 of 4,000 over 3 seeds).
    expect(here).toBeGreaterThan(4000 / 16);
  });

  test('auditMembers writes any number as pino does, rounded by auditRecord or not', () => {
    fc.assert(
      fc.property(plainFacts, ms, ms, fc.oneof(ms, fc.integer()), (f, guardianMs, totalMs, a2aId) => {
        const fields: Record<string, unknown> = { ...auditRecord(f).fields, guardianMs, totalMs };
        if (f.a2aId !== undefined) fields.a2aId = a2aId;
        const members = auditMembers(fields);
        if (members === undefined) return;
        const ref = capture();
        createLogger('info', ref).info(fields, 'a2a call');
        expect(untimed([`{"level":"info","time":0,"service":"a2a-guard"${members},"msg":"a2a call"}\n`])).toEqual(untimed(ref.lines));
      }),
      { numRuns: 3000 },
    );
  });

  const ordinary = (over: Partial<CallFacts> = {}): CallFacts => ({
    method: 'message/send',
    wireMethod: 'SendMessage',
    binding: 'jsonrpc',
    role: 'server',
    decision: 'allow',
    hooks: [{ side: 'server', phase: 'request', decision: 'allow', envelopeId: '0b9e7c1e-4c57-4d6a-9a4e-6f0f5a7f3c11', guardianMs: 0.8312 }],
    peer: { name: 'unknown', url: 'unknown', version: 'unknown', verified: false },
    remoteAddress: '127.0.0.1',
    traceId: undefined,
    spanId: undefined,
    a2aId: 1,
    upstreamStatus: 200,
    forwarded: true,
    upstreamMs: 2.0049,
    totalMs: 3.117,
    finished: true,
    events: 0,
    error: undefined,
    ...over,
  });
  const run = (facts: CallFacts, over: Partial<Run> = {}): Run => ({
    facts,
    identity: undefined,
    peerLiteral: true,
    logLevel: 'info',
    decisionLog: false,
    ...over,
  });

  test("an ordinary call is written here, not by pino, with its fields in auditRecord's order", () => {
    const verified: VerifiedIdentity = {
      source: 'mtls',
      subject: 'spiffe://example.org/a',
      agent: { id: 'a', name: 'A', url: 'https://a.example/', version: '1' },
    };
    for (const r of [
      run(ordinary()),
      run(ordinary()),
      run(ordinary({ a2aId: 'req-7', traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8) }), { identity: verified }),
      run(ordinary({ peer: undefined, upstreamMs: undefined, upstreamStatus: null })),
    ]) {
      const { fast, ref, generic } = audit(r);
      expect(fast).toEqual(ref);
      expect(generic).toBe(false);
    }
    const { fast } = audit(run(ordinary()));
    expect(Object.keys(JSON.parse(fast[0] as string) as object)).toEqual([
      'level',
      'time',
      'service',
      'method',
      'wireMethod',
      'binding',
      'role',
      'outcome',
      'decision',
      'peer',
      'remoteAddress',
      'guardianMs',
      'upstreamStatus',
      'upstreamMs',
      'totalMs',
      'a2aId',
      'envelopeId',
      'msg',
    ]);
    expect(fast[0]).toContain('"guardianMs":0.83,"upstreamStatus":200,"upstreamMs":2,"totalMs":3.12,"a2aId":1,');
  });

  test("the guardian's reason codes and message are written here too, in their place", () => {
    for (const hook of [
      { side: 'server' as const, phase: 'request' as const, decision: 'deny', envelopeId: 'e', guardianMs: 1, reasonCode: ['PII', 'SECRET'], message: 'no' },
      { side: 'server' as const, phase: 'request' as const, decision: 'allow', envelopeId: 'e', guardianMs: 1, message: 'ok' },
      { side: 'server' as const, phase: 'request' as const, decision: 'allow', envelopeId: 'e', guardianMs: 1, reasonCode: ['LOW_RISK'] },
    ]) {
      const { fast, ref, generic } = audit(run(ordinary({ hooks: [hook] })));
      expect(fast).toEqual(ref);
      expect(generic).toBe(false);
    }
    const { fast } = audit(
      run(ordinary({ hooks: [{ side: 'server', phase: 'request', decision: 'deny', envelopeId: 'e', guardianMs: 1, reasonCode: ['PII'], message: 'no' }] })),
    );
    expect(fast[0]).toContain('"decision":"deny","reasonCode":["PII"],"guardianMessage":"no","peer":{');
  });

  test('what the fast line does not write goes to writeLine: failures, several hooks, escapes, a decision log', () => {
    const escaped = { ...(ordinary().hooks[0] as HookRecord), envelopeId: 'e"1' };
    const cases: Run[] = [
      run(ordinary({ hooks: [{ side: 'server', phase: 'request', decision: 'deny', envelopeId: 'e', guardianMs: 1, reasonCode: ['P"II'], message: 'no' }] })),
      run(ordinary({ hooks: [{ side: 'server', phase: 'request', decision: 'deny', envelopeId: 'e', guardianMs: 1, message: 'line\nbreak' }] })),
      run(
        ordinary({
          hooks: [{ side: 'server', phase: 'request', decision: 'failOpen', envelopeId: 'e', guardianMs: 1, failure: 'timeout', detail: 'after 2 s' }],
        }),
      ),
      run(ordinary({ hooks: [ordinary().hooks[0] as HookRecord, { side: 'server', phase: 'response', decision: 'allow', envelopeId: 'f', guardianMs: 2 }] })),
      run(ordinary({ hooks: [escaped] })),
      run(ordinary({ wireMethod: 'Send\nMessage' })),
      run(ordinary({ error: 'upstream reset' })),
      run(ordinary(), { decisionLog: true }),
    ];
    for (const r of cases) {
      const { fast, ref, generic } = audit(r);
      expect(fast).toEqual(ref);
      expect(generic).toBe(true);
    }
    expect(audit(run(ordinary(), { decisionLog: true })).fast[0]).toMatch(/"decisionSeq":1,"decisionHash":"(ab){32}","msg"/);
  });

  test("a level that is off writes nothing; a logger createLogger did not make gets pino's line", () => {
    expect(audit(run(ordinary(), { logLevel: 'warn' }))).toMatchObject({ fast: [], ref: [] });
    expect(audit(run(ordinary({ error: 'reset' }), { logLevel: 'warn' })).fast).toHaveLength(1);
    const out = capture();
    writeAuditLine({ logger: pino({ level: 'info', base: { other: 1 } }, out), metrics: new Metrics() }, ordinary(), undefined, true);
    expect(JSON.parse(out.lines[0] as string)).toMatchObject({ other: 1, method: 'message/send', msg: 'a2a call' });
  });

  test('a kept head is used only for a peer of the same values in the same shape', () => {
    const values = { name: 'n', url: 'u', version: 'v', verified: true };
    expect(audit(run(ordinary({ peer: { ...values } }))).fast).toEqual(audit(run(ordinary({ peer: { ...values } }))).ref);
    // Another key order, or another key, with the same four values: not a literal of finishCall's shape.
    const reordered = { verified: true, version: 'v', url: 'u', name: 'n' };
    const wider = { ...values, id: 'x' } as AuditPeer;
    for (const peer of [reordered, wider]) {
      const { fast, ref } = audit(run(ordinary({ peer }), { peerLiteral: false }));
      expect(fast).toEqual(ref);
    }
    expect(audit(run(ordinary({ peer: reordered }), { peerLiteral: false })).fast[0]).toContain('"peer":{"verified":true,"version":"v","url":"u","name":"n"}');
    // Other values of one of the four: another head.
    const { fast, ref } = audit(run(ordinary({ peer: { ...values, verified: false } })));
    expect(fast).toEqual(ref);
    expect(fast[0]).toContain('"verified":false');
  });

  test("finishCall's line: the same bytes as pino writes for its record, caller after caller", () => {
    const op = operationForMethod('SendMessage') as Operation;
    const span = NOOP_TRACER.startCall(
      {},
      { method: 'message/send', wireMethod: 'SendMessage', binding: 'jsonrpc', role: 'server', httpMethod: 'POST', path: '/', remoteAddress: '::1' },
    );
    const peers = [
      { url: 'unknown', name: 'unknown', version: 'unknown' },
      { url: 'https://a.example/', name: 'A', version: '2' },
      { url: 'https://a.example/', name: 'A', version: '3' },
    ];
    const identities: Array<VerifiedIdentity | undefined> = [
      undefined,
      { source: 'oidc', subject: 'sub-1', agent: { id: 'a', name: 'A', url: 'https://a.example/', version: '2' } },
    ];
    const now = jest.spyOn(performance, 'now').mockReturnValue(10_000);
    try {
      for (let i = 0; i < 12; i++) {
        // A new peer object per call, as for verified callers.
        const callerPeer = { ...(peers[i % 3] as (typeof peers)[number]) };
        const identity = identities[i % 2];
        const ex = openExchange({
          started: 10_000 - 5 - i * 1.37,
          codec: jsonRpcCodec,
          op,
          wireMethod: 'SendMessage',
          id: i,
          shape: { v03: false, errorAsEvent: false },
          caller: new Cancellation(),
          identity,
          callerPeer,
          owner: 'o',
          key: 'o',
          span,
          remoteAddress: '::1',
        });
        ex.log.peers.server = callerPeer;
        ex.log.hooks.push({ side: 'server', phase: 'request', decision: 'allow', envelopeId: `env-${i}`, guardianMs: 0.5 + i / 7 });
        ex.log.upstreamSentAt = 10_000 - 3.3;
        ex.log.upstreamStatus = 200;
        const fast = capture();
        const logger = createLogger('info', fast);
        const info = jest.spyOn(logger, 'info');
        finishCall({ logger, metrics: new Metrics(), config: { role: 'server' }, decisionLog: undefined }, ex, true);
        expect(info).not.toHaveBeenCalled();
        // The same call's record, as a decision log is given it, written by pino.
        let seen: AuditRecord | undefined;
        finishCall(
          { logger: createLogger('silent'), metrics: new Metrics(), config: { role: 'server' }, decisionLog: (r) => ((seen = r), { seq: 1, hash: 'h' }) },
          ex,
          true,
        );
        const { decisionSeq: _seq, decisionHash: _hash, ...fields } = (seen as AuditRecord).fields;
        const ref = capture();
        createLogger('info', ref).info(fields, 'a2a call');
        expect(untimed(fast.lines)).toEqual(untimed(ref.lines));
        expect(JSON.parse(fast.lines[0] as string)).toMatchObject({ peer: { ...callerPeer, verified: identity !== undefined }, a2aId: i });
      }
    } finally {
      now.mockRestore();
    }
  });
});
