/**
 * Upstream and guardian I/O over undici's dispatcher (forward.ts callUpstream / UpstreamAnswer,
 * aos/guardian.ts post), checked against what node:http's ClientRequest/IncomingMessage did:
 * request targets undici refuses, unusual methods and headers, duplicate and non-ASCII headers both
 * ways, 1xx/204/304 answers, agents that cut an answer (FIN and RST, unary and SSE), callers that go
 * away, backpressure, answers arriving in one packet with their headers, guardians that drop
 * keep-alive connections, answer chunked, hang or exhaust the pool, and close() releasing it all.
 *
 * Upstreams are hand-made node:http and net servers on 127.0.0.1 whose behaviour each test scripts;
 * they count TCP connections, so connection reuse is asserted by count.
 */
import { rawRoundTrip } from '../../helpers/wire';
import { Client } from 'undici';
import http from 'node:http';
import net from 'node:net';
import { parseSse } from '../../helpers/agent';
import { isResponseEnvelope, startGuardian, type TestGuardian } from '../../helpers/guardian';
import { closeServer, listen, sleep, waitFor } from '../../helpers/net';
import { HttpGuardian } from '../../../src/aos/guardian';
import { CARD_USER_AGENT } from '../../../src/a2a/card';
import { startTestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;
type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void;

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

/* ------------------------------- scripted node:http upstream ------------------------------- */

let guardian: TestGuardian;
let upstream: http.Server;
let upstreamUrl: string;
let handler: Handler = (req, res, body) => okJson(req, res, body);
let seen: Seen[] = [];
let upConnections = 0;
/** Set when the upstream's response object closes before it finished (the proxy went away). */
let upResClosedEarly = false;

const okJson: Handler = (req, res, body) => {
  let id: unknown = null;
  try {
    id = (JSON.parse(body.toString('utf8')) as { id?: unknown }).id ?? null;
  } catch {
    /* not JSON-RPC */
  }
  const text =
    req.method === 'POST' && body.length > 0
      ? JSON.stringify({ jsonrpc: '2.0', id, result: { kind: 'message', messageId: 'a-1', role: 'agent', parts: [{ kind: 'text', text: 'fine' }] } })
      : JSON.stringify({ ok: true, method: req.method, url: req.url });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

/* --------------------------------- scripted raw TCP upstream -------------------------------- */

type RawScript = (socket: net.Socket, head: string, body: Buffer) => void;
let rawUpstream: net.Server;
let rawUrl: string;
let rawScript: RawScript;
const rawSockets = new Set<net.Socket>();
let rawSeen: string[] = [];

/** Reads requests (Content-Length framed, as the proxy sends them) one after another per connection. */
function startRawUpstream(): Promise<void> {
  rawUpstream = net.createServer((socket) => {
    rawSockets.add(socket);
    socket.on('close', () => rawSockets.delete(socket));
    socket.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        const len = m ? Number(m[1]) : 0;
        if (buf.length < end + 4 + len) return;
        const body = buf.subarray(end + 4, end + 4 + len);
        buf = buf.subarray(end + 4 + len);
        // The proxy's own agent-card fetches get a 404; every other request is scripted.
        if (/^GET \/\.well-known\//.test(head)) {
          socket.write('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
          continue;
        }
        rawSeen.push(head);
        rawScript(socket, head, body);
      }
    });
  });
  return new Promise((resolve) =>
    rawUpstream.listen(0, '127.0.0.1', () => {
      rawUrl = `http://127.0.0.1:${(rawUpstream.address() as net.AddressInfo).port}`;
      resolve();
    }),
  );
}

const rpcId = (body: Buffer): unknown => {
  try {
    return (JSON.parse(body.toString('utf8')) as { id?: unknown }).id ?? null;
  } catch {
    return null;
  }
};
const sseEvent = (id: unknown, n: number) =>
  `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { kind: 'status-update', taskId: 't', contextId: 'c', final: false, status: { state: 'working' }, metadata: { n } } })}\n\n`;
const rpcResult = (id: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, result: { kind: 'message', messageId: 'a-2', role: 'agent', parts: [{ kind: 'text', text: 'raw fine' }] } });

/* ------------------------------------------ proxies ----------------------------------------- */

let plain: Proxy;
let inspected: Proxy;
let rawPlain: Proxy;
let rawInspected: Proxy;
const extra: Proxy[] = [];
const extraServers: (http.Server | net.Server)[] = [];

beforeAll(async () => {
  guardian = await startGuardian();
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      // The proxy's own agent-card fetches (CardCache, with its own user-agent) are not forwarded traffic.
      if (req.headers['user-agent'] !== CARD_USER_AGENT)
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body });
      res.once('close', () => {
        if (!res.writableFinished) upResClosedEarly = true;
      });
      handler(req, res, body);
    });
  });
  upstream.on('connection', () => upConnections++);
  upstreamUrl = await listen(upstream);
  await startRawUpstream();
  rawScript = (s) => s.destroy();
  plain = await startTestProxy({ UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: guardian.url, ROLE: 'server', NON_A2A: 'forward', REST_BASE_PATHS: '/,/a2a/rest' });
  inspected = await startTestProxy({
    UPSTREAM_URL: upstreamUrl,
    GUARDIAN_URL: guardian.url,
    ROLE: 'server',
    NON_A2A: 'forward',
    REST_BASE_PATHS: '/,/a2a/rest',
    INSPECT_RESPONSES: 'true',
    INSPECT_CARDS: 'false',
  });
  rawPlain = await startTestProxy({ UPSTREAM_URL: rawUrl, GUARDIAN_URL: guardian.url, ROLE: 'server', NON_A2A: 'forward', REST_BASE_PATHS: '/,/a2a/rest' });
  rawInspected = await startTestProxy({
    UPSTREAM_URL: rawUrl,
    GUARDIAN_URL: guardian.url,
    ROLE: 'server',
    NON_A2A: 'forward',
    REST_BASE_PATHS: '/,/a2a/rest',
    INSPECT_RESPONSES: 'true',
    INSPECT_CARDS: 'false',
  });
});

afterAll(async () => {
  for (const p of [plain, inspected, rawPlain, rawInspected, ...extra]) await p?.close();
  for (const s of extraServers) {
    if (s instanceof http.Server) await closeServer(s);
    else await new Promise<void>((r) => s.close(() => r()));
  }
  await closeServer(upstream);
  for (const s of rawSockets) s.destroy();
  await new Promise<void>((r) => rawUpstream.close(() => r()));
  await guardian?.close();
});

beforeEach(() => {
  seen = [];
  rawSeen = [];
  handler = okJson;
  rawScript = (s) => s.destroy();
  upResClosedEarly = false;
  guardian.reset();
  guardian.clear();
});

/* ------------------------------------------ clients ----------------------------------------- */

interface Outcome {
  status: number;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
  text: string;
  json: any;
  /** The response arrived whole (framing complete, no socket error). */
  complete: boolean;
  error?: string;
}

interface Req {
  method?: string;
  path?: string;
  headers?: http.OutgoingHttpHeaders;
  body?: Buffer | string | object;
}

/** One request with node:http (no agent: its own connection), reporting exactly how the answer ended. */
function call(p: Proxy, r: Req = {}): Promise<Outcome> {
  const body = r.body === undefined ? undefined : Buffer.isBuffer(r.body) ? r.body : Buffer.from(typeof r.body === 'string' ? r.body : JSON.stringify(r.body));
  const headers: http.OutgoingHttpHeaders = {
    ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': body.length } : {}),
    ...(r.headers ?? {}),
  };
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: Outcome) => {
      if (settled) return;
      settled = true;
      resolve(o);
    };
    const req = http.request(`${p.url}${r.path ?? '/a2a/jsonrpc'}`, { method: r.method ?? 'POST', agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      const finish = (error?: string) => {
        const b = Buffer.concat(chunks);
        const text = b.toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        done({
          status: res.statusCode ?? 0,
          headers: res.headers,
          rawHeaders: res.rawHeaders,
          body: b,
          text,
          json,
          complete: error === undefined && res.complete,
          ...(error === undefined ? {} : { error }),
        });
      };
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => finish());
      res.on('error', (e) => finish(e.message));
      res.on('close', () => finish(res.complete ? undefined : 'closed early'));
    });
    req.on('error', (e) =>
      done({ status: 0, headers: {}, rawHeaders: [], body: Buffer.alloc(0), text: '', json: undefined, complete: false, error: e.message }),
    );
    req.end(body);
  });
}

/** Raw bytes to the proxy; everything it sent back once it closes (or after `ms`). */
function rawExchange(p: Proxy, data: Buffer | string, ms = 15_000): Promise<string> {
  return rawRoundTrip(Number(new URL(p.url).port), data, ms);
}

const STILL_WAITING = 'caller still waiting after 10 s' as const;
/** The outcome, or STILL_WAITING when the caller got no complete answer within 10 s (the timer is cleared either way). */
async function within10s<T>(p: Promise<T>): Promise<T | typeof STILL_WAITING> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<typeof STILL_WAITING>((r) => (t = setTimeout(() => r(STILL_WAITING), 10_000)))]);
  } finally {
    clearTimeout(t);
  }
}

const msg = (id: string | number, text: string, method = 'message/send') => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { message: { kind: 'message', messageId: `m-${String(id)}`, role: 'user', parts: [{ kind: 'text', text }] } },
});
const SSE = { accept: 'text/event-stream' };

async function upstreamErrors(p: Proxy): Promise<number> {
  const s = await p.metrics.registry.getSingleMetricAsString('a2a_guard_upstream_errors_total');
  const m = /a2a_guard_upstream_errors_total (\d+)/.exec(s);
  return m ? Number(m[1]) : 0;
}

function expectUpstreamError(o: Outcome, id: unknown): void {
  expect({ status: o.status, complete: o.complete, body: o.json }).toMatchObject({
    status: 200,
    complete: true,
    body: { jsonrpc: '2.0', id, error: { code: -31502, data: [{ reason: 'UPSTREAM_UNAVAILABLE' }] } },
  });
}

/* ============================================================================================ */

describe('request targets undici refuses or passes through', () => {
  test('OPTIONS * (asterisk-form): refused by the proxy (only absolute paths are rebuilt), no hang, and the proxy keeps serving', async () => {
    const out = await rawExchange(plain, 'OPTIONS * HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
    expect(out).not.toContain('<<TIMEOUT>>');
    expect(out).toMatch(/^HTTP\/1\.1 400 /);
    expect(out).toContain('REQUEST_REJECTED');
    expect(seen).toHaveLength(0);
    const after = await call(plain, { method: 'GET', path: '/other/after' });
    expect(after.status).toBe(200);
  });

  test('requests undici refuses do not poison the upstream pool (kept-alive connection still reused)', async () => {
    // Warm one kept-alive connection, then alternate a refused target with a normal request.
    await call(plain, { method: 'GET', path: '/warm' });
    const before = upConnections;
    for (let i = 0; i < 10; i++) {
      const bad = await rawExchange(plain, 'OPTIONS * HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
      expect(bad).toMatch(/^HTTP\/1\.1 400 /);
      const ok = await call(plain, { method: 'GET', path: `/ok/${i}` });
      expect(ok.status).toBe(200);
    }
    // node:http's agent reused the one idle socket; every refusal must not strand a pool client and its socket.
    expect(upConnections - before).toBeLessThanOrEqual(2);
  });

  test('absolute-form target: refused (never relayed, never to the named host)', async () => {
    const out = await rawExchange(plain, 'GET http://evil.example/x?q=1 HTTP/1.1\r\nhost: evil.example\r\nconnection: close\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 400 /);
    expect(seen).toHaveLength(0);
  });

  test('path without a leading slash: refused by the HTTP server with 400, never forwarded', async () => {
    const out = await rawExchange(plain, 'GET foo HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 400 /);
    expect(seen).toHaveLength(0);
  });
});

describe('methods', () => {
  test.each([
    ['DELETE', undefined],
    ['DELETE', '{"x":1}'],
    ['OPTIONS', undefined],
    ['OPTIONS', '{"x":2}'],
    ['PATCH', undefined],
    ['PATCH', '{"x":3}'],
    ['PUT', '{"x":4}'],
    ['GET', '{"x":5}'],
  ])('%s with body %s: forwarded with the same method and body, answer relayed', async (method, body) => {
    const o = await call(plain, { method, path: '/things/1', ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }) });
    expect(o.status).toBe(200);
    expect(o.complete).toBe(true);
    expect(o.json).toEqual({ ok: true, method, url: '/things/1' });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.method).toBe(method);
    expect(seen[0]?.body.toString()).toBe(body ?? '');
    if (body !== undefined) expect(seen[0]?.headers['content-length']).toBe(String(body.length));
    else expect(Number(seen[0]?.headers['content-length'] ?? '0')).toBe(0);
    expect(seen[0]?.headers['transfer-encoding']).toBeUndefined();
  });

  test('HEAD elsewhere: status and content-length relayed, no body, then the next call works', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1234', 'x-head': 'yes' });
      res.end(req.method === 'HEAD' ? undefined : 'x'.repeat(1234));
    };
    const o = await call(plain, { method: 'HEAD', path: '/blob' });
    expect(o).toMatchObject({ status: 200, complete: true, text: '' });
    expect(o.headers['content-length']).toBe('1234');
    expect(o.headers['x-head']).toBe('yes');
    expect(seen[0]?.method).toBe('HEAD');
    handler = okJson;
    expect((await call(plain, { method: 'GET', path: '/next' })).status).toBe(200);
  });

  test('HEAD on the card path: status relayed, no body, no hang', async () => {
    handler = (req, res) => {
      const card = JSON.stringify({
        name: 'A',
        url: `${upstreamUrl}/a2a`,
        version: '1',
        protocolVersion: '0.3.0',
        capabilities: {},
        skills: [],
        defaultInputModes: [],
        defaultOutputModes: [],
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(card) });
      res.end(req.method === 'HEAD' ? undefined : card);
    };
    const o = await call(plain, { method: 'HEAD', path: '/.well-known/agent-card.json' });
    expect(o).toMatchObject({ status: 200, complete: true, text: '' });
    // HEAD is answered from the rewritten card (its length and ETag), so the proxy fetches it with GET.
    expect(seen.map((s) => s.method)).toEqual(['GET']);
    const g = await call(plain, { method: 'GET', path: '/.well-known/agent-card.json' });
    expect(g.status).toBe(200);
    expect(g.json.url).toContain(plain.url);
  });
});

describe('request headers undici rejects or rewrites', () => {
  const hopHeaders = 'connection: close, x-drop-me\r\nkeep-alive: timeout=5\r\nte: trailers\r\nupgrade: foo/1\r\nx-drop-me: 1\r\nexpect: 100-continue\r\n';

  test('A2A call with connection/keep-alive/te/upgrade/expect and a chunked body: forwarded, none of them reach the agent', async () => {
    const body = JSON.stringify(msg('hop-1', 'hi'));
    const half = Math.floor(body.length / 2);
    const chunked = `${half.toString(16)}\r\n${body.slice(0, half)}\r\n${(body.length - half).toString(16)}\r\n${body.slice(half)}\r\n0\r\n\r\n`;
    const out = await rawExchange(
      plain,
      `POST /a2a/jsonrpc HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n${hopHeaders}\r\n${chunked}`,
      10_000,
    );
    expect(out).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 |^HTTP\/1\.1 200 /);
    expect(out).toContain('"id":"hop-1"');
    expect(out).toContain('"result"');
    expect(seen).toHaveLength(1);
    const h = seen[0]?.headers ?? {};
    for (const name of ['keep-alive', 'te', 'upgrade', 'x-drop-me', 'expect', 'transfer-encoding']) expect(h[name]).toBeUndefined();
    expect(h['content-length']).toBe(String(seen[0]?.body.length));
    expect(JSON.parse(seen[0]?.body.toString() ?? '{}')).toMatchObject({ id: 'hop-1', method: 'message/send' });
  });

  test('non-A2A traffic with the same hop-by-hop headers: forwarded, none reach the agent', async () => {
    const out = await rawExchange(plain, `GET /plain/x HTTP/1.1\r\nhost: x\r\n${hopHeaders.replace('expect: 100-continue\r\n', '')}\r\n`);
    expect(out).toMatch(/^HTTP\/1\.1 200 /);
    const h = seen[0]?.headers ?? {};
    for (const name of ['keep-alive', 'te', 'upgrade', 'x-drop-me']) expect(h[name]).toBeUndefined();
  });

  test('obs-text (latin1) header values and duplicate headers reach the agent byte for byte', async () => {
    const head = Buffer.from(
      'GET /dup HTTP/1.1\r\nhost: client.example\r\nx-name: caf\xe9 \xff\r\nx-dup: a\r\nx-dup: b\r\ncookie: c1=1\r\ncookie: c2=2\r\nx-tab: a\tb\r\nconnection: close\r\n\r\n',
      'latin1',
    );
    const out = await rawExchange(plain, head);
    expect(out).toMatch(/^HTTP\/1\.1 200 /);
    const h = seen[0]?.headers ?? {};
    expect(h['x-name']).toBe('caf\xe9 \xff');
    expect(h['x-dup']).toBe('a, b');
    expect(h.cookie).toBe('c1=1; c2=2');
    expect(h['x-tab']).toBe('a\tb');
    expect(h.host).toBe(new URL(upstreamUrl).host);
    expect(h['x-forwarded-host']).toBe('client.example');
  });

  test('ROLE=client with a non-latin1 observed agent name: the call is still forwarded (X-AOS-Agent-Name cannot carry it as is)', async () => {
    const p = await startTestProxy({
      UPSTREAM_URL: upstreamUrl,
      GUARDIAN_URL: guardian.url,
      ROLE: 'client',
      NON_A2A: 'forward',
      REST_BASE_PATHS: '/,/a2a/rest',
      OBSERVED_AGENT_NAME: 'エージェント',
      OBSERVED_AGENT_URL: 'https://client.example/',
      OBSERVED_AGENT_VERSION: '1',
    });
    extra.push(p);
    const o = await call(p, { body: msg('uni-1', 'hi') });
    expect(o.json?.error).toBeUndefined();
    expect(o.json).toMatchObject({ id: 'uni-1', result: { kind: 'message' } });
    expect(seen).toHaveLength(1);
  });
});

describe('response headers', () => {
  // Raw bytes from the agent: two Set-Cookie lines, a repeated header, and a latin1 byte (0xE9).
  const dupHeaders: RawScript = (sock, head, body) => {
    const text = head.startsWith('POST') ? rpcResult(rpcId(body)) : '{"ok":true}';
    sock.write(
      Buffer.concat([
        Buffer.from(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nset-cookie: a=1; Path=/\r\nset-cookie: b=2; HttpOnly\r\nx-multi: one\r\nx-multi: two\r\nx-latin: caf\xe9\r\n\r\n`,
          'latin1',
        ),
        Buffer.from(text),
      ]),
    );
  };

  /** The three ways an answer goes back: plain unjudged traffic, a plain A2A relay, an inspected one. */
  const relayPaths = (tag: string): [string, () => Proxy, Req][] => [
    ['plain, non-A2A', () => rawPlain, { method: 'GET', path: `/${tag}` }],
    ['plain, A2A', () => rawPlain, { body: msg(`${tag}-1`, 'hi') }],
    ['inspected, A2A', () => rawInspected, { body: msg(`${tag}-2`, 'hi') }],
  ];

  test.each(relayPaths('ck'))('%s: set-cookie stays two headers, other duplicates relayed, latin1 bytes preserved', async (_name, p, r) => {
    rawScript = dupHeaders;
    const o = await call(p(), r);
    expect(o.status).toBe(200);
    expect(o.complete).toBe(true);
    expect(o.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; HttpOnly']);
    expect(o.headers['x-multi']).toBe('one, two');
    expect(o.headers['x-latin']).toBe('caf\xe9');
  });

  // Two Connection lines (undici keeps them as two values), each naming a header that must not go on.
  const twoConnections: RawScript = (sock, head, body) => {
    const text = head.startsWith('POST') ? rpcResult(rpcId(body)) : '{"ok":true}';
    sock.write(
      `HTTP/1.1 200 OK\r\nX-Hop-A: 1\r\nConnection: keep-alive, X-Hop-A\r\ncontent-type: application/json\r\nconnection: x-hop-b\r\nx-hop-b: 2\r\nKeep-Alive: timeout=5\r\nx-kept: 3\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
    );
  };

  test.each(relayPaths('hop'))('%s: two Connection headers: the answer is relayed, without every header they name', async (_name, p, r) => {
    rawScript = twoConnections;
    const o = await call(p(), r);
    expect(o.status).toBe(200);
    expect(o.complete).toBe(true);
    expect(o.headers['x-kept']).toBe('3');
    expect(o.headers['x-hop-a']).toBeUndefined();
    expect(o.headers['x-hop-b']).toBeUndefined();
    expect(o.headers['keep-alive']).toBeUndefined();
  });
});

describe('an agent event stream that declares its own length', () => {
  // The proxy may write an event stream's bytes itself (each inspected event re-serialized, a deny's or a
  // failure's error event): the agent's length would then frame the caller's connection, and the agent
  // could place bytes past the caller's message boundary. Such answers leave chunked, without it.
  const stream = (id: unknown, tail = '') => `${sseEvent(id, 1)}${sseEvent(id, 2)}${tail}`;
  const withLength = (text: string) =>
    `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${Buffer.byteLength(text)}\r\netag: "agent"\r\ncontent-md5: Q2hlY2sgSW50ZWdyaXR5IQ==\r\n\r\n${text}`;

  test.each([
    ['plain relay, allowed', () => rawPlain, 'allow'],
    ['inspected, every event allowed', () => rawInspected, 'allow'],
    ['inspected, the second event denied', () => rawInspected, 'deny'],
    ['inspected, the second event modified (longer)', () => rawInspected, 'modify'],
  ] as const)('%s: chunked, no agent length or validators, and the connection still frames the next call', async (_name, p, decision) => {
    rawScript = (sock, _head, body) => {
      const id = rpcId(body);
      sock.write(JSON.stringify(JSON.parse(body.toString('utf8'))).includes('stream') ? withLength(stream(id)) : withLength(sseEvent(id, 9)));
    };
    guardian.script((e) => {
      if (!isResponseEnvelope(e) || !JSON.stringify(e.params.payload).includes('"n":2')) return { decision: 'allow' };
      if (decision === 'deny') return { decision: 'deny', message: 'no' };
      const modified = JSON.parse(JSON.stringify(e.params.payload).replace('"n":2', `"n":2,"pad":"${'y'.repeat(500)}"`)) as Record<string, unknown>;
      return decision === 'modify' ? { decision: 'modify', modifiedPayload: modified } : { decision: 'allow' };
    });
    const port = Number(new URL(p().url).port);
    const req = (id: number, method: string, last = false) => {
      const b = JSON.stringify(msg(`len-${id}`, 'hi', method));
      return `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\naccept: text/event-stream\r\n${last ? 'connection: close\r\n' : ''}content-length: ${Buffer.byteLength(b)}\r\n\r\n${b}`;
    };
    // Two calls on one connection: the second answer must start where the first one's framing ends.
    const out = await rawRoundTrip(port, req(1, 'message/stream') + req(2, 'message/send', true), 10_000);
    const first = out.slice(0, out.indexOf('\r\n\r\n'));
    expect(first).toMatch(/^HTTP\/1\.1 200/);
    expect(first).toMatch(/\r\ntransfer-encoding: chunked/i);
    expect(first).not.toMatch(/\r\n(content-length|etag|content-md5):/i);
    const end = out.indexOf('\r\n0\r\n\r\n');
    expect(end).toBeGreaterThan(0);
    expect(out.slice(end + 7)).toMatch(/^HTTP\/1\.1 200/);
    expect(out.slice(end + 7)).toContain('len-2');
  });

  test("an agent cannot answer a later, denied call on a pipelining caller's connection", async () => {
    // Data-less "events" reach the caller as they are; numbers like 1e20 grow when an event is re-serialized.
    const forgedBody = (id: unknown) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        result: { kind: 'message', messageId: 'forged', role: 'agent', parts: [{ kind: 'text', text: 'FORGED BY AGENT' }] },
      });
    const forged = (id: unknown) =>
      `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(forgedBody(id))}\r\n\r\n${forgedBody(id)}\n\n`;
    const grows = (id: unknown) =>
      `data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"kind":"message","messageId":"a-1","role":"agent","parts":[{"kind":"text","text":"first"}],"metadata":{"n":[${Array(20).fill('1e20').join(',')}]}}}\n\n`;
    const agentSaw: string[] = [];
    rawScript = (sock, _head, body) => {
      const id = rpcId(body);
      agentSaw.push(body.toString('utf8'));
      if (body.toString('utf8').includes('message/stream')) sock.write(withLength(grows(id) + forged('pipe-2')));
      else sock.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(rpcResult(id))}\r\n\r\n${rpcResult(id)}`);
    };
    guardian.script((e) =>
      !isResponseEnvelope(e) && JSON.stringify(e.params.payload).includes('SECOND') ? { decision: 'deny', message: 'no' } : { decision: 'allow' },
    );
    const client = new Client(rawInspected.url, { pipelining: 2 });
    const ask = async (body: object): Promise<{ status: number; text: string }> => {
      const r = await client.request({
        path: '/a2a/jsonrpc',
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify(body),
      });
      return { status: r.statusCode, text: await r.body.text() };
    };
    try {
      const [first, second] = await Promise.all([ask(msg('pipe-1', 'hi', 'message/stream')), ask(msg('pipe-2', 'SECOND'))]);
      expect(first.status).toBe(200);
      expect(parseSse(first.text).length).toBeGreaterThan(0);
      // The proxy's own deny, whole: not the agent's bytes.
      expect(second.text).not.toContain('FORGED');
      expect(JSON.parse(second.text)).toMatchObject({ jsonrpc: '2.0', id: 'pipe-2', error: { code: -31403 } });
      expect(agentSaw).toHaveLength(1);
      expect(agentSaw[0]).toContain('pipe-1');
    } finally {
      await client.destroy();
    }
  });
});

describe('extended agent card results that cannot be rewritten', () => {
  const cardCall = (id: string) => ({ jsonrpc: '2.0', id, method: 'GetExtendedAgentCard', params: {} });
  const INTERNAL = 'http://internal-agent.example:9999/a2a';

  test.each([
    ['not JSON', 'text/html', `<a href="${INTERNAL}">card</a>`],
    ['a JSON-RPC result that is not an object', 'application/json', JSON.stringify({ jsonrpc: '2.0', id: 'card-2', result: [INTERNAL] })],
    ['gzip that does not decode', 'application/json', 'not gzip at all'],
  ])('%s: -31502, the agent URL never reaches the caller (FAIL_MODE=closed and open alike)', async (what, type, text) => {
    const open = await startTestProxy({
      UPSTREAM_URL: upstreamUrl,
      GUARDIAN_URL: guardian.url,
      ROLE: 'server',
      NON_A2A: 'forward',
      REST_BASE_PATHS: '/,/a2a/rest',
      FAIL_MODE: 'open',
    });
    extra.push(open);
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': type, ...(what.startsWith('gzip') ? { 'content-encoding': 'gzip' } : {}) });
      res.end(text);
    };
    for (const p of [plain, open]) {
      const before = await upstreamErrors(p);
      const o = await call(p, { body: cardCall('card-2') });
      expectUpstreamError(o, 'card-2');
      expect(o.text).not.toContain('internal-agent');
      expect(await upstreamErrors(p)).toBe(before + 1);
    }
  });

  test('a JSON-RPC error answer (no card in it) is relayed as the agent sent it', async () => {
    const text = JSON.stringify({ jsonrpc: '2.0', id: 'card-3', error: { code: -32007, message: 'not configured' } });
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    const o = await call(plain, { body: cardCall('card-3') });
    expect(o.status).toBe(200);
    expect(o.json).toEqual(JSON.parse(text));
  });
});

describe('status codes', () => {
  test.each([204, 304])('%i from the agent: relayed without a body, connection reusable', async (status) => {
    handler = (_req, res) => {
      res.writeHead(status, { etag: '"v1"', 'x-s': String(status) });
      res.end();
    };
    const o = await call(plain, { method: 'GET', path: '/cond', headers: { 'if-none-match': '"v1"' } });
    expect(o).toMatchObject({ status, complete: true, text: '' });
    expect(o.headers['x-s']).toBe(String(status));
    expect(seen[0]?.headers['if-none-match']).toBe('"v1"');
    handler = okJson;
    expect((await call(plain, { method: 'GET', path: '/after' })).status).toBe(200);
  });

  const early: Record<string, (res: http.ServerResponse) => void> = {
    '103 Early Hints': (res) => res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' }),
    '102 Processing': (res) => res.writeProcessing(),
  };
  for (const [name, send] of Object.entries(early)) {
    test.each([
      ['plain non-A2A', () => plain, { method: 'GET', path: '/info' } as Req, false],
      ['plain A2A', () => plain, { body: msg('info-1', 'hi') } as Req, true],
      ['inspected A2A', () => inspected, { body: msg('info-2', 'hi') } as Req, true],
    ])(`${name} before the answer (%s): the caller gets the final answer, as node:http's client gave it`, async (_n, p, r, rpc) => {
      handler = (req, res, body) => {
        send(res);
        setTimeout(() => okJson(req, res, body), 30);
      };
      // A caller left waiting is reported as such after 10 s (instead of the test timing out).
      const o = await within10s(call(p(), r));
      expect(o).not.toBe(STILL_WAITING);
      if (typeof o === 'string') return;
      expect({ status: o.status, complete: o.complete }).toEqual({ status: 200, complete: true });
      if (rpc) expect(o.json).toMatchObject({ result: { kind: 'message' } });
      else expect(o.json).toMatchObject({ ok: true });
    });
  }
  test('an unsolicited 100 Continue before the answer (plain A2A): a clear -31502, not a hang (undici drops the connection on a 100 it did not ask for; the proxy never sends Expect)', async () => {
    handler = (req, res, body) => {
      res.writeContinue();
      setTimeout(() => okJson(req, res, body), 30);
    };
    const o = await call(plain, { body: msg('cont', 'hi') });
    expectUpstreamError(o, 'cont');
    handler = okJson;
    const after = await call(plain, { body: msg('cont-2', 'hi') });
    expect(after.json?.error).toBeUndefined();
    expect(after.json).toMatchObject({ id: 'cont-2', result: { kind: 'message' } });
  });

  test.each([
    ['plain', () => rawPlain],
    ['inspected', () => rawInspected],
  ])('a status below 100 (HTTP/1.1 099) from the agent, %s: the caller gets a clear error, not a hang', async (_n, p) => {
    rawScript = (sock) => {
      sock.write('HTTP/1.1 099 Weird\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
      setTimeout(() => sock.end(), 200);
    };
    const o = await within10s(call(p(), { body: msg('s099', 'hi') }));
    expect(o).not.toBe(STILL_WAITING);
    if (typeof o === 'string') return;
    expectUpstreamError(o, 's099');
  });

  test('an answer too large to inspect (abort from inside the data callback): -31502 at once, the next call works', async () => {
    const p = await startTestProxy({
      UPSTREAM_URL: upstreamUrl,
      GUARDIAN_URL: guardian.url,
      ROLE: 'server',
      NON_A2A: 'forward',
      REST_BASE_PATHS: '/,/a2a/rest',
      INSPECT_RESPONSES: 'true',
      INSPECT_CARDS: 'false',
      MAX_BODY_BYTES: String(64 * 1024),
    });
    extra.push(p);
    handler = (_req, res, body) => {
      const text = JSON.stringify({
        jsonrpc: '2.0',
        id: rpcId(body),
        result: { kind: 'message', messageId: 'big', role: 'agent', parts: [{ kind: 'text', text: 'y'.repeat(1024 * 1024) }] },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    expectUpstreamError(await call(p, { body: msg('big', 'hi') }), 'big');
    handler = okJson;
    expect((await call(p, { body: msg('small', 'hi') })).json).toMatchObject({ id: 'small', result: { kind: 'message' } });
  });
});

describe('the agent cuts its answer', () => {
  const halfJson: Handler = (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1000 });
    res.write('{"jsonrpc":"2.0","id":"cut","result":{"kind":"message","parts":[{"kind":"text","text":"half');
    setTimeout(() => req.socket.destroy(), 50);
  };
  const halfSse: Handler = (req, res, body) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(sseEvent(rpcId(body), 1));
    setTimeout(() => req.socket.destroy(), 80);
  };

  test('unary, plain relay: the caller sees a broken response; the metric counts it', async () => {
    handler = halfJson;
    const before = await upstreamErrors(plain);
    const o = await call(plain, { body: msg('cut', 'hi') });
    expect(o.complete).toBe(false);
    await waitFor(async () => (await upstreamErrors(plain)) === before + 1, 5000, 'upstream error counted');
  });

  test('unary, inspected: -31502; the metric counts it', async () => {
    handler = halfJson;
    const before = await upstreamErrors(inspected);
    expectUpstreamError(await call(inspected, { body: msg('cut', 'hi') }), 'cut');
    expect(await upstreamErrors(inspected)).toBe(before + 1);
  });

  test.each([
    ['plain', () => plain],
    ['inspected', () => inspected],
  ])('SSE, %s: the stream ends with event: error; the metric counts it', async (_n, p) => {
    handler = halfSse;
    const before = await upstreamErrors(p());
    const o = await call(p(), { body: msg('sse-cut', 'hi', 'message/stream'), headers: SSE });
    const evs = parseSse(o.text);
    expect(evs.length).toBeGreaterThanOrEqual(2);
    expect(evs[0]?.json?.result?.metadata?.n).toBe(1);
    expect(evs[evs.length - 1]?.event).toBe('error');
    expect(evs[evs.length - 1]?.json).toMatchObject({ id: 'sse-cut', error: { code: -31502 } });
    expect(await upstreamErrors(p())).toBe(before + 1);
  });

  test('without length framing, a clean close (FIN) ends the answer normally', async () => {
    rawScript = (s, _head, body) => {
      s.end(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n${rpcResult(rpcId(body))}`);
    };
    for (const p of [rawPlain, rawInspected]) {
      const o = await call(p, { body: msg('fin', 'hi') });
      expect(o).toMatchObject({ status: 200, complete: true, json: { id: 'fin', result: { kind: 'message' } } });
    }
  });

  test.each([
    ['unary content-length', false, false],
    ['unary chunked', false, true],
    ['SSE chunked', true, true],
  ])('headers and the whole body in one packet (%s): relayed whole, plain and inspected', async (_n, sse, chunked) => {
    rawScript = (s, _head, body) => {
      const id = rpcId(body);
      const payload = sse ? sseEvent(id, 1) + sseEvent(id, 2) : rpcResult(id);
      const framed = chunked ? `${Buffer.byteLength(payload).toString(16)}\r\n${payload}\r\n0\r\n\r\n` : payload;
      const head = `HTTP/1.1 200 OK\r\ncontent-type: ${sse ? 'text/event-stream' : 'application/json'}\r\n${chunked ? 'transfer-encoding: chunked' : `content-length: ${Buffer.byteLength(payload)}`}\r\n\r\n`;
      s.write(head + framed);
    };
    for (const p of [rawPlain, rawInspected]) {
      const o = await call(p, { body: msg('one', 'hi', sse ? 'message/stream' : 'message/send'), headers: sse ? SSE : {} });
      expect({ status: o.status, complete: o.complete }).toEqual({ status: 200, complete: true });
      if (sse) expect(parseSse(o.text).map((e) => e.json?.result?.metadata?.n)).toEqual([1, 2]);
      else expect(o.json).toMatchObject({ id: 'one', result: { kind: 'message' } });
    }
  });
});

describe('the caller goes away', () => {
  const endless: Handler = (req, res, body) => {
    res.writeHead(200, { 'content-type': req.headers.accept === 'text/event-stream' ? 'text/event-stream' : 'application/octet-stream' });
    let n = 0;
    const t = setInterval(() => {
      if (res.destroyed) return clearInterval(t);
      res.write(req.headers.accept === 'text/event-stream' ? sseEvent(rpcId(body), ++n) : 'x'.repeat(100));
    }, 20);
    res.once('close', () => clearInterval(t));
  };

  function openAndDrop(p: Proxy, r: Req): Promise<void> {
    return new Promise((resolve, reject) => {
      const body = Buffer.from(JSON.stringify(r.body ?? ''));
      const req = http.request(
        `${p.url}${r.path ?? '/a2a/jsonrpc'}`,
        {
          method: r.method ?? 'POST',
          agent: false,
          headers: { 'content-type': 'application/json', ...(r.body === undefined ? {} : { 'content-length': body.length }), ...(r.headers ?? {}) },
        },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', () => undefined);
      setTimeout(() => reject(new Error('no data')), 10_000).unref();
      req.end(r.body === undefined ? undefined : body);
    });
  }

  test.each([
    ['plain SSE', () => plain, { body: msg('gone-1', 'hi', 'message/stream'), headers: SSE } as Req],
    ['inspected SSE', () => inspected, { body: msg('gone-2', 'hi', 'message/stream'), headers: SSE } as Req],
    ['plain non-A2A stream', () => plain, { method: 'GET', path: '/endless' } as Req],
  ])('%s: the upstream request is aborted', async (_n, p, r) => {
    handler = endless;
    await openAndDrop(p(), r);
    await waitFor(() => upResClosedEarly, 10_000, 'upstream response closed');
  });

  test.each([
    ['plain SSE', () => plain, { body: msg('gone-3', 'hi', 'message/stream'), headers: SSE } as Req],
    ['inspected SSE', () => inspected, { body: msg('gone-4', 'hi', 'message/stream'), headers: SSE } as Req],
    ['plain non-A2A stream', () => plain, { method: 'GET', path: '/endless' } as Req],
  ])('%s: a caller leaving is not counted as an agent failure (a2a_guard_upstream_errors_total unchanged)', async (_n, p, r) => {
    handler = endless;
    const before = await upstreamErrors(p());
    await openAndDrop(p(), r);
    await waitFor(() => upResClosedEarly, 10_000, 'upstream response closed');
    await sleep(200);
    expect(await upstreamErrors(p())).toBe(before);
  });
  test.each([
    ['plain A2A', () => plain, { body: msg('early-1', 'hi') } as Req],
    ['inspected A2A', () => inspected, { body: msg('early-2', 'hi') } as Req],
    ['non-A2A', () => plain, { method: 'GET', path: '/slow' } as Req],
  ])('%s: a caller leaving before the agent answered aborts the upstream request, not counted as an agent failure', async (_n, p, r) => {
    let got = false;
    handler = () => {
      got = true; // never answers
    };
    const before = await upstreamErrors(p());
    const body = r.body === undefined ? undefined : Buffer.from(JSON.stringify(r.body));
    const req = http.request(`${p().url}${r.path ?? '/a2a/jsonrpc'}`, {
      method: r.method ?? 'POST',
      agent: false,
      headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': body.length },
    });
    req.on('error', () => undefined);
    req.end(body);
    await waitFor(() => got, 10_000, 'request reached the agent');
    req.destroy();
    await waitFor(() => upResClosedEarly, 10_000, 'upstream request aborted');
    await sleep(200);
    expect(await upstreamErrors(p())).toBe(before);
  });
});

describe('backpressure', () => {
  test('plain non-SSE relay: a paused reader holds the agent back (bounded), then gets every byte', async () => {
    const TOTAL = 48 * 1024 * 1024;
    const CHUNK = 64 * 1024;
    let acked = 0;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': TOTAL });
      let sent = 0;
      const pump = () => {
        while (sent < TOTAL) {
          sent += CHUNK;
          if (!res.write(Buffer.alloc(CHUNK, 0x61), () => (acked += CHUNK))) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    };
    let received = 0;
    let res!: http.IncomingMessage;
    const req = http.request(`${plain.url}/blob`, { agent: false }, (r) => {
      res = r;
      r.pause();
    });
    req.end();
    await waitFor(() => res !== undefined, 10_000, 'headers');
    let last = -1;
    let still = 0;
    await waitFor(
      () => {
        if (acked === last) still++;
        else {
          still = 0;
          last = acked;
        }
        return still >= 30;
      },
      30_000,
      'upstream stalls',
    );
    expect(acked).toBeLessThan(16 * 1024 * 1024);
    const done = new Promise<boolean>((resolve) => {
      res.on('data', (c: Buffer) => (received += c.length));
      res.on('end', () => resolve(res.complete));
      res.on('close', () => resolve(res.complete));
    });
    res.resume();
    expect(await done).toBe(true);
    expect(received).toBe(TOTAL);
  });
});

describe('guardian transport', () => {
  const allowBody = (body: Buffer) => JSON.stringify({ jsonrpc: '2.0', id: rpcId(body), result: { decision: 'allow', message: 'ok' } });

  async function guardianServer(
    fn: (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, nthOnSocket: number) => void,
  ): Promise<{ url: string; posts: () => number; conns: () => number; server: http.Server }> {
    let posts = 0;
    let conns = 0;
    const perSocket = new WeakMap<net.Socket, number>();
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        posts++;
        const n = (perSocket.get(req.socket) ?? 0) + 1;
        perSocket.set(req.socket, n);
        fn(req, res, Buffer.concat(chunks), n);
      });
    });
    server.on('connection', () => conns++);
    const url = await listen(server);
    extraServers.push(server);
    return { url, posts: () => posts, conns: () => conns, server };
  }

  test('a guardian that drops kept-alive connections between calls: the stale one is retried once, the call is allowed', async () => {
    // Each connection serves one call; the next call that arrives on it is cut without an answer.
    const g = await guardianServer((req, res, body, n) => {
      if (n > 1) return void req.socket.destroy();
      const text = allowBody(body);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
    const p = await startTestProxy({ UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: g.url, ROLE: 'server', NON_A2A: 'forward', REST_BASE_PATHS: '/,/a2a/rest' });
    extra.push(p);
    for (let i = 0; i < 4; i++) {
      const o = await call(p, { body: msg(`ka-${i}`, 'hi') });
      expect(o.json).toMatchObject({ id: `ka-${i}`, result: { kind: 'message' } });
    }
    expect(seen).toHaveLength(4);
    expect(g.posts()).toBe(7); // 1 + (stale, retry) x 3
  });

  test('a guardian that closes idle connections right away (keepAliveTimeout 1 ms): every call allowed', async () => {
    const g = await guardianServer((_req, res, body) => {
      const text = allowBody(body);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
    g.server.keepAliveTimeout = 1;
    const p = await startTestProxy({ UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: g.url, ROLE: 'server', NON_A2A: 'forward', REST_BASE_PATHS: '/,/a2a/rest' });
    extra.push(p);
    for (let i = 0; i < 5; i++) {
      await sleep(30);
      const o = await call(p, { body: msg(`idle-${i}`, 'hi') });
      expect(o.json).toMatchObject({ id: `idle-${i}`, result: { kind: 'message' } });
    }
  });

  test('a guardian answering with chunked encoding in pieces: allowed', async () => {
    const g = await guardianServer((_req, res, body) => {
      const text = allowBody(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(text.slice(0, 5));
      setTimeout(() => res.write(text.slice(5, 20)), 20);
      setTimeout(() => res.end(text.slice(20)), 40);
    });
    const p = await startTestProxy({ UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: g.url, ROLE: 'server', NON_A2A: 'forward', REST_BASE_PATHS: '/,/a2a/rest' });
    extra.push(p);
    const o = await call(p, { body: msg('chunk', 'hi') });
    expect(o.json).toMatchObject({ id: 'chunk', result: { kind: 'message' } });
  });

  test('a hanging guardian: the call ends with a guardian error once GUARDIAN_TIMEOUT_MS passed, nothing forwarded', async () => {
    const g = await guardianServer(() => undefined);
    const p = await startTestProxy({
      UPSTREAM_URL: upstreamUrl,
      GUARDIAN_URL: g.url,
      ROLE: 'server',
      NON_A2A: 'forward',
      REST_BASE_PATHS: '/,/a2a/rest',
      GUARDIAN_TIMEOUT_MS: '800',
    });
    extra.push(p);
    const t0 = Date.now();
    const o = await call(p, { body: msg('hang', 'hi') });
    const ms = Date.now() - t0;
    expect(o.json).toMatchObject({ id: 'hang', error: { code: -31503, data: [{ reason: 'GUARDIAN_UNAVAILABLE', metadata: { failure: 'timeout' } }] } });
    expect(ms).toBeGreaterThanOrEqual(700);
    expect(ms).toBeLessThan(10_000);
    expect(seen).toHaveLength(0);
  });

  test('guardian pool exhausted (more calls than its 512 connections, guardian hanging): every call times out in budget, then calls work again', async () => {
    let hang = true;
    const held: http.ServerResponse[] = [];
    const g = await guardianServer((_req, res, body) => {
      if (hang) return void held.push(res);
      const text = allowBody(body);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
    const hg = new HttpGuardian({ url: new URL(g.url), timeoutMs: 2000, breakerThreshold: 1_000_000 });
    try {
      const env = (id: string) => ({ jsonrpc: '2.0', id, method: 'steps/allowed', params: {} }) as never;
      const t0 = Date.now();
      const outs = await Promise.all(
        Array.from({ length: 540 }, (_, i) => hg.decide(env(`e${i}`), JSON.stringify({ jsonrpc: '2.0', id: `e${i}`, method: 'steps/allowed', params: {} }))),
      );
      const ms = Date.now() - t0;
      expect(outs.every((o) => !o.ok && o.kind === 'timeout')).toBe(true);
      expect(ms).toBeLessThan(15_000);
      expect(g.conns()).toBeLessThanOrEqual(512 + 28);
      hang = false;
      for (const r of held) r.destroy();
      const ok = await hg.decide(env('after'), JSON.stringify({ jsonrpc: '2.0', id: 'after', method: 'steps/allowed', params: {} }));
      expect(ok).toMatchObject({ ok: true, result: { decision: 'allow' } });
    } finally {
      hg.close();
    }
  });
});

describe('close() releases everything', () => {
  test('open stream, kept-alive agent and guardian connections, a guardian call in flight: all closed', async () => {
    const up = http.createServer((req, res) => {
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(sseEvent('s', 1));
        return; // never ends
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => okJson(req, res, Buffer.concat(chunks)));
    });
    const upUrl = await listen(up);
    extraServers.push(up);
    let hangNext = false;
    const g = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (hangNext) return;
        const text = JSON.stringify({ jsonrpc: '2.0', id: rpcId(Buffer.concat(chunks)), result: { decision: 'allow', message: 'ok' } });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      });
    });
    const gUrl = await listen(g);
    extraServers.push(g);
    const p = await startTestProxy({
      UPSTREAM_URL: upUrl,
      GUARDIAN_URL: gUrl,
      ROLE: 'server',
      NON_A2A: 'forward',
      REST_BASE_PATHS: '/,/a2a/rest',
      GUARDIAN_TIMEOUT_MS: '60000',
    });

    expect((await call(p, { method: 'GET', path: '/idle' })).status).toBe(200);
    expect((await call(p, { body: msg('c1', 'hi') })).json).toMatchObject({ result: {} });
    const streamDone = call(p, { method: 'GET', path: '/stream', headers: SSE });
    hangNext = true;
    const pending = call(p, { body: msg('c2', 'hi') });
    const count = (s: http.Server) => new Promise<number>((r) => s.getConnections((_e, n) => r(n)));
    await waitFor(async () => (await count(g)) >= 1 && (await count(up)) >= 2, 10_000, 'connections open');
    await sleep(200);

    await p.close();
    await waitFor(async () => (await count(up)) === 0, 10_000, 'agent connections closed');
    await waitFor(async () => (await count(g)) === 0, 10_000, 'guardian connections closed');
    const [s, c] = await Promise.all([streamDone, pending]);
    expect(s.complete).toBe(false);
    expect(c.status === 0 || c.complete === false || c.json?.error !== undefined).toBe(true);
  });
});
