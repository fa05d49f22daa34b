/**
 * Unjudged answers (PASSTHROUGH_PATHS, NON_A2A=forward) that are agent cards: a card reader parses the
 * body whatever it is labelled, so an agent card relayed as it is leads the reader to the agent's own URL,
 * around the guardian. A hostile agent (a real SDK agent's card, pointed at itself) answers a passthrough
 * path with its card in every form a reader still reads: each is rewritten to point at the proxy, or
 * refused; never relayed with the agent's URL. The oracle is what a reader gets: fetch (which undoes the
 * codings it knows and leaves the others) and the SDK's card resolver. Answers that are not cards pass as
 * they came, streamed unless they could start a JSON value.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import type * as A2AClient from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import { makeClient, sendReq } from '../../helpers/agent';
import { endpointUrls } from '../../helpers/cards';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { answer, useHostileAgent } from '../../helpers/hostile-agent';
import { closeServer, listen } from '../../helpers/net';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

const sdkClient: typeof A2AClient = require('@a2a-js/sdk/client');

const LIMIT = 256 * 1024;
const hostile = useHostileAgent();
let guardian: TestGuardian;
let passthrough: TestProxy;
let forward: TestProxy;

beforeAll(async () => {
  guardian = await startGuardian();
  passthrough = await startTestProxy({ UPSTREAM_URL: hostile.origin, GUARDIAN_URL: guardian.url, PASSTHROUGH_PATHS: '/static', MAX_BODY_BYTES: String(LIMIT) });
  forward = await startTestProxy({ UPSTREAM_URL: hostile.origin, GUARDIAN_URL: guardian.url, NON_A2A: 'forward', PUBLIC_URL: 'https://guard.example' });
  await Promise.all([passthrough.upstreamCard.ready(), forward.upstreamCard.ready()]);
});
afterAll(async () => {
  await passthrough?.close();
  await forward?.close();
  await guardian?.close();
});
beforeEach(() => {
  hostile.received.length = 0;
  guardian.clear();
});

type Headers = readonly (readonly [string, string])[];
const J: Headers = [['content-type', 'application/json']];

/** The hostile agent answers every non-card request with these bytes. */
function serve(status: number, headers: Headers, body: Buffer | string, framing: 'length' | 'chunked' = 'length'): void {
  hostile.script = () => answer(status, headers, body, framing);
}

/** What readers get at `path`: fetch's text (codings it knows undone), and the SDK resolver's card (or its failure). */
async function read(proxy: TestProxy, path: string): Promise<{ status: number; text: string; headers: Headers; card: unknown }> {
  const res = await fetch(`${proxy.url}${path}`);
  const text = await res.text();
  const resolver = new sdkClient.DefaultAgentCardResolver({ legacyCompat: { enabled: true } });
  const card = await resolver.resolve(proxy.url, path).catch((e: Error) => e);
  return { status: res.status, text, headers: [...res.headers.entries()], card };
}

/** No reader is led to the agent: its address is nowhere, and a card a reader gets points at `base`. */
function expectNoAgentUrl(r: { text: string; card: unknown }, base: string): void {
  expect(r.text).not.toContain(hostile.hostPort);
  if (!(r.card instanceof Error)) {
    const urls = endpointUrls(r.card);
    for (const u of urls) expect(u.startsWith(`${base}/`)).toBe(true);
  }
}

const card = (): string => hostile.cardText;
const utf16 = (s: string, bom: boolean, be = false): Buffer => {
  const le = Buffer.from(s, 'utf16le');
  const b = be ? Buffer.from(le.map((_, i) => le[i ^ 1] as number)) : le;
  return bom ? Buffer.concat([Buffer.from(be ? [0xfe, 0xff] : [0xff, 0xfe]), b]) : b;
};

describe('an agent card answering a passthrough path is rewritten to point at the proxy', () => {
  const forms: [string, () => [number, Headers, Buffer | string, ('length' | 'chunked')?]][] = [
    ['application/json', () => [200, J, card()]],
    ['labelled text/plain', () => [200, [['content-type', 'text/plain']], card()]],
    ['without a content type', () => [200, [], card()]],
    ['labelled text/event-stream', () => [200, [['content-type', 'text/event-stream']], card()]],
    ['labelled application/octet-stream', () => [200, [['content-type', 'application/octet-stream']], card()]],
    ['behind a UTF-8 byte order mark', () => [200, J, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(card())])]],
    ['behind JSON whitespace', () => [200, J, `\r\n\t  ${card()}`]],
    ['chunked', () => [200, J, card(), 'chunked']],
    ['gzip', () => [200, [...J, ['content-encoding', 'gzip']], zlib.gzipSync(card())]],
    ['x-gzip, chunked', () => [200, [...J, ['content-encoding', 'x-gzip']], zlib.gzipSync(card()), 'chunked']],
    ['deflate (zlib)', () => [200, [...J, ['content-encoding', 'deflate']], zlib.deflateSync(card())]],
    ['deflate (raw)', () => [200, [...J, ['content-encoding', 'deflate']], zlib.deflateRawSync(card())]],
    ['br', () => [200, [...J, ['content-encoding', 'br']], zlib.brotliCompressSync(card())]],
    ['gzip of whitespace then the card', () => [200, [...J, ['content-encoding', 'gzip']], zlib.gzipSync(' '.repeat(100_000) + card())]],
    ['a coding no reader knows (read as it is)', () => [200, [...J, ['content-encoding', 'x-custom']], card()]],
    ['as a 404', () => [404, J, card()]],
    ['member names in other spellings', () => [200, J, card().replace('"url"', '"URL"').replace('"supportedInterfaces"', '"supported_interfaces"')]],
    ['a member given twice', () => [200, J, card().replace('{', '{"url":"http://elsewhere.example/a2a",')]],
    ['a bare v0.3 card', () => [200, J, JSON.stringify({ url: `${hostile.origin}/a2a/jsonrpc`, protocolVersion: '0.3' })]],
  ];
  test.each(forms)('%s', async (_n, form) => {
    const [status, headers, body, framing] = form();
    serve(status, headers, body, framing);
    const r = await read(passthrough, '/static/card.json');
    expect(r.status).toBe(status);
    expectNoAgentUrl(r, passthrough.url);
    const got = JSON.parse(r.text);
    const urls = endpointUrls(got);
    expect(urls.length).toBeGreaterThan(0);
    for (const u of urls) expect(u.startsWith(`${passthrough.url}/`)).toBe(true);
    expect(r.headers.find(([k]) => k === 'content-encoding')).toBeUndefined();
  });

  test('NON_A2A=forward: rewritten too (to PUBLIC_URL), and the caller keeps the rest of the card', async () => {
    serve(200, J, card());
    const r = await read(forward, '/anything/here');
    expectNoAgentUrl(r, 'https://guard.example');
    const got = JSON.parse(r.text);
    const original = JSON.parse(card());
    expect(got.name).toBe(original.name);
    expect(got.skills).toEqual(original.skills);
    expect(endpointUrls(got).every((u) => u.startsWith('https://guard.example/'))).toBe(true);
  });

  test('an SDK client that resolves the card at the passthrough path then calls through the proxy and its guardian', async () => {
    hostile.script = (q) =>
      q.path.startsWith('/static')
        ? answer(200, [['content-type', 'text/plain']], card())
        : answer(
            200,
            J,
            JSON.stringify({ jsonrpc: '2.0', id: q.id, result: { message: { messageId: 'r1', role: 'ROLE_AGENT', parts: [{ text: 'hi back' }] } } }),
          );
    const c = await makeClient(passthrough.url, 'JSONRPC', '1.0', { cardPath: '/static/card.json' });
    await c.sendMessage(sendReq('through the guardian'));
    expect(guardian.calls().map((e) => e.method)).toEqual(['message/send']);
    expect(hostile.received.filter((q) => q.method === 'POST').length).toBe(1);
  });
});

describe('an agent card the proxy cannot vouch for is refused', () => {
  const forms: [string, () => [number, Headers, Buffer | string]][] = [
    ['inside an array', () => [200, J, `[${card()}]`]],
    ['inside another object', () => [200, J, `{"data":${card()}}`]],
    ['followed by more text (a streaming decoder reads the first value)', () => [200, J, `${card()} trailing`]],
    ['twice in a row', () => [200, J, `${card()}${card()}`]],
    ['in UTF-16 with a byte order mark', () => [200, J, utf16(card(), true)]],
    ['in UTF-16BE without one', () => [200, J, utf16(card(), false, true)]],
    ['behind stacked codings', () => [200, [...J, ['content-encoding', 'gzip, gzip']], zlib.gzipSync(zlib.gzipSync(card()))]],
    ['behind a coding the proxy cannot read (zstd)', () => [200, [...J, ['content-encoding', 'zstd']], card()]],
    ['labelled gzip but plain (a reader that ignores the label reads it)', () => [200, [...J, ['content-encoding', 'gzip']], card()]],
    ['padded past MAX_BODY_BYTES', () => [200, J, card().replace('{', `{"pad":"${'x'.repeat(LIMIT)}",`)]],
    [
      'gzip that decodes past MAX_BODY_BYTES',
      () => [200, [...J, ['content-encoding', 'gzip']], zlib.gzipSync(card().replace('{', `{"pad":"${'x'.repeat(LIMIT)}",`))],
    ],
  ];
  test.each(forms)('%s', async (_n, form) => {
    const [status, headers, body] = form();
    serve(status, headers, body);
    const r = await read(passthrough, '/static/card.json');
    expect(r.status).toBe(502);
    expect(r.text).toContain('Agent answer refused');
    expectNoAgentUrl(r, passthrough.url);
    expect(r.card).toBeInstanceOf(Error);
  });

  test('an answer cut short while it was held is refused whole', async () => {
    hostile.script = () =>
      Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${card().length + 10}\r\n\r\n`), Buffer.from(card())]);
    const r = await read(passthrough, '/static/card.json');
    expect(r.status).toBe(502);
    expectNoAgentUrl(r, passthrough.url);
  });
});

describe('answers that are not cards pass as they came', () => {
  test.each([
    [
      'HTML',
      [
        ['content-type', 'text/html'],
        ['etag', '"v1"'],
      ],
      Buffer.from('<html><body>hello</body></html>'),
    ],
    ['JSON that is no card (a url and a name)', [...J, ['etag', '"v2"']], Buffer.from(JSON.stringify({ name: 'docs', url: 'https://docs.example/x' }))],
    [
      'gzip HTML, still compressed',
      [
        ['content-type', 'text/html'],
        ['content-encoding', 'gzip'],
      ],
      zlib.gzipSync('<html>hello</html>'),
    ],
    ['gzip JSON that is no card, still compressed', [...J, ['content-encoding', 'gzip']], zlib.gzipSync(JSON.stringify([{ id: 1, status: 'ok' }]))],
    [
      'a JPEG-like body larger than MAX_BODY_BYTES',
      [['content-type', 'image/jpeg']],
      Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(LIMIT * 2, 7)]),
    ],
    [
      'gzip text larger than MAX_BODY_BYTES once compressed',
      [
        ['content-type', 'text/plain'],
        ['content-encoding', 'gzip'],
      ],
      zlib.gzipSync(`text ${require('node:crypto').randomBytes(LIMIT).toString('base64')}`),
    ],
  ] as [string, Headers, Buffer][])('%s', async (_n, headers, body) => {
    serve(200, headers, body);
    const res = await new Promise<http.IncomingMessage & { body: Buffer }>((resolve, reject) => {
      http
        .get(`${passthrough.url}/static/x`, (m) => {
          const chunks: Buffer[] = [];
          m.on('data', (c: Buffer) => chunks.push(c));
          m.on('end', () => resolve(Object.assign(m, { body: Buffer.concat(chunks) })));
        })
        .on('error', reject);
    });
    expect(res.statusCode).toBe(200);
    expect(res.body.equals(body)).toBe(true);
    for (const [k, v] of headers) expect([k, res.headers[k]]).toEqual([k, v]);
  });

  test('JSON larger than MAX_BODY_BYTES could be a card: refused', async () => {
    serve(200, J, JSON.stringify({ items: 'x'.repeat(LIMIT) }));
    const r = await read(passthrough, '/static/big.json');
    expect(r.status).toBe(502);
  });

  test('the agent is asked only for codings the proxy can read back', async () => {
    serve(200, [['content-type', 'text/plain']], 'ok');
    await fetch(`${passthrough.url}/static/x`, { headers: { 'accept-encoding': 'zstd, br;q=0.9, gzip, *;q=0.1' } }).then((r) => r.text());
    expect(hostile.received[0]?.headers['accept-encoding']).toBe('br;q=0.9, gzip');
  });
});

describe('an event stream on a passthrough path', () => {
  let events: http.Server;
  let proxy: TestProxy;
  let release: () => void = () => undefined;
  beforeAll(async () => {
    events = http.createServer((q, res) => {
      if (q.url?.startsWith('/.well-known/') === true) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      release = () => res.end('data: last\n\n');
    });
    proxy = await startTestProxy({ UPSTREAM_URL: await listen(events), GUARDIAN_URL: guardian.url, PASSTHROUGH_PATHS: '/events' });
  });
  afterAll(async () => {
    release();
    await proxy?.close();
    await closeServer(events);
  });

  test('is relayed event by event, not held', async () => {
    const res = await fetch(`${proxy.url}/events`);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value as Uint8Array).toString()).toBe('data: first\n\n');
    release();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    expect(rest).toBe('data: last\n\n');
  });
});
