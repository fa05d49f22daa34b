/**
 * The audit trail and the metrics of real calls (README "Observability"): a2a-guard in front of a
 * real SDK agent, asking a real HTTP guardian (or the embedded reference guardian), its pino lines
 * captured. For allow, deny, modify, each kind of guardian failure (fail-closed and fail-open), a
 * refusal, an agent that is down and a guardian behind a TLS certificate the proxy does not trust:
 *   - one "a2a call" line per call with the outcome, decision, reason codes, guardian message, the
 *     peer (verified: false: a header claim), remote address, trace id, and each failing hook's kind
 *     and detail; guardian failures at warn;
 *   - a2a_guard_requests_total{operation,outcome} moves by exactly one per call, and the added,
 *     upstream and guardian latency histograms count it;
 *   - the embedded guardian logs its decisions like the standalone one;
 *   - DECISION_LOG_FILE chains every record; a changed record is found.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type pino from 'pino';
import { rawRpc, startAgent } from '../../helpers/agent';
import { deadGuardianUrl, type GuardianReply } from '../../helpers/guardian';
import { closeServer, waitFor } from '../../helpers/net';
import { sample } from '../../helpers/proxy-process';
import { useStack } from '../../helpers/proxy-harness';
import { configFrom } from '../../../src/config/config';
import { createLogger } from '../../../src/runtime/log';
import { startProxy, type ProxyInstance } from '../../../src/server';
import { embeddedGuardian } from '../../../src/guardian/embedded';
import type { Guardian } from '../../../src/aos/guardian';
import { DecisionLog, verifyDecisionLog } from '../../../src/observe/decision-log';

const stack = useStack({ name: 'Audited Agent' });
const proxies: ProxyInstance[] = [];
let tmp: string;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-audit-'));
});

afterAll(async () => {
  for (const p of proxies.splice(0)) await p.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

interface Audited {
  readonly proxy: ProxyInstance;
  readonly url: string;
  lines(): Array<Record<string, any>>;
  calls(): Array<Record<string, any>>;
  metrics(): Promise<string>;
}

/** The proxy's logger (src/runtime/log.ts, its lines' format) whose lines are kept, parsed. */
function capture(): { logger: pino.Logger; lines: Array<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, any>);
      done();
    },
  });
  return { logger: createLogger('info', sink), lines };
}

async function audited(
  env: Record<string, string> = {},
  opts: { guardian?: Guardian; decisionLog?: DecisionLog; log?: ReturnType<typeof capture> } = {},
): Promise<Audited> {
  const { logger, lines } = opts.log ?? capture();
  const config = configFrom({ PORT: '0', HOST: '127.0.0.1', UPSTREAM_URL: stack.agent.origin, GUARDIAN_URL: stack.guardian.url, ...env });
  const proxy = await startProxy({
    config,
    logger,
    ...(opts.guardian === undefined ? {} : { guardian: opts.guardian }),
    ...(opts.decisionLog === undefined ? {} : { decisionLog: (r) => (opts.decisionLog as DecisionLog).append(r.fields) }),
  });
  proxies.push(proxy);
  return {
    proxy,
    url: `${proxy.url}/a2a/jsonrpc`,
    lines: () => lines,
    calls: () => lines.filter((l) => l.msg === 'a2a call'),
    metrics: () => proxy.metrics.registry.metrics(),
  };
}

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const caller = {
  traceparent: `00-${TRACE}-b7ad6b7169203331-01`,
  'x-aos-agent-name': 'Cooking assistant',
  'x-aos-agent-url': 'https://cooking.example/a2a',
  'x-aos-agent-version': '2.1.0',
};
const send = (id: string, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
});
const outcomes = (m: string, outcome: string) => sample(m, 'a2a_guard_requests_total', { operation: 'message/send', outcome }) ?? 0;

/** One call; the audit line it produced (the line is written when the response closes). */
async function call(a: Audited, id: string, text = 'hello'): Promise<{ status: number; json: any; line: Record<string, any> }> {
  const before = a.calls().length;
  const r = await rawRpc(a.url, send(id, text), caller);
  await waitFor(() => a.calls().length > before, 5000, 'the audit line');
  return { status: r.status, json: r.json, line: a.calls()[a.calls().length - 1] as Record<string, any> };
}

describe('decisions', () => {
  let a: Audited;
  beforeAll(async () => {
    // IDENTITY_POLICY=claims: the caller's X-AOS-Agent-* claim names the peer (verified: false).
    a = await audited({ IDENTITY_POLICY: 'claims' });
  });

  test('allow: the line explains the call and names the peer, the caller, the trace; the counters and histograms move by one', async () => {
    stack.guardian.script(() => ({ decision: 'allow', message: 'Fine by policy.', reasonCode: ['ALLOWED'] }));
    const m0 = await a.metrics();
    const { json, line } = await call(a, 'a-1');
    expect(json.result).toBeDefined();
    const envelope = stack.guardian.calls()[0];
    expect(line).toMatchObject({
      level: 'info',
      method: 'message/send',
      wireMethod: 'message/send',
      binding: 'jsonrpc',
      role: 'server',
      outcome: 'forwarded',
      decision: 'allow',
      reasonCode: ['ALLOWED'],
      guardianMessage: 'Fine by policy.',
      peer: { name: 'Cooking assistant', url: 'https://cooking.example/a2a', version: '2.1.0', verified: false },
      remoteAddress: '127.0.0.1',
      traceId: TRACE,
      upstreamStatus: 200,
      a2aId: 'a-1',
      envelopeId: envelope.id,
    });
    expect(line.upstreamMs).toBeGreaterThan(0);
    expect(line.totalMs).toBeGreaterThanOrEqual(line.upstreamMs);
    expect(line.hooks).toBeUndefined();
    const m1 = await a.metrics();
    expect(outcomes(m1, 'forwarded') - outcomes(m0, 'forwarded')).toBe(1);
    const count = (m: string, name: string, labels: Record<string, string>) => sample(m, `${name}_count`, labels) ?? 0;
    expect(
      count(m1, 'a2a_guard_added_latency_seconds', { operation: 'message/send' }) - count(m0, 'a2a_guard_added_latency_seconds', { operation: 'message/send' }),
    ).toBe(1);
    expect(
      count(m1, 'a2a_guard_upstream_latency_seconds', { operation: 'message/send' }) -
        count(m0, 'a2a_guard_upstream_latency_seconds', { operation: 'message/send' }),
    ).toBe(1);
    expect(
      count(m1, 'a2a_guard_guardian_latency_seconds', { operation: 'message/send', outcome: 'allow' }) -
        count(m0, 'a2a_guard_guardian_latency_seconds', { operation: 'message/send', outcome: 'allow' }),
    ).toBe(1);
    expect(m1).toMatch(/^a2a_guard_build_info\{version="\d+\.\d+\.\d+[^"]*",node="v\d+[^"]*"\} 1$/m);
    expect(m1).toMatch(/^a2a_guard_guardian_breaker_state\{state="closed"\} 1$/m);
  });

  test("deny: outcome denied with the guardian's reason codes and message; nothing reached the agent", async () => {
    stack.guardian.script(() => ({
      decision: 'deny',
      message: 'No weapons.',
      reasonCode: ['DENY_PATTERN:weapons', 'HARMFUL_CONTENT'],
      reasoning: 'secret chain of thought',
    }));
    const m0 = await a.metrics();
    const { json, line } = await call(a, 'd-1', 'molotov');
    expect(json.error.code).toBe(-31403);
    expect(line).toMatchObject({
      level: 'info',
      outcome: 'denied',
      decision: 'deny',
      reasonCode: ['DENY_PATTERN:weapons', 'HARMFUL_CONTENT'],
      guardianMessage: 'No weapons.',
      upstreamStatus: null,
    });
    expect(line.upstreamMs).toBeUndefined();
    expect(JSON.stringify(a.lines())).not.toContain('secret chain of thought');
    expect(JSON.stringify(a.lines())).not.toContain('molotov');
    expect(stack.agent.received.filter((x) => x.method === 'POST')).toHaveLength(0);
    expect(outcomes(await a.metrics(), 'denied') - outcomes(m0, 'denied')).toBe(1);
  });

  test('modify: decision modify, the masking reason code, outcome forwarded', async () => {
    stack.guardian.script((env) => ({
      decision: 'modify',
      message: 'Masked.',
      reasonCode: ['MASKED:pii'],
      modifiedPayload: { ...env.params.payload, params: { message: { ...env.params.payload.params.message, parts: [{ kind: 'text', text: '[EMAIL]' }] } } },
    }));
    const { json, line } = await call(a, 'm-1', 'mail me at a@b.example');
    expect(json.result).toBeDefined();
    expect(line).toMatchObject({ outcome: 'forwarded', decision: 'modify', reasonCode: ['MASKED:pii'], guardianMessage: 'Masked.' });
  });

  test("a response denied (INSPECT_RESPONSES=true): outcome denied, with the response hook's reason codes", async () => {
    const r = await audited({ INSPECT_RESPONSES: 'true', INSPECT_CARDS: 'false' });
    stack.guardian.script((env) =>
      env.params.payload.method === undefined
        ? { decision: 'deny', message: 'Answer leaks data.', reasonCode: ['RESPONSE_LEAK'] }
        : { decision: 'allow', message: 'Fine.' },
    );
    const m0 = await r.metrics();
    const { json, line } = await call(r, 'rd-1');
    expect(json.error.code).toBe(-31403);
    expect(line).toMatchObject({
      outcome: 'denied',
      decision: 'deny',
      reasonCode: ['RESPONSE_LEAK'],
      guardianMessage: 'Answer leaks data.',
      upstreamStatus: 200,
    });
    expect(line.hooks).toEqual([
      expect.objectContaining({ phase: 'request', decision: 'allow' }),
      expect.objectContaining({ phase: 'response', decision: 'deny' }),
    ]);
    expect(outcomes(await r.metrics(), 'denied') - outcomes(m0, 'denied')).toBe(1);
  });

  test('a refusal: one "request refused" line with the outcome, the reason, the caller and its trace; counted as refused', async () => {
    const m0 = await a.metrics();
    const before = a.lines().length;
    const r = await rawRpc(a.url, '[{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}]', caller);
    // A batch is an invalid request in JSON-RPC's own terms.
    expect(r.json.error.code).toBe(-32600);
    await waitFor(() => a.lines().length > before, 5000, 'the refusal line');
    expect(a.lines().slice(before)).toEqual([
      expect.objectContaining({ msg: 'request refused', outcome: 'refused', remoteAddress: '127.0.0.1', traceId: TRACE, reason: expect.any(String) }),
    ]);
    expect(
      (sample(await a.metrics(), 'a2a_guard_requests_total', { outcome: 'refused' }) ?? 0) -
        (sample(m0, 'a2a_guard_requests_total', { outcome: 'refused' }) ?? 0),
    ).toBe(1);
  });
});

describe('guardian failures', () => {
  const faults: Array<[string, GuardianReply, RegExp]> = [
    ['http', { fault: 'http500' }, /^HTTP 500$/],
    ['json', { fault: 'garbage' }, /not JSON/],
    ['rpcError', { fault: 'rpcError' }, /-32603: guardian internal error/],
    ['schema', { fault: 'badSchema' }, /AOS schema at result.decision/],
    ['id', { fault: 'wrongId' }, /different id/],
    ['connect', { fault: 'refuse' }, /socket|ECONNRESET|closed/i],
    ['timeout', { fault: 'hang' }, /no guardian answer within 300 ms/],
  ];

  test.each(faults)(
    'FAIL_MODE=closed, %s: a warn line with the failure kind and detail, outcome guardian_unavailable',
    async (kind, reply, detail) => {
      const a = await audited({ GUARDIAN_TIMEOUT_MS: '300' });
      stack.guardian.script(() => reply);
      const { json, line } = await call(a, `f-${kind}`);
      expect(json.error.code).toBe(-31503);
      expect(line).toMatchObject({ level: 'warn', outcome: 'guardian_unavailable', decision: 'failClosed', failure: kind });
      expect(line.failureDetail).toMatch(detail);
      expect(line.hooks).toEqual([
        expect.objectContaining({ side: 'server', phase: 'request', decision: 'failClosed', failure: kind, detail: line.failureDetail }),
      ]);
      const m = await a.metrics();
      expect(outcomes(m, 'guardian_unavailable')).toBe(1);
      expect(sample(m, 'a2a_guard_guardian_failures_total', { kind })).toBe(1);
      expect(sample(m, 'a2a_guard_guardian_latency_seconds_count', { operation: 'message/send', outcome: kind })).toBe(1);
    },
    20_000,
  );

  test('a dead guardian: connect failure with the socket error; after 5 failures the breaker opens (breakerOpen, breaker state open)', async () => {
    const a = await audited({ GUARDIAN_URL: await deadGuardianUrl() });
    const first = await call(a, 'dead-0');
    expect(first.line).toMatchObject({ level: 'warn', outcome: 'guardian_unavailable', failure: 'connect' });
    expect(first.line.failureDetail).toMatch(/ECONNREFUSED/);
    for (let i = 1; i < 5; i++) await call(a, `dead-${i}`);
    const open = await call(a, 'dead-5');
    expect(open.line).toMatchObject({ failure: 'breakerOpen', failureDetail: 'guardian circuit breaker is open' });
    const m = await a.metrics();
    expect(m).toMatch(/^a2a_guard_guardian_breaker_state\{state="open"\} 1$/m);
    expect(outcomes(m, 'guardian_unavailable')).toBe(6);
  }, 20_000);

  test('FAIL_MODE=open: the call passes, the line is a warn with outcome forwarded_unchecked and the failure', async () => {
    const a = await audited({ FAIL_MODE: 'open' });
    stack.guardian.script(() => ({ fault: 'http500' }));
    const { json, line } = await call(a, 'open-1');
    expect(json.result).toBeDefined();
    expect(line).toMatchObject({
      level: 'warn',
      outcome: 'forwarded_unchecked',
      decision: 'failOpen',
      failure: 'http',
      failureDetail: 'HTTP 500',
      upstreamStatus: 200,
    });
    const m = await a.metrics();
    expect(outcomes(m, 'forwarded_unchecked')).toBe(1);
    expect(sample(m, 'a2a_guard_fail_open_passes_total')).toBe(1);
  });

  test('a guardian behind a certificate the proxy does not trust: the detail names the TLS problem, not only "connect"', async () => {
    const key = path.join(tmp, 'key.pem');
    const cert = path.join(tmp, 'cert.pem');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'],
      { stdio: 'ignore' },
    );
    const tls = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    try {
      const port = (tls.address() as { port: number }).port;
      const a = await audited({ GUARDIAN_URL: `https://127.0.0.1:${port}` });
      const { json, line } = await call(a, 'tls-1');
      expect(json.error.code).toBe(-31503);
      expect(line).toMatchObject({ level: 'warn', failure: 'connect' });
      expect(line.failureDetail).toMatch(/self[- ]signed certificate/i);
    } finally {
      await closeServer(tls as unknown as import('node:http').Server);
    }
  });
});

test('the agent down: outcome upstream_error at warn, with the error', async () => {
  const agent = await startAgent({ name: 'Short-lived' });
  const a = await audited({ UPSTREAM_URL: agent.origin });
  await agent.close();
  stack.guardian.reset();
  const { json, line } = await call(a, 'up-1');
  expect(json.error.code).toBe(-31502);
  expect(line).toMatchObject({
    level: 'warn',
    outcome: 'upstream_error',
    decision: 'allow',
    upstreamStatus: null,
    error: expect.stringMatching(/ECONNREFUSED|connect/),
  });
  expect(outcomes(await a.metrics(), 'upstream_error')).toBe(1);
});

test('the embedded guardian logs each decision like the standalone guardian, with the trace id', async () => {
  const policyFile = path.join(tmp, 'policy.json');
  fs.writeFileSync(policyFile, JSON.stringify({ deny: [{ id: 'weapons', reasonCode: 'HARMFUL_CONTENT', message: 'No weapons.', patterns: ['\\bmolotov'] }] }));
  // One logger for the proxy and its embedded guardian, as in main.ts.
  const log = capture();
  const a = await audited({}, { guardian: embeddedGuardian(policyFile, { logger: log.logger }), log });
  const denied = await call(a, 'e-1', 'a molotov please');
  expect(denied.json.error.code).toBe(-31403);
  const decisions = log.lines.filter((l) => l.msg === 'guardian decision');
  expect(decisions).toEqual([
    expect.objectContaining({
      method: 'message/send',
      side: 'server',
      phase: 'request',
      decision: 'deny',
      reasonCode: ['DENY_PATTERN:weapons', 'HARMFUL_CONTENT'],
      message: 'No weapons.',
      traceId: TRACE,
      envelopeId: expect.any(String),
      ms: expect.any(Number),
    }),
  ]);
  expect(denied.line).toMatchObject({ outcome: 'denied', reasonCode: ['DENY_PATTERN:weapons', 'HARMFUL_CONTENT'], envelopeId: decisions[0]?.envelopeId });
  expect(JSON.stringify(log.lines)).not.toContain('a molotov please');
});

test('DECISION_LOG_FILE: every call is a chained record; the chain survives a restart; a changed record is named', async () => {
  const file = path.join(tmp, 'decisions.log');
  let log = new DecisionLog(file);
  const a = await audited({}, { decisionLog: log });
  stack.guardian.script(() => ({ decision: 'deny', message: 'No.', reasonCode: ['R1'] }));
  await call(a, 'dl-1');
  stack.guardian.reset();
  await call(a, 'dl-2');
  await log.close();
  // A restart appends to the same chain.
  log = new DecisionLog(file);
  const b = await audited({}, { decisionLog: log });
  await call(b, 'dl-3');
  await log.close();

  const text = fs.readFileSync(file, 'utf8');
  const records = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, any>);
  expect(records.map((r) => [r.seq, r.a2aId, r.outcome])).toEqual([
    [1, 'dl-1', 'denied'],
    [2, 'dl-2', 'forwarded'],
    [3, 'dl-3', 'forwarded'],
  ]);
  expect(records[0]).toMatchObject({ reasonCode: ['R1'], guardianMessage: 'No.', prevHash: '0'.repeat(64) });
  expect(records[1]?.prevHash).toBe(records[0]?.hash);
  expect(verifyDecisionLog(text)).toEqual({ ok: true, records: 3 });
  // Each audit line names its record: a checkpoint outside the file.
  const named = [...a.calls(), ...b.calls()].map((l) => [l.decisionSeq, l.decisionHash]);
  expect(named).toEqual(records.map((r) => [r.seq, r.hash]));
  // A cut tail verifies as a chain, but not against the last audit line's record.
  const head = { seq: records[2]?.seq as number, hash: records[2]?.hash as string };
  const firstTwo = `${text.trim().split('\n').slice(0, 2).join('\n')}\n`;
  expect(verifyDecisionLog(firstTwo)).toEqual({ ok: true, records: 2 });
  expect(verifyDecisionLog(firstTwo, { head })).toMatchObject({ ok: false, records: 2, reason: expect.stringMatching(/cut off/) });
  expect(verifyDecisionLog(text, { head })).toEqual({ ok: true, records: 3 });

  // Rewrite history: the denied call becomes forwarded.
  const tampered = text.replace('"outcome":"denied"', '"outcome":"forwarded"');
  expect(verifyDecisionLog(tampered)).toMatchObject({ ok: false, line: 1, seq: 1, records: 0, reason: expect.stringMatching(/changed/) });
  // Drop a record.
  const lines = text.trim().split('\n');
  expect(verifyDecisionLog(`${lines[0]}\n${lines[2]}\n`)).toMatchObject({ ok: false, line: 2, seq: 3, records: 1, reason: expect.stringMatching(/removed/) });
});
