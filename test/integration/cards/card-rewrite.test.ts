/**
 * The agent card rewrite (design section 7; a2a-wire-reference 0.3-0.4, 5, 10.11), on the wire:
 *   - a real SDK agent whose card advertises https://agent.internal.example:8443/base (scheme, host,
 *     port and path prefix all differ from the proxy), UPSTREAM_URL = its real origin;
 *   - PUBLIC_URL set (with a path prefix) or unset (then scheme + Host of the request): every
 *     supportedInterfaces[].url (v1 card, A2A-Version: 1.0) and url / additionalInterfaces[].url /
 *     supportedInterfaces[].url (the SDK's hybrid v0.3 card, no header) point at the proxy, absolute;
 *     nothing else in the card changes; Vary: A2A-Version is kept; the ETag is recomputed (differs from
 *     the agent's, is the weak hash of the body sent) and Content-Length is the body length;
 *   - /.well-known/agent.json: the SDK 404s it and the 404 is relayed; an agent that serves it gets it
 *     rewritten too;
 *   - a hand-made upstream card: gRPC interfaces (host:port and URL forms) are removed, JWS signatures
 *     are stripped (CARD_SIGNATURES=strip, the default) or kept (keep);
 *   - end to end through a path-prefix ingress on both sides (front /edge -> proxy -> /base -> agent):
 *     SDK clients built from the public URL stay inside the proxy in all four combinations.
 */
import http from 'node:http';
import { weakEtag } from '../../../src/a2a/card';
import { makeClient, sendReq, startAgent, textOf, type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { endpointUrls } from '../../helpers/cards';
import { type TestGuardian } from '../../helpers/guardian';
import { closeServer, listen } from '../../helpers/net';
import { type TestProxy, startTestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;

const INTERNAL = 'https://agent.internal.example:8443/base';
const PUBLIC = 'https://guard.example.net:9443/edge';
const CARD = '/.well-known/agent-card.json';

const stack = useStack({ advertise: () => INTERNAL, name: 'Internal Agent' });
let agent: TestAgent;
let guardian: TestGuardian;
/** PUBLIC_URL set (with a path prefix). */
let pub: Proxy;
/** PUBLIC_URL unset. */
let hostBased: Proxy;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  pub = await stack.proxy({ PUBLIC_URL: PUBLIC });
  hostBased = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url });
});
afterAll(async () => {
  await hostBased?.close();
});

/* ---------------------------------------------------------------------------------------------- */
/* Helpers                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

interface Fetched {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  json: any;
}

/** GET with node:http, so the Host header can be chosen. */
function get(origin: string, path: string, headers: Record<string, string> = {}): Promise<Fetched> {
  const u = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: 'GET', path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        let json: unknown;
        try {
          json = JSON.parse(body.toString('utf8'));
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The card without its endpoint URLs (and signatures), to compare everything else. */
function withoutEndpoints(card: any): any {
  const c = JSON.parse(JSON.stringify(card));
  delete c.url;
  delete c.signatures;
  for (const key of ['supportedInterfaces', 'additionalInterfaces']) for (const i of c[key] ?? []) delete i.url;
  return c;
}

function expectPointsAt(urls: string[], base: string, tail: RegExp = /\/a2a\/(jsonrpc|rest)$/): void {
  expect(urls.length).toBeGreaterThan(0);
  for (const u of urls) {
    expect(() => new URL(u)).not.toThrow(); // absolute
    expect(u.startsWith(`${base}/`)).toBe(true);
    expect(u).not.toContain('agent.internal.example');
    expect(u).toMatch(tail);
  }
}

/** The response headers every rewritten card must carry. */
function expectCardHeaders(proxied: Fetched, upstream: Fetched): void {
  expect(proxied.status).toBe(200);
  expect(String(proxied.headers.vary)).toMatch(/A2A-Version/i);
  expect(Number(proxied.headers['content-length'])).toBe(proxied.body.length);
  expect(proxied.headers['transfer-encoding']).toBeUndefined();
  expect(proxied.headers.etag).toBeDefined();
  expect(proxied.headers.etag).not.toBe(upstream.headers.etag);
  expect(proxied.headers.etag).toBe(weakEtag(proxied.body));
  expect(String(proxied.headers.etag)).toMatch(/^W\/"/);
  expect(proxied.headers['content-encoding']).toBeUndefined();
}

/* ---------------------------------------------------------------------------------------------- */
/* A real SDK agent behind the proxy                                                              */
/* ---------------------------------------------------------------------------------------------- */

describe.each([
  ['PUBLIC_URL set', () => pub, () => PUBLIC, {} as Record<string, string>],
  ['PUBLIC_URL unset, Host of the request', () => hostBased, () => hostBased.url, {} as Record<string, string>],
  ['PUBLIC_URL unset, custom Host header', () => hostBased, () => 'http://guard.local:7777', { host: 'guard.local:7777' }],
])('%s', (_name, proxyOf, baseOf, extraHeaders) => {
  test.each([
    ['v1 card (A2A-Version: 1.0)', { 'a2a-version': '1.0' }],
    ['hybrid v0.3 card (no header)', {} as Record<string, string>],
  ])('%s: every endpoint URL points at the proxy, everything else unchanged, headers recomputed', async (_v, versionHeader) => {
    const upstream = await get(agent.origin, CARD, versionHeader);
    const proxied = await get(proxyOf().url, CARD, { ...versionHeader, ...extraHeaders });
    expect(upstream.status).toBe(200);
    // the agent really advertises its internal address
    for (const u of endpointUrls(upstream.json)) expect(u.startsWith(INTERNAL)).toBe(true);

    expectCardHeaders(proxied, upstream);
    const card = proxied.json;
    if (versionHeader['a2a-version'] === '1.0') {
      expect(card.url).toBeUndefined();
      expect(card.supportedInterfaces.length).toBe(upstream.json.supportedInterfaces.length);
    } else {
      expect(typeof card.url).toBe('string');
      expect(card.additionalInterfaces.length).toBe(upstream.json.additionalInterfaces.length);
      expect(card.supportedInterfaces.length).toBe(upstream.json.supportedInterfaces.length);
    }
    expectPointsAt(endpointUrls(card), baseOf());
    expect(withoutEndpoints(card)).toEqual(withoutEndpoints(upstream.json));
  });
});

test('the v1 and v0.3 cards differ, and so do their ETags; repeated fetches give the same ETag', async () => {
  const a = await get(pub.url, CARD, { 'a2a-version': '1.0' });
  const b = await get(pub.url, CARD);
  const a2 = await get(pub.url, CARD, { 'a2a-version': '1.0' });
  expect(a.body.equals(b.body)).toBe(false);
  expect(a.headers.etag).not.toBe(b.headers.etag);
  expect(a2.headers.etag).toBe(a.headers.etag);
});

test("a conditional request with the agent's ETag still gets the rewritten card (never the agent's 304 for its own body)", async () => {
  const upstream = await get(agent.origin, CARD, { 'a2a-version': '1.0' });
  const proxied = await get(pub.url, CARD, { 'a2a-version': '1.0', 'if-none-match': String(upstream.headers.etag) });
  expect(proxied.status).toBe(200);
  expectPointsAt(endpointUrls(proxied.json), PUBLIC);
});

test('/.well-known/agent.json: the SDK agent 404s it, and the 404 is relayed', async () => {
  const upstream = await get(agent.origin, '/.well-known/agent.json');
  expect(upstream.status).toBe(404);
  const proxied = await get(pub.url, '/.well-known/agent.json');
  expect(proxied.status).toBe(404);
  expect(proxied.body.toString('utf8')).toBe(upstream.body.toString('utf8'));
  expect(Number(proxied.headers['content-length'])).toBe(proxied.body.length);
});

/* ---------------------------------------------------------------------------------------------- */
/* A hand-made upstream card: gRPC entries, signatures, agent.json                                */
/* ---------------------------------------------------------------------------------------------- */

const SIGNATURES = [{ protected: 'eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIiwidHlwIjoiSk9TRSJ9', signature: 'c2lnbmF0dXJlLWJ5dGVz', header: { note: 'hand-made' } }];

function handMadeCard(version: '1.0' | '0.3' | '0.2'): Record<string, unknown> {
  const v1Interfaces = [
    { url: `${INTERNAL}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    { url: 'grpc.internal.example:50051', protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' },
    { url: 'https://agent.internal.example:8443/grpc', protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' },
    { url: `${INTERNAL}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: 't1', protocolVersion: '1.0' },
  ];
  const common = {
    name: 'Hand-made',
    description: 'served by a tiny node:http upstream',
    version: '9.9.9',
    capabilities: { streaming: true },
    skills: [],
    signatures: SIGNATURES,
  };
  if (version === '1.0') return { ...common, supportedInterfaces: v1Interfaces };
  return {
    ...common,
    protocolVersion: version === '0.3' ? '0.3.0' : '0.2.5',
    url: `${INTERNAL}/a2a/jsonrpc`,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [
      { url: `${INTERNAL}/a2a/jsonrpc`, transport: 'JSONRPC' },
      { url: 'grpc.internal.example:50051', transport: 'GRPC' },
      { url: 'https://agent.internal.example:8443/grpc', transport: 'GRPC' },
      { url: `${INTERNAL}/a2a/rest`, transport: 'HTTP+JSON' },
    ],
    ...(version === '0.3' ? { supportedInterfaces: v1Interfaces } : {}),
  };
}

describe('a hand-made upstream card', () => {
  let upstream: http.Server;
  let upstreamUrl: string;
  let strip: Proxy;
  let keep: Proxy;
  const seen: string[] = [];

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      const version = req.url === '/.well-known/agent.json' ? '0.2' : req.headers['a2a-version'] === '1.0' ? '1.0' : '0.3';
      if (req.url !== CARD && req.url !== '/.well-known/agent.json') {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.stringify(handMadeCard(version));
      res.writeHead(200, {
        'content-type': 'application/json',
        etag: '"hand-made-etag"',
        vary: 'A2A-Version',
        'cache-control': 'public, max-age=60',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    });
    upstreamUrl = await listen(upstream);
    strip = await startTestProxy({ UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: guardian.url, PUBLIC_URL: PUBLIC });
    keep = await startTestProxy({ UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: guardian.url, PUBLIC_URL: PUBLIC, CARD_SIGNATURES: 'keep' });
  });
  afterAll(async () => {
    await strip?.close();
    await keep?.close();
    await closeServer(upstream);
  });

  test.each([
    ['v1 card', CARD, { 'a2a-version': '1.0' }, '1.0'],
    ['hybrid v0.3 card', CARD, {}, '0.3'],
    ['pre-0.3 /.well-known/agent.json', '/.well-known/agent.json', {}, '0.2'],
  ] as const)('%s: gRPC interfaces removed, the others rewritten, signatures stripped by default', async (_n, path, headers, version) => {
    const original = handMadeCard(version);
    const isGrpc = (i: any) => (i.protocolBinding ?? i.transport) === 'GRPC';
    const up = await get(upstreamUrl, path, headers);
    const res = await get(strip.url, path, headers);
    expectCardHeaders(res, up);
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    const card = res.json;
    expect('signatures' in card).toBe(false);
    // gRPC entries in the spec's host:port form are gone (the URL form: see the next test).
    const all = ['supportedInterfaces', 'additionalInterfaces'].flatMap((key) => card[key] ?? []);
    expect(all.filter((i: any) => i.url === 'grpc.internal.example:50051')).toEqual([]);
    expect(all.filter((i: any) => !/^https?:\/\//.test(i.url))).toEqual([]);
    if (version !== '0.2') {
      expect(card.supportedInterfaces.filter((i: any) => !isGrpc(i)).map(({ url: _u, ...i }: any) => i)).toEqual([
        { protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
        { protocolBinding: 'HTTP+JSON', tenant: 't1', protocolVersion: '1.0' },
      ]);
    } else {
      expect(card.supportedInterfaces).toBeUndefined();
    }
    if (version !== '1.0') expect(card.additionalInterfaces.filter((i: any) => !isGrpc(i)).map((i: any) => i.transport)).toEqual(['JSONRPC', 'HTTP+JSON']);
    expectPointsAt([...(typeof card.url === 'string' ? [card.url] : []), ...all.filter((i: any) => !isGrpc(i)).map((i: any) => i.url)], PUBLIC);
    // nothing else changed
    const rest = (c: any) => {
      const x = withoutEndpoints(c);
      for (const key of ['supportedInterfaces', 'additionalInterfaces']) if (x[key]) x[key] = x[key].filter((i: any) => !isGrpc(i));
      return x;
    };
    expect(rest(card)).toEqual(rest(original));
  });

  test.each([
    ['v1 card', CARD, { 'a2a-version': '1.0' }],
    ['hybrid v0.3 card', CARD, {}],
    ['/.well-known/agent.json', '/.well-known/agent.json', {}],
  ] as const)('%s: a gRPC interface written as an https URL is removed too (not turned into a gRPC interface "at the proxy")', async (_n, path, headers) => {
    const res = await get(strip.url, path, headers);
    expect(res.status).toBe(200);
    const grpcLeft = ['supportedInterfaces', 'additionalInterfaces'].flatMap((key) =>
      (res.json[key] ?? []).filter((i: any) => (i.protocolBinding ?? i.transport) === 'GRPC').map((i: any) => `${key}: ${i.url}`),
    );
    expect(grpcLeft).toEqual([]);
  });

  test.each([
    ['v1 card', CARD, { 'a2a-version': '1.0' }],
    ['hybrid v0.3 card', CARD, {}],
    ['/.well-known/agent.json', '/.well-known/agent.json', {}],
  ] as const)('%s: CARD_SIGNATURES=keep keeps the signatures (the URLs are rewritten all the same)', async (_n, path, headers) => {
    const res = await get(keep.url, path, headers);
    expect(res.status).toBe(200);
    expect(res.json.signatures).toEqual(SIGNATURES);
    const nonGrpc = (c: any) =>
      ['supportedInterfaces', 'additionalInterfaces'].flatMap((k) =>
        (c[k] ?? []).filter((i: any) => (i.protocolBinding ?? i.transport) !== 'GRPC').map((i: any) => i.url),
      );
    expectPointsAt([...(typeof res.json.url === 'string' ? [res.json.url] : []), ...nonGrpc(res.json)], PUBLIC);
    expect(res.headers.etag).toBe(weakEtag(res.body));
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* End to end behind path-prefix ingresses: front (/edge) -> proxy -> ingress (/base) -> agent    */
/* ---------------------------------------------------------------------------------------------- */

/**
 * A tiny reverse proxy that strips `prefix` and forwards everything (streams included) to `target`.
 * `/.well-known/...` is forwarded as is: the SDK's card resolver looks for the card at the origin root.
 */
async function startPrefixStripper(prefix: string, target: () => string): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer((req, res) => {
    const raw = req.url ?? '/';
    const path = raw.startsWith('/.well-known/') ? `${prefix}${raw}` : raw;
    if (!path.startsWith(`${prefix}/`)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not under ${prefix}`);
      return;
    }
    const t = new URL(target());
    const up = http.request(
      { host: t.hostname, port: t.port, method: req.method, path: path.slice(prefix.length), headers: req.headers, agent: false },
      (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  return { url: await listen(server), server };
}

describe('end to end behind path-prefix ingresses on both sides', () => {
  let e2eAgent: TestAgent;
  let ingress: { url: string; server: http.Server };
  let front: { url: string; server: http.Server };
  let proxy: Proxy;

  beforeAll(async () => {
    e2eAgent = await startAgent({ advertise: () => INTERNAL, name: 'Behind ingress' });
    ingress = await startPrefixStripper('/base', () => e2eAgent.origin);
    front = await startPrefixStripper('/edge', () => proxy.url);
    proxy = await startTestProxy({ UPSTREAM_URL: `${ingress.url}/base`, GUARDIAN_URL: guardian.url, PUBLIC_URL: `${front.url}/edge` });
    await proxy.upstreamCard.ready();
  });
  afterAll(async () => {
    await proxy?.close();
    await closeServer(front.server);
    await closeServer(ingress.server);
    await e2eAgent?.close();
  });
  beforeEach(() => {
    guardian.reset();
    guardian.clear();
    e2eAgent.clear();
  });

  test("the card read through the front names the front's /edge URLs (the upstream /base prefix is replaced)", async () => {
    for (const headers of [{ 'a2a-version': '1.0' }, {}] as Record<string, string>[]) {
      const res = await get(front.url, `/edge${CARD}`, headers);
      expect(res.status).toBe(200);
      const urls = endpointUrls(res.json);
      expect(urls.length).toBeGreaterThan(0);
      for (const u of urls) expect(u).toMatch(new RegExp(`^${front.url}/edge/a2a/(jsonrpc|rest)$`));
    }
  });

  test.each([
    ['JSONRPC', '1.0'],
    ['JSONRPC', '0.3'],
    ['HTTP+JSON', '1.0'],
    ['HTTP+JSON', '0.3'],
  ] as const)('SDK client %s %s built from the public URL: every call passes the guardian and reaches the agent via the proxy', async (binding, version) => {
    const client = await makeClient(`${front.url}/edge`, binding, version);
    const sent = (await client.sendMessage(sendReq('through two ingresses'))) as { id: string };
    expect(textOf(sent)).toBe('echo: through two ingresses');
    const got = await client.getTask({ tenant: '', id: sent.id, historyLength: undefined });
    expect(got.id).toBe(sent.id);
    expect(guardian.calls().map((e) => e.method)).toEqual(['message/send', 'tasks/get']);
    const a2a = e2eAgent.received.filter((r: ReceivedRequest) => !r.path.includes('/.well-known/'));
    expect(a2a).toHaveLength(2);
    // everything the agent got came from the client through the front and the proxy
    for (const r of e2eAgent.received) {
      expect(r.headers['x-forwarded-for']).toBeDefined();
      expect(r.headers['x-forwarded-host']).toBe(new URL(front.url).host);
    }
  });
});
