/**
 * Pipelined stream inspection (ordering rules in src/proxy/window.ts), with a real
 * @a2a-js/sdk agent streaming "stream N" (a task, N artifact updates "chunk 0".."chunk N-1", a final
 * status), a real HTTP guardian, raw node:http callers, and a proxy with STREAM_INSPECT_WINDOW=8:
 *   - a guardian that answers out of order (random delays): every event arrives once, in order, and
 *     several decisions really were under way at once (never more than the window);
 *   - deny at event k while calls for later events are in flight: the caller sees exactly the events
 *     before k, then `event: error` (JSON-RPC: -31403 with the caller's id; REST: {"error": 403}),
 *     nothing after; the in-flight guardian calls are cancelled (their requests closed unanswered);
 *     the agent's side of the stream is closed;
 *   - a modify of one event replaces exactly that event;
 *   - a guardian failure mid-window: FAIL_MODE=closed ends the stream at that event with -31503,
 *     FAIL_MODE=open delivers every event;
 *   - the caller leaving mid-window: no guardian call is started afterwards, the ones under way are
 *     cancelled, the agent's side is cut (a hand-made agent that cannot finish first);
 *   - a slow guardian and a slow (paused) caller: guardian calls started minus frames written to the
 *     caller never exceed the window, and a paused caller stops the calls altogether;
 *   - a call's checks (request hook, unary answer) are served while thousands of stream events wait
 *     for the guardian (separate budgets; a2a_guard_guardian_queued_calls{budget="stream"} counts the
 *     streams whose next event waits for a place).
 */
import http from 'node:http';
import { makeClient, sendReq, textOf, type TestAgent } from '../../helpers/agent';
import { type Envelope, type TestGuardian, isResponseEnvelope } from '../../helpers/guardian';
import { closeServer, listen, sleep, waitFor } from '../../helpers/net';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

const WINDOW = 8;
const stack = useStack({ name: 'Pipeline Agent', version: '1.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let closed: TestProxy; // FAIL_MODE=closed
let open: TestProxy; // FAIL_MODE=open

/** The agent's side of every exchange: closed / finished as the agent saw it. */
interface AgentExchange {
  method: string;
  closed: boolean;
  finished: boolean | undefined;
}
const agentExchanges: AgentExchange[] = [];

/** Every HTTP request the guardian received: answered, or closed by the proxy before an answer. */
interface GuardianRequest {
  answered: boolean;
  aborted: boolean;
}
const guardianRequests: GuardianRequest[] = [];

beforeAll(async () => {
  ({ agent, guardian } = stack);
  agent.server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const x: AgentExchange = { method: req.method ?? '', closed: false, finished: undefined };
    agentExchanges.push(x);
    res.once('close', () => {
      x.closed = true;
      x.finished = res.writableFinished;
    });
  });
  guardian.server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    const r: GuardianRequest = { answered: false, aborted: false };
    guardianRequests.push(r);
    res.once('finish', () => (r.answered = true));
    res.once('close', () => (r.aborted = !res.writableFinished));
  });
  const base = { ROLE: 'server', INSPECT_RESPONSES: 'true', INSPECT_CARDS: 'false', STREAM_INSPECT_WINDOW: String(WINDOW) };
  closed = await stack.proxy({ ...base, FAIL_MODE: 'closed' });
  open = await stack.proxy({ ...base, FAIL_MODE: 'open' });
});
beforeEach(() => {
  agentExchanges.length = 0;
  guardianRequests.length = 0;
});

/* ---------------------------------------------------------------------------------------------- */

const responseEnvs = (): Envelope[] => guardian.calls().filter(isResponseEnvelope);
/** "chunk 7" -> 7; the task and the final status -> undefined. */
const chunkOf = (env: Envelope): number | undefined => {
  const m = /^chunk (\d+)$/.exec(textOf(env.params.payload));
  return m?.[1] === undefined ? undefined : Number(m[1]);
};
const chunks = (from: number, to: number): string[] => Array.from({ length: to - from + 1 }, (_, i) => `chunk ${from + i}`);
const randomDelay = (max: number) => Math.floor(Math.random() * max);

type BindingName = 'JSONRPC' | 'HTTP+JSON';

/** A v1.0 SendStreamingMessage call in either HTTP binding. */
function streamCall(binding: BindingName, base: string, id: string, text: string): { url: string; body: string } {
  const message = { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] };
  if (binding === 'JSONRPC')
    return { url: `${base}/a2a/jsonrpc`, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'SendStreamingMessage', params: { message } }) };
  return { url: `${base}/a2a/rest/message:stream`, body: JSON.stringify({ message }) };
}

interface WireEvent {
  event: string | undefined;
  data: string;
  json: any;
}

/** A raw SSE call: events as they arrive; the caller can pause, resume and leave. */
interface RawStream {
  readonly events: WireEvent[];
  readonly done: Promise<void>;
  readonly req: http.ClientRequest;
  response(): Promise<http.IncomingMessage>;
}

function openStream(binding: BindingName, base: string, id: string, text: string): RawStream {
  const call = streamCall(binding, base, id, text);
  const events: WireEvent[] = [];
  let resolveRes: (r: http.IncomingMessage) => void = () => undefined;
  const gotRes = new Promise<http.IncomingMessage>((r) => (resolveRes = r));
  let finish: () => void = () => undefined;
  const done = new Promise<void>((r) => (finish = r));
  const req = http.request(
    call.url,
    {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'a2a-version': '1.0', 'content-length': Buffer.byteLength(call.body) },
    },
    (res) => {
      resolveRes(res);
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        buf += c;
        for (let at = buf.indexOf('\n\n'); at !== -1; at = buf.indexOf('\n\n')) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          if (data === '') continue;
          events.push({ event, data, json: JSON.parse(data) });
        }
      });
      res.on('end', finish);
      res.on('close', finish);
    },
  );
  req.on('error', () => finish());
  req.end(call.body);
  return { events, done, req, response: () => gotRes };
}

const eventTexts = (events: WireEvent[]): string[] => events.map((e) => textOf(e.json));

/** Count guardian calls for response hooks in flight at once (the script's own bookkeeping). */
function concurrency() {
  let now = 0;
  let max = 0;
  return {
    enter() {
      now++;
      max = Math.max(max, now);
    },
    leave() {
      now--;
    },
    get max() {
      return max;
    },
  };
}

/* ---------------------------------------------------------------------------------------------- */

test('a guardian answering out of order: every event once, in order; decisions really overlap, never more than the window', async () => {
  const c = concurrency();
  const answerOrder: number[] = [];
  guardian.script(async (env) => {
    if (!isResponseEnvelope(env)) return { decision: 'allow' };
    c.enter();
    await sleep(randomDelay(25));
    c.leave();
    const k = chunkOf(env);
    if (k !== undefined) answerOrder.push(k);
    return { decision: 'allow' };
  });
  const s = openStream('JSONRPC', closed.url, 'order-1', 'stream 60');
  await s.done;
  expect(eventTexts(s.events)).toEqual(['', ...chunks(0, 59), '']);
  expect(s.events.every((e) => e.event === undefined && e.json.id === 'order-1')).toBe(true);
  expect(responseEnvs()).toHaveLength(62);
  expect(new Set(responseEnvs().map(chunkOf)).size).toBe(61); // chunks 0..59 and undefined (task, status)
  // The guardian answered out of order and the caller still got them in order; the window was used and respected.
  expect(answerOrder).not.toEqual([...answerOrder].sort((a, b) => a - b));
  expect(c.max).toBeGreaterThan(1);
  expect(c.max).toBeLessThanOrEqual(WINDOW);
});

describe.each(['JSONRPC', 'HTTP+JSON'] as const)('%s: deny at event k while calls for later events are in flight', (binding) => {
  test('the caller sees exactly the events before k, then the error, nothing after; later calls cancelled; the agent side closed', async () => {
    guardian.script(async (env) => {
      if (!isResponseEnvelope(env)) return { decision: 'allow' };
      const k = chunkOf(env);
      if (k === 9) return { decision: 'deny', message: 'chunk refused', reasonCode: ['NO_NINE'], delayMs: 150 };
      // Later events stay undecided well past the deny: their calls are in flight when it lands.
      if (k !== undefined && k > 9) return { decision: 'allow', delayMs: 3000 };
      return { decision: 'allow', delayMs: randomDelay(20) };
    });
    const s = openStream(binding, closed.url, `deny-${binding}`, 'stream 100');
    await s.done;
    const texts = eventTexts(s.events);
    expect(texts.slice(0, 10)).toEqual(['', ...chunks(0, 8)]);
    expect(s.events).toHaveLength(11);
    const last = s.events[10]!;
    expect(last.event).toBe('error');
    if (binding === 'JSONRPC') {
      expect(last.json).toMatchObject({
        jsonrpc: '2.0',
        id: `deny-${binding}`,
        error: { code: -31403, data: [{ reason: 'GUARDIAN_DENIED', metadata: { message: 'chunk refused', reasonCode: 'NO_NINE' } }] },
      });
    } else {
      expect(last.json).toMatchObject({ error: { code: 403, status: 'PERMISSION_DENIED', details: [{ reason: 'GUARDIAN_DENIED' }] } });
    }
    // Calls for later events had started (the window), and the proxy cancelled them unanswered.
    const later = responseEnvs().filter((e) => (chunkOf(e) ?? -1) > 9);
    expect(later.length).toBeGreaterThan(0);
    expect(later.length).toBeLessThanOrEqual(WINDOW - 1);
    await waitFor(() => guardianRequests.filter((r) => r.aborted).length >= later.length, 10_000, 'in-flight guardian calls cancelled');
    // The agent's side of the stream is closed (cut by the proxy, or already finished writing).
    const stream = agentExchanges.filter((x) => x.method === 'POST');
    expect(stream).toHaveLength(1);
    await waitFor(() => stream[0]!.closed, 10_000, 'agent side closed');
  });
});

test('a modify of one event replaces exactly that event, whatever order the decisions come in', async () => {
  guardian.script((env) => {
    if (!isResponseEnvelope(env)) return { decision: 'allow' };
    if (chunkOf(env) === 5) {
      const replaced = JSON.parse(JSON.stringify(env.params.payload).replace('"chunk 5"', '"CHUNK FIVE"'));
      return { decision: 'modify', message: 'rewritten', modifiedPayload: replaced, delayMs: 40 };
    }
    return { decision: 'allow', delayMs: randomDelay(20) };
  });
  const s = openStream('JSONRPC', closed.url, 'modify-1', 'stream 20');
  await s.done;
  expect(eventTexts(s.events)).toEqual(['', ...chunks(0, 4), 'CHUNK FIVE', ...chunks(6, 19), '']);
  expect(s.events[6]!.json.id).toBe('modify-1');
});

describe('a guardian failure mid-window follows FAIL_MODE for that event', () => {
  const script = () =>
    guardian.script((env) => {
      if (!isResponseEnvelope(env)) return { decision: 'allow' };
      const k = chunkOf(env);
      if (k === 7) return { fault: 'http500', delayMs: 60 };
      return { decision: 'allow', delayMs: k !== undefined && k > 7 ? 300 : randomDelay(20) };
    });

  test('FAIL_MODE=closed: events before it, then -31503; the agent side closed', async () => {
    script();
    const s = openStream('JSONRPC', closed.url, 'fail-closed', 'stream 40');
    await s.done;
    expect(eventTexts(s.events.slice(0, 8))).toEqual(['', ...chunks(0, 6)]);
    expect(s.events).toHaveLength(9);
    expect(s.events[8]!.event).toBe('error');
    expect(s.events[8]!.json).toMatchObject({ id: 'fail-closed', error: { code: -31503, data: [{ reason: 'GUARDIAN_UNAVAILABLE' }] } });
    const stream = agentExchanges.filter((x) => x.method === 'POST');
    await waitFor(() => stream[0]!.closed, 10_000, 'agent side closed');
  });

  test('FAIL_MODE=open: every event arrives, in order, the failed one included', async () => {
    script();
    const s = openStream('JSONRPC', open.url, 'fail-open', 'stream 40');
    await s.done;
    expect(eventTexts(s.events)).toEqual(['', ...chunks(0, 39), '']);
    expect(s.events.some((e) => e.event === 'error')).toBe(false);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Bounded memory: guardian calls started minus frames written to the caller never exceed the window */
/* ---------------------------------------------------------------------------------------------- */

/** Count the frames the proxy writes to one caller's response (each event leaves in one write). */
function countWrites(proxy: TestProxy) {
  const state = { written: 0, res: undefined as http.ServerResponse | undefined };
  const onRequest = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    state.res = res;
    const write = res.write.bind(res) as (...a: unknown[]) => boolean;
    res.write = ((...a: unknown[]) => {
      state.written++;
      return write(...a);
    }) as typeof res.write;
  };
  proxy.server.prependListener('request', onRequest);
  return { state, stop: () => proxy.server.off('request', onRequest) };
}

test('a slow guardian: calls under way never exceed the window; every event arrives', async () => {
  const w = countWrites(closed);
  let started = 0;
  let maxAhead = 0;
  const c = concurrency();
  guardian.script(async (env) => {
    if (!isResponseEnvelope(env)) return { decision: 'allow' };
    started++;
    maxAhead = Math.max(maxAhead, started - w.state.written);
    c.enter();
    await sleep(30);
    c.leave();
    return { decision: 'allow' };
  });
  try {
    const s = openStream('JSONRPC', closed.url, 'slow-g', 'stream 120');
    await s.done;
    expect(eventTexts(s.events)).toEqual(['', ...chunks(0, 119), '']);
    expect(maxAhead).toBeLessThanOrEqual(WINDOW);
    expect(c.max).toBe(WINDOW); // the window filled (the guardian was the bottleneck) and held
  } finally {
    w.stop();
  }
});

describe('a fast agent writing 16 KiB events (hand-made, so it can outrun any socket buffer)', () => {
  let upstream: http.Server;
  let proxy: TestProxy;
  let produced = 0;
  /** The agent's side of the latest stream. */
  let side = { closed: false, finished: undefined as boolean | undefined };
  const EVENT = (i: number) =>
    `data: ${JSON.stringify({ jsonrpc: '2.0', id: 'slow-c', result: { artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'a', parts: [{ text: `chunk ${i} ${'x'.repeat(16 * 1024)}` }] } } } })}\n\n`;

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.method === 'GET') return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const mine = { closed: false, finished: undefined as boolean | undefined };
        side = mine;
        res.once('close', () => {
          mine.closed = true;
          mine.finished = res.writableFinished;
        });
        let i = 0;
        const pump = () => {
          while (i < 5000 && !res.destroyed) {
            produced = ++i;
            if (!res.write(EVENT(i))) return void res.once('drain', pump);
          }
          if (!res.destroyed) res.end();
        };
        pump();
      });
    });
    proxy = await stack.proxy({
      UPSTREAM_URL: await listen(upstream),
      ROLE: 'server',
      INSPECT_RESPONSES: 'true',
      INSPECT_CARDS: 'false',
      STREAM_INSPECT_WINDOW: String(WINDOW),
    });
  });
  afterAll(async () => {
    await closeServer(upstream);
  });

  test('the caller leaving mid-window: no guardian call is started afterwards, the ones under way are cancelled, the agent side is cut', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    guardian.script(async (env) => {
      if (!isResponseEnvelope(env)) return { decision: 'allow' };
      await held; // no stream-event decision comes back while the caller is there
      return { decision: 'allow' };
    });
    try {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 'slow-c',
        method: 'SendStreamingMessage',
        params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'go' }] } },
      });
      const req = http.request(`${proxy.url}/a2a/jsonrpc`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'content-length': Buffer.byteLength(body) },
      });
      req.on('error', () => undefined);
      await new Promise<http.IncomingMessage>((resolve) => {
        req.once('response', resolve);
        req.end(body);
      });
      await waitFor(() => responseEnvs().length >= WINDOW, 10_000, 'the window filled');
      await sleep(300);
      // Nothing was decided, so nothing left and nothing more was admitted: exactly the window.
      expect(responseEnvs()).toHaveLength(WINDOW);
      req.destroy();
      await waitFor(() => side.closed, 10_000, 'agent side closed');
      expect(side.finished).toBe(false); // cut by the proxy: the agent had far more to write
      await waitFor(() => guardianRequests.filter((r) => r.aborted).length >= WINDOW, 10_000, 'guardian calls under way cancelled');
      await sleep(300);
      expect(responseEnvs()).toHaveLength(WINDOW);
    } finally {
      release();
    }
  });

  test('guardian calls stop once the caller stops reading, at most the window ahead of what was written; reading again resumes', async () => {
    const w = countWrites(proxy);
    let started = 0;
    let maxAhead = 0;
    guardian.script((env) => {
      if (isResponseEnvelope(env)) {
        started++;
        maxAhead = Math.max(maxAhead, started - w.state.written);
      }
      return { decision: 'allow' };
    });
    try {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 'slow-c',
        method: 'SendStreamingMessage',
        params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'go' }] } },
      });
      const req = http.request(`${proxy.url}/a2a/jsonrpc`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'content-length': Buffer.byteLength(body) },
      });
      req.on('error', () => undefined);
      const res = await new Promise<http.IncomingMessage>((resolve) => {
        req.once('response', resolve);
        req.end(body);
      });
      res.pause(); // the caller reads nothing
      // Wait until the guardian calls stop growing: the proxy's response is full and the agent is paused.
      let last = -1;
      await waitFor(
        async () => {
          const now = started;
          await sleep(200);
          const still = now === last && now === started && w.state.res?.writableNeedDrain === true;
          last = now;
          return still;
        },
        30_000,
        'guardian calls stalled',
      );
      expect(maxAhead).toBeLessThanOrEqual(WINDOW);
      expect(started).toBeLessThan(5000);
      expect(produced).toBeLessThan(5000);
      // Held back, not broken.
      let received = 0;
      res.on('data', (c: Buffer) => (received += c.length));
      res.resume();
      await waitFor(() => started > last + 50, 30_000, 'calls resume once the caller reads');
      expect(received).toBeGreaterThan(0);
      expect(maxAhead).toBeLessThanOrEqual(WINDOW);
      req.destroy();
    } finally {
      w.stop();
    }
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* A call's checks next to thousands of stream events waiting for the guardian                    */
/* ---------------------------------------------------------------------------------------------- */

async function gauge(proxy: TestProxy, budget: 'call' | 'stream'): Promise<number> {
  const text = await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_guardian_queued_calls');
  const m = new RegExp(`a2a_guard_guardian_queued_calls\\{budget="${budget}"\\} (\\d+)`).exec(text);
  return Number(m?.[1] ?? NaN);
}

test("a call's checks (request hook and unary answer) are served while thousands of stream events wait for the guardian", async () => {
  // Two connections for stream events, the guardian holding each stream-event call: the two places
  // are taken, and the three 1,000-event streams (about 3,000 events) wait for one.
  const busy = await stack.proxy({
    ROLE: 'server',
    INSPECT_RESPONSES: 'true',
    INSPECT_CARDS: 'false',
    STREAM_INSPECT_WINDOW: '1024',
    GUARDIAN_STREAM_CONNECTIONS: '2',
    GUARDIAN_CALL_CONNECTIONS: '2',
    GUARDIAN_TIMEOUT_MS: '120000',
  });
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  const unaryText = 'hello while streams wait';
  guardian.script(async (env) => {
    if (isResponseEnvelope(env) && !textOf(env.params.payload).includes(unaryText)) await held;
    return { decision: 'allow' };
  });
  const streams = [1, 2, 3].map((i) => openStream('JSONRPC', busy.url, `busy-${i}`, 'stream 1000'));
  const streamEnvs = () => responseEnvs().filter((e) => String(e.params.payload.id).startsWith('busy-'));
  try {
    // The guardian holds two events; the next event of each stream waits for a place (the gauge counts them).
    await waitFor(async () => (await gauge(busy, 'stream')) >= 2 && streamEnvs().length === 2, 30_000, 'the streams waiting for the guardian');
    const client = await makeClient(busy.url, 'JSONRPC', '1.0');
    const answer = await client.sendMessage(sendReq(unaryText));
    expect(textOf(answer)).toContain(`echo: ${unaryText}`);
    // Both checks of the call were decided (request and answer) while the stream events still waited.
    const calls = guardian.calls().filter((e) => JSON.stringify(e.params.payload).includes(unaryText));
    expect(calls.map((e) => (isResponseEnvelope(e) ? 'response' : 'request'))).toEqual(['request', 'response']);
    expect(await gauge(busy, 'stream')).toBeGreaterThanOrEqual(2);
    expect(await gauge(busy, 'call')).toBe(0);
    expect(streamEnvs()).toHaveLength(2);
    expect(streams.every((s) => s.events.length === 0)).toBe(true);
  } finally {
    for (const s of streams) s.req.destroy();
    release();
  }
  // The callers left: nobody waits any more.
  await waitFor(async () => (await gauge(busy, 'stream')) === 0, 30_000, 'the line emptied');
}, 180_000);
