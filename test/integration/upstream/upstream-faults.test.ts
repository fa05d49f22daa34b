/**
 * Upstream faults (design section 5: -31502 "upstream agent unreachable or failed before answering";
 * README: a stream cut by the agent ends with `event: error`). The upstream is a hand-made node:http
 * server whose behaviour each test scripts, and which counts the requests it receives, so "nothing is
 * retried" is asserted by count: refused, reset before answering, reset mid-response, reset mid-stream,
 * slow, and garbage instead of HTTP.
 */
import http from 'node:http';
import { parseSse, type SseEvent } from '../../helpers/agent';
import { deadGuardianUrl, startGuardian, type TestGuardian } from '../../helpers/guardian';
import { closeServer, listen } from '../../helpers/net';
import { startTestProxy } from '../../helpers/proxy-harness';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;
type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

let guardian: TestGuardian;
let upstream: http.Server;
let upstreamUrl: string;
let handler: Handler;
/** Every POST the upstream received: [path, parsed JSON-RPC method or REST path]. */
let posts: { path: string; method: string | undefined }[] = [];
let plain: Proxy;
let inspected: Proxy;
const extra: Proxy[] = [];

const answerJson: Handler = (_req, res, body) => {
  const id = (JSON.parse(body) as { id?: unknown }).id ?? null;
  const text = JSON.stringify({ jsonrpc: '2.0', id, result: { kind: 'message', messageId: 'a-1', role: 'agent', parts: [{ kind: 'text', text: 'fine' }] } });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

beforeAll(async () => {
  guardian = await startGuardian();
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (req.method !== 'POST') {
        res.writeHead(404, { 'content-type': 'application/json' });
        return void res.end('{}');
      }
      let method: string | undefined;
      try {
        method = (JSON.parse(body) as { method?: string }).method;
      } catch {
        method = undefined;
      }
      posts.push({ path: req.url ?? '', method });
      handler(req, res, body);
    });
  });
  upstreamUrl = await listen(upstream);
  plain = await startTestProxy({ UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: guardian.url, ROLE: 'server', NON_A2A: 'forward', REST_BASE_PATHS: '/,/a2a/rest' });
  inspected = await startTestProxy({
    UPSTREAM_URL: upstreamUrl,
    GUARDIAN_URL: guardian.url,
    ROLE: 'server',
    NON_A2A: 'forward',
    REST_BASE_PATHS: '/,/a2a/rest',
    INSPECT_RESPONSES: 'true',
  });
});

afterAll(async () => {
  for (const p of [plain, inspected, ...extra]) await p?.close();
  await closeServer(upstream);
  await guardian?.close();
});

beforeEach(() => {
  posts = [];
  handler = answerJson;
  guardian.reset();
  guardian.clear();
});

const msg = (id: string | number, text: string, method = 'message/send') => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { message: { kind: 'message', messageId: `m-${String(id)}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

interface Outcome {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
  /** The response arrived whole (framing complete, no socket error). */
  complete: boolean;
  error?: string;
}

/** POST with node:http and report exactly how the response ended. */
function post(p: Proxy, body: unknown, path = '/a2a/jsonrpc', headers: Record<string, string> = {}): Promise<Outcome> {
  const data = Buffer.from(JSON.stringify(body));
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: Outcome) => {
      if (settled) return;
      settled = true;
      resolve(o);
    };
    const req = http.request(
      `${p.url}${path}`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': data.length, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        const finish = (error?: string) => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          done({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json,
            complete: error === undefined && res.complete,
            ...(error === undefined ? {} : { error }),
          });
        };
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => finish());
        res.on('error', (e) => finish(e.message));
        res.on('aborted', () => finish('aborted'));
        res.on('close', () => finish(res.complete ? undefined : 'closed early'));
      },
    );
    req.on('error', (e) => done({ status: 0, headers: {}, text: '', json: undefined, complete: false, error: e.message }));
    req.end(data);
  });
}

function expectUpstreamError(o: Outcome, id: unknown): void {
  expect({ status: o.status, complete: o.complete, body: o.json }).toMatchObject({
    status: 200,
    complete: true,
    body: { jsonrpc: '2.0', id, error: { code: -31502, data: [{ reason: 'UPSTREAM_UNAVAILABLE', domain: 'a2a-guard' }] } },
  });
}

const events = (o: Outcome): SseEvent[] => parseSse(o.text);

const ssePrelude = (res: http.ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
};
const sseEvent = (id: unknown, n: number) =>
  `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { kind: 'status-update', taskId: 't', contextId: 'c', final: false, status: { state: 'working' }, metadata: { n } } })}\n\n`;

/* ------------------------------------------------------------------------------------------ */

describe('upstream refuses connections', () => {
  test('JSON-RPC (unary and stream) -> -31502 with the caller id; REST -> HTTP 502', async () => {
    const dead = await deadGuardianUrl(); // a port where nothing listens
    const p = await startTestProxy({ UPSTREAM_URL: dead, GUARDIAN_URL: guardian.url, ROLE: 'server', NON_A2A: 'forward', REST_BASE_PATHS: '/,/a2a/rest' });
    extra.push(p);
    expectUpstreamError(await post(p, msg('ref-1', 'hi')), 'ref-1');
    const s = await post(p, msg('ref-2', 'stream 2', 'message/stream'), '/a2a/jsonrpc', { accept: 'text/event-stream' });
    expectUpstreamError(s, 'ref-2');
    const rest = await post(p, { message: { messageId: 'r', role: 'ROLE_USER', parts: [{ text: 'hi' }] } }, '/message:send', { 'a2a-version': '1.0' });
    expect(rest.status).toBe(502);
    expect(rest.json).toMatchObject({ error: { code: 502, status: 'UNAVAILABLE', details: [{ reason: 'UPSTREAM_UNAVAILABLE' }] } });
    expect(guardian.calls()).toHaveLength(3);
    expect(await p.metrics.registry.getSingleMetricAsString('a2a_guard_upstream_errors_total')).toMatch(/a2a_guard_upstream_errors_total 3\b/);
  });
});

describe('upstream resets the connection before answering: -31502, no retry', () => {
  test.each([
    ['message/send', msg('rst-1', 'hi'), {}],
    ['message/stream', msg('rst-1', 'hi', 'message/stream'), { accept: 'text/event-stream' }],
    ['tasks/cancel', { jsonrpc: '2.0', id: 'rst-1', method: 'tasks/cancel', params: { id: 'task-1' } }, {}],
    [
      'tasks/pushNotificationConfig/set',
      {
        jsonrpc: '2.0',
        id: 'rst-1',
        method: 'tasks/pushNotificationConfig/set',
        params: { taskId: 't', pushNotificationConfig: { url: 'https://hooks.example/x' } },
      },
      {},
    ],
    ['tasks/get', { jsonrpc: '2.0', id: 'rst-1', method: 'tasks/get', params: { id: 'task-1' } }, {}],
  ])('%s', async (method, body, headers) => {
    handler = (req) => req.socket.destroy();
    for (const p of [plain, inspected]) {
      posts = [];
      expectUpstreamError(await post(p, body, '/a2a/jsonrpc', headers), 'rst-1');
      expect(posts.map((x) => x.method)).toEqual([method]);
    }
  });

  test('REST: HTTP 502 UNAVAILABLE, no retry', async () => {
    handler = (req) => req.socket.destroy();
    const o = await post(plain, { message: { messageId: 'r', role: 'ROLE_USER', parts: [{ text: 'hi' }] } }, '/a2a/rest/message:send', {
      'a2a-version': '1.0',
    });
    expect(o.status).toBe(502);
    expect(o.json).toMatchObject({ error: { code: 502, status: 'UNAVAILABLE', details: [{ reason: 'UPSTREAM_UNAVAILABLE' }] } });
    expect(posts).toHaveLength(1);
  });
});

describe('upstream resets mid-response', () => {
  const halfAnswer =
    (framing: 'length' | 'chunked'): Handler =>
    (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', ...(framing === 'length' ? { 'content-length': 1000 } : {}) });
      res.write('{"jsonrpc":"2.0","id":"mid","result":{"kind":"message","parts":[{"kind":"text","text":"half');
      setTimeout(() => req.socket.destroy(), 50);
    };

  test.each(['length', 'chunked'] as const)('plain relay (%s framing): the caller sees a failed response, never a complete one; no retry', async (framing) => {
    handler = halfAnswer(framing);
    const o = await post(plain, msg('mid', 'hi'));
    expect(o.complete).toBe(false);
    expect(o.json).toBeUndefined();
    expect(posts).toHaveLength(1);
  });

  test.each(['length', 'chunked'] as const)('INSPECT_RESPONSES=true (%s framing): nothing was sent yet, so a clean -31502', async (framing) => {
    handler = halfAnswer(framing);
    expectUpstreamError(await post(inspected, msg('mid', 'hi')), 'mid');
    expect(posts).toHaveLength(1);
  });
});

describe('upstream resets mid-stream: the caller gets `event: error` with -31502, not a clean end', () => {
  test.each([
    ['plain relay, cut after a whole event', () => plain, true],
    ['plain relay, cut in the middle of an event', () => plain, false],
    ['INSPECT_RESPONSES=true, cut after a whole event', () => inspected, true],
    ['INSPECT_RESPONSES=true, cut in the middle of an event', () => inspected, false],
  ] as const)('%s', async (_name, which, whole) => {
    handler = (req, res, body) => {
      const id = (JSON.parse(body) as { id: unknown }).id;
      ssePrelude(res);
      res.write(sseEvent(id, 1));
      if (!whole) res.write('data: {"jsonrpc":"2.0","id":');
      setTimeout(() => req.socket.destroy(), 50);
    };
    const o = await post(which(), msg(42, 'stream please', 'message/stream'), '/a2a/jsonrpc', { accept: 'text/event-stream' });
    expect(o.status).toBe(200);
    expect(o.headers['content-type']).toMatch(/^text\/event-stream/);
    const ev = events(o);
    expect(ev[0]?.json).toMatchObject({ id: 42, result: { kind: 'status-update' } });
    const last = ev[ev.length - 1];
    expect(last?.event).toBe('error');
    expect(last?.json).toMatchObject({ jsonrpc: '2.0', id: 42, error: { code: -31502, data: [{ reason: 'UPSTREAM_UNAVAILABLE' }] } });
    // Nothing but the agent's whole events and the error: the half event never reads as an answer.
    expect(ev.filter((e) => e.event !== 'error' && e.json?.result !== undefined)).toHaveLength(1);
    expect(posts).toHaveLength(1);
  });

  test('a stream that ends cleanly ends without an error event (control)', async () => {
    handler = (_req, res, body) => {
      const id = (JSON.parse(body) as { id: unknown }).id;
      ssePrelude(res);
      res.write(sseEvent(id, 1));
      res.end(sseEvent(id, 2));
    };
    const o = await post(plain, msg(43, 'stream please', 'message/stream'), '/a2a/jsonrpc', { accept: 'text/event-stream' });
    expect(events(o).map((e) => e.event ?? 'message')).toEqual(['message', 'message']);
    expect(o.complete).toBe(true);
  });
});

describe('a slow upstream is waited for (blocking calls hold the request), not cut or retried', () => {
  test('an answer after 4.5 s (longer than the pool idle timeout) arrives', async () => {
    handler = (req, res, body) => {
      const t = setTimeout(() => answerJson(req, res, body), 4500);
      res.once('close', () => clearTimeout(t));
    };
    const o = await post(plain, msg('slow', 'take your time'));
    expect({ status: o.status, complete: o.complete, id: o.json?.id, error: o.json?.error }).toEqual({
      status: 200,
      complete: true,
      id: 'slow',
      error: undefined,
    });
    expect(posts).toHaveLength(1);
  }, 20_000);

  test('a slow stream with a long silence between events stays open', async () => {
    handler = (_req, res, body) => {
      const id = (JSON.parse(body) as { id: unknown }).id;
      ssePrelude(res);
      res.write(sseEvent(id, 1));
      const t = setTimeout(() => res.end(sseEvent(id, 2)), 4500);
      res.once('close', () => clearTimeout(t));
    };
    const o = await post(plain, msg(44, 'slow stream', 'message/stream'), '/a2a/jsonrpc', { accept: 'text/event-stream' });
    expect(events(o).map((e) => [e.event ?? 'message', e.json?.result?.metadata?.n])).toEqual([
      ['message', 1],
      ['message', 2],
    ]);
    expect(posts).toHaveLength(1);
  }, 20_000);
});

describe('upstream answers garbage instead of HTTP: -31502, no retry', () => {
  test.each([
    ['not HTTP at all', 'this is not http\r\n\r\n'],
    ['a broken status line', 'HTTP/1.1 two hundred OK\r\n\r\n'],
    ['binary noise', '\x00\x01\x02\xff\xfe garbage'],
  ])('%s', async (_name, bytes) => {
    handler = (req) => {
      req.socket.end(Buffer.from(bytes, 'latin1'));
    };
    for (const p of [plain, inspected]) {
      posts = [];
      expectUpstreamError(await post(p, msg('gb', 'hi')), 'gb');
      expect(posts).toHaveLength(1);
    }
  });
});
