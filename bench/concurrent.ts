/**
 * Concurrent-streams phase: N SendStreamingMessage streams held open at once, the agent emitting one
 * event per stream per second (the bench agent's hand-made /a2a/tick streams: at 5,000 events/s the
 * SDK's own per-event work would saturate the agent before any proxy), through one path. Measured:
 *   - how many streams opened (first SSE event received) before the open deadline, and when the last did;
 *   - events delivered per second over a window once the streams are open, against what the agent
 *     emits (open streams x 1000 / GAP per second);
 *   - the proxy's RSS per open stream (RSS during the window minus before the phase) and CPU per event;
 *   - unary SendMessage calls made through the same proxy during the window (a request check must
 *     not queue behind the stream events' guardian calls): latency and failures.
 * Streams are opened with at most MAX_PENDING_OPENS unanswered at a time (a client that opens 5,000
 * connections at once measures the kernel's SYN backlog, not the proxy).
 */
import http from 'node:http';
import { UNARY_BODY, UNARY_HEADERS, post, streamBody } from './clients';
import { pct, progress, sleep, sortedCopy, type Child } from './lib';

const MAX_PENDING_OPENS = 256;

const TICK_PATH = '/a2a/tick';
/** The tick agent's pace: one event per stream per second. */
const GAP_MS = 1000;

export interface ConcurrentOptions {
  readonly streams: number;
  readonly openDeadlineMs: number;
  readonly settleMs: number;
  readonly windowMs: number;
}

export interface ConcurrentResult {
  readonly path: string;
  readonly target: number;
  readonly opened: number;
  /** spawn of the first request -> first event of the last stream that opened, s */
  readonly openSeconds: number;
  readonly failed: number;
  readonly firstError: string | undefined;
  readonly liveInWindow: number;
  readonly eventsPerSecond: number;
  readonly expectedPerSecond: number;
  readonly rssBefore: number;
  readonly rssDuring: number;
  readonly cpuUsPerEvent: number;
  readonly unary: { readonly n: number; readonly bad: number; readonly p50: number; readonly p99: number; readonly max: number };
}

function countBoundaries(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n\n'); i !== -1; i = s.indexOf('\n\n', i + 2)) n++;
  return n;
}

export async function concurrentRun(path: string, url: string, proxy: Child | undefined, agent: Child, o: ConcurrentOptions): Promise<ConcurrentResult> {
  progress(`phase: ${o.streams} concurrent streams via ${path}`);
  const httpAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const t0 = Date.now();
  const body = streamBody('tick');
  const before = await proxy?.stats();
  const reqs: http.ClientRequest[] = [];
  let started = 0;
  let pending = 0;
  let opened = 0;
  let failed = 0;
  let ended = 0;
  let events = 0;
  let lastOpen = t0;
  let firstError: string | undefined;
  let openDone: () => void = () => undefined;
  const allSettled = new Promise<void>((r) => (openDone = r));
  const settledOne = () => {
    pending--;
    if (opened + failed >= o.streams) openDone();
    else kick();
  };
  const fail = (why: string) => {
    failed++;
    firstError ??= why;
  };
  const openOne = () => {
    started++;
    pending++;
    let open = false;
    let tail = '';
    const req = http.request(
      url + TICK_PATH,
      {
        method: 'POST',
        agent: httpAgent,
        headers: { ...UNARY_HEADERS, accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        if (res.statusCode !== 200) {
          fail(`HTTP ${res.statusCode}`);
          res.resume();
          return settledOne();
        }
        res.setEncoding('latin1');
        res.on('data', (c: string) => {
          const s = tail + c;
          tail = s.slice(-1);
          const n = countBoundaries(s);
          if (c.includes('event: error')) firstError ??= c.slice(0, 300);
          if (n === 0) return;
          events += n;
          if (!open) {
            open = true;
            opened++;
            lastOpen = Date.now();
            settledOne();
          }
        });
        res.on('close', () => {
          if (!open) {
            fail('closed before the first event');
            settledOne();
          } else ended++;
        });
      },
    );
    req.on('error', (err) => {
      if (!open) {
        fail(err.message);
        settledOne();
      }
    });
    req.end(body);
    reqs.push(req);
  };
  const kick = () => {
    while (pending < MAX_PENDING_OPENS && started < o.streams && Date.now() < t0 + o.openDeadlineMs) openOne();
  };
  kick();
  await Promise.race([allSettled, sleep(o.openDeadlineMs)]);
  const openSeconds = (lastOpen - t0) / 1000;
  await sleep(o.settleMs);

  // The window: events counted, unary calls made alongside, RSS sampled in the middle.
  const liveInWindow = opened - ended;
  const e0 = events;
  const c0 = await proxy?.stats();
  const w0 = Date.now();
  let rssDuring = NaN;
  const mid = setTimeout(() => {
    void proxy?.stats().then(
      (s) => (rssDuring = s.rss),
      () => undefined,
    );
  }, o.windowMs / 2);
  const unaryAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const lat: number[] = [];
  let bad = 0;
  while (Date.now() - w0 < o.windowMs) {
    const t = process.hrtime.bigint();
    try {
      const r = await post(url, UNARY_BODY, UNARY_HEADERS, unaryAgent);
      if (r.status !== 200 || !r.text.includes('"result"')) bad++;
    } catch {
      bad++;
    }
    lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    await sleep(100);
  }
  const windowS = (Date.now() - w0) / 1000;
  const delivered = events - e0;
  const c1 = await proxy?.stats();
  clearTimeout(mid);
  unaryAgent.destroy();

  agent.proc.send({ t: 'stop-ticks' });
  for (const r of reqs) r.destroy();
  httpAgent.destroy();
  await sleep(3000);
  const sorted = sortedCopy(lat);
  const cpu = c0 === undefined || c1 === undefined ? NaN : c1.user + c1.system - c0.user - c0.system;
  return {
    path,
    target: o.streams,
    opened,
    openSeconds,
    failed,
    firstError,
    liveInWindow,
    eventsPerSecond: delivered / windowS,
    expectedPerSecond: (liveInWindow * 1000) / GAP_MS,
    rssBefore: before?.rss ?? NaN,
    rssDuring,
    cpuUsPerEvent: cpu / delivered,
    unary: { n: lat.length, bad, p50: pct(sorted, 0.5), p99: pct(sorted, 0.99), max: pct(sorted, 1) },
  };
}
