/**
 * The pure parts of observability and operations: the audit record and call outcomes, readiness,
 * the shutdown plan, the command line, the variable list (and that the configuration reference documents every
 * variable), secret masking, the OTel settings derived from OTEL_*, trace-context parsing, error
 * descriptions, and the decision-log chain.
 */
import { auditRecord, callOutcome, reasonCodes, type CallFacts } from '../../../src/observe/audit';
import { Health, readiness, type HealthChange } from '../../../src/admin/health';
import { shutdownPlan } from '../../../src/main';
import { parseArgs, effectiveConfiguration } from '../../../src/cli/cli';
import { parseBasicArgs } from '../../../src/core/command-line';
import { configFrom, describeVariables, isSecretVariable, keyValues, maskValue } from '../../../src/config/config';
import { callerTrace, NOOP_TRACER } from '../../../src/observe/tracing';
import { describeError } from '../../../src/aos/guardian';
import { verifyDecisionLog } from '../../../src/observe/decision-log';
import { Metrics } from '../../../src/admin/metrics';
import { allDocs, codeSpans, doc, sourceText, tableRows } from '../../helpers/readme';

const facts = (over: Partial<CallFacts> = {}): CallFacts => ({
  method: 'message/send',
  wireMethod: 'SendMessage',
  binding: 'jsonrpc',
  role: 'server',
  decision: 'allow',
  hooks: [{ side: 'server', phase: 'request', decision: 'allow', envelopeId: 'e-1', guardianMs: 1.234, reasonCode: ['OK'], message: 'Fine.' }],
  peer: { name: 'caller', url: 'https://caller.example', version: '1', verified: false },
  remoteAddress: '10.0.0.7',
  traceId: 'a'.repeat(32),
  spanId: 'b'.repeat(16),
  a2aId: 7,
  upstreamStatus: 200,
  forwarded: true,
  upstreamMs: 3,
  totalMs: 5,
  finished: true,
  events: 0,
  error: undefined,
  ...over,
});

describe('call outcome and audit record', () => {
  test.each<[string, Partial<CallFacts>, string]>([
    ['allowed and answered', {}, 'forwarded'],
    ['modified and answered', { decision: 'modify' }, 'forwarded'],
    ['denied (request or response)', { decision: 'deny' }, 'denied'],
    ['fail-closed', { decision: 'failClosed' }, 'guardian_unavailable'],
    ['agent failed', { error: 'ECONNREFUSED' }, 'upstream_error'],
    ['caller left before the answer ended', { finished: false }, 'cancelled'],
    ['caller left during the hooks', { forwarded: false, finished: false }, 'cancelled'],
    [
      'passed unchecked (fail-open)',
      {
        decision: 'failOpen',
        hooks: [{ side: 'server', phase: 'request', decision: 'failOpen', envelopeId: 'e', guardianMs: 1, failure: 'timeout', detail: 'x' }],
      },
      'forwarded_unchecked',
    ],
    [
      'shadow without an answer',
      {
        decision: 'shadow',
        hooks: [{ side: 'server', phase: 'request', decision: 'shadow', envelopeId: 'e', guardianMs: 1, failure: 'http', detail: 'HTTP 500' }],
      },
      'forwarded_unchecked',
    ],
    [
      'shadow with an answer',
      { decision: 'shadow', hooks: [{ side: 'server', phase: 'request', decision: 'shadow', envelopeId: 'e', guardianMs: 1 }] },
      'forwarded',
    ],
    ['pipeline override', { outcome: 'answer_refused' }, 'answer_refused'],
    [
      'response denied after an allowed request',
      {
        hooks: [
          { side: 'server', phase: 'request', decision: 'allow', envelopeId: 'e1', guardianMs: 1 },
          { side: 'server', phase: 'response', decision: 'deny', envelopeId: 'e2', guardianMs: 1, reasonCode: ['LEAK'] },
        ],
      },
      'denied',
    ],
    [
      'response without a valid answer (fail-closed)',
      {
        hooks: [
          { side: 'server', phase: 'request', decision: 'allow', envelopeId: 'e1', guardianMs: 1 },
          { side: 'server', phase: 'response', decision: 'failClosed', envelopeId: 'e2', guardianMs: 1, failure: 'timeout', detail: 'x' },
        ],
      },
      'guardian_unavailable',
    ],
  ])('%s', (_n, over, outcome) => {
    expect(callOutcome(facts(over))).toBe(outcome);
  });

  test('a clean call: info, flat fields, no per-hook list', () => {
    const r = auditRecord(facts());
    expect(r.level).toBe('info');
    expect(r.fields).toEqual({
      method: 'message/send',
      wireMethod: 'SendMessage',
      binding: 'jsonrpc',
      role: 'server',
      outcome: 'forwarded',
      decision: 'allow',
      reasonCode: ['OK'],
      guardianMessage: 'Fine.',
      peer: { name: 'caller', url: 'https://caller.example', version: '1', verified: false },
      remoteAddress: '10.0.0.7',
      traceId: 'a'.repeat(32),
      spanId: 'b'.repeat(16),
      guardianMs: 1.23,
      upstreamStatus: 200,
      upstreamMs: 3,
      totalMs: 5,
      a2aId: 7,
      envelopeId: 'e-1',
    });
  });

  test("two hooks: the deciding hook's message, every reason code once, the per-hook list; a failure makes it a warn", () => {
    const r = auditRecord(
      facts({
        role: 'both',
        decision: 'deny',
        hooks: [
          { side: 'client', phase: 'request', decision: 'allow', envelopeId: 'e-1', guardianMs: 1, reasonCode: ['OK', 'X'], message: 'Fine.' },
          { side: 'server', phase: 'request', decision: 'deny', envelopeId: 'e-2', guardianMs: 2, reasonCode: ['X', 'NO'], message: 'No.' },
        ],
      }),
    );
    expect(r).toMatchObject({ level: 'info', outcome: 'denied', reasonCodes: ['OK', 'X', 'NO'] });
    expect(r.fields).toMatchObject({
      guardianMessage: 'No.',
      envelopeId: 'e-1',
      hooks: [
        { side: 'client', decision: 'allow' },
        { side: 'server', decision: 'deny', reasonCode: ['X', 'NO'] },
      ],
    });
    const failed = auditRecord(
      facts({
        decision: 'failClosed',
        hooks: [
          {
            side: 'server',
            phase: 'request',
            decision: 'failClosed',
            envelopeId: 'e',
            guardianMs: 5000,
            failure: 'timeout',
            detail: 'no guardian answer within 5000 ms',
          },
        ],
      }),
    );
    expect(failed.level).toBe('warn');
    expect(failed.fields).toMatchObject({
      failure: 'timeout',
      failureDetail: 'no guardian answer within 5000 ms',
      hooks: [{ failure: 'timeout', detail: 'no guardian answer within 5000 ms' }],
    });
    // A caller going away is not a guardian failure.
    expect(
      auditRecord(
        facts({
          finished: false,
          hooks: [
            { side: 'server', phase: 'request', decision: 'failClosed', envelopeId: 'e', guardianMs: 1, failure: 'cancelled', detail: 'caller went away' },
          ],
        }),
      ).level,
    ).toBe('info');
    expect(reasonCodes([])).toEqual([]);
  });
});

describe('readiness', () => {
  const settings = (guardian: boolean, upstream: boolean) => ({ requires: { guardian, upstream }, failMode: 'closed' as const });
  const base = { listening: true, draining: false, guardianUp: false, guardianAnswered: true, upstreamUp: false, breaker: 'open' as const };
  test('ready = listening, not draining, the guardian answered since start; dependencies only when required', () => {
    expect(readiness({ ...base, guardianAnswered: false }, settings(false, false)).ready).toBe(false);
    expect(readiness(base, settings(false, false)).ready).toBe(true);
    expect(readiness({ ...base, draining: true }, settings(false, false)).ready).toBe(false);
    expect(readiness({ ...base, listening: false }, settings(false, false)).ready).toBe(false);
    expect(readiness(base, settings(true, false)).ready).toBe(false);
    expect(readiness({ ...base, guardianUp: true }, settings(true, false)).ready).toBe(true);
    expect(readiness({ ...base, guardianUp: true }, settings(true, true)).ready).toBe(false);
    expect(readiness({ ...base, guardianUp: undefined }, settings(true, false)).ready).toBe(false);
    expect(readiness(base, settings(false, true)).guardian).toEqual({
      up: false,
      required: false,
      checkedAt: undefined,
      answered: true,
      breaker: 'open',
      failMode: 'closed',
    });
  });

  test("GRPC_PORT: the agent is up only when its card and its gRPC endpoint both answer; the gRPC probe runs after the card's", async () => {
    const card = true;
    let grpc = true;
    const order: string[] = [];
    const changes: HealthChange[] = [];
    const health = new Health(
      {
        pingGuardian: async () => true,
        probeUpstream: async () => (order.push('card'), card),
        probeGrpcUpstream: async (ms) => (order.push(`grpc ${ms}`), grpc),
        listening: () => true,
        draining: () => false,
        breaker: () => 'closed',
      },
      { ...settings(false, true), pingTimeoutMs: 500 },
      new Metrics(),
      (c) => changes.push(c),
    );
    expect(health.current().upstream).toEqual({ up: undefined, required: true, checkedAt: undefined, card: undefined, grpc: undefined });
    expect((await health.check()).upstream).toMatchObject({ up: true, card: true, grpc: true });
    expect(order).toEqual(['card', 'grpc 500']);
    grpc = false;
    const down = await health.check();
    expect(down.ready).toBe(false);
    expect(down.upstream).toMatchObject({ up: false, card: true, grpc: false });
    expect(changes).toEqual([
      { what: 'guardian', up: true },
      { what: 'upstream', up: true, parts: { card: true, grpc: true } },
      { what: 'upstream', up: false, parts: { card: true, grpc: false } },
    ]);
    // Without GRPC_PORT the body is as before: no card/grpc parts.
    const plain = new Health(
      { pingGuardian: async () => true, probeUpstream: async () => true, listening: () => true, draining: () => false, breaker: () => 'closed' },
      settings(false, true),
      new Metrics(),
    );
    expect((await plain.check()).upstream).toEqual({ up: true, required: true, checkedAt: expect.any(String) });
  });

  test("/readyz calls made while a probe runs share it (the admin port cannot multiply the guardian's pings); the next call probes again", async () => {
    let pings = 0;
    let release: () => void = () => undefined;
    const health = new Health(
      {
        pingGuardian: () => (pings++, new Promise<boolean>((r) => (release = () => r(true)))),
        probeUpstream: async () => true,
        listening: () => true,
        draining: () => false,
        breaker: () => 'closed',
      },
      settings(false, true),
      new Metrics(),
    );
    const many = Array.from({ length: 50 }, () => health.check());
    release();
    const answers = await Promise.all(many);
    expect(pings).toBe(1);
    expect(answers.every((a) => a.guardian.up === true)).toBe(true);
    const again = health.check();
    release();
    await again;
    expect(pings).toBe(2);
  });
});

describe('shutdown plan', () => {
  const c = { shutdownDelayMs: 5000, drainTimeoutMs: 10_000, terminationGraceMs: undefined };
  test('SIGTERM waits SHUTDOWN_DELAY_MS, SIGINT does not; the grace period bounds both', () => {
    expect(shutdownPlan(c, 'SIGTERM')).toEqual({ delayMs: 5000, drainMs: 10_000 });
    expect(shutdownPlan(c, 'SIGINT')).toEqual({ delayMs: 0, drainMs: 10_000 });
    expect(shutdownPlan({ ...c, terminationGraceMs: 30_000 }, 'SIGTERM')).toEqual({ delayMs: 5000, drainMs: 24_000 });
    expect(shutdownPlan({ ...c, terminationGraceMs: 30_000 }, 'SIGINT')).toEqual({ delayMs: 0, drainMs: 29_000 });
    expect(shutdownPlan({ ...c, terminationGraceMs: 3000 }, 'SIGTERM')).toEqual({ delayMs: 2000, drainMs: 0 });
  });
});

describe('command line', () => {
  test('flags', () => {
    expect(parseArgs([])).toEqual({ kind: 'run' });
    expect(parseArgs(['--help'])).toEqual({ kind: 'help' });
    expect(parseArgs(['-h'])).toEqual({ kind: 'help' });
    expect(parseArgs(['--version'])).toEqual({ kind: 'version' });
    expect(parseArgs(['--check'])).toEqual({ kind: 'check' });
    expect(parseArgs(['--verify-log', 'd.log'])).toEqual({ kind: 'verifyLog', file: 'd.log' });
    expect(parseArgs(['--verify-log', 'd.log', '--head', `3:${'e'.repeat(64)}`])).toEqual({
      kind: 'verifyLog',
      file: 'd.log',
      head: { seq: 3, hash: 'e'.repeat(64) },
    });
    expect(parseArgs(['--verify-log', 'd.log', '--head', '3:e'])).toMatchObject({ kind: 'error' });
    expect(parseArgs(['--verify-log'])).toMatchObject({ kind: 'error' });
    // The guardian's command line has the shared flags only.
    expect(parseBasicArgs(['--verify-log', 'd.log'])).toMatchObject({ kind: 'error' });
    expect(parseBasicArgs(['--config', 'f.yaml'])).toMatchObject({ kind: 'error' });
    expect(parseBasicArgs(['--check'])).toEqual({ kind: 'check' });
    expect(parseArgs(['--check', 'extra'])).toMatchObject({ kind: 'error', message: expect.stringContaining('takes no arguments') });
    expect(parseArgs(['start'])).toMatchObject({ kind: 'error', message: expect.stringContaining('unknown argument: start') });
  });

  test('every variable has a meaning and a row in the configuration reference, with the same default; it names no other', () => {
    const text = doc('docs/reference/configuration.md');
    // First column: `NAME`, or `OBSERVED_AGENT_NAME`, `_ID`, ... (short for OBSERVED_AGENT_ID, ...).
    const rows = new Map<string, string[]>();
    for (const row of tableRows(text, '| variable | default | meaning |')) {
      let stem = '';
      for (const name of codeSpans(row[0] as string)) {
        if (!name.startsWith('_')) stem = name.slice(0, name.lastIndexOf('_') + 1);
        rows.set(name.startsWith('_') ? `${stem.slice(0, -1)}${name}` : name, row);
      }
    }
    const vars = describeVariables();
    for (const v of vars) {
      expect(v.description.length).toBeGreaterThan(5);
      const row = rows.get(v.name);
      expect([v.name, row !== undefined]).toEqual([v.name, true]);
      // A concrete default is written as code in the default cell ('unset' and 'required' are worded there).
      if (row !== undefined && !['unset', 'required', ''].includes(v.default))
        expect([v.name, codeSpans(row[1] as string)]).toEqual([v.name, expect.arrayContaining([v.default])]);
    }
    const names = new Set(vars.map((v) => v.name));
    for (const name of rows.keys()) expect([name, names.has(name)]).toEqual([name, true]);
    expect(rows.size).toBe(vars.length);
    expect(vars.find((v) => v.name === 'PORT')).toEqual({ name: 'PORT', description: 'port the proxy listens on', default: '8080', secret: false });
    expect(vars.find((v) => v.name === 'UPSTREAM_URL')?.default).toBe('required');
    expect(vars.find((v) => v.name === 'GUARDIAN_URL')?.default).toBe('unset');
    expect(vars.find((v) => v.name === 'GUARDIAN_TOKEN')?.secret).toBe(true);
    // A parsed default is shown as the text that gives it (--help and --check print it).
    expect(vars.find((v) => v.name === 'OIDC_CLAIMS')?.default).toBe('id=sub,name=azp|client_id|sub');
    for (const v of vars) expect([v.name, v.default]).not.toEqual([v.name, expect.stringContaining('[object')]);
  });

  test('the metrics reference names every a2a_guard_ metric with its type and labels, and no other', () => {
    const rows = new Map(
      tableRows(doc('docs/reference/metrics.md'), '| name | type | labels | meaning |').map((r) => [codeSpans(r[0] as string)[0] as string, r]),
    );
    const metrics = new Metrics().registry.getMetricsAsArray().filter((m) => m.name.startsWith('a2a_guard_'));
    expect(metrics.length).toBeGreaterThan(15);
    for (const m of metrics) {
      const row = rows.get(m.name);
      expect([m.name, row?.[1]]).toEqual([m.name, m.type]);
      // prom-client's own metrics declare their labels; the hand-made collectors show theirs in the exposition.
      const declared = (m as unknown as { labelNames?: readonly string[] }).labelNames;
      if (declared !== undefined) expect([m.name, codeSpans(row?.[2] ?? '')]).toEqual([m.name, [...declared]]);
    }
    // Every name the documentation gives is registered somewhere in src/ (a few, like the identity counter, outside Metrics).
    const source = sourceText();
    for (const name of new Set([...allDocs().matchAll(/a2a_guard_[a-z_]+/g)].map((m) => m[0]))) {
      expect([name, source.includes(`'${name}'`)]).toEqual([name, true]);
    }
    for (const name of new Set([...source.matchAll(/'(a2a_guard_[a-z_]+)'/g)].map((m) => m[1] as string))) expect([name, rows.has(name)]).toEqual([name, true]);
  });

  test('effective configuration: given values, defaults marked, secrets masked', () => {
    const lines = effectiveConfiguration({ UPSTREAM_URL: 'http://a:1', GUARDIAN_TOKEN: 't0k3n', PORT: '' });
    expect(lines).toContain('UPSTREAM_URL=http://a:1');
    expect(lines).toContain('GUARDIAN_TOKEN=***');
    expect(lines).toContain('PORT=8080  # default');
    expect(lines).toContain('GUARDIAN_URL=  # unset');
    expect(lines.join('\n')).not.toContain('t0k3n');
  });
});

describe('secrets and OTel settings', () => {
  test('masking', () => {
    for (const n of ['GUARDIAN_TOKEN', 'OTEL_EXPORTER_OTLP_HEADERS', 'SIDECAR_SIGNING_KEY', 'CLIENT_SECRET', 'TLS_KEY_PASSPHRASE'])
      expect(isSecretVariable(n)).toBe(true);
    for (const n of ['PORT', 'GUARDIAN_URL', 'POLICY_FILE', 'OTEL_SERVICE_NAME']) expect(isSecretVariable(n)).toBe(false);
    expect(maskValue('GUARDIAN_URL', 'https://u:p4ss@g.example/x')).toBe('https://u:***@g.example/x');
    expect(maskValue('GUARDIAN_URL', 'https://g.example/x')).toBe('https://g.example/x');
    expect(keyValues('a=1, b = x%20y ,bad,=v,c=')).toEqual({ a: '1', b: 'x y', c: '' });
  });

  test('tracing is off unless an OTLP endpoint is set or OTEL_TRACES_EXPORTER=otlp; OTEL_SDK_DISABLED and none win', () => {
    const base = { UPSTREAM_URL: 'http://a:1' };
    expect(configFrom(base).otel).toBeUndefined();
    expect(configFrom({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }).otel).toEqual({
      tracesUrl: 'http://c:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      serviceName: 'a2a-guard',
      resourceAttributes: {},
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
    });
    expect(configFrom({ ...base, OTEL_TRACES_EXPORTER: 'otlp' }).otel?.tracesUrl).toBe('http://localhost:4318/v1/traces');
    expect(configFrom({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:1/x' }).otel?.tracesUrl).toBe(
      'http://t:1/x',
    );
    expect(configFrom({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).otel).toBeUndefined();
    expect(configFrom({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).otel).toBeUndefined();
    const full = configFrom({
      ...base,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=2',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=3',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs,deployment.environment=prod',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    }).otel;
    expect(full).toMatchObject({
      protocol: 'http/json',
      headers: { a: '1', b: '3' },
      serviceName: 'from-attrs',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
    });
    expect(
      configFrom({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'mine', OTEL_RESOURCE_ATTRIBUTES: 'service.name=x' }).otel
        ?.serviceName,
    ).toBe('mine');
    expect(() => configFrom({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL/);
    expect(() => configFrom({ ...base, OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    expect(configFrom({ ...base, READINESS_REQUIRES: ' upstream ' }).readinessRequires).toEqual({ guardian: false, upstream: true });
    expect(() => configFrom({ ...base, READINESS_REQUIRES: 'database' })).toThrow(/READINESS_REQUIRES/);
    expect(configFrom({ ...base, TERMINATION_GRACE_PERIOD_SECONDS: '30' }).terminationGraceMs).toBe(30_000);
  });
});

describe('trace context', () => {
  test('a valid W3C traceparent is taken, anything else ignored', () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(callerTrace({ traceparent: tp, tracestate: 'a=1' })).toEqual({
      headers: { traceparent: tp, tracestate: 'a=1' },
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
    for (const bad of [
      '',
      'garbage',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tp.toUpperCase(),
    ]) {
      expect(callerTrace({ traceparent: bad })).toBeUndefined();
    }
    const call = NOOP_TRACER.startCall(
      { traceparent: tp },
      { method: 'm', wireMethod: 'm', binding: 'jsonrpc', role: 'server', httpMethod: 'POST', path: '/', remoteAddress: undefined },
    );
    expect(call.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(call.spanId).toBeUndefined();
    expect(call.hook({ method: 'm', side: 'server', phase: 'request', envelopeId: 'e' }).headers).toEqual({ traceparent: tp, tracestate: undefined });
    expect(call.upstream('POST', new URL('http://a')).headers).toBeUndefined();
    const none = NOOP_TRACER.startCall(
      {},
      { method: 'm', wireMethod: 'm', binding: 'jsonrpc', role: 'server', httpMethod: 'POST', path: '/', remoteAddress: undefined },
    );
    expect(none.hook({ method: 'm', side: 'server', phase: 'request', envelopeId: 'e' }).headers).toBeUndefined();
  });
});

describe('error descriptions', () => {
  test('code, message and the causes behind them, each once', () => {
    const tls = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    const outer = Object.assign(new Error('fetch failed', { cause: tls }), { code: 'UND_ERR_SOCKET' });
    expect(describeError(outer)).toBe('UND_ERR_SOCKET: fetch failed <- DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate');
    expect(describeError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }))).toBe('connect ECONNREFUSED 127.0.0.1:9');
    expect(describeError('plain')).toBe('plain');
  });
});

describe('decision log chain', () => {
  test('reordered records are found', () => {
    // Built by hand the way DecisionLog writes them.
    const { createHash } = require('node:crypto') as typeof import('node:crypto');
    let prev = '0'.repeat(64);
    const lines: string[] = [];
    for (let seq = 1; seq <= 3; seq++) {
      const prefix = JSON.stringify({ seq, time: 't', prevHash: prev, outcome: 'forwarded' }).slice(0, -1);
      prev = createHash('sha256').update(prefix).digest('hex');
      lines.push(`${prefix},"hash":"${prev}"}`);
    }
    expect(verifyDecisionLog(`${lines.join('\n')}\n`)).toEqual({ ok: true, records: 3 });
    expect(verifyDecisionLog(`${lines[1]}\n${lines[0]}\n${lines[2]}\n`)).toMatchObject({ ok: false, line: 1, seq: 2 });
    expect(verifyDecisionLog(`${lines[0]}\n{"half`)).toMatchObject({ ok: false, line: 2, reason: 'not a JSON record' });
    expect(verifyDecisionLog('')).toEqual({ ok: true, records: 0 });
  });
});
