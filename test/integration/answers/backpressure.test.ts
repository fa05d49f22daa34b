/**
 * A slow reader over a long stream: the proxy's memory stays bounded (design section 6: streams are
 * never buffered; responses.ts: backpressure both ways), with INSPECT_RESPONSES off and on.
 *
 * A hand-made node:http upstream tries to write a 200 MB SSE stream in 64 KiB events as fast as the
 * socket allows (it honours res.write() backpressure and counts the bytes whose write callback fired,
 * i.e. bytes handed to the kernel). A raw node:http client opens the stream through the proxy and
 * reads nothing (its response is paused). Once the proxy's response to the client is full (needDrain)
 * and the upstream, blocked on 'drain', has made no progress over 30 polls, we measure:
 *   - acked: bytes the upstream managed to write. Only socket buffers on both legs (client<-proxy and
 *     proxy<-upstream), the proxy's stream buffers and a few events may hold them, so this must stay
 *     far below the stream size: we require < 16 MB (a proxy that buffers without bound lets the
 *     upstream write all 200 MB);
 *   - the RSS delta of this test process (the proxy, the upstream, the guardian and the client all run
 *     in it) between just before the request and the stall: required < 150 MB.
 * Then the client resumes reading for a few more MB (the stream was held back, not broken), disconnects,
 * and the upstream sees its response closed.
 * Measured here (2 cores, Node 20, loopback): the upstream got 7.7-11.1 MB of the 200 MB out (about
 * 4 MB in the client leg, the rest in the upstream leg); RSS grew by 20-28 MB, both with inspection off and on.
 * Last test: with several events per chunk and a paused reader, the inspected relay must wait for one
 * 'drain' at a time rather than add a listener per held-back event.
 * Nothing here depends on the machine's speed: the stall is a state (the upstream blocked on 'drain',
 * the proxy's response full, no byte acknowledged over 30 event-loop turns), the bounds are on bytes,
 * a starved guardian is waited for (GUARDIAN_TIMEOUT_MS at its maximum: a timed-out event check would
 * end the stream, which is not what this file tests), and every wait has one generous bound (WAIT_MS)
 * that only catches a hang: a loaded machine makes the tests slower, never wrong.
 * Set REPORT_MEASUREMENTS=1 to print the figures.
 */
import http from 'node:http';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { closeServer, listen, sleep, waitFor } from '../../helpers/net';
import { startTestProxy } from '../../helpers/proxy-harness';

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

const EVENT_BYTES = 64 * 1024;
const TOTAL_BYTES = 200 * 1024 * 1024;
const MAX_ACKED = 16 * 1024 * 1024;
const MAX_RSS_DELTA = 150 * 1024 * 1024;
const MB = 1024 * 1024;
/** Bound of every wait: a hang guard, far above any loaded machine's time. */
const WAIT_MS = 120_000;
/** A test's few waits in a row, each bounded by WAIT_MS. */
const TEST_MS = 4 * WAIT_MS;

interface Producer {
  handed: number;
  acked: number;
  waitingForDrain: boolean;
  closed: boolean;
  finished: boolean | undefined;
  done: boolean;
}

let upstream: http.Server;
let guardian: TestGuardian;
let on: Proxy;
let off: Proxy;
let producer: Producer | undefined;
const clients = new Set<http.ClientRequest>();

/** One SSE event of exactly `bytes` bytes: a JSON-RPC artifact update with the caller's id. */
function sizedEvent(id: string, bytes: number): Buffer {
  const head = `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { artifactUpdate: { taskId: 't-1', contextId: 'c-1', artifact: { artifactId: 'a-1', parts: [{ text: '' }] } } } })}`;
  const at = head.indexOf('"text":""') + '"text":"'.length;
  const pad = bytes - (head.length + 2); // + "\n\n"
  return Buffer.from(`${head.slice(0, at)}${'x'.repeat(pad)}${head.slice(at)}\n\n`, 'utf8');
}

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'GET') {
        res.writeHead(404).end();
        return;
      }
      const p: Producer = { handed: 0, acked: 0, waitingForDrain: false, closed: false, finished: undefined, done: false };
      producer = p;
      res.once('close', () => {
        p.closed = true;
        p.finished = res.writableFinished;
      });
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      // POST /mixed: one 48 KiB event then 12 events of 1 KiB per write (several events per chunk);
      // otherwise one 64 KiB event per write.
      const ev =
        req.url === '/mixed' ? Buffer.concat([sizedEvent('bp-2', 48 * 1024), ...Array(12).fill(sizedEvent('bp-2', 1024))]) : sizedEvent('bp-1', EVENT_BYTES);
      void (async () => {
        while (p.handed < TOTAL_BYTES && !p.closed) {
          const ok = res.write(ev, (err) => {
            if (!err) p.acked += ev.length;
          });
          p.handed += ev.length;
          if (!ok) {
            p.waitingForDrain = true;
            await new Promise<void>((resolve) => {
              const go = () => {
                res.off('drain', go);
                res.off('close', go);
                resolve();
              };
              res.on('drain', go);
              res.on('close', go);
            });
            p.waitingForDrain = false;
          }
        }
        p.done = true;
        if (!p.closed) res.end();
      })();
    });
  });
  const upstreamUrl = await listen(upstream);
  guardian = await startGuardian();
  const base = { UPSTREAM_URL: upstreamUrl, GUARDIAN_URL: guardian.url, ROLE: 'server', GUARDIAN_TIMEOUT_MS: '600000' };
  on = await startTestProxy({ ...base, INSPECT_RESPONSES: 'true' });
  off = await startTestProxy({ ...base, INSPECT_RESPONSES: 'false' });
}, WAIT_MS);
afterAll(async () => {
  for (const c of clients) c.destroy();
  await on?.close();
  await off?.close();
  await closeServer(upstream);
  await guardian?.close();
});

/**
 * Wait until the upstream is blocked on 'drain' and its acknowledged byte count has not moved over
 * `quietPolls` consecutive polls (each one a full event-loop turn apart, so I/O was processed in
 * between), or until it finished. `alsoBlocked` adds a condition (e.g. the proxy's response is full).
 */
async function stalled(p: Producer, quietPolls: number, boundMs: number, alsoBlocked: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + boundMs;
  let last = -1;
  let quiet = 0;
  for (;;) {
    if (p.done || p.closed) return;
    if (p.acked !== last || !p.waitingForDrain || !alsoBlocked()) {
      last = p.acked;
      quiet = 0;
    } else if (++quiet >= quietPolls) return;
    if (Date.now() > deadline) throw new Error(`upstream neither stalled nor finished within ${boundMs} ms (acked ${p.acked})`);
    await sleep(50);
  }
}

describe.each([
  ['off', () => off],
  ['on', () => on],
] as const)('inspection %s: a paused reader on a 200 MB stream of 64 KiB events', (mode, proxy) => {
  test(
    'the upstream can write only socket-buffer amounts; memory stays bounded; the stream resumes',
    async () => {
      guardian.clear();
      producer = undefined;
      let proxyRes: http.ServerResponse | undefined;
      const onRequest = (_req: http.IncomingMessage, r: http.ServerResponse) => {
        proxyRes = r;
      };
      proxy().server.on('request', onRequest);
      const rss0 = process.memoryUsage().rss;

      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 'bp-1',
        method: 'SendStreamingMessage',
        params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'long' }] } },
      });
      const req = http.request(`${proxy().url}/a2a/jsonrpc`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'a2a-version': '1.0', 'content-length': Buffer.byteLength(body) },
      });
      clients.add(req);
      req.on('error', () => undefined);
      const res = await new Promise<http.IncomingMessage>((resolve) => {
        req.once('response', resolve);
        req.end(body);
      });
      res.pause(); // read nothing
      expect(res.statusCode).toBe(200);
      await waitFor(() => producer !== undefined, WAIT_MS, 'upstream producing');
      const p = producer!;

      await stalled(p, 30, WAIT_MS, () => proxyRes?.writableNeedDrain === true);
      proxy().server.off('request', onRequest);
      const rss1 = process.memoryUsage().rss;
      const acked = p.acked;
      const rssDelta = rss1 - rss0;
      const inspected = guardian.calls().filter((e) => e.params?.payload?.method === undefined).length;
      if (process.env.REPORT_MEASUREMENTS) {
        console.log(
          `[backpressure] inspection ${mode}: upstream wrote ${(acked / MB).toFixed(2)} MB of ${TOTAL_BYTES / MB} MB (${acked / EVENT_BYTES} events; ` +
            `handed to res.write ${(p.handed / MB).toFixed(2)} MB); guardian inspected ${inspected} events; RSS delta ${(rssDelta / MB).toFixed(1)} MB ` +
            `(rss ${(rss0 / MB).toFixed(0)} -> ${(rss1 / MB).toFixed(0)} MB)`,
        );
      }
      expect(p.done).toBe(false); // still waiting for 'drain': held back by the paused reader
      expect(p.closed).toBe(false);
      expect(acked).toBeLessThan(MAX_ACKED);
      expect(p.handed).toBeLessThan(MAX_ACKED + EVENT_BYTES);
      expect(rssDelta).toBeLessThan(MAX_RSS_DELTA);
      if (mode === 'on') expect(inspected * EVENT_BYTES).toBeLessThanOrEqual(acked);
      else expect(inspected).toBe(0);

      // Held back, not broken: reading again lets the upstream go on.
      let received = 0;
      res.on('data', (c: Buffer) => {
        received += c.length;
      });
      res.resume();
      await waitFor(() => p.acked >= acked + 4 * MB, WAIT_MS, 'upstream writes again once the client reads');
      // What the upstream wrote is still partly in the three socket buffers on its way; it arrives.
      await waitFor(() => received > 4 * MB, WAIT_MS, 'the client receives what the upstream wrote');

      req.destroy();
      await waitFor(() => p.closed, WAIT_MS, 'upstream response closed after the client left');
      expect(p.finished).toBe(false);
    },
    TEST_MS,
  );
});

test(
  "inspection on, paused reader, several events per chunk: the proxy waits for one 'drain' at a time",
  async () => {
    // While the caller is not reading, the inspected relay must not add a 'drain' listener per event it
    // holds back: with small events that is hundreds of listeners per stream (and a
    // MaxListenersExceededWarning). Sampled at every guardian call and every millisecond.
    guardian.clear();
    producer = undefined;
    let proxyRes: http.ServerResponse | undefined;
    const onRequest = (_req: http.IncomingMessage, r: http.ServerResponse) => {
      proxyRes = r;
    };
    on.server.on('request', onRequest);
    let maxDrain = 0;
    const sample = () => {
      if (proxyRes !== undefined) maxDrain = Math.max(maxDrain, proxyRes.listenerCount('drain'));
    };
    guardian.script(() => {
      sample();
      return { decision: 'allow' };
    });
    const sampler = setInterval(sample, 1);
    try {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 'bp-2',
        method: 'SendStreamingMessage',
        params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'long' }] } },
      });
      const req = http.request(`${on.url}/mixed`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'a2a-version': '1.0', 'content-length': Buffer.byteLength(body) },
      });
      clients.add(req);
      req.on('error', () => undefined);
      const res = await new Promise<http.IncomingMessage>((resolve) => {
        req.once('response', resolve);
        req.end(body);
      });
      res.pause();
      await waitFor(() => producer !== undefined, WAIT_MS, 'upstream producing');
      const p = producer!;
      await stalled(p, 30, WAIT_MS, () => proxyRes?.writableNeedDrain === true);
      sample();
      if (process.env.REPORT_MEASUREMENTS) {
        console.log(
          `[backpressure] mixed events, inspection on: upstream wrote ${(p.acked / MB).toFixed(2)} MB; inspected ${guardian.calls().length - 1}; writableLength ${proxyRes?.writableLength} needDrain ${proxyRes?.writableNeedDrain}; max 'drain' listeners on the proxy's response: ${maxDrain}`,
        );
      }
      expect(p.acked).toBeLessThan(MAX_ACKED);
      expect(maxDrain).toBeLessThanOrEqual(1);
      req.destroy();
      await waitFor(() => p.closed, WAIT_MS, 'upstream response closed after the client left');
    } finally {
      clearInterval(sampler);
      on.server.off('request', onRequest);
    }
  },
  TEST_MS,
);
