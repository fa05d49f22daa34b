/**
 * Three areas, each with the oracle at the real SDK
 * agent's request handler (handler-recorder) and an allow control showing the oracle fires.
 *
 *  1. ROLE=client: absolute-form / authority-form targets, CONNECT, Host tricks, gRPC :authority. No
 *     call may reach the remote agent's handler (or any other agent's) without the guardian's approval,
 *     nothing may land anywhere but UPSTREAM_URL, the proxy's identity headers (signed assertion,
 *     X-AOS-Agent-*) go nowhere else, and the guardian's `to` must name where the call lands.
 *  2. PASSTHROUGH_PATHS (a prefix holding the agent's A2A routes AND a non-A2A route, the root, the
 *     A2A endpoints themselves) and NON_A2A=forward: no A2A call, in any binding or spelling, reaches
 *     the handler unjudged.
 *  3. gRPC message compression: every grpc-encoding / flag / framing combination either is refused or
 *     reaches the agent's gRPC handler as exactly the message the guardian judged.
 */
import http2 from 'node:http2';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type http from 'node:http';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import { startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type Envelope, type TestGuardian } from '../../helpers/guardian';
import { handlerRecorder, type HandlerRecorder } from '../../helpers/handler-recorder';
import { rawRoundTrip } from '../../helpers/wire';
import { rawGrpc, grpcFrame, type RawGrpcAnswer } from '../../helpers/grpc';
import { makeKey, writeSigningKey } from '../../helpers/keys';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { textsWith } from '../../helpers/texts';

jest.setTimeout(240_000);

const sdk: typeof A2A = require('@a2a-js/sdk');

const settle = (ms = 150): Promise<void> => new Promise((r) => setTimeout(r, ms));
const DENY_ALL = (env: Envelope) => (env?.method === 'ping' ? { decision: 'allow' as const } : { decision: 'deny' as const });
const ALLOW_ALL = () => ({ decision: 'allow' as const });

const sendBody = (text = 'hi', id: number | string = 1) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } } });
const sendV03 = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
});
const restSend = JSON.stringify({ message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } });
const restSendV03 = JSON.stringify({ message: { messageId: 'm1', role: 'ROLE_USER', content: [{ text: 'hi' }] } });
const J = { 'content-type': 'application/json' };
const V1 = { ...J, 'a2a-version': '1.0' };

/** One raw HTTP/1.1 request; `host` defaults to the port's own authority, `null` omits the Host line. */
function req(port: number, method: string, target: string, headers: Record<string, string>, body = '', host: string | null = `127.0.0.1:${port}`): string {
  const base: Record<string, string> = host === null ? { connection: 'close' } : { host, connection: 'close' };
  const h = Object.entries({ ...base, ...headers, ...(body === '' ? {} : { 'content-length': String(Buffer.byteLength(body)) }) });
  return `${method} ${target} HTTP/1.1\r\n${h.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`;
}
function rawBinary(port: number, method: string, target: string, headers: Record<string, string>, body: Buffer): Buffer {
  const h = Object.entries({ host: `127.0.0.1:${port}`, connection: 'close', ...headers, 'content-length': String(body.length) });
  return Buffer.concat([Buffer.from(`${method} ${target} HTTP/1.1\r\n${h.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}
const methods = (r: HandlerRecorder): string[] => r.calls.map((c) => c.method);

/** A v1.0 SendMessageRequest as the SDK's gRPC server decodes it, serialized with the SDK's own code. */
function grpcSendMessage(text: string, messageId = 'g-1'): Buffer {
  const grpcSdk = require('@a2a-js/sdk/server/grpc') as { A2AService: { sendMessage: { requestSerialize: (v: unknown) => Buffer } } };
  const msg = sdk.SendMessageRequest.fromJSON({ message: { messageId, role: 'ROLE_USER', parts: [{ text }] } });
  return grpcSdk.A2AService.sendMessage.requestSerialize(msg);
}
/** A SendMessageRequest in its protobuf JSON mapping, serialized as the SDK's gRPC server reads it. */
function grpcSerialize(json: unknown): Buffer {
  const grpcSdk = require('@a2a-js/sdk/server/grpc') as { A2AService: { sendMessage: { requestSerialize: (v: unknown) => Buffer } } };
  return grpcSdk.A2AService.sendMessage.requestSerialize(sdk.SendMessageRequest.fromJSON(json));
}
const SEND_PATH = '/lf.a2a.v1.A2AService/SendMessage';
/** gRPC metadata of a v1.0 call (the SDK's gRPC server refuses a call without it as v0.3). */
const GV1 = { 'a2a-version': '1.0' };

/* =========================================================================================== */
/* 1. ROLE=client                                                                               */
/* =========================================================================================== */

describe('ROLE=client: outbound calls', () => {
  const recRemote = handlerRecorder();
  const recEvil = handlerRecorder();
  let remote: TestAgent;
  let evil: TestAgent;
  let guardian: TestGuardian;
  let proxy: TestProxy;
  let port = 0;
  let evilPort = 0;
  let remotePort = 0;
  let dir = '';

  beforeAll(async () => {
    // "evil": another SDK agent on the same machine; nothing may ever reach it through the client proxy.
    evil = await startAgent({ wrapRequestHandler: recEvil.wrap, grpc: true });
    evilPort = Number(new URL(evil.origin).port);
    // The remote agent's card claims to BE evil (its JSON-RPC/REST URLs name evil's origin); its gRPC
    // interface is its own, on another port, so the operator names it (GRPC_UPSTREAM_URL: a remote card
    // may only name UPSTREAM_URL's own host and port). A card is the remote's word, not where the proxy sends.
    remote = await startAgent({ wrapRequestHandler: recRemote.wrap, grpc: true, advertise: () => evil.origin, name: 'Remote claiming another URL' });
    remotePort = Number(new URL(remote.origin).port);
    guardian = await startGuardian();
    guardian.script(DENY_ALL);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-'));
    const key = await makeKey('probe-client');
    proxy = await startTestProxy({
      ROLE: 'client',
      UPSTREAM_URL: remote.origin,
      GUARDIAN_URL: guardian.url,
      GRPC_PORT: '0',
      FAIL_MODE: 'closed',
      GRPC_UPSTREAM_URL: `http://${remote.grpcAddress as string}`,
      OBSERVED_AGENT_ID: 'probe-caller',
      OBSERVED_AGENT_NAME: 'probe caller',
      OBSERVED_AGENT_URL: 'http://caller.example/a2a',
      OBSERVED_AGENT_VERSION: '1.0.0',
      ASSERTION_SIGNING_KEY_FILE: await writeSigningKey(dir, key),
    });
    port = Number(new URL(proxy.url).port);
    await rawRoundTrip(port, req(port, 'GET', '/.well-known/agent-card.json', {}), 8_000);
    await settle(300);
    recRemote.clear();
    recEvil.clear();
    remote.clear();
    evil.clear();
  });
  afterAll(async () => {
    await proxy?.close();
    await remote?.close();
    await evil?.close();
    await guardian?.close();
    if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
  });

  const E = () => `127.0.0.1:${evilPort}`;
  const probes: Array<[string, () => string]> = [
    ['absolute-form JSON-RPC to another agent', () => req(port, 'POST', `http://${E()}/a2a/jsonrpc`, V1, sendBody(), E())],
    ['absolute-form JSON-RPC to the upstream itself', () => req(port, 'POST', `http://127.0.0.1:${remotePort}/a2a/jsonrpc`, V1, sendBody())],
    ['absolute-form JSON-RPC, proxy host in target', () => req(port, 'POST', `http://127.0.0.1:${port}/a2a/jsonrpc`, V1, sendBody())],
    ['absolute-form upper-case scheme', () => req(port, 'POST', `HTTP://${E()}/a2a/jsonrpc`, V1, sendBody(), E())],
    ['absolute-form https', () => req(port, 'POST', `https://${E()}/a2a/jsonrpc`, V1, sendBody(), E())],
    ['absolute-form REST send', () => req(port, 'POST', `http://${E()}/a2a/rest/message:send`, V1, restSend, E())],
    ['absolute-form REST list', () => req(port, 'GET', `http://${E()}/a2a/rest/tasks`, V1, '', E())],
    ['absolute-form card of another agent', () => req(port, 'GET', `http://${E()}/.well-known/agent-card.json`, {}, '', E())],
    ['absolute-form with userinfo', () => req(port, 'POST', `http://127.0.0.1:${remotePort}@${E()}/a2a/jsonrpc`, V1, sendBody(), E())],
    ['scheme-relative target', () => req(port, 'POST', `//${E()}/a2a/jsonrpc`, V1, sendBody(), E())],
    ['backslash target', () => req(port, 'POST', `/\\${E()}/a2a/jsonrpc`, V1, sendBody(), E())],
    ['authority-form POST', () => req(port, 'POST', E(), V1, sendBody(), E())],
    ['CONNECT tunnel then JSON-RPC', () => `CONNECT ${E()} HTTP/1.1\r\nhost: ${E()}\r\n\r\n${req(evilPort, 'POST', '/a2a/jsonrpc', V1, sendBody())}`],
    [
      'CONNECT to upstream then JSON-RPC',
      () => `CONNECT 127.0.0.1:${remotePort} HTTP/1.1\r\nhost: 127.0.0.1:${remotePort}\r\n\r\n${req(remotePort, 'POST', '/a2a/jsonrpc', V1, sendBody())}`,
    ],
    ['OPTIONS *', () => req(port, 'OPTIONS', '*', V1, sendBody())],
    ['Host names another agent', () => req(port, 'POST', '/a2a/jsonrpc', V1, sendBody(), E())],
    [
      'duplicate Host',
      () => req(port, 'POST', '/a2a/jsonrpc', { ...V1, host: E() }, sendBody()).replace('connection: close', `host: ${E()}\r\nconnection: close`),
    ],
    ['no Host (HTTP/1.1)', () => req(port, 'POST', '/a2a/jsonrpc', V1, sendBody(), null)],
    [
      'X-Forwarded-Host / Forwarded name another agent',
      () =>
        req(
          port,
          'POST',
          '/a2a/jsonrpc',
          { ...V1, 'x-forwarded-host': E(), forwarded: `host=${E()};proto=http`, 'x-forwarded-port': String(evilPort) },
          sendBody(),
        ),
    ],
    [
      'Proxy-Connection / Proxy-Authorization',
      () => req(port, 'POST', `http://${E()}/a2a/jsonrpc`, { ...V1, 'proxy-connection': 'keep-alive', 'proxy-authorization': 'Basic eDp5' }, sendBody(), E()),
    ],
    ['userinfo-looking path segment', () => req(port, 'POST', `/a2a/jsonrpc@${E()}`, V1, sendBody())],
    ['v0.3 JSON-RPC origin-form', () => req(port, 'POST', '/a2a/jsonrpc', J, sendV03)],
    ['streaming JSON-RPC origin-form', () => req(port, 'POST', '/a2a/jsonrpc', V1, sendBody().replace('SendMessage', 'SendStreamingMessage'))],
    ['REST send origin-form', () => req(port, 'POST', '/a2a/rest/message:send', V1, restSend)],
    ['REST v0.3 list origin-form', () => req(port, 'GET', '/a2a/rest/v1/tasks/abc', {})],
    [
      'absolute-form pipelined after a card GET',
      () =>
        req(port, 'GET', '/.well-known/agent-card.json', { connection: 'keep-alive' }) + req(port, 'POST', `http://${E()}/a2a/jsonrpc`, V1, sendBody(), E()),
    ],
  ];

  test.each(probes)('deny-all: %s reaches no handler, nothing lands on another agent', async (_name, make) => {
    recRemote.clear();
    recEvil.clear();
    evil.clear();
    await rawRoundTrip(port, make(), 8_000);
    await settle();
    expect(methods(recRemote)).toEqual([]);
    expect(methods(recEvil)).toEqual([]);
    expect(evil.received.map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });

  const grpcVariants: Array<[string, () => http2.OutgoingHttpHeaders]> = [
    ['plain', () => ({})],
    [':authority another agent', () => ({ ':authority': E() })],
    ['host header another agent', () => ({ host: E() })],
    ['gzip message', () => ({ 'grpc-encoding': 'gzip' })],
  ];
  test.each(grpcVariants)('deny-all gRPC (%s) through the client proxy reaches no handler', async (name, headers) => {
    recRemote.clear();
    recEvil.clear();
    const data = grpcSendMessage('deny-grpc');
    const body = name === 'gzip message' ? grpcFrame(zlib.gzipSync(data), true) : grpcFrame(data);
    await rawGrpc(proxy.grpcAddress as string, SEND_PATH, body, { ...GV1, ...headers() }).catch(() => undefined);
    await settle();
    expect(methods(recRemote)).toEqual([]);
    expect(methods(recEvil)).toEqual([]);
  });

  test('allow control: an approved call lands at UPSTREAM_URL only, with the proxy identity; never on another agent', async () => {
    recRemote.clear();
    recEvil.clear();
    remote.clear();
    evil.clear();
    guardian.script(ALLOW_ALL);
    try {
      await rawRoundTrip(port, req(port, 'POST', '/a2a/jsonrpc', V1, sendBody('allow-http')), 8_000);
      await rawRoundTrip(port, req(port, 'POST', '/a2a/jsonrpc', V1, sendBody('allow-host'), E()), 8_000);
      // Approved or not, absolute-form never leaves for the host it names.
      await rawRoundTrip(port, req(port, 'POST', `http://${E()}/a2a/jsonrpc`, V1, sendBody('allow-abs'), E()), 8_000);
      const g = await rawGrpc(proxy.grpcAddress as string, SEND_PATH, grpcFrame(grpcSendMessage('allow-grpc')), { ...GV1, ':authority': E() });
      await settle();
      expect(g.grpcStatus).toBe(0);
      expect(methods(recRemote)).toEqual(['sendMessage', 'sendMessage', 'sendMessage']);
      expect(methods(recEvil)).toEqual([]);
      expect(evil.received).toEqual([]);
      // The proxy's own identity reached the upstream (so there is a credential to leak) ...
      const http1 = remote.received.filter((r) => r.path === '/a2a/jsonrpc');
      expect(http1.length).toBe(2);
      for (const r of http1) {
        expect(r.headers['x-aos-agent-assertion']).toEqual(expect.any(String));
        expect(r.headers['x-aos-agent-name']).toBe('probe caller');
      }
      expect(recRemote.calls[2]?.headers['x-aos-agent-assertion']).toEqual(expect.any(String));
    } finally {
      guardian.script(DENY_ALL);
      recRemote.clear();
    }
  });

  test('no request of any kind ever reached the other agent (no identity header leaked there)', () => {
    expect(evil.received).toEqual([]);
    expect(methods(recEvil)).toEqual([]);
  });

  /**
   * The guardian's `to` is the remote's own claim. The client-side request hook's
   * `params.context.to.agent.url` is the URL the remote agent's card states (card.url, else its first
   * interface URL: src/a2a/card.ts identityFromCard, src/aos/identity.ts partialAgent), not
   * UPSTREAM_URL, where the proxy actually sends the call. A remote can name any agent it likes
   * (here: another agent's origin) and a guardian policy keyed on the callee's URL judges a
   * destination the bytes never go to.
   */
  test('the guardian `to` names where the approved call lands (UPSTREAM_URL)', async () => {
    recRemote.clear();
    guardian.clear();
    guardian.script(ALLOW_ALL);
    try {
      await rawRoundTrip(port, req(port, 'POST', '/a2a/jsonrpc', V1, sendBody('where-to')), 8_000);
      await settle();
      expect(methods(recRemote)).toEqual(['sendMessage']); // it landed at the remote (UPSTREAM_URL) ...
      const to = guardian.calls()[0]?.params?.context?.to?.agent?.url as string;
      // ... so the guardian must have been told so.
      expect(new URL(to).host).toBe(new URL(remote.origin).host);
    } finally {
      guardian.script(DENY_ALL);
      recRemote.clear();
    }
  });
});

/**
 * With ROLE=client and no GRPC_UPSTREAM_URL, the gRPC upstream is the GRPC interface
 * of the remote's card when it is "on UPSTREAM_URL's host" (src/a2a/bindings/grpc/card.ts sameHost
 * compares hostnames only, and treats localhost/127.0.0.1/[::1] as one). The port is the card's
 * choice: a remote card can send the proxy's approved gRPC calls, with the proxy's signed identity
 * assertion (audience UPSTREAM_URL), its X-AOS-Agent-* headers and its UPSTREAM_* client certificate,
 * to any other service on that host. The guardian's `to` still names the remote agent.
 */
describe('ROLE=client: a card-named gRPC endpoint on another port of the upstream host', () => {
  const recRemote = handlerRecorder();
  const recOther = handlerRecorder();
  let other: TestAgent;
  let remote: TestAgent;
  let guardian: TestGuardian;
  let proxy: TestProxy;
  let dir = '';

  beforeAll(async () => {
    // Another service on the same host (here an SDK agent with gRPC, so the oracle can record what lands).
    other = await startAgent({ wrapRequestHandler: recOther.wrap, grpc: true });
    // The remote serves gRPC itself, but its card names the other service's port.
    remote = await startAgent({ wrapRequestHandler: recRemote.wrap, grpc: true, advertiseGrpc: () => other.grpcAddress as string });
    guardian = await startGuardian();
    guardian.script(ALLOW_ALL);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-'));
    proxy = await startTestProxy({
      ROLE: 'client',
      UPSTREAM_URL: remote.origin,
      GUARDIAN_URL: guardian.url,
      GRPC_PORT: '0',
      FAIL_MODE: 'closed',
      OBSERVED_AGENT_ID: 'probe-caller',
      OBSERVED_AGENT_NAME: 'probe caller',
      OBSERVED_AGENT_URL: 'http://caller.example/a2a',
      OBSERVED_AGENT_VERSION: '1.0.0',
      ASSERTION_SIGNING_KEY_FILE: await writeSigningKey(dir, await makeKey('probe-client2')),
    });
    await rawRoundTrip(Number(new URL(proxy.url).port), req(Number(new URL(proxy.url).port), 'GET', '/.well-known/agent-card.json', {}), 8_000);
    await settle(300);
  });
  afterAll(async () => {
    await proxy?.close();
    await remote?.close();
    await other?.close();
    await guardian?.close();
    if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
  });

  test("an approved gRPC call lands at UPSTREAM_URL's agent, not at another port the card names", async () => {
    recRemote.clear();
    recOther.clear();
    guardian.clear();
    const a = await rawGrpc(proxy.grpcAddress as string, SEND_PATH, grpcFrame(grpcSendMessage('which-port')), GV1).catch(() => undefined);
    await settle();
    // The guardian judged a call to the remote agent (UPSTREAM_URL's card) ...
    expect(guardian.calls()).toHaveLength(1);
    // ... so nothing may land anywhere else, least of all with the proxy's signed identity on it.
    const leaked = recOther.calls.map((c) => ({
      method: c.method,
      assertion: c.headers['x-aos-agent-assertion'] !== undefined,
      name: c.headers['x-aos-agent-name'],
    }));
    expect(leaked).toEqual([]);
    expect(a?.grpcStatus === 0 ? methods(recRemote) : []).toEqual(a?.grpcStatus === 0 ? ['sendMessage'] : []);
  });
});

/* =========================================================================================== */
/* 2. PASSTHROUGH_PATHS and NON_A2A=forward                                                      */
/* =========================================================================================== */

describe('PASSTHROUGH_PATHS and NON_A2A=forward', () => {
  const rec = handlerRecorder();
  let agent: TestAgent;
  let guardian: TestGuardian;
  /** Non-A2A routes the agent serves under the A2A prefix: /a2a/health (GET) and /a2a/hook (any verb). */
  const nonA2a: string[] = [];
  /** gRPC-Web / Connect requests the agent's HTTP port translated to its gRPC service. */
  const grpcWeb: string[] = [];
  async function translateToGrpc(q: http.IncomingMessage, s: http.ServerResponse, rpcPath: string, connectJson: boolean): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of q) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const frameOut = connectJson ? grpcFrame(grpcSerialize(JSON.parse(body.toString('utf8')))) : body;
    const session = http2.connect(`http://${agent.grpcAddress as string}`);
    session.on('error', () => undefined);
    const up = session.request({ ':method': 'POST', ':path': rpcPath, 'content-type': 'application/grpc', te: 'trailers', 'a2a-version': '1.0' });
    const data: Buffer[] = [];
    let trailers: http2.IncomingHttpHeaders = {};
    up.on('data', (c: Buffer) => data.push(c));
    up.on('trailers', (t) => (trailers = t));
    up.on('error', () => undefined);
    up.end(frameOut);
    await new Promise((r) => up.on('close', r));
    session.close();
    const status = String(trailers['grpc-status'] ?? '2');
    if (connectJson) {
      s.writeHead(status === '0' ? 200 : 500, { 'content-type': 'application/json' });
      s.end(JSON.stringify({ grpcStatus: status }));
      return;
    }
    const t = Buffer.from(`grpc-status: ${status}\r\n`);
    const head = Buffer.alloc(5);
    head[0] = 0x80;
    head.writeUInt32BE(t.length, 1);
    s.writeHead(200, { 'content-type': 'application/grpc-web+proto' });
    s.end(Buffer.concat([...data, head, t]));
  }
  const proxies: Record<string, TestProxy> = {};
  const ports: Record<string, number> = {};
  const PROXIES: Record<string, Record<string, string>> = {
    'PASSTHROUGH_PATHS=/a2a': { PASSTHROUGH_PATHS: '/a2a' },
    'PASSTHROUGH_PATHS=/': { PASSTHROUGH_PATHS: '/' },
    'PASSTHROUGH_PATHS=A2A endpoints': { PASSTHROUGH_PATHS: '/a2a/jsonrpc,/a2a/rest,/A2A/REST/v1' },
    'NON_A2A=forward': { NON_A2A: 'forward' },
  };

  beforeAll(async () => {
    agent = await startAgent({ wrapRequestHandler: rec.wrap, extendedAgentCard: true, grpc: true });
    // The agent's own non-A2A routes under the A2A prefix, in front of its express app.
    const server = agent.server as http.Server;
    const [app] = server.listeners('request') as Array<(q: http.IncomingMessage, s: http.ServerResponse) => void>;
    server.removeAllListeners('request');
    server.on('request', (q: http.IncomingMessage, s: http.ServerResponse) => {
      const p = (q.url ?? '').split('?')[0] as string;
      // The agent's A2A gRPC service also reachable as gRPC-Web and Connect (unary JSON) on its HTTP port, as an
      // Envoy grpc_web filter or a connect-go/connect-es server in front of the same service would.
      const rpc = /^(?:\/a2a)?(\/lf\.a2a\.v1\.A2AService\/SendMessage)$/.exec(p);
      const ct = String(q.headers['content-type'] ?? '');
      if (
        rpc !== null &&
        q.method === 'POST' &&
        (/^application\/grpc-web/.test(ct) || (ct === 'application/json' && q.headers['connect-protocol-version'] === '1'))
      ) {
        grpcWeb.push(`${q.method} ${q.url}`);
        void translateToGrpc(q, s, rpc[1] as string, ct === 'application/json');
        return;
      }
      if (/^\/a2a\/(health|hook)(\/|$)/i.test(p)) {
        nonA2a.push(`${q.method} ${q.url}`);
        q.resume();
        q.on('end', () => {
          s.writeHead(200, { 'content-type': 'text/plain' });
          s.end('ok');
        });
        return;
      }
      (app as (q: http.IncomingMessage, s: http.ServerResponse) => void)(q, s);
    });
    guardian = await startGuardian();
    guardian.script(DENY_ALL);
    for (const [name, env] of Object.entries(PROXIES)) {
      const p = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', FAIL_MODE: 'closed', ...env });
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

  const gz = (s: string) => zlib.gzipSync(Buffer.from(s));
  type Probe = (port: number) => string | Buffer;
  const probes: Array<[string, Probe]> = [
    // JSON-RPC, at and around the endpoint
    ['jsonrpc at endpoint', (p) => req(p, 'POST', '/a2a/jsonrpc', V1, sendBody())],
    ['jsonrpc at the non-A2A route', (p) => req(p, 'POST', '/a2a/hook', V1, sendBody())],
    ['jsonrpc trailing slash', (p) => req(p, 'POST', '/a2a/jsonrpc/', V1, sendBody())],
    ['jsonrpc below endpoint', (p) => req(p, 'POST', '/a2a/jsonrpc/x', V1, sendBody())],
    ['jsonrpc upper case', (p) => req(p, 'POST', '/A2A/JSONRPC', V1, sendBody())],
    ['jsonrpc encoded letter', (p) => req(p, 'POST', '/a2a/%6asonrpc', V1, sendBody())],
    ['jsonrpc dot segment', (p) => req(p, 'POST', '/a2a/./jsonrpc', V1, sendBody())],
    ['jsonrpc dot-dot from route', (p) => req(p, 'POST', '/a2a/health/../jsonrpc', V1, sendBody())],
    ['jsonrpc encoded dot-dot', (p) => req(p, 'POST', '/a2a/health/%2e%2e/jsonrpc', V1, sendBody())],
    ['jsonrpc encoded slash', (p) => req(p, 'POST', '/a2a/health%2f..%2fjsonrpc', V1, sendBody())],
    ['jsonrpc double slash', (p) => req(p, 'POST', '/a2a//jsonrpc', V1, sendBody())],
    ['jsonrpc matrix param', (p) => req(p, 'POST', '/a2a/jsonrpc;x=1', V1, sendBody())],
    ['jsonrpc with query', (p) => req(p, 'POST', '/a2a/jsonrpc?x=1', V1, sendBody())],
    ['jsonrpc encoded NUL', (p) => req(p, 'POST', '/a2a/jsonrpc%00', V1, sendBody())],
    ['jsonrpc fragment', (p) => req(p, 'POST', '/a2a/jsonrpc#x', V1, sendBody())],
    ['jsonrpc absolute-form', (p) => req(p, 'POST', `http://127.0.0.1:${new URL(agent.origin).port}/a2a/jsonrpc`, V1, sendBody())],
    ['jsonrpc absolute-form to the non-A2A route', (p) => req(p, 'POST', `http://127.0.0.1:${p}/a2a/health`, V1, sendBody())],
    ['jsonrpc duplicate Host', (p) => req(p, 'POST', '/a2a/jsonrpc', V1, sendBody()).replace('connection: close', 'host: agent.example\r\nconnection: close')],
    ['jsonrpc v0.3', (p) => req(p, 'POST', '/a2a/jsonrpc', J, sendV03)],
    ['jsonrpc text/plain', (p) => req(p, 'POST', '/a2a/jsonrpc', { 'content-type': 'text/plain', 'a2a-version': '1.0' }, sendBody())],
    ['jsonrpc no content-type', (p) => req(p, 'POST', '/a2a/jsonrpc', { 'a2a-version': '1.0' }, sendBody())],
    ['jsonrpc charset utf-16', (p) => req(p, 'POST', '/a2a/jsonrpc', { 'content-type': 'application/json; charset=utf-16', 'a2a-version': '1.0' }, sendBody())],
    ['jsonrpc BOM', (p) => req(p, 'POST', '/a2a/jsonrpc', V1, `\uFEFF${sendBody()}`)],
    ['jsonrpc gzip body', (p) => rawBinary(p, 'POST', '/a2a/jsonrpc', { ...V1, 'content-encoding': 'gzip' }, gz(sendBody()))],
    ['jsonrpc gzip body at non-A2A route', (p) => rawBinary(p, 'POST', '/a2a/hook', { ...V1, 'content-encoding': 'gzip' }, gz(sendBody()))],
    ['jsonrpc gzip+gzip', (p) => rawBinary(p, 'POST', '/a2a/jsonrpc', { ...V1, 'content-encoding': 'gzip, gzip' }, zlib.gzipSync(gz(sendBody())))],
    ['jsonrpc identity coding', (p) => req(p, 'POST', '/a2a/jsonrpc', { ...V1, 'content-encoding': 'identity' }, sendBody())],
    ['jsonrpc UTF-16LE body', (p) => rawBinary(p, 'POST', '/a2a/jsonrpc', V1, Buffer.from(`\uFEFF${sendBody()}`, 'utf16le'))],
    ['jsonrpc GET with method override', (p) => req(p, 'GET', '/a2a/jsonrpc', { ...V1, 'x-http-method-override': 'POST' }, sendBody())],
    [
      'jsonrpc override header on the route',
      (p) =>
        req(p, 'POST', '/a2a/hook', { ...V1, 'x-http-method-override': 'POST', 'x-original-url': '/a2a/jsonrpc', 'x-rewrite-url': '/a2a/jsonrpc' }, sendBody()),
    ],
    ['jsonrpc _method query', (p) => req(p, 'GET', '/a2a/jsonrpc?_method=POST', V1, sendBody())],
    [
      'jsonrpc trailing data after body',
      (p) =>
        req(p, 'POST', '/a2a/jsonrpc', V1, sendBody()).replace(/content-length: (\d+)/, (_m, n: string) => `content-length: ${Number(n)}`) + '\r\n\r\nGARBAGE',
    ],
    ['jsonrpc method case variant', (p) => req(p, 'POST', '/a2a/jsonrpc', V1, sendBody().replace('SendMessage', 'sendMessage'))],
    ['jsonrpc method v0.3 name under 1.0', (p) => req(p, 'POST', '/a2a/jsonrpc', V1, sendV03)],
    ...[
      'sendMessage',
      'SendMessage ',
      ' SendMessage',
      'SENDMESSAGE',
      'message/send ',
      'Message/Send',
      'message.send',
      'SendMessage\u0000',
      'ListTaskPushNotificationConfig',
      'TaskSubscription',
      'GetAgentCard',
      'GetAuthenticatedExtendedCard',
      'agent/getCard',
      'tasks/list',
    ].map((m): [string, Probe] => [
      `jsonrpc method spelled ${JSON.stringify(m)}`,
      (p) =>
        req(
          p,
          'POST',
          '/a2a/jsonrpc',
          V1,
          JSON.stringify({ jsonrpc: '2.0', id: 1, method: m, params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } } }),
        ),
    ]),
    [
      'jsonrpc chunked',
      (p) =>
        `POST /a2a/jsonrpc HTTP/1.1\r\nhost: 127.0.0.1:${p}\r\ncontent-type: application/json\r\na2a-version: 1.0\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n${Buffer.byteLength(sendBody()).toString(16)}\r\n${sendBody()}\r\n0\r\n\r\n`,
    ],
    // REST
    ['rest send', (p) => req(p, 'POST', '/a2a/rest/message:send', V1, restSend)],
    ['rest send v0.3', (p) => req(p, 'POST', '/a2a/rest/v1/message:send', J, restSendV03)],
    ['rest list', (p) => req(p, 'GET', '/a2a/rest/tasks', V1)],
    ['rest get', (p) => req(p, 'GET', '/a2a/rest/tasks/abc', V1)],
    ['rest get v0.3', (p) => req(p, 'GET', '/a2a/rest/v1/tasks/abc', {})],
    ['rest cancel', (p) => req(p, 'POST', '/a2a/rest/tasks/abc:cancel', V1, '{}')],
    ['rest extended card', (p) => req(p, 'GET', '/a2a/rest/extendedAgentCard', V1)],
    ['rest v0.3 card', (p) => req(p, 'GET', '/a2a/rest/v1/card', {})],
    ['rest upper case', (p) => req(p, 'GET', '/A2A/REST/TASKS', V1)],
    ['rest tenant', (p) => req(p, 'GET', '/a2a/rest/t1/tasks', V1)],
    ['rest encoded colon', (p) => req(p, 'POST', '/a2a/rest/message%3asend', V1, restSend)],
    ['rest dot-dot from route', (p) => req(p, 'GET', '/a2a/health/../rest/tasks', V1)],
    ['rest HEAD', (p) => req(p, 'HEAD', '/a2a/rest/tasks/abc', V1)],
    ['rest GET override to POST send', (p) => req(p, 'GET', '/a2a/rest/message:send', { ...V1, 'x-http-method': 'POST' }, restSend)],
    ['rest query trick', (p) => req(p, 'GET', '/a2a/health?/a2a/rest/tasks', V1)],
    ['rest list under the route', (p) => req(p, 'GET', '/a2a/health/tasks', V1)],
    ['rest send under the route', (p) => req(p, 'POST', '/a2a/hook/message:send', V1, restSend)],
    ['rest absolute-form', (p) => req(p, 'GET', `http://127.0.0.1:${p}/a2a/rest/tasks`, V1)],
    ['rest push config list', (p) => req(p, 'GET', '/a2a/rest/tasks/abc/pushNotificationConfigs', V1)],
    ['rest subscribe GET', (p) => req(p, 'GET', '/a2a/rest/tasks/abc:subscribe', V1)],
    // The gRPC binding's paths on the HTTP port. The agent's HTTP port here also serves its A2A
    // gRPC service as gRPC-Web and Connect unary JSON (translated to its SDK gRPC server). The proxy reads
    // neither shape as A2A (not JSON-RPC, not a REST route: src/a2a/classify.ts passthrough() and the
    // NON_A2A=forward branch exclude card endpoints and looksLikeRest paths only), so under a listed prefix
    // that covers the path (or PASSTHROUGH_PATHS=/, or NON_A2A=forward) an A2A SendMessage is relayed unjudged.
    [
      'grpc-web frame on HTTP/1.1',
      (p) => rawBinary(p, 'POST', SEND_PATH, { 'content-type': 'application/grpc-web+proto', 'a2a-version': '1.0' }, grpcFrame(grpcSendMessage('web'))),
    ],
    [
      'grpc frame on HTTP/1.1',
      (p) => rawBinary(p, 'POST', SEND_PATH, { 'content-type': 'application/grpc', te: 'trailers', 'a2a-version': '1.0' }, grpcFrame(grpcSendMessage('h1'))),
    ],
    ['connect JSON unary', (p) => req(p, 'POST', SEND_PATH, { ...V1, 'connect-protocol-version': '1' }, restSend)],
    ['connect JSON under the prefix', (p) => req(p, 'POST', `/a2a${SEND_PATH}`, { ...V1, 'connect-protocol-version': '1' }, restSend)],
    // smuggling behind a passthrough request
    [
      'CL smuggle behind route GET',
      (p) => {
        const inner = req(p, 'POST', '/a2a/jsonrpc', V1, sendBody());
        return `GET /a2a/health HTTP/1.1\r\nhost: 127.0.0.1:${p}\r\ncontent-length: ${Buffer.byteLength(inner)}\r\n\r\n${inner}`;
      },
    ],
    [
      'TE+CL behind route POST',
      (p) =>
        `POST /a2a/hook HTTP/1.1\r\nhost: 127.0.0.1:${p}\r\ntransfer-encoding: chunked\r\ncontent-length: 4\r\n\r\n0\r\n\r\n${req(p, 'POST', '/a2a/jsonrpc', V1, sendBody())}`,
    ],
    ['pipelined route then jsonrpc', (p) => req(p, 'GET', '/a2a/health', { connection: 'keep-alive' }) + req(p, 'POST', '/a2a/jsonrpc', V1, sendBody())],
    ['pipelined route then rest', (p) => req(p, 'GET', '/a2a/health', { connection: 'keep-alive' }) + req(p, 'GET', '/a2a/rest/tasks', V1)],
    [
      'upgrade on route then jsonrpc',
      (p) =>
        req(p, 'GET', '/a2a/health', {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
          'sec-websocket-version': '13',
        }) + req(p, 'POST', '/a2a/jsonrpc', V1, sendBody()),
    ],
    [
      'h2c upgrade on route',
      (p) =>
        req(p, 'GET', '/a2a/health', { connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQAAP__' }) +
        req(p, 'POST', '/a2a/jsonrpc', V1, sendBody()),
    ],
    ['Connection names A2A-Version on route', (p) => req(p, 'POST', '/a2a/hook', { ...V1, connection: 'a2a-version' }, sendBody())],
    ['expect 100-continue on route', (p) => req(p, 'POST', '/a2a/hook', { ...V1, expect: '100-continue' }, sendBody())],
    ['http/1.0 to route then jsonrpc', (p) => `GET /a2a/health HTTP/1.0\r\nconnection: keep-alive\r\n\r\n${req(p, 'POST', '/a2a/jsonrpc', V1, sendBody())}`],
  ];

  const cases: Array<[string, string, Probe]> = [];
  for (const name of Object.keys(PROXIES)) for (const [pn, make] of probes) cases.push([name, pn, make]);

  test.each(cases)('deny-all %s: %s does not reach the handler', async (name, _pn, make) => {
    rec.clear();
    const p = ports[name] as number;
    // Most probes end with the connection; a few leave it open (keep-alive after a refusal): 3 s is the wait for those.
    await rawRoundTrip(p, make(p), 3_000);
    await settle(100);
    expect(methods(rec)).toEqual([]);
  });

  test('control: the agent itself acts on gRPC-Web and Connect calls of its gRPC service (the oracle fires)', async () => {
    rec.clear();
    const ap = Number(new URL(agent.origin).port);
    await rawRoundTrip(
      ap,
      rawBinary(ap, 'POST', SEND_PATH, { 'content-type': 'application/grpc-web+proto', 'a2a-version': '1.0' }, grpcFrame(grpcSendMessage('web'))),
      8_000,
    );
    await rawRoundTrip(ap, req(ap, 'POST', SEND_PATH, { ...V1, 'connect-protocol-version': '1' }, restSend), 8_000);
    await settle();
    expect(methods(rec)).toEqual(['sendMessage', 'sendMessage']);
    rec.clear();
  });

  test.each(['PASSTHROUGH_PATHS=/a2a', 'PASSTHROUGH_PATHS=/', 'NON_A2A=forward'])('control %s: the non-A2A routes are forwarded unjudged', async (name) => {
    nonA2a.length = 0;
    const p = ports[name] as number;
    const a = await rawRoundTrip(p, req(p, 'GET', '/a2a/health', {}), 8_000);
    const b = await rawRoundTrip(p, req(p, 'POST', '/a2a/hook', J, '{"event":"x"}'), 8_000);
    expect(a).toMatch(/^HTTP\/1\.1 200/);
    expect(b).toMatch(/^HTTP\/1\.1 200/);
    expect(nonA2a).toEqual(['GET /a2a/health', 'POST /a2a/hook']);
  });

  test.each(Object.keys(PROXIES))('allow control %s: JSON-RPC and REST calls reach the handler', async (name) => {
    rec.clear();
    guardian.script(ALLOW_ALL);
    try {
      const p = ports[name] as number;
      await rawRoundTrip(p, req(p, 'POST', '/a2a/jsonrpc', V1, sendBody()), 8_000);
      await rawRoundTrip(p, req(p, 'GET', '/a2a/rest/tasks', V1), 8_000);
      await settle();
      expect(methods(rec)).toEqual(['sendMessage', 'listTasks']);
    } finally {
      guardian.script(DENY_ALL);
      rec.clear();
    }
  });
});

/* =========================================================================================== */
/* 3. gRPC message compression                                                                 */
/* =========================================================================================== */

describe('gRPC message compression', () => {
  const rec = handlerRecorder();
  let agent: TestAgent;
  let guardian: TestGuardian;
  let proxy: TestProxy;
  const MAX = 256 * 1024;

  beforeAll(async () => {
    agent = await startAgent({ wrapRequestHandler: rec.wrap, grpc: true });
    guardian = await startGuardian();
    guardian.script(DENY_ALL);
    proxy = await startTestProxy({
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      ROLE: 'server',
      GRPC_PORT: '0',
      FAIL_MODE: 'closed',
      MAX_BODY_BYTES: String(MAX),
    });
    await settle(300);
    rec.clear();
  });
  afterAll(async () => {
    await proxy?.close();
    await agent?.close();
    await guardian?.close();
  });

  const msg = (marker: string) => grpcSendMessage(`${marker}-text`);
  const frame = (flag: number, data: Buffer, len = data.length) => {
    const h = Buffer.alloc(5);
    h[0] = flag;
    h.writeUInt32BE(len, 1);
    return Buffer.concat([h, data]);
  };
  const badCrc = (b: Buffer) => {
    const c = Buffer.from(b);
    c[c.length - 8] = (c[c.length - 8] as number) ^ 0xff;
    return c;
  };
  interface Variant {
    body: Buffer;
    headers?: http2.OutgoingHttpHeaders;
    split?: number;
  }
  /** name, and the request for a marker: every variant is sent under deny-all and under allow. */
  const variants: Array<[string, (m: string) => Variant]> = [
    ['identity, flag 0 (control)', (m) => ({ body: frame(0, msg(m)) })],
    ['gzip, flag 1', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'gzip' } })],
    ['deflate (zlib), flag 1', (m) => ({ body: frame(1, zlib.deflateSync(msg(m))), headers: { 'grpc-encoding': 'deflate' } })],
    ['deflate raw, flag 1', (m) => ({ body: frame(1, zlib.deflateRawSync(msg(m))), headers: { 'grpc-encoding': 'deflate' } })],
    ['gzip encoding, flag 0', (m) => ({ body: frame(0, msg(m)), headers: { 'grpc-encoding': 'gzip' } })],
    ['identity encoding, flag 1 (gzip data)', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'identity' } })],
    ['identity encoding, flag 1 (plain data)', (m) => ({ body: frame(1, msg(m)), headers: { 'grpc-encoding': 'identity' } })],
    ['no encoding, flag 1 (gzip data)', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))) })],
    ['no encoding, flag 1 (plain data)', (m) => ({ body: frame(1, msg(m)) })],
    ['GZIP upper case', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'GZIP' } })],
    ['gzip with spaces', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': ' gzip ' } })],
    ['encoding list gzip,identity', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'gzip,identity' } })],
    ['two grpc-encoding headers', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': ['gzip', 'identity'] } })],
    ['x-gzip', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'x-gzip' } })],
    ['snappy', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'snappy' } })],
    ['br data under gzip', (m) => ({ body: frame(1, zlib.brotliCompressSync(msg(m))), headers: { 'grpc-encoding': 'gzip' } })],
    ['gzip data under deflate', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'deflate' } })],
    ['content-encoding gzip (not grpc-encoding)', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'content-encoding': 'gzip' } })],
    ['grpc-internal-encoding-request gzip', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-internal-encoding-request': 'gzip' } })],
    [
      'concatenated gzip members (message split)',
      (m) => {
        const b = msg(m);
        const cut = Math.floor(b.length / 2);
        return { body: frame(1, Buffer.concat([zlib.gzipSync(b.subarray(0, cut)), zlib.gzipSync(b.subarray(cut))])), headers: { 'grpc-encoding': 'gzip' } };
      },
    ],
    [
      'concatenated gzip members (two whole messages)',
      (m) => ({
        body: frame(1, Buffer.concat([zlib.gzipSync(msg(`${m}-a`)), zlib.gzipSync(grpcSendMessage(`${m}-b-text`, 'g-2'))])),
        headers: { 'grpc-encoding': 'gzip' },
      }),
    ],
    [
      'gzip with trailing garbage',
      (m) => ({ body: frame(1, Buffer.concat([zlib.gzipSync(msg(m)), Buffer.from('\x12\x05EVIL!garbage')])), headers: { 'grpc-encoding': 'gzip' } }),
    ],
    [
      'gzip with trailing protobuf',
      (m) => ({ body: frame(1, Buffer.concat([zlib.gzipSync(msg(m)), grpcSendMessage(`${m}-hidden`)])), headers: { 'grpc-encoding': 'gzip' } }),
    ],
    [
      'gzip then a second, plain message',
      (m) => ({ body: Buffer.concat([frame(1, zlib.gzipSync(msg(m))), frame(0, grpcSendMessage(`${m}-second`))]), headers: { 'grpc-encoding': 'gzip' } }),
    ],
    [
      'plain then a second, gzip message',
      (m) => ({ body: Buffer.concat([frame(0, msg(m)), frame(1, zlib.gzipSync(grpcSendMessage(`${m}-second`)))]), headers: { 'grpc-encoding': 'gzip' } }),
    ],
    ['gzip bad CRC', (m) => ({ body: frame(1, badCrc(zlib.gzipSync(msg(m)))), headers: { 'grpc-encoding': 'gzip' } })],
    ['gzip truncated trailer', (m) => ({ body: frame(1, zlib.gzipSync(msg(m)).subarray(0, -4)), headers: { 'grpc-encoding': 'gzip' } })],
    ['gzip empty payload', () => ({ body: frame(1, Buffer.alloc(0)), headers: { 'grpc-encoding': 'gzip' } })],
    ['gzip of empty message', () => ({ body: frame(1, zlib.gzipSync(Buffer.alloc(0))), headers: { 'grpc-encoding': 'gzip' } })],
    [
      'gzip bomb (64 MiB of zeros)',
      () => ({ body: frame(1, zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 })), headers: { 'grpc-encoding': 'gzip' } }),
    ],
    [
      'gzip bomb just over the limit',
      (m) => ({
        body: frame(1, zlib.gzipSync(Buffer.concat([msg(m), Buffer.from([0x22, 0x80, 0x80, 0x10]), Buffer.alloc(MAX)]))),
        headers: { 'grpc-encoding': 'gzip' },
      }),
    ],
    [
      'trailing bytes after the frame',
      (m) => ({ body: Buffer.concat([frame(1, zlib.gzipSync(msg(m))), Buffer.from([0, 0])]), headers: { 'grpc-encoding': 'gzip' } }),
    ],
    [
      'length prefix longer than data',
      (m) => {
        const d = zlib.gzipSync(msg(m));
        return { body: frame(1, d, d.length + 10), headers: { 'grpc-encoding': 'gzip' } };
      },
    ],
    [
      'length prefix shorter than data',
      (m) => {
        const d = zlib.gzipSync(msg(m));
        return { body: frame(1, d, d.length - 12), headers: { 'grpc-encoding': 'gzip' } };
      },
    ],
    [
      'length prefix shorter, rest is a frame',
      (m) => {
        const inner = frame(0, grpcSendMessage(`${m}-inner`));
        const d = zlib.gzipSync(msg(m));
        return { body: Buffer.concat([frame(1, d), inner]).subarray(0), headers: { 'grpc-encoding': 'gzip' } };
      },
    ],
    ['flag 2', (m) => ({ body: frame(2, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'gzip' } })],
    ['flag 0x81', (m) => ({ body: frame(0x81, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'gzip' } })],
    ['gzip split in 1-byte DATA frames', (m) => ({ body: frame(1, zlib.gzipSync(msg(m))), headers: { 'grpc-encoding': 'gzip' }, split: 64 })],
    ['gzip stored (level 0)', (m) => ({ body: frame(1, zlib.gzipSync(msg(m), { level: 0 })), headers: { 'grpc-encoding': 'gzip' } })],
    [
      'gzip with FEXTRA/FNAME header',
      (m) => {
        const g = zlib.gzipSync(msg(m));
        // FLG = FNAME: a zero-terminated file name after the 10-byte header.
        const h = Buffer.from(g.subarray(0, 10));
        h[3] = 0x08;
        return { body: frame(1, Buffer.concat([h, Buffer.from('name.bin\0'), g.subarray(10)])), headers: { 'grpc-encoding': 'gzip' } };
      },
    ],
    [
      'grpc+json content type with gzip',
      (m) => ({
        body: frame(1, zlib.gzipSync(Buffer.from(JSON.stringify({ message: { messageId: 'x', role: 'ROLE_USER', parts: [{ text: `${m}-text` }] } })))),
        headers: { 'grpc-encoding': 'gzip', 'content-type': 'application/grpc+json' },
      }),
    ],
  ];

  async function send(v: Variant): Promise<RawGrpcAnswer | undefined> {
    return rawGrpc(proxy.grpcAddress as string, SEND_PATH, v.body, { ...GV1, ...v.headers }, v.split ?? 1).catch(() => undefined);
  }

  test.each(variants)('deny-all: %s does not reach the handler', async (name, make) => {
    rec.clear();
    await send(make(`deny-${name.replace(/\W+/g, '_')}`));
    await settle();
    expect(methods(rec)).toEqual([]);
  });

  const reached: string[] = [];
  test.each(variants)('allow: %s is refused or reaches the agent as exactly what the guardian judged', async (name, make) => {
    rec.clear();
    guardian.clear();
    guardian.script(ALLOW_ALL);
    const marker = `mk${Math.random().toString(36).slice(2, 10)}`;
    try {
      const answer = await send(make(marker));
      await settle();
      const judged = guardian.calls().map((e) => textsWith(e?.params?.payload, marker));
      if (rec.calls.length === 0) {
        // Refused: with an error status, and nothing of it was acted on.
        expect(answer?.grpcStatus).not.toBe(0);
        return;
      }
      reached.push(name);
      expect(rec.calls).toHaveLength(1);
      expect(judged).toHaveLength(1);
      // What the agent's gRPC handler decoded carries exactly the texts the guardian read ...
      expect(textsWith(rec.calls[0]?.params, marker)).toEqual(judged[0]);
      // ... and is, as a whole, the request the guardian judged (the SDK's own JSON mapping of it).
      const acted = JSON.parse(JSON.stringify(sdk.SendMessageRequest.toJSON(rec.calls[0]?.live as A2A.SendMessageRequest)));
      expect(acted).toEqual(guardian.calls()[0]?.params?.payload?.params);
    } finally {
      guardian.script(DENY_ALL);
    }
  });

  test('allow control: plain and gzip messages did reach the handler (the oracle fires)', () => {
    expect(reached).toEqual(expect.arrayContaining(['identity, flag 0 (control)', 'gzip, flag 1', 'deflate (zlib), flag 1', 'gzip encoding, flag 0']));
  });

  test('after the bombs the proxy still serves a call', async () => {
    rec.clear();
    guardian.script(ALLOW_ALL);
    try {
      const a = await rawGrpc(proxy.grpcAddress as string, SEND_PATH, grpcFrame(zlib.gzipSync(msg('after')), true), { ...GV1, 'grpc-encoding': 'gzip' });
      await settle();
      expect(a.grpcStatus).toBe(0);
      expect(methods(rec)).toEqual(['sendMessage']);
    } finally {
      guardian.script(DENY_ALL);
    }
  });
});
