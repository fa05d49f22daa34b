/**
 * OpenTelemetry traces of real calls (README "Observability"): a caller with its own trace context,
 * a ROLE=client proxy, a ROLE=server proxy (both `node dist/a2a-guard.js` processes, as operators run
 * them), a real @a2a-js/sdk agent and a real HTTP guardian, all on 127.0.0.1; both proxies export
 * to a real OTLP/HTTP receiver (JSON encoding) in this test.
 *   - one trace: caller -> client proxy (server span) -> guardian hook span -> the guardian received
 *     a traceparent naming that hook span; client proxy -> upstream span -> server proxy's server span
 *     -> its hook span (named in the guardian's traceparent) and its upstream span, which the
 *     traceparent the agent received names;
 *   - the hook spans carry the AOS method, side, phase, decision, reason codes and envelope id, and a
 *     failing hook its failure kind and detail; the server span the call's outcome;
 *   - http/protobuf (the OTLP default) is exported too; failed exports are counted;
 *   - with tracing off, no span is made and the caller's traceparent reaches the guardian unchanged.
 */
import { rawRpc } from '../../helpers/agent';
import { waitFor } from '../../helpers/net';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../helpers/otlp';
import { ensureBuilt, reapAll, sample, scrape, startProxyProcess, type ProxyRun } from '../../helpers/proxy-process';
import { useStack } from '../../helpers/proxy-harness';

const stack = useStack({ name: 'Traced Agent' });
let otlp: OtlpReceiver;
let serverProxy: ProxyRun;
let clientProxy: ProxyRun;

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const callerHeaders = (span = CALLER_SPAN) => ({ traceparent: `00-${CALLER_TRACE}-${span}-01`, tracestate: 'vendor=opaque' });

const send = (id: string, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

// OTEL_BSP_SCHEDULE_DELAY (read by the SDK itself): export batches quickly.
const otel = (service: string, extra: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_SERVICE_NAME: service,
  OTEL_BSP_SCHEDULE_DELAY: '50',
  ...extra,
});
const proxyEnv = (env: Record<string, string>) => ({ UPSTREAM_URL: stack.agent.origin, GUARDIAN_URL: stack.guardian.url, SHUTDOWN_DELAY_MS: '0', ...env });

beforeAll(async () => {
  ensureBuilt();
  otlp = await startOtlpReceiver();
  serverProxy = await startProxyProcess(proxyEnv({ ROLE: 'server', ...otel('guard-server') }));
  clientProxy = await startProxyProcess(proxyEnv({ UPSTREAM_URL: serverProxy.base, ROLE: 'client', ...otel('guard-client') }));
}, 180_000);

afterAll(async () => {
  await reapAll();
  await otlp?.close();
});

beforeEach(() => otlp.clear());

const one = (spans: ReceivedSpan[], pred: (s: ReceivedSpan) => boolean, what: string): ReceivedSpan => {
  const found = spans.filter(pred);
  if (found.length !== 1) throw new Error(`expected one ${what}, found ${found.length}: ${JSON.stringify(spans.map((s) => [s.service, s.name]))}`);
  return found[0] as ReceivedSpan;
};

const traceparentSpan = (tp: string | undefined): string | undefined => /^00-[0-9a-f]{32}-([0-9a-f]{16})-0[01]$/.exec(tp ?? '')?.[1];

test('one trace from the caller through both proxies to the guardian and the agent, with the AOS attributes', async () => {
  stack.guardian.script(() => ({ decision: 'allow', message: 'Looks fine.', reasonCode: ['TEST_OK'] }));
  const r = await rawRpc(`${clientProxy.base}/a2a/jsonrpc`, send('t-1', 'hello traces'), callerHeaders());
  expect(r.json?.result).toBeDefined();
  // 3 spans per proxy: server, guardian hook, upstream.
  await waitFor(() => otlp.spans.length >= 6, 10_000, 'six spans exported');
  const spans = otlp.spans;
  expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([CALLER_TRACE]));

  const cServer = one(spans, (s) => s.service === 'guard-client' && s.kind === 2, 'client-proxy server span');
  const cHook = one(spans, (s) => s.service === 'guard-client' && s.name.startsWith('guardian '), 'client-proxy hook span');
  const cUp = one(spans, (s) => s.service === 'guard-client' && s.name.startsWith('upstream '), 'client-proxy upstream span');
  const sServer = one(spans, (s) => s.service === 'guard-server' && s.kind === 2, 'server-proxy server span');
  const sHook = one(spans, (s) => s.service === 'guard-server' && s.name.startsWith('guardian '), 'server-proxy hook span');
  const sUp = one(spans, (s) => s.service === 'guard-server' && s.name.startsWith('upstream '), 'server-proxy upstream span');

  // The chain: caller -> client proxy -> (guardian | upstream -> server proxy -> (guardian | upstream -> agent)).
  expect(cServer.parentSpanId).toBe(CALLER_SPAN);
  expect(cHook.parentSpanId).toBe(cServer.spanId);
  expect(cUp.parentSpanId).toBe(cServer.spanId);
  expect(sServer.parentSpanId).toBe(cUp.spanId);
  expect(sHook.parentSpanId).toBe(sServer.spanId);
  expect(sUp.parentSpanId).toBe(sServer.spanId);
  expect([cHook.kind, cUp.kind, sHook.kind, sUp.kind]).toEqual([3, 3, 3, 3]);

  // What the guardian and the agent received names the proxies' spans.
  const calls = stack.guardian.headers.filter((_h, i) => stack.guardian.envelopes[i]?.method === 'message/send');
  expect(calls.map((h) => traceparentSpan(h.traceparent))).toEqual([cHook.spanId, sHook.spanId]);
  expect(calls.every((h) => h.tracestate === 'vendor=opaque')).toBe(true);
  const atAgent = stack.agent.received.filter((x) => x.method === 'POST');
  expect(atAgent).toHaveLength(1);
  expect(traceparentSpan(atAgent[0]?.headers.traceparent)).toBe(sUp.spanId);
  expect(atAgent[0]?.headers.traceparent).toContain(CALLER_TRACE);

  const envelopes = stack.guardian.calls();
  expect(cHook.attributes).toEqual({
    'aos.method': 'message/send',
    'aos.side': 'client',
    'aos.phase': 'request',
    'aos.envelope_id': envelopes[0].id,
    'aos.decision': 'allow',
    'aos.reason_codes': ['TEST_OK'],
  });
  expect(sHook.attributes).toMatchObject({ 'aos.side': 'server', 'aos.phase': 'request', 'aos.envelope_id': envelopes[1].id, 'aos.decision': 'allow' });
  expect(sServer.attributes).toMatchObject({
    'a2a.method': 'message/send',
    'a2a.wire_method': 'message/send',
    'a2a.binding': 'jsonrpc',
    'a2a_guard.role': 'server',
    'a2a_guard.outcome': 'forwarded',
    'aos.decision': 'allow',
    'a2a_guard.upstream_status': 200,
    'http.request.method': 'POST',
    'url.path': '/a2a/jsonrpc',
  });
  expect(sUp.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 200, 'server.address': '127.0.0.1' });
  expect(cServer.attributes).toMatchObject({ 'a2a_guard.role': 'client', 'a2a_guard.outcome': 'forwarded' });
}, 30_000);

test('a deny: the hook span carries the decision and reason codes, the server span the outcome; nothing goes upstream', async () => {
  stack.guardian.script(() => ({ decision: 'deny', message: 'No.', reasonCode: ['DENY_PATTERN:weapons', 'HARMFUL'] }));
  const r = await rawRpc(`${serverProxy.base}/a2a/jsonrpc`, send('t-2', 'molotov'), callerHeaders('1111111111111111'));
  expect(r.json?.error?.code).toBe(-31403);
  await waitFor(() => otlp.spans.filter((s) => s.service === 'guard-server').length >= 2, 10_000, 'two spans');
  const spans = otlp.spans.filter((s) => s.service === 'guard-server');
  const server = one(spans, (s) => s.kind === 2, 'server span');
  const hook = one(spans, (s) => s.name.startsWith('guardian '), 'hook span');
  expect(spans.some((s) => s.name.startsWith('upstream '))).toBe(false);
  expect(server.parentSpanId).toBe('1111111111111111');
  expect(hook.attributes).toMatchObject({ 'aos.decision': 'deny', 'aos.reason_codes': ['DENY_PATTERN:weapons', 'HARMFUL'] });
  expect(server.attributes).toMatchObject({ 'a2a_guard.outcome': 'denied', 'aos.decision': 'deny', 'aos.reason_codes': ['DENY_PATTERN:weapons', 'HARMFUL'] });
}, 30_000);

test('a guardian failure: the hook span has status ERROR with the failure kind and detail; the server span says guardian_unavailable', async () => {
  stack.guardian.script(() => ({ fault: 'http500' }));
  const r = await rawRpc(`${serverProxy.base}/a2a/jsonrpc`, send('t-3', 'hello'));
  expect(r.json?.error?.code).toBe(-31503);
  await waitFor(() => otlp.spans.filter((s) => s.service === 'guard-server').length >= 2, 10_000, 'two spans');
  const spans = otlp.spans.filter((s) => s.service === 'guard-server');
  const hook = one(spans, (s) => s.name.startsWith('guardian '), 'hook span');
  const server = one(spans, (s) => s.kind === 2, 'server span');
  // A call without trace context starts a new trace at the proxy.
  expect(server.parentSpanId).toBe('');
  expect(server.traceId).not.toBe(CALLER_TRACE);
  expect(hook.attributes).toMatchObject({ 'aos.decision': 'failClosed', 'aos.failure.kind': 'http', 'aos.failure.detail': 'HTTP 500' });
  expect(hook.status.code).toBe(2);
  expect(server.attributes).toMatchObject({ 'a2a_guard.outcome': 'guardian_unavailable' });
  expect(server.status.code).toBe(2);
}, 30_000);

test('http/protobuf (the OTLP default protocol) is exported as protobuf; exports the collector refuses are counted', async () => {
  const p = await startProxyProcess(
    proxyEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/custom/traces`, OTEL_SERVICE_NAME: 'guard-proto', OTEL_BSP_SCHEDULE_DELAY: '50' }),
  );
  expect(p.lines().find((l) => l.msg === 'a2a-guard listening')?.tracing).toBe(`${otlp.url}/custom/traces`);
  const r = await rawRpc(`${p.base}/a2a/jsonrpc`, send('t-4', 'hello'), callerHeaders());
  expect(r.json?.result).toBeDefined();
  await waitFor(() => otlp.requests.length >= 1, 10_000, 'a protobuf export');
  const req = otlp.requests[0]!;
  expect(req.path).toBe('/custom/traces');
  expect(req.contentType).toBe('application/x-protobuf');
  expect(req.body.includes(Buffer.from('guard-proto'))).toBe(true);
  expect(req.body.includes(Buffer.from(CALLER_TRACE, 'hex'))).toBe(true);

  otlp.failWith(400);
  try {
    await rawRpc(`${p.base}/a2a/jsonrpc`, send('t-5', 'hello'));
    await waitFor(async () => (sample(await scrape(p), 'a2a_guard_trace_export_failures_total') ?? 0) >= 1, 10_000, 'a failed export counted');
  } finally {
    otlp.failWith(undefined);
  }
}, 30_000);

test("tracing off: no span; the caller's trace context reaches the guardian and the agent unchanged", async () => {
  const p = await stack.proxy({});
  expect(p.tracer.enabled).toBe(false);
  stack.guardian.clear();
  stack.agent.clear();
  const r = await rawRpc(`${p.url}/a2a/jsonrpc`, send('t-6', 'hello'), callerHeaders());
  expect(r.json?.result).toBeDefined();
  expect(stack.guardian.headers.find((_h, i) => stack.guardian.envelopes[i]?.method === 'message/send')).toMatchObject(callerHeaders());
  expect(stack.agent.received.find((x) => x.method === 'POST')?.headers).toMatchObject(callerHeaders());
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(otlp.requests.filter((q) => q.body.includes(Buffer.from('t-6')))).toHaveLength(0);
});
