/**
 * gRPC method paths on the HTTP port, remote cards naming gRPC endpoints, answer codings. Every
 * probe asserts on an oracle (a real SDK agent's handler recorder, or what the caller received) and
 * has an allow control showing that the oracle fires.
 *
 *  A1. looksLikeGrpc (PASSTHROUGH_PATHS=/ and NON_A2A=forward): gRPC method paths in spellings a router
 *      still routes (percent-encoding, letter case, Unicode case folding, Twirp prefix).
 *  A2. ROLE=client: a remote card's gRPC interface aimed at another port through URL tricks (userinfo,
 *      fragments, backslashes, IPv4/IPv6 forms, trailing dots, IDNA digits, gRPC resolver schemes).
 *  A3. The guardian's `to`/`from` in ROLE=client and ROLE=both: which URL names the upstream agent.
 *  B1. Compressed unary and SSE answers (Content-Encoding gzip/x-gzip/deflate/br, stacked, split,
 *      truncated...) under INSPECT_RESPONSES and TASK_OWNERSHIP: the caller (fetch, which decodes) acts
 *      only on what the guardian judged and on tasks ownership bound.
 *  B2. gRPC answers the agent compresses (grpc-encoding gzip/deflate) under inspection.
 *  B3. OBSERVED_AGENT_CARD_URL: where its fetch can be sent (redirects), and what it sends.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import { startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type Envelope, type TestGuardian } from '../../helpers/guardian';
import { handlerRecorder, type HandlerRecorder } from '../../helpers/handler-recorder';
import { rawRoundTrip } from '../../helpers/wire';
import { rawGrpc, grpcFrame } from '../../helpers/grpc';
import { answer, useHostileAgent } from '../../helpers/hostile-agent';
import { laxEvents } from '../../helpers/lax-readers';
import { startIdentities, type TestIdentities } from '../../helpers/identities';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { textsWith } from '../../helpers/texts';

jest.setTimeout(120_000);

const sdk: typeof A2A = require('@a2a-js/sdk');
interface GrpcMethodDef {
  requestSerialize: (v: unknown) => Buffer;
  responseSerialize: (v: unknown) => Buffer;
  responseDeserialize: (b: Buffer) => unknown;
}
const grpcSdk = require('@a2a-js/sdk/server/grpc') as { A2AService: Record<'sendMessage' | 'sendStreamingMessage', GrpcMethodDef> };

const settle = (ms = 150): Promise<void> => new Promise((r) => setTimeout(r, ms));
const DENY_ALL = () => ({ decision: 'deny' as const });
const ALLOW_ALL = () => ({ decision: 'allow' as const });

const sendBody = (text = 'hi', id: number | string = 1) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } } });
const restSend = JSON.stringify({ message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } });
const J = { 'content-type': 'application/json' };
const V1 = { ...J, 'a2a-version': '1.0' };
const SEND_PATH = '/lf.a2a.v1.A2AService/SendMessage';
const STREAM_PATH = '/lf.a2a.v1.A2AService/SendStreamingMessage';
const GV1 = { 'a2a-version': '1.0' };

/** One raw HTTP/1.1 request. */
function req(port: number, method: string, target: string, headers: Record<string, string>, body = ''): string {
  const h = Object.entries({
    host: `127.0.0.1:${port}`,
    connection: 'close',
    ...headers,
    ...(body === '' ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
  });
  return `${method} ${target} HTTP/1.1\r\n${h.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`;
}
const methods = (r: HandlerRecorder): string[] => r.calls.map((c) => c.method);
const portOf = (origin: string): number => Number(new URL(origin).port);

function grpcSendMessage(text: string): Buffer {
  const msg = sdk.SendMessageRequest.fromJSON({ message: { messageId: 'g-1', role: 'ROLE_USER', parts: [{ text }] } });
  return grpcSdk.A2AService.sendMessage.requestSerialize(msg);
}

/** A marker's texts the caller read that no response-hook envelope carried (judged). */
function unjudged(callerTexts: readonly string[], guardian: TestGuardian, marker: string): string[] {
  const judged = new Set(
    guardian
      .calls()
      .filter((e: Envelope) => e?.params?.payload !== undefined && !('method' in e.params.payload))
      .flatMap((e: Envelope) => textsWith(e.params.payload, marker)),
  );
  return callerTexts.filter((t) => !judged.has(t));
}
let seq = 0;
const mark = () => `MKrt49x${++seq}x${Math.random().toString(36).slice(2, 7)}`;

/* =========================================================================================== */
/* A1. gRPC method paths a router still routes                                                  */
/* =========================================================================================== */

describe('A1: gRPC method paths under PASSTHROUGH_PATHS=/ and NON_A2A=forward', () => {
  const rec = handlerRecorder();
  let agent: TestAgent;
  let guardian: TestGuardian;
  const proxies: Record<string, TestProxy> = {};
  /** Connect unary JSON calls the agent's front routed to its gRPC SendMessage. */
  const routed: string[] = [];

  /**
   * The agent's front: a Connect (unary JSON) router in front of its A2A gRPC service that reads the path as
   * Go's net/http does (percent-decoded) and matches service and method names with Unicode simple case folding
   * (Go's strings.EqualFold, Java's equalsIgnoreCase, a JavaScript /iu route): `ſ` (U+017F) folds to `s`.
   */
  const ROUTE = /^(?:\/[^/]+)*\/lf\.a2a\.v1\.a2aservice\/sendmessage$/iu;
  async function toGrpc(q: http.IncomingMessage, s: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of q) chunks.push(c as Buffer);
    const json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    const data = grpcSdk.A2AService.sendMessage.requestSerialize(sdk.SendMessageRequest.fromJSON(json));
    const session = http2.connect(`http://${agent.grpcAddress as string}`);
    session.on('error', () => undefined);
    const up = session.request({ ':method': 'POST', ':path': SEND_PATH, 'content-type': 'application/grpc', te: 'trailers', ...GV1 });
    up.on('data', () => undefined);
    up.on('error', () => undefined);
    up.end(grpcFrame(data));
    await new Promise((r) => up.on('close', r));
    session.close();
    s.writeHead(200, J);
    s.end('{}');
  }

  beforeAll(async () => {
    agent = await startAgent({ wrapRequestHandler: rec.wrap, grpc: true });
    const server = agent.server as http.Server;
    const [app] = server.listeners('request') as Array<(q: http.IncomingMessage, s: http.ServerResponse) => void>;
    server.removeAllListeners('request');
    server.on('request', (q: http.IncomingMessage, s: http.ServerResponse) => {
      let p = (q.url ?? '').split('?')[0] as string;
      try {
        p = p
          .split('/')
          .map((x) => decodeURIComponent(x))
          .join('/');
      } catch {
        /* not decodable: routed as it is */
      }
      if (q.method === 'POST' && ROUTE.test(p) && q.headers['connect-protocol-version'] === '1') {
        routed.push(q.url ?? '');
        void toGrpc(q, s);
        return;
      }
      (app as (q: http.IncomingMessage, s: http.ServerResponse) => void)(q, s);
    });
    guardian = await startGuardian();
    guardian.script(DENY_ALL);
    for (const [name, env] of [
      ['NON_A2A=forward', { NON_A2A: 'forward' }],
      ['PASSTHROUGH_PATHS=/', { PASSTHROUGH_PATHS: '/' }],
    ] as const) {
      proxies[name] = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', FAIL_MODE: 'closed', ...env });
    }
    await settle(200);
    rec.clear();
  });
  afterAll(async () => {
    for (const p of Object.values(proxies)) await p.close();
    await agent?.close();
    await guardian?.close();
  });

  /**
   * LooksLikeGrpc (src/a2a/bindings/grpc/methods.ts) folds letter case with String.prototype.toLowerCase,
   * which leaves U+017F LATIN SMALL LETTER LONG S as it is, while Unicode simple case folding (Go's strings.EqualFold,
   * Java's equalsIgnoreCase, a JavaScript /iu route) reads it as `s`. `/lf.a2a.v1.A2A%C5%BFervice/SendMessage`
   * (percent-decoded by parseTarget into `A2Aſervice`, accepted: not a separator) is not "gRPC-shaped", so under
   * NON_A2A=forward and PASSTHROUGH_PATHS=/ a Connect (or gRPC-Web) SendMessage is relayed unjudged to an agent
   * whose router folds case that way: the handler acts on it with a deny-all guardian.
   */
  const spellings: Array<[string, string]> = [
    ['exact', SEND_PATH],
    ['lower case', SEND_PATH.toLowerCase()],
    ['percent-encoded letter', '/lf.a2a.v1.A2AServic%65/SendMessage'],
    ['percent-encoded dots', '/lf%2Ea2a%2Ev1%2EA2AService/SendMessage'],
    ['percent-encoded method', '/lf.a2a.v1.A2AService/%53endMessage'],
    ['twirp prefix', `/twirp${SEND_PATH}`],
    ['long prefix', `/a/b/c${SEND_PATH}`],
    // U+017F LATIN SMALL LETTER LONG S: case-folds to `s`; JavaScript's toLowerCase leaves it as it is.
    ['long s (U+017F) in "Service"', '/lf.a2a.v1.A2A%C5%BFervice/SendMessage'],
    ['long s (U+017F) in "A2AService", lower case', '/lf.a2a.v1.a2a%C5%BFervice/sendmessage'],
  ];

  test("control: the agent's front routes every spelling to its gRPC SendMessage (the oracle fires)", async () => {
    rec.clear();
    routed.length = 0;
    const ap = portOf(agent.origin);
    for (const [, p] of spellings) await rawRoundTrip(ap, req(ap, 'POST', p, { ...V1, 'connect-protocol-version': '1' }, restSend), 8_000);
    await settle();
    expect(routed).toHaveLength(spellings.length);
    expect(methods(rec)).toEqual(spellings.map(() => 'sendMessage'));
    rec.clear();
  });

  const cases: Array<[string, string, string]> = [];
  for (const name of ['NON_A2A=forward', 'PASSTHROUGH_PATHS=/']) for (const [sn, p] of spellings) cases.push([sn, name, p]);
  test.each(cases)('%s (%s): a Connect call of the gRPC service does not reach the handler unjudged', async (_sn, name, p) => {
    rec.clear();
    const port = portOf((proxies[name] as TestProxy).url);
    await rawRoundTrip(port, req(port, 'POST', p, { ...V1, 'connect-protocol-version': '1' }, restSend), 8_000);
    await settle();
    expect(methods(rec)).toEqual([]);
  });

  test('allow control: JSON-RPC through both proxies reaches the handler', async () => {
    rec.clear();
    guardian.script(ALLOW_ALL);
    try {
      for (const p of Object.values(proxies)) {
        const port = portOf(p.url);
        await rawRoundTrip(port, req(port, 'POST', '/a2a/jsonrpc', V1, sendBody()), 8_000);
      }
      await settle();
      expect(methods(rec)).toEqual(['sendMessage', 'sendMessage']);
    } finally {
      guardian.script(DENY_ALL);
    }
  });
});

/* =========================================================================================== */
/* A2. ROLE=client: the remote card's gRPC interface                                             */
/* =========================================================================================== */

describe('A2: ROLE=client, a remote card naming its gRPC endpoint through URL tricks', () => {
  const recRemote = handlerRecorder();
  const recOther = handlerRecorder();
  let remote: TestAgent;
  let other: TestAgent;
  let guardian: TestGuardian;
  let proxy: TestProxy;
  let front: net.Server;
  let cardServer: http.Server;
  let upPort = 0;
  let otherPort = 0;
  /** The GRPC interface URL the remote's card names now. */
  let grpcEntry = '';
  let cardBase: Record<string, unknown> = {};
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    other = await startAgent({ wrapRequestHandler: recOther.wrap, grpc: true });
    otherPort = Number((other.grpcAddress as string).split(':')[1]);
    remote = await startAgent({ wrapRequestHandler: recRemote.wrap, grpc: true });
    cardServer = http.createServer((q, s) => {
      if (/agent-card\.json$/.test(q.url ?? '')) {
        const origin = `http://127.0.0.1:${upPort}`;
        const card = JSON.parse(JSON.stringify(cardBase).split(remote.origin).join(origin)) as { supportedInterfaces: Array<Record<string, unknown>> };
        card.supportedInterfaces = card.supportedInterfaces
          .filter((i) => i.protocolBinding !== 'GRPC')
          .concat([{ url: grpcEntry, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' }]);
        s.writeHead(200, J);
        s.end(JSON.stringify(card));
        return;
      }
      s.writeHead(404);
      s.end();
    });
    await new Promise<void>((r) => cardServer.listen(0, '127.0.0.1', r));
    const cardPort = (cardServer.address() as AddressInfo).port;
    // UPSTREAM_URL's own origin serves both: HTTP/1.1 (the card) and h2c (the remote's gRPC service), sniffed.
    front = net.createServer((sock) => {
      sockets.add(sock);
      sock.on('close', () => sockets.delete(sock));
      sock.on('error', () => undefined);
      sock.once('data', (first: Buffer) => {
        const h2 = first.subarray(0, 3).toString('latin1') === 'PRI';
        const [host, port] = h2 ? (remote.grpcAddress as string).split(':') : ['127.0.0.1', String(cardPort)];
        const up = net.connect(Number(port), host as string, () => {
          up.write(first);
          sock.pipe(up).pipe(sock);
        });
        sockets.add(up);
        up.on('close', () => {
          sockets.delete(up);
          sock.destroy();
        });
        up.on('error', () => sock.destroy());
      });
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    upPort = (front.address() as AddressInfo).port;
    cardBase = (await (await fetch(`${remote.origin}/.well-known/agent-card.json`)).json()) as Record<string, unknown>;
    grpcEntry = `127.0.0.1:${upPort}`;
    guardian = await startGuardian();
    guardian.script(ALLOW_ALL);
    proxy = await startTestProxy({
      ROLE: 'client',
      UPSTREAM_URL: `http://127.0.0.1:${upPort}`,
      GUARDIAN_URL: guardian.url,
      GRPC_PORT: '0',
      FAIL_MODE: 'closed',
      CARD_TTL_MS: '0',
    });
    await settle(200);
  });
  afterAll(async () => {
    await proxy?.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => (front === undefined ? r() : front.close(() => r())));
    await new Promise<void>((r) => (cardServer === undefined ? r() : cardServer.close(() => r())));
    await remote?.close();
    await other?.close();
    await guardian?.close();
  });

  /** Name `entry` in the card and make the proxy read it (CARD_TTL_MS=0: a call starts a refetch). */
  async function useCard(entry: string): Promise<void> {
    grpcEntry = entry;
    guardian.script(DENY_ALL);
    for (let i = 0; i < 2; i++) {
      await rawGrpc(proxy.grpcAddress as string, SEND_PATH, grpcFrame(grpcSendMessage('warm')), GV1).catch(() => undefined);
      await settle(100);
    }
    guardian.script(ALLOW_ALL);
  }

  const U = () => upPort;
  const O = () => otherPort;
  const tricks: Array<[string, () => string]> = [
    ['plain other port', () => `127.0.0.1:${O()}`],
    ['localhost other port', () => `localhost:${O()}`],
    ['userinfo naming upstream', () => `http://127.0.0.1:${U()}@127.0.0.1:${O()}`],
    ['userinfo, grpc scheme', () => `grpc://127.0.0.1:${U()}@127.0.0.1:${O()}`],
    ['fragment then upstream', () => `http://127.0.0.1:${O()}#@127.0.0.1:${U()}`],
    ['query then upstream', () => `http://127.0.0.1:${O()}?@127.0.0.1:${U()}`],
    ['backslash then upstream', () => `http://127.0.0.1:${O()}\\@127.0.0.1:${U()}`],
    ['two ports', () => `127.0.0.1:${U()}:${O()}`],
    ['hex IPv4', () => `http://0x7f.0.0.1:${O()}`],
    ['short IPv4', () => `http://127.1:${O()}`],
    ['decimal IPv4', () => `http://2130706433:${O()}`],
    ['IPv4-mapped IPv6', () => `http://[::ffff:127.0.0.1]:${O()}`],
    ['trailing-dot host', () => `http://localhost.:${O()}`],
    ['full-width digits (IDNA)', () => `http://\uFF11\uFF12\uFF17.0.0.1:${O()}`],
    ['leading zeros in port', () => `http://127.0.0.1:000${O()}`],
    ['gRPC resolver scheme dns:///', () => `dns:///127.0.0.1:${O()}`],
    ['gRPC resolver scheme ipv4:', () => `ipv4:127.0.0.1:${O()}`],
    ['upper-case scheme', () => `HTTP://127.0.0.1:${O()}`],
    ['path after upstream origin', () => `http://127.0.0.1:${U()}/@127.0.0.1:${O()}`],
    ['tab inside the host', () => `http://127.0.0.1:${U()}\t@127.0.0.1:${O()}`],
  ];

  test('control: the other service acts on a gRPC call sent to it (the oracle fires)', async () => {
    recOther.clear();
    const a = await rawGrpc(other.grpcAddress as string, SEND_PATH, grpcFrame(grpcSendMessage('direct')), GV1);
    expect(a.grpcStatus).toBe(0);
    expect(methods(recOther)).toEqual(['sendMessage']);
    recOther.clear();
  });

  test.each(tricks)('%s: an approved gRPC call never lands on another port', async (_name, entry) => {
    await useCard(entry());
    recOther.clear();
    recRemote.clear();
    await rawGrpc(proxy.grpcAddress as string, SEND_PATH, grpcFrame(grpcSendMessage('trick')), GV1).catch(() => undefined);
    await settle();
    expect(methods(recOther)).toEqual([]);
  });

  test.each([
    ['host:port', () => `127.0.0.1:${U()}`],
    ['userinfo on the upstream origin', () => `http://user:pw@127.0.0.1:${U()}`],
    ['leading zeros, upstream port', () => `http://127.0.0.1:000${U()}`],
  ])("allow control: a card naming UPSTREAM_URL's own origin (%s) gets the call to the remote", async (_name, entry) => {
    await useCard(entry());
    recRemote.clear();
    recOther.clear();
    const a = await rawGrpc(proxy.grpcAddress as string, SEND_PATH, grpcFrame(grpcSendMessage('own-origin')), GV1);
    await settle();
    expect(a.grpcStatus).toBe(0);
    expect(methods(recRemote)).toEqual(['sendMessage']);
    expect(methods(recOther)).toEqual([]);
  });
});

/* =========================================================================================== */
/* A3. The guardian's context in ROLE=client and ROLE=both                                       */
/* =========================================================================================== */

describe('A3: which URL the guardian is told names the upstream agent', () => {
  const rec = handlerRecorder();
  let agent: TestAgent;
  let guardian: TestGuardian;
  const proxies: Record<string, TestProxy> = {};
  const CLAIMED = 'https://bank.example';
  const CLIENT_ENV = {
    OBSERVED_AGENT_ID: 'probe-client',
    OBSERVED_AGENT_NAME: 'probe client',
    OBSERVED_AGENT_URL: 'http://client.example/a2a',
    OBSERVED_AGENT_VERSION: '1.0.0',
  };

  beforeAll(async () => {
    // The upstream's card claims to be another agent (a bank's URL); its name is whatever it says.
    agent = await startAgent({ wrapRequestHandler: rec.wrap, advertise: () => CLAIMED, name: 'Claimed Bank Agent' });
    guardian = await startGuardian();
    guardian.script(ALLOW_ALL);
    for (const role of ['client', 'both'] as const) {
      proxies[role] = await startTestProxy({
        ROLE: role,
        UPSTREAM_URL: agent.origin,
        GUARDIAN_URL: guardian.url,
        INSPECT_RESPONSES: 'true',
        FAIL_MODE: 'closed',
        ...CLIENT_ENV,
      });
    }
    await settle(300);
  });
  afterAll(async () => {
    for (const p of Object.values(proxies)) await p.close();
    await agent?.close();
    await guardian?.close();
  });

  /** Every hook's server agent URL: `to` in request hooks, `from` in response hooks, with the hook's side. */
  function serverUrls(): string[] {
    return guardian.calls().map((e: Envelope) => {
      const request = 'method' in (e.params?.payload ?? {});
      const server = request ? e.params?.context?.to : e.params?.context?.from;
      const side = 'instructions' in (e.params?.context?.[request ? 'from' : 'to']?.agent ?? {}) ? 'client-side' : 'server-side';
      return `${request ? 'request' : 'response'} ${side}: ${String(server?.agent?.url)}`;
    });
  }

  test('control: ROLE=client, every hook names UPSTREAM_URL as the server agent', async () => {
    rec.clear();
    guardian.clear();
    const port = portOf((proxies.client as TestProxy).url);
    await rawRoundTrip(port, req(port, 'POST', '/a2a/jsonrpc', V1, sendBody('to-client')), 8_000);
    await settle();
    expect(methods(rec)).toEqual(['sendMessage']);
    const urls = serverUrls();
    expect(urls).toHaveLength(2);
    for (const u of urls) expect(u).not.toContain(CLAIMED);
  });

  /**
   * ROLE=both, the server-side hooks' server agent is the remote card's own claim. One change made
   * the client-side hook's `to` UPSTREAM_URL (towards(), src/aos/identity.ts), but the server-side hooks of the
   * same ROLE=both proxy take the server agent from `serverAgent: fullAgent({}, upstream)` (src/aos/identity.ts,
   * Identities.snapshot), whose `url` is the card's `url` / first interface URL unchecked. The request's
   * server-side hook is told `to.agent.url = https://bank.example/a2a/jsonrpc` (and the response's server-side hook
   * `from`), while the bytes go to UPSTREAM_URL: a policy keyed on the callee's URL in the server-side hook judges
   * a destination the call never reaches (and the two hooks of one call disagree about where it goes).
   */
  test('ROLE=both, every hook (client- and server-side) names UPSTREAM_URL as the server agent', async () => {
    rec.clear();
    guardian.clear();
    const port = portOf((proxies.both as TestProxy).url);
    await rawRoundTrip(port, req(port, 'POST', '/a2a/jsonrpc', V1, sendBody('to-both')), 8_000);
    await settle();
    expect(methods(rec)).toEqual(['sendMessage']); // it landed at UPSTREAM_URL ...
    const urls = serverUrls();
    expect(urls).toHaveLength(4);
    // ... so no hook may have been told it goes to the URL the card claims.
    expect(urls.filter((u) => u.includes(CLAIMED))).toEqual([]);
  });
});

/* =========================================================================================== */
/* B1. Compressed answers: unary JSON and SSE, inspection and task ownership                     */
/* =========================================================================================== */

describe("B1: answers the agent compresses against the proxy's Accept-Encoding: identity", () => {
  const hostile = useHostileAgent();
  let guardian: TestGuardian;
  let ids: TestIdentities;
  const proxies: Record<string, TestProxy> = {};
  const asked: string[] = [];

  beforeAll(async () => {
    guardian = await startGuardian();
    guardian.script(ALLOW_ALL);
    ids = await startIdentities();
    proxies.inspect = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: hostile.origin,
      GUARDIAN_URL: guardian.url,
      INSPECT_RESPONSES: 'true',
      FAIL_MODE: 'closed',
    });
    proxies.both = await startTestProxy({
      ROLE: 'both',
      UPSTREAM_URL: hostile.origin,
      GUARDIAN_URL: guardian.url,
      INSPECT_RESPONSES: 'true',
      FAIL_MODE: 'closed',
      OBSERVED_AGENT_NAME: 'probe both',
    });
    proxies.owner = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: hostile.origin,
      GUARDIAN_URL: guardian.url,
      INSPECT_RESPONSES: 'false',
      FAIL_MODE: 'closed',
      ...ids.env,
    });
    proxies.ownerInspect = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: hostile.origin,
      GUARDIAN_URL: guardian.url,
      INSPECT_RESPONSES: 'true',
      FAIL_MODE: 'closed',
      ...ids.env,
    });
    await settle(200);
  });
  afterAll(async () => {
    for (const p of Object.values(proxies)) await p.close();
    await guardian?.close();
    await ids?.close();
  });

  const taskResult = (id: unknown, m: string, task = `t-${m}`, ctx = `c-${m}`) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      result: {
        task: {
          id: task,
          contextId: ctx,
          status: { state: 'TASK_STATE_COMPLETED', message: { messageId: 'a1', role: 'ROLE_AGENT', parts: [{ text: `${m}-answer` }] } },
        },
      },
    });
  const gz = (s: string | Buffer) => zlib.gzipSync(s);
  type Coded = { headers: Array<[string, string]>; body: Buffer; framing?: 'length' | 'chunked' | 'none' };
  /** How the answer's text is sent: name, and the encoding of a JSON text. */
  const codings: Array<[string, (t: string) => Coded]> = [
    ['identity (control)', (t) => ({ headers: [], body: Buffer.from(t) })],
    ['gzip', (t) => ({ headers: [['content-encoding', 'gzip']], body: gz(t) })],
    ['x-gzip', (t) => ({ headers: [['content-encoding', 'x-gzip']], body: gz(t) })],
    ['GZIP upper case', (t) => ({ headers: [['content-encoding', 'GZIP']], body: gz(t) })],
    ['deflate (zlib)', (t) => ({ headers: [['content-encoding', 'deflate']], body: zlib.deflateSync(t) })],
    ['deflate (raw)', (t) => ({ headers: [['content-encoding', 'deflate']], body: zlib.deflateRawSync(t) })],
    ['br', (t) => ({ headers: [['content-encoding', 'br']], body: zlib.brotliCompressSync(t) })],
    ['gzip, chunked', (t) => ({ headers: [['content-encoding', 'gzip']], body: gz(t), framing: 'chunked' })],
    ['gzip, close-delimited', (t) => ({ headers: [['content-encoding', 'gzip']], body: gz(t), framing: 'none' })],
    ['identity, gzip', (t) => ({ headers: [['content-encoding', 'identity, gzip']], body: gz(t) })],
    ['gzip, identity', (t) => ({ headers: [['content-encoding', 'gzip, identity']], body: gz(t) })],
    [
      'two header lines: identity + gzip',
      (t) => ({
        headers: [
          ['content-encoding', 'identity'],
          ['content-encoding', 'gzip'],
        ],
        body: gz(t),
      }),
    ],
    [
      'two header lines: gzip + gzip',
      (t) => ({
        headers: [
          ['content-encoding', 'gzip'],
          ['content-encoding', 'gzip'],
        ],
        body: gz(gz(t)),
      }),
    ],
    ['gzip, gzip', (t) => ({ headers: [['content-encoding', 'gzip, gzip']], body: gz(gz(t)) })],
    ['gzip, br', (t) => ({ headers: [['content-encoding', 'gzip, br']], body: zlib.brotliCompressSync(gz(t)) })],
    ['empty item then gzip', (t) => ({ headers: [['content-encoding', ', gzip']], body: gz(t) })],
    ['zstd', (t) => ({ headers: [['content-encoding', 'zstd']], body: Buffer.from(t) })],
    ['compress', (t) => ({ headers: [['content-encoding', 'compress']], body: Buffer.from(t) })],
    ['gzip label, plain body', (t) => ({ headers: [['content-encoding', 'gzip']], body: Buffer.from(t) })],
    ['gzip label, br body', (t) => ({ headers: [['content-encoding', 'gzip']], body: zlib.brotliCompressSync(t) })],
    [
      'two gzip members, JSON split across them',
      (t) => {
        const cut = Math.floor(t.length / 2);
        return { headers: [['content-encoding', 'gzip']], body: Buffer.concat([gz(t.slice(0, cut)), gz(t.slice(cut))]) };
      },
    ],
    ['gzip then trailing garbage', (t) => ({ headers: [['content-encoding', 'gzip']], body: Buffer.concat([gz(t), Buffer.from('garbage {"x":1}')]) })],
    [
      'gzip then a bad second member',
      (t) => ({ headers: [['content-encoding', 'gzip']], body: Buffer.concat([gz(t), Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3])]) }),
    ],
    ['gzip without its trailer', (t) => ({ headers: [['content-encoding', 'gzip']], body: gz(t).subarray(0, -8) })],
    ['gzip cut mid-stream', (t) => ({ headers: [['content-encoding', 'gzip']], body: gz(t).subarray(0, Math.floor(gz(t).length * 0.8)) })],
    ['gzip of a BOM and the JSON', (t) => ({ headers: [['content-encoding', 'gzip']], body: gz(`\uFEFF${t}`) })],
    [
      'gzip, content-type text/event-stream',
      (t) => ({
        headers: [
          ['content-encoding', 'gzip'],
          ['content-type', 'text/event-stream'],
        ],
        body: gz(t),
      }),
    ],
  ];

  function answerOf(c: Coded, ct = 'application/json'): Buffer {
    const hs: Array<[string, string]> = c.headers.some(([k]) => k === 'content-type') ? c.headers : [['content-type', ct], ...c.headers];
    return answer(200, hs, c.body, c.framing ?? 'length');
  }

  /** POST a JSON-RPC call as fetch (which decodes Content-Encoding, as SDK clients do) and read the text. */
  async function call(proxy: TestProxy, body: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
    try {
      const r = await fetch(`${proxy.url}/a2a/jsonrpc`, { method: 'POST', headers: { ...V1, ...headers }, body, signal: AbortSignal.timeout(15_000) });
      let text = '';
      try {
        text = await r.text();
      } catch (err) {
        text = `READ ERROR ${(err as Error).message}`;
      }
      return { status: r.status, text };
    } catch (err) {
      return { status: 0, text: `ERROR ${(err as Error).message}` };
    }
  }
  const parsed = (t: string): unknown => {
    try {
      return JSON.parse(t);
    } catch {
      return undefined;
    }
  };

  const reached: Record<string, string[]> = { inspect: [], both: [] };
  const unaryCases: Array<[string, string, (t: string) => Coded]> = [];
  for (const p of ['inspect', 'both']) for (const [n, f] of codings) unaryCases.push([p, n, f]);
  test.each(unaryCases)('%s, unary answer %s: the caller reads only what the guardian judged', async (p, name, code) => {
    const m = mark();
    guardian.clear();
    hostile.script = (r) => {
      asked.push(String(r.headers['accept-encoding']));
      return answerOf(code(taskResult(r.id, m)));
    };
    const got = await call(proxies[p] as TestProxy, sendBody('hi'));
    const texts = textsWith(parsed(got.text), m);
    if (texts.length > 0) (reached[p] as string[]).push(name);
    // Nothing the caller can read holds a word no response hook judged (a lax look: the raw text too).
    expect(unjudged(texts, guardian, m)).toEqual([]);
    if (texts.length === 0) expect(got.text.includes(m)).toBe(false);
  });

  test('allow control: compressed unary answers were read, judged and delivered (the oracle fires)', () => {
    for (const p of ['inspect', 'both'])
      expect(reached[p]).toEqual(expect.arrayContaining(['identity (control)', 'gzip', 'x-gzip', 'deflate (zlib)', 'deflate (raw)', 'br']));
    // The proxy asked for identity every time.
    expect(new Set(asked)).toEqual(new Set(['identity']));
  });

  test('control: a deny-all response hook keeps every compressed answer from the caller', async () => {
    guardian.script((e: Envelope) => ('method' in (e?.params?.payload ?? {}) ? { decision: 'allow' } : { decision: 'deny' }));
    try {
      for (const [, code] of codings.slice(0, 7)) {
        const m = mark();
        hostile.script = (r) => answerOf(code(taskResult(r.id, m)));
        const got = await call(proxies.inspect as TestProxy, sendBody('hi'));
        expect(got.text.includes(m)).toBe(false);
      }
    } finally {
      guardian.script(ALLOW_ALL);
    }
  });

  const sseOf = (id: unknown, m: string) =>
    [
      { jsonrpc: '2.0', id, result: { task: { id: `t-${m}`, contextId: `c-${m}`, status: { state: 'TASK_STATE_WORKING' } } } },
      {
        jsonrpc: '2.0',
        id,
        result: {
          statusUpdate: {
            taskId: `t-${m}`,
            contextId: `c-${m}`,
            status: { state: 'TASK_STATE_COMPLETED', message: { messageId: 'a2', role: 'ROLE_AGENT', parts: [{ text: `${m}-event` }] } },
          },
        },
      },
    ]
      .map((e) => `data: ${JSON.stringify(e)}\n\n`)
      .join('');
  const streamCases: Array<[string, string, (t: string) => Coded]> = [];
  for (const p of ['inspect', 'owner']) for (const [n, f] of codings.slice(0, 16)) streamCases.push([p, n, f]);
  const streamed: Record<string, string[]> = { inspect: [], owner: [] };
  test.each(streamCases)('%s, SSE answer %s: the caller reads no event nobody judged or bound', async (p, name, code) => {
    const m = mark();
    guardian.clear();
    hostile.script = (r) => answerOf(code(sseOf(r.id, m)), 'text/event-stream');
    const body = sendBody('hi').replace('"SendMessage"', '"SendStreamingMessage"');
    const got = await call(proxies[p] as TestProxy, body, { accept: 'text/event-stream', ...(p === 'owner' ? ids.headersAs('A') : {}) });
    const events = laxEvents(got.text).map(parsed);
    const texts = events.flatMap((e) => textsWith(e, m));
    if (texts.length > 0) (streamed[p] as string[]).push(name);
    if (p === 'inspect') expect(unjudged(texts, guardian, m)).toEqual([]);
    else if (texts.length > 0) {
      // Ownership: what the caller read was bound to it, so its own GetTask reaches the agent.
      hostile.received.length = 0;
      hostile.script = (r) => answer(200, [['content-type', 'application/json']], taskResult(r.id, m));
      await call(proxies.owner as TestProxy, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: `t-${m}` } }), ids.headersAs('A'));
      expect(hostile.received.map((r) => r.json?.method)).toEqual(['GetTask']);
    }
    if (texts.length === 0) expect(got.text.includes(m)).toBe(false);
  });

  test('allow control: a plain event stream reaches the caller through both proxies', () => {
    expect(streamed.inspect).toContain('identity (control)');
    expect(streamed.owner).toContain('identity (control)');
  });

  /** B's task, bound to B by a plain answer. */
  async function bOwns(proxy: TestProxy): Promise<{ task: string; ctx: string }> {
    const m = mark();
    hostile.script = (r) => answer(200, [['content-type', 'application/json']], taskResult(r.id, m));
    const got = await call(proxy, sendBody('b'), ids.headersAs('B'));
    expect(got.text).toContain(`t-${m}`);
    return { task: `t-${m}`, ctx: `c-${m}` };
  }

  const ownCases: Array<[string, string, (t: string) => Coded]> = [];
  for (const p of ['owner', 'ownerInspect']) for (const [n, f] of codings) ownCases.push([p, n, f]);
  const bound: Record<string, string[]> = { owner: [], ownerInspect: [] };
  test.each(ownCases)("%s, unary answer %s naming B's task never reaches A; a fresh task A reads is A's", async (p, name, code) => {
    const proxy = proxies[p] as TestProxy;
    const b = await bOwns(proxy);
    // 1. The agent answers A with B's task: A must not read it.
    hostile.script = (r) => answerOf(code(taskResult(r.id, 'foreign', b.task, b.ctx)));
    const foreign = await call(proxy, sendBody('a'), ids.headersAs('A'));
    expect(foreign.text.includes(b.task)).toBe(false);
    // 2. A fresh task: if A reads it, it is A's (A's GetTask reaches the agent, B's does not).
    const m = mark();
    hostile.script = (r) => answerOf(code(taskResult(r.id, m)));
    const fresh = await call(proxy, sendBody('a'), ids.headersAs('A'));
    if (!fresh.text.includes(`t-${m}`)) return;
    (bound[p] as string[]).push(name);
    hostile.received.length = 0;
    hostile.script = (r) => answer(200, [['content-type', 'application/json']], taskResult(r.id, m));
    const get = (as: 'A' | 'B') => call(proxy, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: `t-${m}` } }), ids.headersAs(as));
    await get('B');
    expect(hostile.received).toEqual([]);
    await get('A');
    expect(hostile.received.map((r) => r.json?.method)).toEqual(['GetTask']);
  });

  test('allow control: ownership read and bound compressed answers (the oracle fires)', () => {
    for (const p of ['owner', 'ownerInspect']) expect(bound[p]).toEqual(expect.arrayContaining(['identity (control)', 'gzip', 'deflate (zlib)', 'br']));
  });
});

/* =========================================================================================== */
/* B2. gRPC answers the agent compresses                                                        */
/* =========================================================================================== */

describe('B2: gRPC answers with grpc-encoding from the agent, under inspection', () => {
  let agent: TestAgent;
  let guardian: TestGuardian;
  let proxy: TestProxy;
  let h2: http2.Http2Server;
  let ids: TestIdentities;
  let owner: TestProxy;
  /** How the hostile gRPC agent answers the next call. */
  let script: (stream: http2.ServerHttp2Stream) => void = (s) =>
    s.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' }, { endStream: true });
  const acceptEncodings: string[] = [];

  beforeAll(async () => {
    agent = await startAgent({});
    h2 = http2.createServer();
    h2.on('stream', (stream, headers) => {
      acceptEncodings.push(String(headers['grpc-accept-encoding']));
      stream.on('error', () => undefined);
      stream.on('data', () => undefined);
      stream.on('end', () => script(stream));
    });
    await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r));
    guardian = await startGuardian();
    guardian.script(ALLOW_ALL);
    proxy = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      GRPC_PORT: '0',
      FAIL_MODE: 'closed',
      INSPECT_RESPONSES: 'true',
      GRPC_UPSTREAM_URL: `http://127.0.0.1:${(h2.address() as AddressInfo).port}`,
    });
    ids = await startIdentities();
    owner = await startTestProxy({
      ROLE: 'server',
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      GRPC_PORT: '0',
      FAIL_MODE: 'closed',
      INSPECT_RESPONSES: 'false',
      GRPC_UPSTREAM_URL: `http://127.0.0.1:${(h2.address() as AddressInfo).port}`,
      ...ids.env,
    });
    await settle(200);
  });
  afterAll(async () => {
    await proxy?.close();
    await owner?.close();
    await ids?.close();
    await new Promise<void>((r) => h2.close(() => r()));
    await agent?.close();
    await guardian?.close();
  });

  const respJson = (m: string) => ({
    task: {
      id: `t-${m}`,
      contextId: `c-${m}`,
      status: { state: 'TASK_STATE_COMPLETED', message: { messageId: 'a', role: 'ROLE_AGENT', parts: [{ text: `${m}-answer` }] } },
    },
  });
  const unaryMsg = (m: string) => grpcSdk.A2AService.sendMessage.responseSerialize(sdk.SendMessageResponse.fromJSON(respJson(m)));
  const streamMsg = (m: string, i: number) =>
    grpcSdk.A2AService.sendStreamingMessage.responseSerialize(
      sdk.StreamResponse.fromJSON(
        i === 0
          ? respJson(m)
          : {
              statusUpdate: {
                taskId: `t-${m}`,
                contextId: `c-${m}`,
                status: { state: 'TASK_STATE_WORKING', message: { messageId: `s${i}`, role: 'ROLE_AGENT', parts: [{ text: `${m}-event${i}` }] } },
              },
            },
      ),
    );
  const frame = (flag: number, data: Buffer) => {
    const h = Buffer.alloc(5);
    h[0] = flag;
    h.writeUInt32BE(data.length, 1);
    return Buffer.concat([h, data]);
  };
  type Answer = { encoding?: string; frames: Buffer };
  const variants: Array<[string, (msg: Buffer) => Answer]> = [
    ['identity (control)', (d) => ({ frames: frame(0, d) })],
    ['gzip, flag 1', (d) => ({ encoding: 'gzip', frames: frame(1, zlib.gzipSync(d)) })],
    ['deflate (zlib), flag 1', (d) => ({ encoding: 'deflate', frames: frame(1, zlib.deflateSync(d)) })],
    ['deflate (raw), flag 1', (d) => ({ encoding: 'deflate', frames: frame(1, zlib.deflateRawSync(d)) })],
    ['gzip header, flag 0', (d) => ({ encoding: 'gzip', frames: frame(0, d) })],
    ['no header, flag 1 (gzip data)', (d) => ({ frames: frame(1, zlib.gzipSync(d)) })],
    ['identity header, flag 1', (d) => ({ encoding: 'identity', frames: frame(1, zlib.gzipSync(d)) })],
    ['GZIP upper case', (d) => ({ encoding: 'GZIP', frames: frame(1, zlib.gzipSync(d)) })],
    ['snappy', (d) => ({ encoding: 'snappy', frames: frame(1, zlib.gzipSync(d)) })],
    ['gzip,identity list', (d) => ({ encoding: 'gzip,identity', frames: frame(1, zlib.gzipSync(d)) })],
    [
      'gzip, two members',
      (d) => {
        const cut = Math.floor(d.length / 2);
        return { encoding: 'gzip', frames: frame(1, Buffer.concat([zlib.gzipSync(d.subarray(0, cut)), zlib.gzipSync(d.subarray(cut))])) };
      },
    ],
    ['gzip, trailing garbage', (d) => ({ encoding: 'gzip', frames: frame(1, Buffer.concat([zlib.gzipSync(d), Buffer.from([0x0a, 0x03, 0x41, 0x42, 0x43])])) })],
    ['gzip, trailer cut', (d) => ({ encoding: 'gzip', frames: frame(1, zlib.gzipSync(d).subarray(0, -8)) })],
    ['br data under gzip', (d) => ({ encoding: 'gzip', frames: frame(1, zlib.brotliCompressSync(d)) })],
    ['flag 2', (d) => ({ encoding: 'gzip', frames: frame(2, zlib.gzipSync(d)) })],
  ];

  /** Read the caller's answer frames as grpc-js would: flag 1 decompressed by the answer's grpc-encoding. */
  function callerMessages(body: Buffer, encoding: string | undefined, deserialize: (b: Buffer) => unknown, toJson: (v: unknown) => unknown): unknown[] {
    const out: unknown[] = [];
    let o = 0;
    while (o + 5 <= body.length) {
      const flag = body[o] as number;
      const len = body.readUInt32BE(o + 1);
      let data = body.subarray(o + 5, o + 5 + len);
      o += 5 + len;
      try {
        if (flag === 1) data = encoding === 'gzip' ? zlib.gunzipSync(data) : encoding === 'deflate' ? zlib.inflateSync(data) : Buffer.alloc(0);
        out.push(toJson(deserialize(data)));
      } catch {
        out.push('UNREADABLE');
      }
    }
    return out;
  }

  const reached: string[] = [];
  const cases: Array<[string, string, (msg: Buffer) => Answer]> = [];
  for (const kind of ['unary', 'stream']) for (const [n, f] of variants) cases.push([kind, n, f]);
  test.each(cases)('%s %s: the caller reads only what the guardian judged', async (kind, name, make) => {
    const m = mark();
    guardian.clear();
    script = (stream) => {
      const frames =
        kind === 'unary'
          ? make(unaryMsg(m))
          : { ...make(streamMsg(m, 0)), frames: Buffer.concat([make(streamMsg(m, 0)).frames, make(streamMsg(m, 1)).frames]) };
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', ...(frames.encoding === undefined ? {} : { 'grpc-encoding': frames.encoding }) },
        { waitForTrailers: true },
      );
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(frames.frames);
    };
    const a = await rawGrpc(proxy.grpcAddress as string, kind === 'unary' ? SEND_PATH : STREAM_PATH, grpcFrame(grpcSendMessage('hi')), GV1).catch(
      () => undefined,
    );
    const def = kind === 'unary' ? grpcSdk.A2AService.sendMessage : grpcSdk.A2AService.sendStreamingMessage;
    const toJson = (v: unknown) =>
      kind === 'unary' ? sdk.SendMessageResponse.toJSON(v as A2A.SendMessageResponse) : sdk.StreamResponse.toJSON(v as A2A.StreamResponse);
    const msgs = a === undefined ? [] : callerMessages(a.body, a.headers['grpc-encoding'] as string | undefined, def.responseDeserialize, toJson);
    const texts = msgs.flatMap((x) => textsWith(x, m));
    if (texts.length > 0 && a?.grpcStatus === 0) reached.push(`${kind} ${name}`);
    expect(unjudged(texts, guardian, m)).toEqual([]);
    expect(a === undefined || a.body.includes(Buffer.from(m)) ? texts.length > 0 : true).toBe(true);
  });

  test('allow control: compressed gRPC answers were read, judged and delivered; identity was asked', () => {
    expect(reached).toEqual(
      expect.arrayContaining([
        'unary identity (control)',
        'unary gzip, flag 1',
        'unary deflate (zlib), flag 1',
        'stream identity (control)',
        'stream gzip, flag 1',
      ]),
    );
    expect(new Set(acceptEncodings)).toEqual(new Set(['identity']));
  });

  test('control: a deny-all response hook keeps every compressed gRPC answer from the caller', async () => {
    guardian.script((e: Envelope) => ('method' in (e?.params?.payload ?? {}) ? { decision: 'allow' } : { decision: 'deny' }));
    try {
      for (const [, make] of variants.slice(0, 4)) {
        const m = mark();
        script = (stream) => {
          const f = make(unaryMsg(m));
          stream.respond(
            { ':status': 200, 'content-type': 'application/grpc', ...(f.encoding === undefined ? {} : { 'grpc-encoding': f.encoding }) },
            { waitForTrailers: true },
          );
          stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
          stream.end(f.frames);
        };
        const a = await rawGrpc(proxy.grpcAddress as string, SEND_PATH, grpcFrame(grpcSendMessage('hi')), GV1);
        expect(a.grpcStatus).not.toBe(0);
        expect(a.body.includes(Buffer.from(m))).toBe(false);
      }
    } finally {
      guardian.script(ALLOW_ALL);
    }
  });

  /** The hostile gRPC agent answers `msg` framed as `make` frames it. */
  const answerWith = (msg: Buffer, make: (d: Buffer) => Answer) => (stream: http2.ServerHttp2Stream) => {
    const f = make(msg);
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', ...(f.encoding === undefined ? {} : { 'grpc-encoding': f.encoding }) },
      { waitForTrailers: true },
    );
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(f.frames);
  };
  const ownerCall = (as: 'A' | 'B') => rawGrpc(owner.grpcAddress as string, SEND_PATH, grpcFrame(grpcSendMessage('own')), { ...GV1, ...ids.headersAs(as) });
  const readsTask = (a: { body: Buffer; headers: http2.IncomingHttpHeaders }, task: string): boolean => {
    const msgs = callerMessages(a.body, a.headers['grpc-encoding'] as string | undefined, grpcSdk.A2AService.sendMessage.responseDeserialize, (v) =>
      sdk.SendMessageResponse.toJSON(v as A2A.SendMessageResponse),
    );
    return JSON.stringify(msgs).includes(task);
  };
  const ownerBound: string[] = [];
  test.each(variants)("task ownership (gRPC), agent answer %s: A never reads B's task; a fresh task A reads is delivered", async (name, make) => {
    const mb = mark();
    script = answerWith(unaryMsg(mb), (d) => ({ frames: frame(0, d) }));
    expect(readsTask(await ownerCall('B'), `t-${mb}`)).toBe(true);
    script = answerWith(unaryMsg(mb), make);
    const foreign = await ownerCall('A');
    expect(readsTask(foreign, `t-${mb}`)).toBe(false);
    expect(foreign.grpcStatus).not.toBe(0);
    const ma = mark();
    script = answerWith(unaryMsg(ma), make);
    if (readsTask(await ownerCall('A'), `t-${ma}`)) ownerBound.push(name);
  });
  test('allow control: ownership delivered fresh compressed gRPC answers (the oracle fires)', () => {
    expect(ownerBound).toEqual(expect.arrayContaining(['identity (control)', 'gzip, flag 1', 'deflate (zlib), flag 1']));
  });
});

/* =========================================================================================== */
/* B3. OBSERVED_AGENT_CARD_URL                                                                  */
/* =========================================================================================== */

describe('B3: OBSERVED_AGENT_CARD_URL', () => {
  let agent: TestAgent;
  let guardian: TestGuardian;
  let obs: http.Server;
  let evil: http.Server;
  let obsPort = 0;
  let evilPort = 0;
  const obsGot: Array<{ path: string; auth: string | undefined }> = [];
  const evilGot: string[] = [];
  const card = (name: string) =>
    JSON.stringify({ name, version: '9.9.9', url: `http://${name.replace(/\W/g, '-').toLowerCase()}.example/a2a`, description: name });

  beforeAll(async () => {
    agent = await startAgent({});
    guardian = await startGuardian();
    guardian.script(ALLOW_ALL);
    evil = http.createServer((q, s) => {
      evilGot.push(q.url ?? '');
      s.writeHead(200, J);
      s.end(card('EVIL Observed'));
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    evilPort = (evil.address() as AddressInfo).port;
    obs = http.createServer((q, s) => {
      const u = q.url ?? '';
      obsGot.push({ path: u, auth: q.headers.authorization });
      const to: Record<string, string> = {
        '/r1/agent.json': `http://127.0.0.1:${evilPort}/agent.json`,
        '/r2/agent.json': `//127.0.0.1:${evilPort}/agent.json`,
        '/r3/agent.json': `http://localhost:${evilPort}/agent.json`,
        '/r4/agent.json': `https://127.0.0.1:${evilPort}/agent.json`,
        '/r5/agent.json': `http://127.0.0.1:${obsPort}@127.0.0.1:${evilPort}/agent.json`,
        '/r6/agent.json': `http:127.0.0.1:${evilPort}/agent.json`,
        '/r7/agent.json': `/\\127.0.0.1:${evilPort}/agent.json`,
        '/r8/agent.json': '/r1/agent.json',
      };
      const loc = to[u];
      if (loc !== undefined) {
        s.writeHead(302, { location: loc });
        s.end();
        return;
      }
      s.writeHead(200, J);
      s.end(card('Good Observed'));
    });
    await new Promise<void>((r) => obs.listen(0, '127.0.0.1', r));
    obsPort = (obs.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((r) => evil.close(() => r()));
    await new Promise<void>((r) => obs.close(() => r()));
    await agent?.close();
    await guardian?.close();
  });

  /** The observed client's name as the guardian's client-side hook is told, with OBSERVED_AGENT_CARD_URL=`url`. */
  async function observedName(url: string): Promise<string> {
    const proxy = await startTestProxy({
      ROLE: 'client',
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      FAIL_MODE: 'closed',
      OBSERVED_AGENT_CARD_URL: url,
    });
    try {
      guardian.clear();
      const port = portOf(proxy.url);
      await rawRoundTrip(port, req(port, 'POST', '/a2a/jsonrpc', V1, sendBody('obs')), 8_000);
      return String(guardian.calls()[0]?.params?.context?.from?.agent?.name);
    } finally {
      await proxy.close();
    }
  }

  test('control: the observed card is read, and a card at the evil address would be read too (the oracle fires)', async () => {
    expect(await observedName(`http://127.0.0.1:${obsPort}/good/agent.json`)).toBe('Good Observed');
    evilGot.length = 0;
    expect(await observedName(`http://127.0.0.1:${evilPort}/agent.json`)).toBe('EVIL Observed');
    expect(evilGot.length).toBeGreaterThan(0);
  });

  test.each(['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8'])('redirect %s to another origin is not followed', async (r) => {
    evilGot.length = 0;
    const name = await observedName(`http://127.0.0.1:${obsPort}/${r}/agent.json`);
    expect(evilGot).toEqual([]);
    expect(name).not.toBe('EVIL Observed');
  });

  test('userinfo in OBSERVED_AGENT_CARD_URL is never sent', async () => {
    obsGot.length = 0;
    expect(await observedName(`http://user:secret@127.0.0.1:${obsPort}/good/agent.json`)).toBe('Good Observed');
    expect(obsGot.length).toBeGreaterThan(0);
    expect(obsGot.map((g) => g.auth)).toEqual(obsGot.map(() => undefined));
  });
});
