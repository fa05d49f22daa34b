/**
 * SSE and unary answers on the wire, with a tiny hand-made node:http upstream (not the SDK) and raw
 * node:http clients, through proxies with INSPECT_RESPONSES on and off (design sections 4-6, wire
 * reference section 4):
 *   - `:` comments / keep-alives, `event:` and `id:` lines, CRLF line endings, multi-line data, chunks
 *     split mid-line, between CR and LF and inside a UTF-8 character: inspection off -> the bytes are
 *     identical; inspection on -> every block without data leaves as a bare `:` keep-alive, each data event is
 *     inspected exactly once and reaches the client as the text the guardian judged (the proxy's
 *     serialization: its data, and `event: error` for an error event only), in order; a modified event
 *     changes only its own frame;
 *   - per-event flush: the upstream writes a keep-alive, waits until the client has it, writes event 1,
 *     waits until the client has it, writes event 2 (ordering by events, not timing), inspection off and on;
 *   - client disconnect mid-stream: the upstream sees 'close' on its response (not finished), the
 *     proxy's open-stream gauge returns to 0, and the guardian gets no further call for that stream,
 *     also when the disconnect happens while the guardian is deciding an event;
 *   - unary: an answer with unusual JSON formatting passes byte for byte with inspection off; with it on,
 *     the guardian and the caller get the same text, the proxy's serialization of it;
 *   - a compressed (Content-Encoding: gzip) answer must not bypass response inspection.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import { startGuardian, type Envelope, type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { isResponseEnvelope } from '../../helpers/guardian';
import { closeServer, listen, sleep, waitFor } from '../../helpers/net';
import { startTestProxy } from '../../helpers/proxy-harness';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

/* ---------------------------------------------------------------------------------------------- */
/* The hand-made upstream                                                                         */
/* ---------------------------------------------------------------------------------------------- */

interface UpstreamExchange {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  body: string;
  closed: boolean;
  /** res.writableFinished when 'close' fired. */
  finished: boolean | undefined;
}
type Handler = (x: UpstreamExchange) => void | Promise<void>;

let upstream: http.Server;
let upstreamUrl: string;
let handler: Handler = ({ res }) => {
  res.writeHead(404).end();
};
const exchanges: UpstreamExchange[] = [];

let guardian: TestGuardian;
let on: Proxy;
let off: Proxy;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && (req.url ?? '').startsWith('/.well-known/')) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('no card');
        return;
      }
      const x: UpstreamExchange = { req, res, body: Buffer.concat(chunks).toString('utf8'), closed: false, finished: undefined };
      exchanges.push(x);
      res.once('close', () => {
        x.closed = true;
        x.finished = res.writableFinished;
      });
      void Promise.resolve(handler(x)).catch(() => res.destroy());
    });
  });
  upstreamUrl = await listen(upstream);
  guardian = await startGuardian();
  const base = { UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: guardian.url, ROLE: 'server' };
  on = await startTestProxy({ ...base, INSPECT_RESPONSES: 'true' });
  off = await startTestProxy({ ...base, INSPECT_RESPONSES: 'false' });
});
afterAll(async () => {
  releaseAll();
  await on?.close();
  await off?.close();
  await closeServer(upstream);
  await guardian?.close();
});
beforeEach(() => {
  guardian.reset();
  guardian.clear();
  exchanges.length = 0;
});
afterEach(() => releaseAll());

/** Gates the upstream waits on; released by the test (or at the end, so nothing hangs). */
const gates = new Set<() => void>();
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => {
    open = () => {
      gates.delete(open);
      resolve();
    };
  });
  gates.add(open);
  return { wait, open };
}
function releaseAll(): void {
  for (const g of [...gates]) g();
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };
const isResponseEnv = isResponseEnvelope;
const responseEnvs = (): Envelope[] => guardian.calls().filter(isResponseEnv);
const ALLOW: GuardianReply = { decision: 'allow' };

/** Write and wait until the bytes have been handed to the kernel (the proxy may read them from then on). */
const writeNow = (res: http.ServerResponse, data: string | Buffer): Promise<void> =>
  new Promise((resolve, reject) => res.write(data, (err) => (err ? reject(err) : resolve())));

/* ---------------------------------------------------------------------------------------------- */
/* A raw client                                                                                   */
/* ---------------------------------------------------------------------------------------------- */

interface RawStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes(): Buffer;
  text(): string;
  /** Resolves once the received text satisfies `pred`; rejects if the response ends first or after `ms`. */
  until(pred: (text: string) => boolean, what: string, ms?: number): Promise<void>;
  /** Resolves with all bytes when the response ends (rejects if it is cut). */
  done: Promise<Buffer>;
  destroy(): void;
}

function openStream(url: string, body: unknown, headers: Record<string, string> = {}): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': Buffer.byteLength(payload), ...headers },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      let waiters: Array<{ pred: (t: string) => boolean; resolve: () => void; reject: (e: Error) => void }> = [];
      let ended = false;
      const text = () => Buffer.concat(chunks).toString('utf8');
      const check = () => {
        const t = text();
        waiters = waiters.filter((w) => (w.pred(t) ? (w.resolve(), false) : true));
      };
      const done = new Promise<Buffer>((res2, rej2) => {
        res.on('data', (c: Buffer) => {
          chunks.push(c);
          check();
        });
        res.once('end', () => {
          ended = true;
          check();
          for (const w of waiters) w.reject(new Error('stream ended before the awaited condition'));
          waiters = [];
          res2(Buffer.concat(chunks));
        });
        res.once('error', rej2);
        res.once('aborted', () => rej2(new Error('aborted')));
      });
      done.catch(() => undefined);
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        bytes: () => Buffer.concat(chunks),
        text,
        until: (pred, what, ms = 10_000) =>
          new Promise<void>((res3, rej3) => {
            if (pred(text())) return res3();
            if (ended) return rej3(new Error(`stream ended before: ${what}`));
            const timer = setTimeout(() => rej3(new Error(`not within ${ms} ms: ${what}; got ${JSON.stringify(text().slice(-300))}`)), ms);
            waiters.push({ pred, resolve: () => (clearTimeout(timer), res3()), reject: (e) => (clearTimeout(timer), rej3(e)) });
          }),
        done,
        destroy: () => req.destroy(),
      });
    });
    req.end(payload);
  });
}

const streamCall = (id: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'SendStreamingMessage',
  params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text: 'go' }] } },
});
const V1 = { 'a2a-version': '1.0' };
const artifactEvent = (id: string, i: number, text = `part ${i}`) =>
  `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { artifactUpdate: { taskId: 't-1', contextId: 'c-1', artifact: { artifactId: 'a-1', parts: [{ text }] }, append: i > 0 } } })}\n\n`;

/* ---------------------------------------------------------------------------------------------- */
/* Comments, keep-alives, event/id lines, CRLF, multi-line data                                   */
/* ---------------------------------------------------------------------------------------------- */

const ID = 'kc-1';
const ev1 = { jsonrpc: '2.0', id: ID, result: { statusUpdate: { taskId: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_WORKING' } } } };
const ev2 = {
  jsonrpc: '2.0',
  id: ID,
  result: { artifactUpdate: { taskId: 't-1', contextId: 'c-1', artifact: { artifactId: 'a-1', parts: [{ text: 'héllo ✓ 🍰' }] } } },
};
const ev3 = {
  jsonrpc: '2.0',
  id: ID,
  result: { artifactUpdate: { taskId: 't-1', contextId: 'c-1', artifact: { artifactId: 'a-1', parts: [{ text: 'second' }] }, append: true } },
};
const ev4 = { jsonrpc: '2.0', id: ID, result: { statusUpdate: { taskId: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_COMPLETED' } } } };
const ev1Text = JSON.stringify(ev1);
const split = ev1Text.indexOf('"result"');
/** Event 1 as a multi-line data event: the parsed data is line1 + "\n" + line2 (still the same JSON). */
const ev1Lines = [ev1Text.slice(0, split), ev1Text.slice(split)];
const BLOCKS = [
  ': stream opened\r\n\r\n',
  ': keep-alive\r\n\r\n',
  `event: message\r\nid: 1\r\ndata: ${ev1Lines[0]}\r\ndata: ${ev1Lines[1]}\r\n\r\n`,
  ': keep-alive\n\n',
  `data: ${JSON.stringify(ev2)}\r\n\r\n`,
  `: a comment inside an event\r\nevent: message\r\ndata: ${JSON.stringify(ev3)}\r\n\r\n`,
  'retry: 3000\n\n',
  ':\n\n',
  `data: ${JSON.stringify(ev4)}\n\n`,
];
const STREAM = Buffer.from(BLOCKS.join(''), 'utf8');
/**
 * What a client gets with inspection on: each block without data as a bare keep-alive; each data event as
 * the proxy writes what the guardian judged (its data alone: `event: message` and `id:` are the agent's text, dropped).
 */
const KEEP = ':\n\n';
const CANONICAL = [KEEP, KEEP, `data: ${ev1Text}\n\n`, KEEP, `data: ${JSON.stringify(ev2)}\n\n`, `data: ${JSON.stringify(ev3)}\n\n`, KEEP, KEEP, BLOCKS[8]];
/** Cut points: inside a comment, between CR and LF, inside "é" and inside the 4-byte cake, mid-field. */
function cutPoints(): number[] {
  const s = STREAM;
  const crlf = s.indexOf('\r\n\r\n', s.indexOf('event: message')) + 1; // between CR and LF
  const e = s.indexOf(Buffer.from('é')) + 1; // inside a 2-byte character
  const cake = s.indexOf(Buffer.from('🍰')) + 2; // inside a 4-byte character
  return [5, crlf, s.indexOf('data: ') + 3, e, cake, s.indexOf('retry') + 2, s.length - 3].sort((a, b) => a - b);
}

function serveBlocks(): Handler {
  return async ({ res }) => {
    res.writeHead(200, SSE_HEADERS);
    let at = 0;
    for (const cut of [...cutPoints(), STREAM.length]) {
      await writeNow(res, STREAM.subarray(at, cut));
      at = cut;
      await new Promise((r) => setImmediate(r));
    }
    res.end();
  };
}

describe.each([
  ['off', () => off],
  ['on', () => on],
] as const)('inspection %s: comments, keep-alives, event/id lines, CRLF, multi-line data', (mode, proxy) => {
  test('inspection off: the client gets the upstream bytes exactly; on: blocks without data as bare keep-alives, each data event once, in order, as the text the guardian judged', async () => {
    handler = serveBlocks();
    const s = await openStream(`${proxy().url}/a2a/jsonrpc`, streamCall(ID), V1);
    expect(s.status).toBe(200);
    expect(String(s.headers['content-type'])).toBe('text/event-stream');
    const got = await s.done;

    const envs = responseEnvs();
    if (mode === 'off') {
      expect(got.toString('utf8')).toBe(STREAM.toString('utf8'));
      expect(got.equals(STREAM)).toBe(true);
      expect(envs).toEqual([]);
      return;
    }
    expect(got.toString('utf8')).toBe(CANONICAL.join(''));
    // Each exactly once (several are judged at once, so they may reach the guardian out of order).
    const order = [ev1, ev2, ev3, ev4].map((e) => JSON.stringify(e));
    const seen = envs.map((e) => order.indexOf(JSON.stringify(e.params.payload)));
    expect([...seen].sort()).toEqual([0, 1, 2, 3]);
    for (const e of envs) expect(e.method).toBe('message/stream');
    // The multi-line event reached the guardian as the proxy's serialization of it, the text the client got.
    expect(guardian.rawBodies.some((b) => b.includes(`"params":{"payload":${ev1Text},"context":`))).toBe(true);
  });
});

test('inspection on: stray blank lines leave nothing, an empty `data:` a keep-alive, and line separators in judged data are escaped', async () => {
  const odd = {
    ...ev2,
    result: { artifactUpdate: { taskId: 't-1', contextId: 'c-1', artifact: { artifactId: 'a-1', parts: [{ text: 'a\u2028b\u2029c\u0085d' }] } } },
  };
  handler = async ({ res }) => {
    res.writeHead(200, SSE_HEADERS);
    await writeNow(res, `\n\n\r\ndata:\n\ndata: ${JSON.stringify(odd)}\n\n\n\n`);
    res.end();
  };
  const s = await openStream(`${on.url}/a2a/jsonrpc`, streamCall(ID), V1);
  const got = (await s.done).toString('utf8');
  const escaped = JSON.stringify(odd).replace('\u2028', '\\u2028').replace('\u2029', '\\u2029').replace('\u0085', '\\u0085');
  expect(got).toBe(`:\n\ndata: ${escaped}\n\n`);
  // Same JSON value: a reader splitting lines at those characters (Python's str.splitlines) gets the event whole.
  expect(
    JSON.parse(
      got
        .split(/\r\n|\r|\n|\u2028|\u2029|\u0085/)
        .find((l) => l.startsWith('data: {'))!
        .slice(6),
    ),
  ).toEqual(odd);
});

test('inspection on: a modified event changes only its own frame, written as data alone like every judged event', async () => {
  guardian.script((env) => {
    if (!isResponseEnv(env)) return ALLOW;
    const text = JSON.stringify(env.params.payload);
    if (text === JSON.stringify(ev1))
      return {
        decision: 'modify',
        message: 'm',
        modifiedPayload: {
          ...env.params.payload,
          result: { statusUpdate: { taskId: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_WORKING', note: 'edited' } } },
        },
      };
    if (text.includes('héllo')) return { decision: 'modify', message: 'm', modifiedPayload: JSON.parse(text.replace('héllo', 'HELLO')) };
    return ALLOW;
  });
  handler = serveBlocks();
  const s = await openStream(`${on.url}/a2a/jsonrpc`, streamCall(ID), V1);
  const got = (await s.done).toString('utf8');
  const r1 = { ...ev1, result: { statusUpdate: { taskId: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_WORKING', note: 'edited' } } } };
  const r2 = JSON.parse(JSON.stringify(ev2).replace('héllo', 'HELLO'));
  const want = [...CANONICAL];
  want[2] = `data: ${JSON.stringify(r1)}\n\n`;
  want[4] = `data: ${JSON.stringify(r2)}\n\n`;
  expect(got).toBe(want.join(''));
  expect(responseEnvs()).toHaveLength(4);
});

/* ---------------------------------------------------------------------------------------------- */
/* Per-event flush                                                                                */
/* ---------------------------------------------------------------------------------------------- */

describe.each([
  ['off', () => off],
  ['on', () => on],
] as const)('inspection %s: events are flushed one by one', (mode, proxy) => {
  test('the client has the keep-alive before event 1 is written, and event 1 before event 2 is written', async () => {
    // With inspection on, the keep-alive leaves as the proxy's own bare comment.
    const keep = mode === 'on' ? ':\n\n' : ': keep-alive\n\n';
    const id = 'flush-1';
    const e1 = artifactEvent(id, 0);
    const e2 = artifactEvent(id, 1);
    const g1 = gate();
    const g2 = gate();
    const written: string[] = [];
    handler = async ({ res }) => {
      res.writeHead(200, SSE_HEADERS);
      await writeNow(res, ': keep-alive\n\n');
      written.push('keep-alive');
      await g1.wait;
      await writeNow(res, e1);
      written.push('e1');
      await g2.wait;
      await writeNow(res, e2);
      written.push('e2');
      res.end();
    };
    const s = await openStream(`${proxy().url}/a2a/jsonrpc`, streamCall(id), V1);
    await s.until((t) => t === keep, 'the keep-alive reaches the client on its own');
    expect(written).toEqual(['keep-alive']);
    g1.open();
    await s.until((t) => t === keep + e1, 'event 1 reaches the client while event 2 is not yet written');
    expect(written).toEqual(['keep-alive', 'e1']);
    g2.open();
    expect((await s.done).toString('utf8')).toBe(keep + e1 + e2);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Client disconnect mid-stream                                                                   */
/* ---------------------------------------------------------------------------------------------- */

/** Upstream: a burst of `burst` events every `everyMs` until its response closes; counts the events it wrote. */
function endlessStream(id: string, everyMs: number, burst: number): { written: () => number } {
  let written = 0;
  handler = async ({ res }) => {
    res.writeHead(200, SSE_HEADERS);
    for (let i = 0; !res.destroyed && !res.writableEnded;) {
      let chunk = '';
      for (let j = 0; j < burst; j++) chunk += artifactEvent(id, i++);
      res.write(chunk);
      written += burst;
      await sleep(everyMs);
    }
  };
  return { written: () => written };
}

async function openStreamsGauge(proxy: Proxy): Promise<number> {
  const m = await proxy.metrics.registry.getSingleMetric('a2a_guard_open_streams')?.get();
  return m?.values[0]?.value ?? NaN;
}

describe.each([
  ['off', () => off],
  ['on', () => on],
] as const)('inspection %s: client disconnects mid-stream', (mode, proxy) => {
  test('the upstream response closes, and no further guardian call is made for the stream', async () => {
    // Bursts of 20 events: the proxy always has parsed events waiting when the client leaves.
    const id = `dc-${mode}`;
    const up = endlessStream(id, 5, 20);
    const s = await openStream(`${proxy().url}/a2a/jsonrpc`, streamCall(id), V1);
    await s.until((t) => t.split('\n\n').length > 30, 'thirty events');
    expect(exchanges).toHaveLength(1);
    const forStream = () => responseEnvs().filter((e) => e.params.payload.id === id).length;
    const atDisconnect = forStream();
    s.destroy();
    await waitFor(() => exchanges[0]!.closed, 10_000, 'upstream response closed after the client left');
    const atUpstreamClose = forStream();
    expect(exchanges[0]!.finished).toBe(false);
    await waitFor(async () => (await openStreamsGauge(proxy())) === 0, 10_000, 'open-stream gauge back to 0');
    await sleep(500);
    const after = forStream();
    if (process.env.REPORT_MEASUREMENTS)
      console.log(
        `[disconnect] ${mode}: guardian calls at disconnect ${atDisconnect}, at upstream close ${atUpstreamClose}, 500 ms later ${after}; upstream wrote ${up.written()}`,
      );
    if (mode === 'on') {
      expect(atDisconnect).toBeGreaterThanOrEqual(30);
      // Once the proxy has let go of the upstream, nothing more (bursts of 20 parsed events were waiting);
      // before that, only the calls already in the window (STREAM_INSPECT_WINDOW, 16) and the few made
      // while the disconnect travelled through the in-process sockets.
      expect(after).toBe(atUpstreamClose);
      expect(after).toBeLessThanOrEqual(atDisconnect + 16 + 5);
    } else {
      expect(after).toBe(0);
    }
    expect(up.written()).toBeGreaterThan(after);
  });
});

const partText = (env: Envelope): unknown => env.params.payload?.result?.artifactUpdate?.artifact?.parts?.[0]?.text;

test('inspection on: the client leaves while the guardian is deciding an event: upstream closed, no further calls', async () => {
  const id = 'dc-hang';
  // Event 3 (index 2) hangs at the guardian: events 1 and 2 reach the caller; the events behind event 3
  // are judged meanwhile (the window) but wait for it.
  guardian.script((env) => (isResponseEnv(env) && partText(env) === 'part 2' ? { fault: 'hang' } : ALLOW));
  endlessStream(id, 5, 1);
  const s = await openStream(`${on.url}/a2a/jsonrpc`, streamCall(id), V1);
  await s.until((t) => t.split('\n\n').length > 2, 'two events');
  await waitFor(() => responseEnvs().some((e) => partText(e) === 'part 2'), 10_000, 'the guardian is asked about event 3');
  await waitFor(() => responseEnvs().length === 2 + 16, 10_000, 'the window behind event 3 filled');
  s.destroy();
  await waitFor(() => exchanges[0]!.closed, 10_000, 'upstream response closed after the client left');
  expect(exchanges[0]!.finished).toBe(false);
  await waitFor(async () => (await openStreamsGauge(on)) === 0, 10_000, 'open-stream gauge back to 0');
  await sleep(300);
  expect(responseEnvs()).toHaveLength(2 + 16);
  expect(
    s
      .text()
      .split('\n\n')
      .filter((b) => b !== ''),
  ).toHaveLength(2);
});

/* ---------------------------------------------------------------------------------------------- */
/* Unary: exact bytes                                                                             */
/* ---------------------------------------------------------------------------------------------- */

/** Valid JSON a re-serializing proxy would change: spacing, key order, escapes, number forms, a trailing newline. */
const ODD =
  '{ "id" : "u-1",\n  "jsonrpc":"2.0",\t"result" : {"kind":"message","messageId":"x","role":"agent",' +
  '"parts":[{"kind":"text","text":"caf\\u00e9 \\ud83c\\udf70 \\/ done"}], "n": 1.0E2, "z": -0.0 } }\n';

test.each([
  ['off', () => off],
  ['on', () => on],
] as const)('inspection %s: a unary answer passes byte for byte (off), or as the text the guardian judged (on)', async (mode, proxy) => {
  handler = ({ res }) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-agent': 'hand-made' });
    res.end(ODD);
  };
  const res = await fetch(`${proxy().url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'u-1',
      method: 'SendMessage',
      params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
    }),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  expect(res.status).toBe(200);
  expect(res.headers.get('x-agent')).toBe('hand-made');
  const envs = responseEnvs();
  if (mode === 'off') {
    expect(bytes.toString('utf8')).toBe(ODD);
    return expect(envs).toEqual([]);
  }
  const judged = JSON.stringify(JSON.parse(ODD));
  expect(bytes.toString('utf8')).toBe(judged);
  expect(envs).toHaveLength(1);
  expect(envs[0].params.payload).toEqual(JSON.parse(judged)); // -0.0 is 0 to both
  expect(guardian.rawBodies.some((b) => b.includes(`"params":{"payload":${judged},"context":`))).toBe(true);
});

/* ---------------------------------------------------------------------------------------------- */
/* Compressed answers                                                                             */
/* ---------------------------------------------------------------------------------------------- */

describe('inspection on: a gzip-encoded answer is not passed on unread', () => {
  // Callers commonly send Accept-Encoding (the SDK client sends "gzip, deflate"), and agents behind
  // compression middleware then answer gzip. The proxy forwards the caller's Accept-Encoding upstream.
  const SECRET = 'the launch code is 0000';

  test('unary: the guardian sees the answer (or the caller gets no unread answer)', async () => {
    guardian.script((env) => (isResponseEnv(env) ? { decision: 'deny', message: 'no' } : ALLOW));
    handler = ({ req, res }) => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 'gz-1',
        result: { kind: 'message', messageId: 'x', role: 'agent', parts: [{ kind: 'text', text: SECRET }] },
      });
      if (/gzip/.test(String(req.headers['accept-encoding'] ?? ''))) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end(zlib.gzipSync(body));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      }
    };
    const res = await fetch(`${on.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'accept-encoding': 'gzip, deflate' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'gz-1',
        method: 'SendMessage',
        params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
      }),
    });
    const text = await res.text(); // fetch decodes gzip
    expect(text).not.toContain(SECRET); // the guardian denies every answer: nothing of it may reach the caller
  });

  test('stream: the guardian sees every event (or the caller gets no unread event)', async () => {
    guardian.script((env) => (isResponseEnv(env) ? { decision: 'deny', message: 'no' } : ALLOW));
    handler = ({ req, res }) => {
      const body = artifactEvent('gz-2', 0, SECRET);
      if (/gzip/.test(String(req.headers['accept-encoding'] ?? ''))) {
        res.writeHead(200, { ...SSE_HEADERS, 'content-encoding': 'gzip' });
        res.end(zlib.gzipSync(body));
      } else {
        res.writeHead(200, SSE_HEADERS);
        res.end(body);
      }
    };
    const res = await fetch(`${on.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'a2a-version': '1.0', 'accept-encoding': 'gzip, deflate' },
      body: JSON.stringify(streamCall('gz-2')),
    });
    const text = await res.text().catch((e: unknown) => `(unreadable: ${String(e)})`);
    expect(text).not.toContain(SECRET);
  });

  test('FAIL_MODE=open: a gzip answer that is not JSON passes readable, as the agent meant it', async () => {
    const open = await startTestProxy({ UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: guardian.url, ROLE: 'server', INSPECT_RESPONSES: 'true', FAIL_MODE: 'open' });
    try {
      const PAGE = '<html><body>upstream maintenance</body></html>';
      handler = ({ res }) => {
        res.writeHead(503, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
        res.end(zlib.gzipSync(PAGE));
      };
      const res = await fetch(`${open.url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'accept-encoding': 'gzip, deflate' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'gz-3',
          method: 'SendMessage',
          params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
        }),
      });
      expect({ status: res.status, text: await res.text() }).toEqual({ status: 503, text: PAGE });
    } finally {
      await open.close();
    }
  });
});
