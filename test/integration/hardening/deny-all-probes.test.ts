/**
 * A fresh helper told only "get an unapproved call to the agent": with a
 * guardian that denies every request, no call may reach the SDK agent's request handler. Each
 * probe is sent raw (HTTP/1.1 or HTTP/2 gRPC); the test FAILS when the handler recorder shows any
 * operation acted on.
 */
import { startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { rawRoundTrip } from '../../helpers/wire';
import { rawGrpc, grpcFrame } from '../../helpers/grpc';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(120_000);

const rec = handlerRecorder();
let agent: TestAgent;
let guardian: TestGuardian;
let proxy: TestProxy;
let port = 0;

beforeAll(async () => {
  agent = await startAgent({ wrapRequestHandler: rec.wrap, grpc: true, extendedAgentCard: true });
  guardian = await startGuardian();
  guardian.script((env) => (env?.method === 'ping' ? { decision: 'allow' } : { decision: 'deny' }));
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', GRPC_PORT: '0', FAIL_MODE: 'closed' });
  port = Number(new URL(proxy.url).port);
  // Let the proxy read the card and settle: anything it calls on its own is recorded too.
  await rawRoundTrip(port, req('GET', '/.well-known/agent-card.json', {}), 8_000);
  await new Promise((r) => setTimeout(r, 300));
  startupCalls = rec.calls.map((c) => c.method);
});
let startupCalls: string[] = [];
test('the proxy itself calls no operation at start-up', () => {
  expect(startupCalls).toEqual([]);
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
});

const send = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'SendMessage',
  params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
});
const sendV03 = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
});
const rest = JSON.stringify({ message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } });

function req(method: string, target: string, headers: Record<string, string>, body = ''): string {
  const h = Object.entries({
    host: `127.0.0.1:${port}`,
    connection: 'close',
    ...headers,
    ...(body === '' ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
  });
  return `${method} ${target} HTTP/1.1\r\n${h.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`;
}
const J = { 'content-type': 'application/json' };
const V1 = { ...J, 'a2a-version': '1.0' };

const httpProbes: Array<[string, string]> = [
  // card-shaped paths below REST routes (the card kind is forwarded unjudged)
  ['card under tasks', req('GET', '/a2a/rest/tasks/.well-known/agent-card.json', V1)],
  ['card under tenant tasks', req('GET', '/a2a/rest/t1/tasks/.well-known/agent-card.json', V1)],
  ['card v1 tasks', req('GET', '/a2a/rest/v1/tasks/.well-known/agent.json', {})],
  ['card HEAD under tasks', req('HEAD', '/a2a/rest/tasks/.well-known/agent-card.json', V1)],
  ['card with query', req('GET', '/a2a/rest/.well-known/agent-card.json?x=/tasks', V1)],
  ['card w/ body json-rpc', req('GET', '/a2a/jsonrpc/.well-known/agent-card.json', V1, send)],
  ['card w/ body at jsonrpc root', req('GET', '/.well-known/agent-card.json', V1, send)],
  ['card absolute-form', req('GET', `http://127.0.0.1:${port}/a2a/rest/extendedAgentCard/.well-known/agent-card.json`, V1)],
  ['card encoded dot', req('GET', '/a2a/rest/tasks/%2Ewell-known/agent-card.json', V1)],
  ['card upper', req('GET', '/a2a/rest/tasks/.WELL-KNOWN/AGENT-CARD.JSON', V1)],
  ['card trailing slash', req('GET', '/a2a/rest/tasks/.well-known/agent-card.json/', V1)],
  ['card colon id', req('GET', '/a2a/rest/tasks/.well-known:subscribe/agent-card.json', V1)],
  ['card double slash', req('GET', '//a2a/rest/tasks/.well-known/agent-card.json', V1)],
  ['extended card REST GET', req('GET', '/a2a/rest/extendedAgentCard', V1)],
  ['extended card REST tenant', req('GET', '/a2a/rest/.well-known/extendedAgentCard', V1)],
  ['extended card case', req('GET', '/a2a/rest/EXTENDEDAGENTCARD', V1)],
  ['list tasks upper', req('GET', '/A2A/REST/TASKS', V1)],
  ['get task HEAD', req('HEAD', '/a2a/rest/tasks/abc', V1)],
  ['v03 get task HEAD', req('HEAD', '/a2a/rest/v1/tasks/abc', {})],
  ['subscribe GET', req('GET', '/a2a/rest/tasks/abc:subscribe', V1)],
  ['subscribe encoded colon', req('GET', '/a2a/rest/tasks/abc%3Asubscribe', V1)],
  ['send encoded colon', req('POST', '/a2a/rest/message%3Asend', V1, rest)],
  ['send upper', req('POST', '/a2a/rest/MESSAGE:SEND', V1, rest)],
  ['jsonrpc trailing slash', req('POST', '/a2a/jsonrpc/', V1, send)],
  ['jsonrpc upper path', req('POST', '/A2A/JSONRPC', V1, send)],
  ['jsonrpc v03', req('POST', '/a2a/jsonrpc', J, sendV03)],
  ['jsonrpc a2a+json', req('POST', '/a2a/jsonrpc', { 'content-type': 'application/a2a+json', 'a2a-version': '1.0' }, send)],
  [
    'jsonrpc te chunked',
    `POST /a2a/jsonrpc HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\na2a-version: 1.0\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n${Buffer.byteLength(send).toString(16)}\r\n${send}\r\n0\r\n\r\n`,
  ],
  ['pipelined card then send', req('GET', '/.well-known/agent-card.json', { connection: 'keep-alive' }) + req('POST', '/a2a/jsonrpc', V1, send)],
  [
    'card with CL smuggle',
    `GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\ncontent-length: ${Buffer.byteLength(req('POST', '/a2a/jsonrpc', V1, send))}\r\n\r\n${req('POST', '/a2a/jsonrpc', V1, send)}`,
  ],
  [
    'card TE+CL',
    `GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\ncontent-length: 4\r\n\r\n0\r\n\r\n${req('POST', '/a2a/jsonrpc', V1, send)}`,
  ],
  ['OPTIONS jsonrpc', req('OPTIONS', '/a2a/jsonrpc', V1, send)],
  ['PUT jsonrpc', req('PUT', '/a2a/jsonrpc', V1, send)],
  ['GET jsonrpc body', req('GET', '/a2a/jsonrpc', V1, send)],
  ['tenant named v1 list', req('GET', '/a2a/rest/v1/tasks', V1)],
  ['rest query tenant', req('GET', '/a2a/rest/tasks?tenant=x&pageSize=1', V1)],
  ['rest query nested', req('GET', '/a2a/rest/tasks?pageSize[a]=1', V1)],
  [
    'http/1.0 send',
    `POST /a2a/jsonrpc HTTP/1.0\r\ncontent-type: application/json\r\na2a-version: 1.0\r\ncontent-length: ${Buffer.byteLength(send)}\r\n\r\n${send}`,
  ],
  ['expect 100-continue', req('POST', '/a2a/jsonrpc', { ...V1, expect: '100-continue' }, send)],
  ['v03 extended card jsonrpc', req('POST', '/a2a/jsonrpc', J, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'agent/getAuthenticatedExtendedCard' }))],
  ['v1 extended card jsonrpc', req('POST', '/a2a/jsonrpc', V1, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'GetExtendedAgentCard', params: {} }))],
  ['stream jsonrpc', req('POST', '/a2a/jsonrpc', V1, send.replace('SendMessage', 'SendStreamingMessage'))],
  ['upgrade h2c', req('POST', '/a2a/jsonrpc', { ...V1, connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQAAP__' }, send)],
  [
    'card then upgrade websocket',
    req('GET', '/.well-known/agent-card.json', {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
    }) + req('POST', '/a2a/jsonrpc', V1, send),
  ],
  ['http2 preface on http port', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
  ['push list card-ish', req('GET', '/a2a/rest/tasks/.well-known/pushNotificationConfigs', V1)],
];

test.each(httpProbes)('HTTP probe: %s does not reach the handler', async (_name, raw) => {
  rec.clear();
  await rawRoundTrip(port, raw, 8_000);
  await new Promise((r) => setTimeout(r, 150));
  expect(rec.calls.map((c) => c.method)).toEqual([]);
});

const grpcPaths = [
  '/lf.a2a.v1.A2AService/GetExtendedAgentCard',
  '/lf.a2a.v1.A2AService/ListTasks',
  '/lf.a2a.v1.A2AService/GetTask',
  '/a2a.v1.A2AService/GetAgentCard',
  '/a2a.v1.A2AService/GetTask',
  '/lf.a2a.v1.A2AService/ListTasks?x',
  '/lf.a2a.v1.A2AService//ListTasks',
  '/LF.A2A.V1.A2ASERVICE/LISTTASKS',
];
test.each(grpcPaths)('gRPC probe %s does not reach the handler', async (path) => {
  rec.clear();
  const addr = proxy.grpcAddress as string;
  await rawGrpc(addr, path, grpcFrame(Buffer.alloc(0))).catch(() => undefined);
  await rawGrpc(addr, path, Buffer.concat([grpcFrame(Buffer.alloc(0)), grpcFrame(Buffer.alloc(0))])).catch(() => undefined);
  await rawGrpc(addr, path, grpcFrame(Buffer.alloc(0)), { 'content-type': 'application/grpc+json' }).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 150));
  expect(rec.calls.map((c) => c.method)).toEqual([]);
});

test('control: with an allowing guardian the same probes are recorded (the oracle works)', async () => {
  rec.clear();
  guardian.script(() => ({ decision: 'allow' }));
  try {
    await rawRoundTrip(port, req('POST', '/a2a/jsonrpc', V1, send), 8_000);
    await rawRoundTrip(port, req('GET', '/a2a/rest/tasks', V1), 8_000);
    await new Promise((r) => setTimeout(r, 150));
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage', 'listTasks']);
  } finally {
    guardian.script((env) => (env?.method === 'ping' ? { decision: 'allow' } : { decision: 'deny' }));
    rec.clear();
  }
});

test('sanity: the guardian saw and denied calls, the agent is up', () => {
  expect(guardian.calls().length).toBeGreaterThan(0);
  // Only the control's two calls were approved.
  expect(guardian.approved()).toHaveLength(2);
});
