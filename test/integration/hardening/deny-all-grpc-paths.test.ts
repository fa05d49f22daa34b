/**
 * With a deny-all guardian, no call may reach the real SDK agent's request handler
 * (handler recorder as the oracle). Focus: the newest change (gRPC method paths refused on the HTTP
 * port: looksLikeGrpc / routeFold), under NON_A2A=forward, PASSTHROUGH_PATHS=/ and ROLE=both. The
 * agent's HTTP port serves its gRPC service as gRPC-Web and Connect JSON through a deliberately
 * permissive router (any prefix, trailing slash ignored, Java-style per-character case folding), as a
 * case-ignoring front would; every spelling is first shown to reach the handler when sent directly.
 */
import http2 from 'node:http2';
import type http from 'node:http';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import { startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type Envelope, type TestGuardian } from '../../helpers/guardian';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { rawRoundTrip } from '../../helpers/wire';
import { rawGrpc, grpcFrame } from '../../helpers/grpc';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(120_000);

const sdk: typeof A2A = require('@a2a-js/sdk');
const settle = (ms = 120): Promise<void> => new Promise((r) => setTimeout(r, ms));
const DENY_ALL = (env: Envelope) => (env?.method === 'ping' ? { decision: 'allow' as const } : { decision: 'deny' as const });

function grpcSerialize(json: unknown): Buffer {
  const grpcSdk = require('@a2a-js/sdk/server/grpc') as { A2AService: { sendMessage: { requestSerialize: (v: unknown) => Buffer } } };
  return grpcSdk.A2AService.sendMessage.requestSerialize(sdk.SendMessageRequest.fromJSON(json));
}
const restSend = JSON.stringify({ message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } });
const sendBody = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'SendMessage',
  params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
});

function req(port: number, method: string, target: string, headers: Record<string, string>, body = ''): string {
  const h = Object.entries({
    host: `127.0.0.1:${port}`,
    connection: 'close',
    ...headers,
    ...(body === '' ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
  });
  return `${method} ${target} HTTP/1.1\r\n${h.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`;
}
function rawBinary(port: number, target: string, headers: Record<string, string>, body: Buffer): Buffer {
  const h = Object.entries({ host: `127.0.0.1:${port}`, connection: 'close', ...headers, 'content-length': String(body.length) });
  return Buffer.concat([Buffer.from(`POST ${target} HTTP/1.1\r\n${h.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** Java's String.equalsIgnoreCase: per UTF-16 unit, equal, equal upper-cased, or equal lower-cased (1:1 mappings only). */
function javaEqualsIgnoreCase(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  const up = (c: string): string => {
    const u = c.toUpperCase();
    return u.length === 1 ? u : c;
  };
  const lo = (c: string): string => {
    const l = c.toLowerCase();
    return l.length === 1 ? l : c;
  };
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as string;
    const y = b[i] as string;
    if (x === y) continue;
    const ux = up(x);
    const uy = up(y);
    if (ux === uy || lo(ux) === lo(uy)) continue;
    return false;
  }
  return true;
}

const rec = handlerRecorder();
let agent: TestAgent;
let guardian: TestGuardian;
const proxies: Record<string, TestProxy> = {};
const ports: Record<string, number> = {};
const routed: string[] = [];
const PROXIES: Record<string, Record<string, string>> = {
  'NON_A2A=forward': { NON_A2A: 'forward' },
  'PASSTHROUGH_PATHS=/': { PASSTHROUGH_PATHS: '/' },
  'ROLE=both NON_A2A=forward': {
    ROLE: 'both',
    NON_A2A: 'forward',
    OBSERVED_AGENT_ID: 'probe',
    OBSERVED_AGENT_NAME: 'probe',
    OBSERVED_AGENT_URL: 'http://probe.example/',
    OBSERVED_AGENT_VERSION: '1',
  },
  'TASK_OWNERSHIP INSPECT_RESPONSES PASSTHROUGH_PATHS=/a2a': { TASK_OWNERSHIP: 'true', INSPECT_RESPONSES: 'true', PASSTHROUGH_PATHS: '/a2a' },
};

async function translate(q: http.IncomingMessage, s: http.ServerResponse, connectJson: boolean): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of q) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  let frame: Buffer;
  try {
    frame = connectJson ? grpcFrame(grpcSerialize(JSON.parse(body.toString('utf8')))) : body;
  } catch {
    s.writeHead(400).end();
    return;
  }
  const session = http2.connect(`http://${agent.grpcAddress as string}`);
  session.on('error', () => undefined);
  const up = session.request({
    ':method': 'POST',
    ':path': '/lf.a2a.v1.A2AService/SendMessage',
    'content-type': 'application/grpc',
    te: 'trailers',
    'a2a-version': '1.0',
  });
  let trailers: http2.IncomingHttpHeaders = {};
  up.on('data', () => undefined);
  up.on('trailers', (t) => (trailers = t));
  up.on('error', () => undefined);
  up.end(frame);
  await new Promise((r) => up.on('close', r));
  session.close();
  s.writeHead(200, { 'content-type': 'application/json' });
  s.end(JSON.stringify({ grpcStatus: String(trailers['grpc-status'] ?? '2') }));
}

beforeAll(async () => {
  agent = await startAgent({ wrapRequestHandler: rec.wrap, grpc: true, extendedAgentCard: true });
  const server = agent.server as http.Server;
  const [app] = server.listeners('request') as Array<(q: http.IncomingMessage, s: http.ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (q: http.IncomingMessage, s: http.ServerResponse) => {
    let p = decodeURIComponent((q.url ?? '').split('?')[0] as string);
    if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
    const segs = p.split('/');
    const n = segs.length;
    const ct = String(q.headers['content-type'] ?? '');
    const isWeb = /^application\/grpc-web/i.test(ct);
    const isConnect = /^application\/json/i.test(ct) && q.headers['connect-protocol-version'] === '1';
    if (
      q.method === 'POST' &&
      n >= 3 &&
      (isWeb || isConnect) &&
      javaEqualsIgnoreCase(segs[n - 1] as string, 'SendMessage') &&
      (segs[n - 2] as string).length >= 10 &&
      javaEqualsIgnoreCase((segs[n - 2] as string).slice(-10), 'A2AService')
    ) {
      routed.push(`${q.method} ${q.url}`);
      void translate(q, s, isConnect);
      return;
    }
    (app as (q: http.IncomingMessage, s: http.ServerResponse) => void)(q, s);
  });
  guardian = await startGuardian();
  guardian.script(DENY_ALL);
  for (const [name, env] of Object.entries(PROXIES)) {
    const p = await startTestProxy({
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      ROLE: 'server',
      FAIL_MODE: 'closed',
      GRPC_PORT: '0',
      GRPC_UPSTREAM_URL: `http://${agent.grpcAddress as string}`,
      ...env,
    });
    proxies[name] = p;
    ports[name] = Number(new URL(p.url).port);
    await rawRoundTrip(ports[name] as number, req(ports[name] as number, 'GET', '/.well-known/agent-card.json', {}), 8_000);
  }
  await settle(300);
  rec.clear();
});
afterAll(async () => {
  for (const p of Object.values(proxies)) await p.close();
  await agent?.close();
  await guardian?.close();
});

const CONNECT = { 'content-type': 'application/json', 'connect-protocol-version': '1', 'a2a-version': '1.0' };
const WEB = { 'content-type': 'application/grpc-web+proto', 'a2a-version': '1.0' };
// Spellings of the service and method a case-ignoring router reads as SendMessage.
const spellings: string[] = [
  '/lf.a2a.v1.A2AService/SendMessage',
  '/lf.a2a.v1.A2A\u017Fervice/SendMessage', // long s
  '/lf.a2a.v1.A2AService/\u017FendMessage',
  '/lf.a2a.v1.a2aservice/sendmessage/',
  '/x/lf.a2a.v1.A2AService/SENDMESSAGE',
  '/lf.a2a.v1.A2AService/SendMe\u017F\u017Fage',
  '/lf.a2a.v1.A2AService/SendMessage?encoding=json',
  '/lf.a2a.v1.A2A%C5%BFervice/SendMessage', // percent-encoded long s
  '/lf.a2a.v1.%41%32%41Service/Send%4Dessage',
  '/twirp/lf.a2a.v1.A2AService/SendMessage',
  '/a2a/lf.a2a.v1.A2AService/SendMessage',
  '/a2a/jsonrpc/lf.a2a.v1.A2AService/SendMessage',
  '/a2a/rest/lf.a2a.v1.A2AService/SendMessage',
  '/.well-known/lf.a2a.v1.A2AService/SendMessage',
  '/My.A2AService/SendMessage',
];
const encodeTarget = (t: string): string => t.replace(/[^\x21-\x7e]/g, (c) => encodeURIComponent(c));

test.each(spellings)('control: %s sent directly reaches the handler (the oracle fires)', async (target) => {
  rec.clear();
  const port = Number(new URL(agent.origin).port);
  await rawRoundTrip(port, req(port, 'POST', encodeTarget(target), CONNECT, restSend), 8_000);
  await settle();
  expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
});

const cases: Array<[string, string, 'connect' | 'web']> = [];
for (const name of Object.keys(PROXIES)) for (const t of spellings) for (const k of ['connect', 'web'] as const) cases.push([name, t, k]);

test.each(cases)('deny-all %s: %s (%s) does not reach the handler', async (name, target, kind) => {
  rec.clear();
  const port = ports[name] as number;
  const raw =
    kind === 'connect'
      ? req(port, 'POST', encodeTarget(target), CONNECT, restSend)
      : rawBinary(port, encodeTarget(target), WEB, grpcFrame(grpcSerialize({ message: { messageId: 'w1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } })));
  await rawRoundTrip(port, raw, 8_000);
  await settle();
  expect(rec.calls.map((c) => c.method)).toEqual([]);
});

const J1 = { 'content-type': 'application/json', 'a2a-version': '1.0' };
const protoBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'x' })
  .replace('{', '{"__proto__":' + sendBody + ',')
  .replace(',"jsonrpc":"2.0","id":1,"method":"x"', '');
const classic: Array<[string, (p: number) => string]> = [
  ['JSON-RPC send', (p) => req(p, 'POST', '/a2a/jsonrpc', J1, sendBody)],
  ['JSON-RPC in __proto__ only', (p) => req(p, 'POST', '/a2a/jsonrpc', J1, protoBody)],
  ['JSON-RPC __proto__ under a listed prefix', (p) => req(p, 'POST', '/a2a/hook', J1, protoBody)],
  ['REST send', (p) => req(p, 'POST', '/a2a/rest/message:send', J1, restSend)],
  ['REST list HEAD', (p) => req(p, 'HEAD', '/a2a/rest/tasks', J1)],
  ['REST get with long s', (p) => req(p, 'GET', '/a2a/rest/ta%C5%BFks/abc', J1)],
  ['REST extended card Kelvin', (p) => req(p, 'GET', '/a2a/rest/extendedAgentCard'.replace('k', '%E2%84%AA'), J1)],
  ['v0.3 REST card', (p) => req(p, 'GET', '/a2a/rest/v1/card', {})],
  ['card path under the JSON-RPC endpoint with a body', (p) => req(p, 'GET', '/a2a/jsonrpc/.well-known/agent-card.json', J1, sendBody)],
];
const classicCases: Array<[string, string, (p: number) => string]> = [];
for (const name of Object.keys(PROXIES)) for (const [n, f] of classic) classicCases.push([name, n, f]);
test.each(classicCases)('deny-all %s: %s does not reach the handler', async (name, _n, make) => {
  rec.clear();
  const port = ports[name] as number;
  await rawRoundTrip(port, make(port), 8_000);
  await settle();
  expect(rec.calls.map((c) => c.method)).toEqual([]);
});

// The gRPC port: only the exact method path is a call; folded, prefixed and v0.3 spellings are refused, never relayed.
const grpcPaths = [
  '/lf.a2a.v1.A2A\u017Fervice/SendMessage',
  '/lf.a2a.v1.a2aservice/SendMessage',
  '/lf.a2a.v1.A2AService/SendMessage/',
  '/x/lf.a2a.v1.A2AService/SendMessage',
  '/a2a.v1.A2AService/SendMessage',
  '/lf.a2a.v1.A2AService/sendMessage',
];
test.each(grpcPaths)('deny-all gRPC port: %s does not reach the handler', async (path) => {
  rec.clear();
  for (const p of Object.values(proxies)) {
    const body = grpcFrame(grpcSerialize({ message: { messageId: 'g1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } }));
    await rawGrpc(p.grpcAddress as string, path, body, { 'a2a-version': '1.0' }).catch(() => undefined);
    await rawGrpc(p.grpcAddress as string, path, body, { 'a2a-version': '0.3' }).catch(() => undefined);
  }
  await settle();
  expect(rec.calls.map((c) => c.method)).toEqual([]);
});

test('allow control: through each proxy an approved JSON-RPC call and an approved gRPC call reach the handler', async () => {
  rec.clear();
  guardian.script(() => ({ decision: 'allow' }));
  try {
    for (const p of Object.values(proxies)) {
      const port = Number(new URL(p.url).port);
      await rawRoundTrip(port, req(port, 'POST', '/a2a/jsonrpc', { 'content-type': 'application/json', 'a2a-version': '1.0' }, sendBody), 8_000);
      const g = await rawGrpc(
        p.grpcAddress as string,
        '/lf.a2a.v1.A2AService/SendMessage',
        grpcFrame(grpcSerialize({ message: { messageId: 'ok', role: 'ROLE_USER', parts: [{ text: 'hi' }] } })),
        { 'a2a-version': '1.0' },
      );
      expect(g.grpcStatus).toBe(0);
    }
    await settle();
    expect(rec.calls.map((c) => c.method)).toEqual(Object.keys(PROXIES).flatMap(() => ['sendMessage', 'sendMessage']));
  } finally {
    guardian.script(DENY_ALL);
    rec.clear();
  }
});
