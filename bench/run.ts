/**
 * `npm run bench`: a2a-guard's overhead on this machine.
 *
 * Processes (each a child with its own process.cpuUsage, see ipc.ts):
 *   agent      real @a2a-js/sdk agent (agent-child.ts), instant answers, 100-event streams
 *   guardian   instant AOS guardian (guardian-child.ts), always `allow`
 *   baseline   minimal node:http guardian-consulting proxy (baseline-proxy.ts)
 *   a2a-guard  the product (proxy-child.ts), ROLE=server, LOG_LEVEL=info to /dev/null
 *   a2a-guard+inspect   the same with INSPECT_RESPONSES=true
 *   a2a-guard+otel      a2a-guard with OpenTelemetry tracing on (OTLP/HTTP protobuf, every call
 *                       sampled) exporting to a sink in this process that reads and drops the spans
 * This process is the load generator (autocannon + a raw node:http client). On machines with
 * 2+ cores it pins itself to core 0 and the servers to the other core(s) with taskset.
 *
 * Phases, each in interleaved rounds (the order rotates every round; medians over rounds):
 *   1. unary message/send under load (autocannon, fixed connections and amount per round)
 *   2. unary message/send without load (1 connection, sequential)
 *   3. streams of 100 artifact events, sequential
 *   4. RSS of a fresh a2a-guard (and a fresh baseline) before / after RSS_REQUESTS requests
 *   4b. identity: a sidecar pair (ROLE=client -> ROLE=server) without and with signed identity
 *      assertions (ES256: the client sidecar signs one per call, the server sidecar verifies it and
 *      checks it against its replay cache), unary under load and sequential; ratios of the two
 *   5. (BENCH_PROFILE=1) --cpu-prof and, where available, perf of a2a-guard and the baseline
 *      under the unary load
 *
 * BENCH_COMPARE=<another checkout, built> adds the path a2a-guard@compare: that checkout's proxy in the
 * same rounds, for an A/B of a change (paired per-round CPU ratios are printed).
 * Options (env): BENCH_LONG=1 or --long (100,000 requests in the RSS phase), BENCH_PROFILE=1 or
 * --profile (add phase 5), BENCH_PROFILE=only or --profile-only (phase 5 alone),
 * BENCH_PHASES=load,seq,streams,rss,identity (a subset), BENCH_LOG_LEVEL (a2a-guard's LOG_LEVEL, default info),
 * BENCH_ROUNDS, BENCH_LOAD_ROUNDS, BENCH_AMOUNT, BENCH_CONNECTIONS, BENCH_SEQ, BENCH_STREAMS,
 * BENCH_PACED_STREAMS, BENCH_RSS_REQUESTS, BENCH_PROFILE_REQUESTS, BENCH_PIN=0 (no taskset).
 * Pass options to npm with `--`: `npm run bench -- --long --profile`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import type { ReadyMessage, StatsReply, StatsRequest } from './ipc';
import { summarizeProfile } from './profile';
import { generateAssertionKey } from '../src/identity/keygen';

/* ------------------------------------------------------------------------------------------ */
/* Settings                                                                                   */
/* ------------------------------------------------------------------------------------------ */

const argv = process.argv.slice(2);
const env = process.env;
const num = (name: string, def: number): number => (env[name] !== undefined && env[name] !== '' ? Number(env[name]) : def);
const LONG = env.BENCH_LONG === '1' || argv.includes('--long');
const PROFILE_ONLY = env.BENCH_PROFILE === 'only' || argv.includes('--profile-only');
const PROFILE = PROFILE_ONLY || env.BENCH_PROFILE === '1' || argv.includes('--profile');
/** Rounds of the latency and stream phases; the load phase has its own (fewer, bigger rounds). */
const ROUNDS = num('BENCH_ROUNDS', 8);
const LOAD_ROUNDS = num('BENCH_LOAD_ROUNDS', 5);
const ALL_PHASES = 'load,seq,streams,rss,identity';
const PHASES = new Set((env.BENCH_PHASES ?? ALL_PHASES).split(',').map((p) => p.trim()));
const CONNECTIONS = num('BENCH_CONNECTIONS', 10);
const LOAD_AMOUNT = num('BENCH_AMOUNT', 3000);
const SEQ_REQUESTS = num('BENCH_SEQ', 300);
const STREAMS = num('BENCH_STREAMS', 12);
const PACED_STREAMS = num('BENCH_PACED_STREAMS', 3);
const STREAM_EVENTS = 100;
const RSS_REQUESTS = num('BENCH_RSS_REQUESTS', LONG ? 100_000 : 20_000);
const PROFILE_REQUESTS = num('BENCH_PROFILE_REQUESTS', 30_000);

const RPC_PATH = '/a2a/jsonrpc';
const UNARY_HEADERS = { 'content-type': 'application/json', 'a2a-version': '1.0' };
const UNARY_BODY = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'SendMessage',
  params: { message: { messageId: 'bench-unary', role: 'ROLE_USER', parts: [{ text: 'hello from the bench' }] } },
});
const streamBody = (text: string): string => JSON.stringify({
  jsonrpc: '2.0', id: 2, method: 'SendStreamingMessage',
  params: { message: { messageId: 'bench-stream', role: 'ROLE_USER', parts: [{ text }] } },
});
/** The agent emits 100 events as fast as it can. */
const BURST_BODY = streamBody('stream please');
/** The agent waits 1 ms between events (no CPU contention between agent and proxy). */
const PACED_BODY = streamBody('stream paced please');
type StreamKind = 'burst' | 'paced';

type PathName = 'direct' | 'baseline' | 'a2a-guard' | 'a2a-guard+inspect' | 'a2a-guard+otel' | 'a2a-guard@compare';
const COMPARE = env.BENCH_COMPARE !== undefined && env.BENCH_COMPARE !== '' ? path.resolve(env.BENCH_COMPARE) : undefined;
const PATHS: readonly PathName[] = ['direct', 'baseline', 'a2a-guard', 'a2a-guard+inspect', 'a2a-guard+otel', ...(COMPARE === undefined ? [] : ['a2a-guard@compare' as const])];

/* ------------------------------------------------------------------------------------------ */
/* Child processes                                                                            */
/* ------------------------------------------------------------------------------------------ */

interface Child {
  readonly name: string;
  readonly url: string;
  readonly proc: ChildProcess;
  stats(): Promise<StatsReply>;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let stopping = false;

function killAll(signal: NodeJS.Signals = 'SIGTERM'): void {
  for (const p of live) {
    try {
      p.kill(signal);
    } catch {
      /* already gone */
    }
  }
}
process.on('exit', () => killAll('SIGKILL'));
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    stopping = true;
    process.stderr.write(`\nbench: ${sig}, stopping children\n`);
    killAll('SIGTERM');
    setTimeout(() => process.exit(130), 300).unref();
  });
}

function startChild(name: string, file: string, extraEnv: Record<string, string>, cores: string | undefined, nodeArgs: string[] = []): Promise<Child> {
  const script = path.isAbsolute(file) ? file : path.join(__dirname, file);
  const args = [...nodeArgs, script];
  const proc = cores === undefined
    ? spawn(process.execPath, args, { env: { ...env, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
    : spawn('taskset', ['-c', cores, process.execPath, ...args], { env: { ...env, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  live.add(proc);
  let stderr = '';
  proc.stderr?.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString('utf8')).slice(-4000);
  });
  let exited = false;
  let expectedExit = false;
  const exitWaiters: Array<() => void> = [];
  proc.once('exit', (code, sig) => {
    exited = true;
    live.delete(proc);
    for (const w of exitWaiters.splice(0)) w();
    if (!expectedExit && !stopping) process.stderr.write(`bench: ${name} exited unexpectedly (${code ?? sig})\n${stderr}\n`);
  });
  let seq = 0;
  const pending = new Map<number, (s: StatsReply) => void>();
  return new Promise<Child>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 30 s\n${stderr}`)), 30_000);
    proc.once('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? sig}) before it was ready\n${stderr}`));
    });
    proc.on('message', (m: ReadyMessage | StatsReply) => {
      if (m.t === 'stats') {
        pending.get(m.seq)?.(m);
        pending.delete(m.seq);
        return;
      }
      clearTimeout(timer);
      resolve({
        name,
        url: m.url,
        proc,
        stats: () => new Promise<StatsReply>((res, rej) => {
          if (exited) return rej(new Error(`${name} is not running\n${stderr}`));
          const s = ++seq;
          const t = setTimeout(() => rej(new Error(`${name} did not answer a stats request`)), 10_000);
          pending.set(s, (r) => {
            clearTimeout(t);
            res(r);
          });
          const req: StatsRequest = { t: 'stats', seq: s };
          proc.send(req);
        }),
        stop: () => new Promise<void>((res) => {
          expectedExit = true;
          if (exited) return res();
          exitWaiters.push(res);
          proc.kill('SIGTERM');
          setTimeout(() => {
            if (!exited) proc.kill('SIGKILL');
          }, 10_000).unref();
        }),
      });
    });
  });
}

/* ------------------------------------------------------------------------------------------ */
/* Machine facts and pinning                                                                  */
/* ------------------------------------------------------------------------------------------ */

interface Pinning {
  readonly load?: string;
  readonly proxy?: string;
  readonly agent?: string;
  readonly guardian?: string;
  readonly text: string;
}

function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1]) return m[1].trim();
  } catch {
    /* not Linux */
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

/** Which code was measured (read-only git queries). */
function codeVersion(): string {
  const root = path.resolve(__dirname, '..', '..');
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' });
  if (head.status !== 0) return 'unknown (no git)';
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root, encoding: 'utf8' });
  const n = dirty.stdout.split('\n').filter((l) => l.trim() !== '').length;
  return `${head.stdout.trim()}${n > 0 ? ` + ${n} uncommitted change(s) under src/` : ''}`;
}

function nproc(): number {
  const r = spawnSync('nproc', [], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : os.availableParallelism();
}

function choosePinning(cores: number): Pinning {
  if (env.BENCH_PIN === '0') return { text: 'none (BENCH_PIN=0)' };
  if (cores < 2) return { text: 'none (1 core: load generator and servers share it; numbers flatter nobody but are noisy)' };
  if (spawnSync('taskset', ['-V']).status !== 0) return { text: 'none (taskset not found; install util-linux)' };
  // Pin every thread of this process (the load generator) to core 0.
  const self = spawnSync('taskset', ['-a', '-cp', '0', String(process.pid)], { encoding: 'utf8' });
  if (self.status !== 0) return { text: `none (taskset failed: ${self.stderr.trim()})` };
  if (cores >= 4) {
    return { load: '0', proxy: '1', agent: '2', guardian: '3', text: 'taskset: load generator core 0, proxy core 1, agent core 2, guardian core 3' };
  }
  const rest = cores === 2 ? '1' : `1-${cores - 1}`;
  return { load: '0', proxy: rest, agent: rest, guardian: rest, text: `taskset: load generator on core 0; agent, guardian and proxy share core(s) ${rest}` };
}

/* ------------------------------------------------------------------------------------------ */
/* Statistics                                                                                 */
/* ------------------------------------------------------------------------------------------ */

function sortedCopy(xs: ArrayLike<number>): Float64Array {
  return Float64Array.from(xs).sort();
}
/** Nearest-rank percentile of a sorted array. */
function pct(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}
function median(xs: readonly number[]): number {
  return pct(sortedCopy(xs), 0.5);
}
function concat(arrs: readonly Float64Array[]): Float64Array {
  const out = new Float64Array(arrs.reduce((s, a) => s + a.length, 0));
  let o = 0;
  for (const a of arrs) {
    out.set(a, o);
    o += a.length;
  }
  return out.sort();
}

/* ------------------------------------------------------------------------------------------ */
/* Load: unary under load (autocannon), unary sequential, streams                            */
/* ------------------------------------------------------------------------------------------ */

interface LoadResult {
  readonly n: number;
  readonly bad: number;
  readonly seconds: number;
  readonly lat: Float64Array;
}

function loadRound(url: string, amount: number, connections: number): Promise<LoadResult> {
  const lat = new Float64Array(amount);
  let k = 0;
  const t0 = process.hrtime.bigint();
  // autocannon only notices that `amount` is reached at its 1 s tick, so time the run up to the last answer.
  let last = t0;
  return new Promise<LoadResult>((resolve, reject) => {
    const inst = autocannon(
      { url: url + RPC_PATH, method: 'POST', headers: UNARY_HEADERS, body: UNARY_BODY, connections, amount, timeout: 10 },
      (err: unknown, r: autocannon.Result) => {
        if (err) return reject(err as Error);
        resolve({ n: r.requests.total, bad: r.non2xx + r.errors, seconds: Number(last - t0) / 1e9, lat: lat.slice(0, k) });
      },
    );
    inst.on('response', (_c, status, _b, rt) => {
      last = process.hrtime.bigint();
      if (k < amount && status >= 200 && status < 300) lat[k++] = rt;
    });
  });
}

const seqAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url + RPC_PATH, { method: 'POST', agent: seqAgent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `count` sequential requests on one keep-alive connection; latencies in ms. */
async function seqRound(url: string, count: number): Promise<{ lat: Float64Array; bad: number }> {
  const lat = new Float64Array(count);
  let bad = 0;
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    const r = await post(url, UNARY_BODY, UNARY_HEADERS);
    lat[i] = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status !== 200 || !r.text.includes('"result"')) bad++;
  }
  return { lat, bad };
}

interface StreamResult {
  /** request start -> first SSE event, ms */
  readonly ttfe: number;
  /** request start -> last SSE event, ms */
  readonly total: number;
  readonly events: number;
  /** agent publish -> client receipt, per artifact event, ms */
  readonly eventLat: number[];
  readonly error: string | undefined;
}

function streamOnce(url: string, kind: StreamKind = 'burst'): Promise<StreamResult> {
  const body = kind === 'burst' ? BURST_BODY : PACED_BODY;
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.request(url + RPC_PATH, {
      method: 'POST', agent: seqAgent,
      headers: { ...UNARY_HEADERS, accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      res.setEncoding('utf8');
      let buf = '';
      let first = -1n;
      let last = -1n;
      let events = 0;
      let error: string | undefined = res.statusCode === 200 ? undefined : `HTTP ${res.statusCode}`;
      const eventLat: number[] = [];
      res.on('data', (chunk: string) => {
        const now = process.hrtime.bigint();
        buf += chunk;
        for (let idx = buf.indexOf('\n\n'); idx !== -1; idx = buf.indexOf('\n\n')) {
          const ev = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          if (!ev.includes('data:')) continue;
          events++;
          if (first < 0n) first = now - t0;
          last = now - t0;
          if (ev.startsWith('event: error') || ev.includes('"error":')) error ??= ev.slice(0, 300);
          const m = /t=(\d+)/.exec(ev);
          if (m?.[1] !== undefined) eventLat.push(Number(now - BigInt(m[1])) / 1e6);
        }
      });
      res.on('end', () => {
        if (events !== STREAM_EVENTS + 2) error ??= `expected ${STREAM_EVENTS + 2} SSE events, got ${events}: ${buf.slice(0, 300)}`;
        resolve({ ttfe: Number(first) / 1e6, total: Number(last) / 1e6, events, eventLat, error });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/* ------------------------------------------------------------------------------------------ */
/* Bench                                                                                      */
/* ------------------------------------------------------------------------------------------ */

interface Servers {
  readonly agent: Child;
  readonly guardian: Child;
  readonly proxies: Map<PathName, Child>;
}

function urlOf(s: Servers, p: PathName): string {
  return p === 'direct' ? s.agent.url : (s.proxies.get(p) as Child).url;
}

/** CPU µs and counters of the server processes around one piece of work. */
async function measured<T>(s: Servers, p: PathName, work: () => Promise<T>): Promise<{ r: T; proxyUs: number; agentUs: number; guardianUs: number; agentCount: number; guardianCount: number }> {
  const proxy = s.proxies.get(p);
  const [pa, aa, ga] = await Promise.all([proxy?.stats(), s.agent.stats(), s.guardian.stats()]);
  const r = await work();
  const [pb, ab, gb] = await Promise.all([proxy?.stats(), s.agent.stats(), s.guardian.stats()]);
  const cpu = (a: StatsReply | undefined, b: StatsReply | undefined) => (a === undefined || b === undefined ? NaN : b.user + b.system - a.user - a.system);
  return {
    r,
    proxyUs: cpu(pa, pb),
    agentUs: cpu(aa, ab),
    guardianUs: cpu(ga, gb),
    agentCount: (ab?.count ?? 0) - (aa?.count ?? 0),
    guardianCount: (gb?.count ?? 0) - (ga?.count ?? 0),
  };
}

function rotated<T>(xs: readonly T[], r: number): T[] {
  const k = r % xs.length;
  return [...xs.slice(k), ...xs.slice(0, k)];
}

const f = (v: number, d = 2): string => (Number.isFinite(v) ? v.toFixed(d) : '—');
const fx = (v: number): string => (Number.isFinite(v) ? `${v.toFixed(2)}x` : '—');
const sign = (v: number, d = 3): string => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${v.toFixed(d)}` : '—');
/** A signed value with a unit, or a bare dash when it was not measured. */
const signU = (v: number, unit: string, d = 3): string => (Number.isFinite(v) ? `${sign(v, d)} ${unit}` : '—');
const mb = (b: number): string => `${(b / 1048576).toFixed(1)} MB`;
function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(w[i] ?? 0) : c.padStart(w[i] ?? 0))).join(' | ')} |`;
  return [line(head), `|${w.map((x, i) => (i === 0 ? '-'.repeat(x + 2) : `${'-'.repeat(x + 1)}:`)).join('|')}|`, ...rows.map(line)].join('\n');
}
const log = (s = ''): void => void process.stdout.write(s + '\n');

/** An OTLP/HTTP endpoint that reads every export and drops it (the collector side of a2a-guard+otel). */
async function startOtlpSink(): Promise<{ url: string; exports: number; bytes: number; close(): Promise<void> }> {
  const sink = { url: '', exports: 0, bytes: 0, close: () => Promise.resolve() };
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => (sink.bytes += c.length));
    req.on('end', () => {
      sink.exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  sink.close = () => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
  return sink;
}

async function sanity(s: Servers): Promise<void> {
  for (const p of PATHS) {
    const r = await post(urlOf(s, p), UNARY_BODY, UNARY_HEADERS);
    if (r.status !== 200 || !r.text.includes('"result"') || !r.text.includes('COMPLETED')) {
      throw new Error(`${p}: message/send did not return a completed task: HTTP ${r.status} ${r.text.slice(0, 400)}`);
    }
    for (const k of ['burst', 'paced'] as const) {
      const st = await streamOnce(urlOf(s, p), k);
      if (st.error !== undefined) throw new Error(`${p}: ${k} stream failed: ${st.error}`);
    }
  }
}

interface RssResult {
  readonly name: string;
  readonly launch: StatsReply;
  readonly start: StatsReply;
  readonly end: StatsReply;
  readonly peak: number;
  readonly series: number[];
  readonly step: number;
  readonly done: number;
  readonly bad: number;
}

const RSS_WARMUP = 5000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Memory of one fresh proxy process over RSS_REQUESTS unary requests; stops the process. */
async function rssPhase(name: string, c: Child): Promise<RssResult> {
  const launch = await c.stats();
  await loadRound(c.url, RSS_WARMUP, CONNECTIONS);
  await sleep(1000);
  const start = await c.stats();
  let peak = start.rss;
  const sampler = setInterval(() => {
    c.stats().then((st) => (peak = Math.max(peak, st.rss)), () => undefined);
  }, 250);
  const step = RSS_REQUESTS >= 50_000 ? 10_000 : 5_000;
  const series: number[] = [];
  let done = 0;
  let bad = 0;
  while (done < RSS_REQUESTS) {
    const r = await loadRound(c.url, Math.min(step, RSS_REQUESTS - done), CONNECTIONS);
    done += r.n;
    bad += r.bad;
    series.push((await c.stats()).rss);
  }
  clearInterval(sampler);
  await sleep(3000);
  const end = await c.stats();
  await c.stop();
  return { name, launch, start, end, peak: Math.max(peak, end.rss), series, step, done, bad };
}

/**
 * Profiles of a2a-guard and of the baseline under the same unary load, in separate processes so the
 * measured rows stay unprofiled:
 *   - V8 `--cpu-prof` (function-level JS attribution; V8 samples wall-clock time, so time the
 *     process spent preempted lands on whatever native frame was on the stack, mostly `writev`);
 *   - when `perf` works (Linux, root or perf_event_paranoid <= 1): `perf record -e cpu-clock` of the
 *     process with `--perf-basic-prof`, i.e. on-CPU time only, kernel included.
 */
async function runProfiles(agent: Child, guardian: Child, pin: Pinning, proxyEnv: (inspect: boolean) => Record<string, string>): Promise<string[]> {
  const agentUrl = agent.url;
  const guardianUrl = guardian.url;
  const profiles: string[] = [];
  // Give the profiled proxy a core of its own: agent and guardian join the load generator. Otherwise
  // the wall-clock V8 profile books the time the proxy spends preempted by them on `writev`.
  const repin = pin.load !== undefined && pin.proxy === pin.agent;
  const setCores = (c: Child, cores: string) => spawnSync('taskset', ['-a', '-cp', cores, String(c.proc.pid)], { stdio: 'ignore' });
  if (repin) {
    setCores(agent, pin.load as string);
    setCores(guardian, pin.load as string);
    profiles.push(`profiles: the profiled proxy runs alone on core(s) ${pin.proxy}; agent, guardian and load generator share core ${pin.load}`);
  }
  try {
    await profileRuns(agentUrl, guardianUrl, pin, proxyEnv, profiles);
  } finally {
    if (repin) {
      setCores(agent, pin.agent as string);
      setCores(guardian, pin.guardian as string);
    }
  }
  return profiles;
}

async function profileRuns(agentUrl: string, guardianUrl: string, pin: Pinning, proxyEnv: (inspect: boolean) => Record<string, string>, profiles: string[]): Promise<void> {
  const dir = path.join(os.tmpdir(), `a2a-guard-bench-profiles-${process.pid}`);
  fs.mkdirSync(dir, { recursive: true });
  const subjects = [
    ['a2a-guard', 'proxy-child.js', proxyEnv(false)],
    ['baseline', 'baseline-proxy.js', { PORT: '0', UPSTREAM_URL: agentUrl, GUARDIAN_URL: guardianUrl }],
  ] as const;
  for (const [name, file, e] of subjects) {
    process.stderr.write(`profiling ${name} (--cpu-prof) over ${PROFILE_REQUESTS} requests\n`);
    const profName = `${name}.cpuprofile`;
    const c = await startChild(`${name} (profiled)`, file, e, pin.proxy, ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', profName, '--cpu-prof-interval', '100']);
    await loadRound(c.url, 2000, CONNECTIONS);
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const r = await loadRound(c.url, PROFILE_REQUESTS, CONNECTIONS);
    const toUs = Number(process.hrtime.bigint() / 1000n);
    await c.stop();
    const sum = summarizeProfile(path.join(dir, profName), 30, { fromUs, toUs }, r.n);
    profiles.push(`## --cpu-prof of ${name}: ${r.n} unary requests (${CONNECTIONS} connections) after 2000 warm-up; ` +
      `${(sum.busyMs * 1000 / r.n).toFixed(1)} µs sampled busy time per request (wall-clock sampling: includes time preempted)\n` +
      `file: ${path.join(dir, profName)}\n\n${sum.text}`);
  }
  if (spawnSync('perf', ['--version']).status !== 0) {
    profiles.push('## perf: not available (install linux-perf for an on-CPU profile)');
    return;
  }
  for (const [name, file, e] of subjects) {
    process.stderr.write(`profiling ${name} (perf, on-CPU) over ${PROFILE_REQUESTS} requests\n`);
    const c = await startChild(`${name} (perf)`, file, e, pin.proxy, ['--perf-basic-prof-only-functions']);
    await loadRound(c.url, 2000, CONNECTIONS);
    const data = path.join(dir, `${name}.perf.data`);
    const rec = spawn('perf', ['record', '-e', 'cpu-clock', '-F', '4999', '-p', String(c.proc.pid), '-o', data], { stdio: ['ignore', 'ignore', 'pipe'] });
    live.add(rec);
    let recErr = '';
    rec.stderr?.on('data', (b: Buffer) => (recErr += b.toString('utf8')));
    const recDone = new Promise<void>((res) => rec.once('exit', () => res()));
    await sleep(500);
    const cpu0 = await c.stats();
    const r = await loadRound(c.url, PROFILE_REQUESTS, CONNECTIONS);
    const cpu1 = await c.stats();
    rec.kill('SIGINT');
    await recDone;
    live.delete(rec);
    await c.stop();
    const cpuUs = cpu1.user + cpu1.system - cpu0.user - cpu0.system;
    const mapFile = path.join(os.tmpdir(), `perf-${c.proc.pid}.map`);
    const report = (sort: string, limit: string) => spawnSync('perf', ['report', '-i', data, '--stdio', '--no-children', '--sort', sort, '--percent-limit', limit],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).stdout.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'))
      .map((l) => l.replace(/\s+$/, '').replace(/\/work\/main\/(dist\/)?/g, '').replace(/^(\s*[\d.]+%)\s+/, '$1  ')).slice(0, 40).join('\n');
    // node --perf-basic-prof leaves /tmp/perf-<pid>.map behind; keep it with the data (perf report needs it back in /tmp).
    let mapNote = '';
    try {
      fs.renameSync(mapFile, path.join(dir, path.basename(mapFile)));
      mapNote = ` (JIT symbols: ${path.join(dir, path.basename(mapFile))}; copy to ${os.tmpdir()} for perf report)`;
    } catch {
      /* no map written */
    }
    profiles.push(`## perf (on-CPU, kernel included) of ${name}: ${r.n} unary requests; process.cpuUsage ${(cpuUs / r.n).toFixed(1)} µs/request ` +
      `(user ${((cpu1.user - cpu0.user) / r.n).toFixed(1)}, system ${((cpu1.system - cpu0.system) / r.n).toFixed(1)})\nfile: ${data}${mapNote}\n\n` +
      `by shared object:\n${report('dso', '0.5')}\n\ntop symbols (self):\n${report('sym', '0.4')}` +
      (recErr.includes('rror') ? `\nperf said: ${recErr.trim()}` : ''));
  }
}

/**
 * The cost of verified identities: the same sidecar pair (load -> ROLE=client -> ROLE=server -> agent)
 * without assertions and with them (the client signs one ES256 assertion per call, the server verifies
 * it, checks the replay cache and requires it), in interleaved rounds. Returns the report lines.
 */
async function identityPhase(agent: Child, guardian: Child, pin: Pinning, logLevel: string): Promise<string[]> {
  process.stderr.write('phase: identity assertions (sidecar pairs)\n');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-bench-keys-'));
  const { privateJwk, publicJwks } = await generateAssertionKey('bench-1', 'ES256');
  const keyFile = path.join(dir, 'signing.jwk.json');
  const trustFile = path.join(dir, 'trust.jwks.json');
  fs.writeFileSync(keyFile, JSON.stringify(privateJwk), { mode: 0o600 });
  fs.writeFileSync(trustFile, JSON.stringify(publicJwks));
  const audience = 'http://bench-server-sidecar.test';
  const base = { PORT: '0', HOST: '127.0.0.1', GUARDIAN_URL: guardian.url, LOG_LEVEL: logLevel, ADMIN_PORT: '0', FAIL_MODE: 'closed' };
  type Pair = { name: string; client: Child; server: Child };
  const pairs: Pair[] = [];
  for (const signed of [false, true]) {
    const name = signed ? 'pair, signed assertions' : 'pair, no assertions';
    const server = await startChild(`${name} (server)`, 'proxy-child.js', {
      ...base, ROLE: 'server', UPSTREAM_URL: agent.url,
      ...(signed ? { IDENTITY_POLICY: 'required', ASSERTION_TRUST_JWKS_FILE: trustFile, ASSERTION_AUDIENCE: audience } : { IDENTITY_POLICY: 'optional' }),
    }, pin.proxy);
    const client = await startChild(`${name} (client)`, 'proxy-child.js', {
      ...base, ROLE: 'client', UPSTREAM_URL: server.url, OBSERVED_AGENT_ID: 'bench-client', OBSERVED_AGENT_NAME: 'Bench client',
      ...(signed ? { ASSERTION_SIGNING_KEY_FILE: keyFile, ASSERTION_AUDIENCE: audience } : {}),
    }, pin.proxy);
    pairs.push({ name, client, server });
  }
  const lines: string[] = [];
  try {
    for (const pr of pairs) {
      const r = await post(pr.client.url, UNARY_BODY, UNARY_HEADERS);
      if (r.status !== 200 || !r.text.includes('COMPLETED')) throw new Error(`${pr.name}: message/send failed: HTTP ${r.status} ${r.text.slice(0, 300)}`);
      await loadRound(pr.client.url, 2000, CONNECTIONS);
      await seqRound(pr.client.url, 100);
    }
    type Row = { rps: number[]; p50: number[]; p99: number[]; clientCpu: number[]; serverCpu: number[]; seqP50: number[]; bad: number };
    const rows = new Map<string, Row>(pairs.map((pr) => [pr.name, { rps: [], p50: [], p99: [], clientCpu: [], serverCpu: [], seqP50: [], bad: 0 }]));
    const cpu = (a: StatsReply, b: StatsReply) => b.user + b.system - a.user - a.system;
    for (let r = 0; r < LOAD_ROUNDS; r++) {
      for (const pr of rotated(pairs, r)) {
        const row = rows.get(pr.name) as Row;
        const [ca, sa] = await Promise.all([pr.client.stats(), pr.server.stats()]);
        const m = await loadRound(pr.client.url, LOAD_AMOUNT, CONNECTIONS);
        const [cb, sb] = await Promise.all([pr.client.stats(), pr.server.stats()]);
        const lat = sortedCopy(m.lat);
        row.rps.push(m.n / m.seconds);
        row.p50.push(pct(lat, 0.5));
        row.p99.push(pct(lat, 0.99));
        row.clientCpu.push(cpu(ca, cb) / m.n);
        row.serverCpu.push(cpu(sa, sb) / m.n);
        row.bad += m.bad;
        const q = await seqRound(pr.client.url, SEQ_REQUESTS);
        row.seqP50.push(pct(sortedCopy(q.lat), 0.5));
        row.bad += q.bad;
      }
    }
    const [plain, signed] = pairs.map((pr) => rows.get(pr.name) as Row) as [Row, Row];
    const md = (row: Row, k: 'rps' | 'p50' | 'p99' | 'clientCpu' | 'serverCpu' | 'seqP50') => median(row[k]);
    lines.push(`## identity assertions: sidecar pair (ROLE=client -> ROLE=server), ES256, ${CONNECTIONS} connections x ${LOAD_AMOUNT} requests x ${LOAD_ROUNDS} rounds + ${SEQ_REQUESTS} sequential per round`);
    lines.push('');
    lines.push(table(['pair', 'req/s', 'p50 ms', 'p99 ms', 'p50 ms without load', 'client sidecar CPU µs/req', 'server sidecar CPU µs/req'],
      [[pairs[0]?.name ?? '', plain], [pairs[1]?.name ?? '', signed]].map(([n, row]) => [n as string, f(md(row as Row, 'rps'), 0), f(md(row as Row, 'p50')), f(md(row as Row, 'p99')),
        f(md(row as Row, 'seqP50'), 3), f(md(row as Row, 'clientCpu'), 1), f(md(row as Row, 'serverCpu'), 1)])));
    lines.push('');
    lines.push(table(['signed / no assertions', 'req/s', 'p50', 'p99', 'client CPU/req', 'server CPU/req', 'pair CPU/req'], [[
      'ratio', fx(md(signed, 'rps') / md(plain, 'rps')), fx(md(signed, 'p50') / md(plain, 'p50')), fx(md(signed, 'p99') / md(plain, 'p99')),
      fx(md(signed, 'clientCpu') / md(plain, 'clientCpu')), fx(md(signed, 'serverCpu') / md(plain, 'serverCpu')),
      fx((md(signed, 'clientCpu') + md(signed, 'serverCpu')) / (md(plain, 'clientCpu') + md(plain, 'serverCpu'))),
    ]]));
    lines.push(`added CPU per call: signing ${signU(md(signed, 'clientCpu') - md(plain, 'clientCpu'), 'µs', 1)} (client sidecar), verifying ${signU(md(signed, 'serverCpu') - md(plain, 'serverCpu'), 'µs', 1)} (server sidecar); ` +
      `added p50 without load ${signU(md(signed, 'seqP50') - md(plain, 'seqP50'), 'ms')} (signing overlaps the guardian call, verifying overlaps the body read)`);
    if (plain.bad + signed.bad > 0) lines.push(`WARNING: ${plain.bad} / ${signed.bad} failed requests (no assertions / signed)`);
    lines.push('');
  } finally {
    for (const pr of pairs) {
      await pr.client.stop();
      await pr.server.stop();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return lines;
}

async function main(): Promise<void> {
  const started = Date.now();
  const cores = nproc();
  const pin = choosePinning(cores);
  const loadStart = os.loadavg().map((v) => v.toFixed(2)).join(' ');
  const logLevel = env.BENCH_LOG_LEVEL ?? 'info';
  log('# a2a-guard bench');
  log();
  log(`machine: ${cpuModel()}, nproc ${cores}, ${mb(os.totalmem())} RAM, ${os.type()} ${os.release()}, node ${process.version}`);
  log(`code: a2a-guard ${codeVersion()}`);
  log(`pinning: ${pin.text}`);
  log(`load average at start: ${loadStart}${(os.loadavg()[0] as number) > cores / 2 ? '  WARNING: the machine is busy with other work; numbers will be noisy' : ''}`);
  log(`load: unary SendMessage (A2A-Version 1.0, JSON-RPC) to a real @a2a-js/sdk agent; interleaved rounds (order rotates), medians over rounds`);
  log(`      under load: autocannon ${CONNECTIONS} connections x ${LOAD_AMOUNT} requests x ${LOAD_ROUNDS} rounds; without load: ${SEQ_REQUESTS} sequential requests x ${ROUNDS} rounds`);
  log(`      streams: ${STREAMS} burst + ${PACED_STREAMS} paced sequential SendStreamingMessage streams x ${ROUNDS} rounds, ${STREAM_EVENTS} artifact events each`);
  log(`a2a-guard: ROLE=server, LOG_LEVEL=${logLevel} (one pino line per call, stdout -> /dev/null), instant local guardian; baseline: bench/baseline-proxy.ts`);
  if (PHASES.size < ALL_PHASES.split(',').length) log(`phases: ${[...PHASES].join(', ')} (BENCH_PHASES)`);
  log();

  const agent = await startChild('agent', 'agent-child.js', { PORT: '0', STREAM_EVENTS: String(STREAM_EVENTS) }, pin.agent);
  const guardian = await startChild('guardian', 'guardian-child.js', { PORT: '0' }, pin.guardian);
  const proxyEnv = (inspect: boolean): Record<string, string> => ({
    PORT: '0', HOST: '127.0.0.1', UPSTREAM_URL: agent.url, GUARDIAN_URL: guardian.url, ROLE: 'server', LOG_LEVEL: logLevel,
    ADMIN_PORT: '0', INSPECT_RESPONSES: inspect ? 'true' : 'false', FAIL_MODE: 'closed',
  });
  const baselineEnv = { PORT: '0', UPSTREAM_URL: agent.url, GUARDIAN_URL: guardian.url };
  const proxies = new Map<PathName, Child>();
  proxies.set('baseline', await startChild('baseline', 'baseline-proxy.js', baselineEnv, pin.proxy));
  proxies.set('a2a-guard', await startChild('a2a-guard', 'proxy-child.js', proxyEnv(false), pin.proxy));
  proxies.set('a2a-guard+inspect', await startChild('a2a-guard+inspect', 'proxy-child.js', proxyEnv(true), pin.proxy));
  const otlp = await startOtlpSink();
  if (COMPARE !== undefined) proxies.set('a2a-guard@compare', await startChild('a2a-guard@compare', path.join(COMPARE, 'dist/bench/proxy-child.js'), proxyEnv(false), pin.proxy));
  proxies.set('a2a-guard+otel', await startChild('a2a-guard+otel', 'proxy-child.js', { ...proxyEnv(false), OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'a2a-guard-bench' }, pin.proxy));
  const s: Servers = { agent, guardian, proxies };

  await sanity(s);
  if (PROFILE_ONLY) {
    const profiles = await runProfiles(agent, guardian, pin, proxyEnv);
    for (const c of [...proxies.values(), agent, guardian]) await c.stop();
    for (const p of profiles) log(p + '\n');
    return;
  }

  // Warm-up: JIT, connection pools, the agent's task store.
  process.stderr.write('warm-up\n');
  for (const p of PATHS) {
    await loadRound(urlOf(s, p), 2000, CONNECTIONS);
    await seqRound(urlOf(s, p), 100);
    for (let i = 0; i < 5; i++) await streamOnce(urlOf(s, p));
    await streamOnce(urlOf(s, p), 'paced');
  }

  /* 1. unary under load */
  type LoadRow = { rps: number[]; p50: number[]; p99: number[]; cpu: number[]; agentCpu: number[]; guardianCpu: number[]; bad: number; mismatch: number };
  const load = new Map<PathName, LoadRow>(PATHS.map((p) => [p, { rps: [], p50: [], p99: [], cpu: [], agentCpu: [], guardianCpu: [], bad: 0, mismatch: 0 }]));
  if (PHASES.has('load')) {
    process.stderr.write('phase: unary under load\n');
    for (let r = 0; r < LOAD_ROUNDS; r++) {
      for (const p of rotated(PATHS, r)) {
        const m = await measured(s, p, () => loadRound(urlOf(s, p), LOAD_AMOUNT, CONNECTIONS));
        const row = load.get(p) as LoadRow;
        const lat = sortedCopy(m.r.lat);
        row.rps.push(m.r.n / m.r.seconds);
        row.p50.push(pct(lat, 0.5));
        row.p99.push(pct(lat, 0.99));
        row.cpu.push(m.proxyUs / m.r.n);
        row.agentCpu.push(m.agentUs / m.r.n);
        row.guardianCpu.push(m.guardianUs / m.r.n);
        row.bad += m.r.bad;
        if (m.agentCount !== m.r.n) row.mismatch += Math.abs(m.r.n - m.agentCount);
      }
    }
  }

  /* 2. unary without load */
  type SeqRow = { p50: number[]; p99: number[]; cpu: number[]; bad: number };
  const seq = new Map<PathName, SeqRow>(PATHS.map((p) => [p, { p50: [], p99: [], cpu: [], bad: 0 }]));
  if (PHASES.has('seq')) {
    process.stderr.write('phase: unary without load\n');
    for (let r = 0; r < ROUNDS; r++) {
      for (const p of rotated(PATHS, r)) {
        const m = await measured(s, p, () => seqRound(urlOf(s, p), SEQ_REQUESTS));
        const row = seq.get(p) as SeqRow;
        const lat = sortedCopy(m.r.lat);
        row.p50.push(pct(lat, 0.5));
        row.p99.push(pct(lat, 0.99));
        row.cpu.push(m.proxyUs / SEQ_REQUESTS);
        row.bad += m.r.bad;
      }
    }
  }

  /* 3. streams */
  type StreamRow = { ttfe: number[]; total: number[]; eventLat: Float64Array[]; cpu: number[]; guardianPerStream: number[]; errors: string[] };
  const newRows = () => new Map<PathName, StreamRow>(PATHS.map((p) => [p, { ttfe: [], total: [], eventLat: [], cpu: [], guardianPerStream: [], errors: [] }]));
  const streams: Record<StreamKind, Map<PathName, StreamRow>> = { burst: newRows(), paced: newRows() };
  if (PHASES.has('streams')) {
    process.stderr.write('phase: streams\n');
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of ['burst', 'paced'] as const) {
        const count = kind === 'burst' ? STREAMS : PACED_STREAMS;
        for (const p of rotated(PATHS, r)) {
          const m = await measured(s, p, async () => {
            const out: StreamResult[] = [];
            for (let i = 0; i < count; i++) out.push(await streamOnce(urlOf(s, p), kind));
            return out;
          });
          const row = streams[kind].get(p) as StreamRow;
          for (const st of m.r) {
            row.ttfe.push(st.ttfe);
            row.total.push(st.total);
            row.eventLat.push(Float64Array.from(st.eventLat));
            if (st.error !== undefined) row.errors.push(st.error);
          }
          row.cpu.push(m.proxyUs / (count * (STREAM_EVENTS + 2)));
          row.guardianPerStream.push(m.guardianCount / count);
        }
      }
    }
  }

  /* 4. RSS of a fresh a2a-guard (and, for comparison, a fresh baseline) */
  const rss: RssResult[] = [];
  if (PHASES.has('rss')) {
    process.stderr.write(`phase: RSS over ${RSS_REQUESTS} requests\n`);
    rss.push(await rssPhase('a2a-guard', await startChild('a2a-guard (rss)', 'proxy-child.js', proxyEnv(false), pin.proxy)));
    rss.push(await rssPhase('baseline', await startChild('baseline (rss)', 'baseline-proxy.js', baselineEnv, pin.proxy)));
  }

  /* 4b. identity assertions on a sidecar pair */
  const identity = PHASES.has('identity') ? await identityPhase(agent, guardian, pin, logLevel) : undefined;

  /* 5. profiles */
  const profiles = PROFILE ? await runProfiles(agent, guardian, pin, proxyEnv) : [];

  for (const c of [...proxies.values(), agent, guardian]) await c.stop();

  /* ---------------------------------------------------------------------------------------- */
  /* Report                                                                                   */
  /* ---------------------------------------------------------------------------------------- */
  const L = (p: PathName) => load.get(p) as LoadRow;
  const lm = (p: PathName, k: 'rps' | 'p50' | 'p99' | 'cpu' | 'agentCpu' | 'guardianCpu') => median(L(p)[k]);
  if (PHASES.has('load')) {
    log(`## unary message/send under load (${CONNECTIONS} connections, ${LOAD_AMOUNT} requests x ${LOAD_ROUNDS} rounds, medians of rounds)`);
    log();
    log(table(
      ['path', 'req/s', 'p50 ms', 'p99 ms', 'proxy CPU µs/req', 'agent CPU µs/req', 'guardian CPU µs/req', 'req/s vs direct', 'p50 vs direct', 'CPU vs baseline'],
      PATHS.map((p) => [p, f(lm(p, 'rps'), 0), f(lm(p, 'p50')), f(lm(p, 'p99')), p === 'direct' ? '—' : f(lm(p, 'cpu'), 1), f(lm(p, 'agentCpu'), 1),
        p === 'direct' ? '—' : f(lm(p, 'guardianCpu'), 1), fx(lm(p, 'rps') / lm('direct', 'rps')), fx(lm(p, 'p50') / lm('direct', 'p50')),
        p === 'direct' || p === 'baseline' ? '—' : fx(lm(p, 'cpu') / lm('baseline', 'cpu'))]),
    ));
    log();
    log(table(['ratio (medians)', 'req/s', 'p50', 'p99', 'proxy CPU/req'], [
      ['a2a-guard / direct', fx(lm('a2a-guard', 'rps') / lm('direct', 'rps')), fx(lm('a2a-guard', 'p50') / lm('direct', 'p50')), fx(lm('a2a-guard', 'p99') / lm('direct', 'p99')), '—'],
      ['a2a-guard / baseline', fx(lm('a2a-guard', 'rps') / lm('baseline', 'rps')), fx(lm('a2a-guard', 'p50') / lm('baseline', 'p50')), fx(lm('a2a-guard', 'p99') / lm('baseline', 'p99')), fx(lm('a2a-guard', 'cpu') / lm('baseline', 'cpu'))],
      ['baseline / direct', fx(lm('baseline', 'rps') / lm('direct', 'rps')), fx(lm('baseline', 'p50') / lm('direct', 'p50')), fx(lm('baseline', 'p99') / lm('direct', 'p99')), '—'],
    ]));
    const paired = L('a2a-guard').cpu.map((v, i) => v / (L('baseline').cpu[i] ?? NaN));
    log(`per-round proxy CPU µs/req, a2a-guard: ${L('a2a-guard').cpu.map((v) => f(v, 1)).join(', ')}; baseline: ${L('baseline').cpu.map((v) => f(v, 1)).join(', ')}; ` +
      `paired ratios: ${paired.map((v) => f(v)).join(', ')} (median ${fx(median(paired))})`);
    const pairedOtel = L('a2a-guard+otel').cpu.map((v, i) => v / (L('a2a-guard').cpu[i] ?? NaN));
    log(`tracing overhead (a2a-guard+otel / a2a-guard, same rounds): CPU/req ${fx(lm('a2a-guard+otel', 'cpu') / lm('a2a-guard', 'cpu'))} ` +
      `(paired ratios ${pairedOtel.map((v) => f(v)).join(', ')}; median ${fx(median(pairedOtel))}), req/s ${fx(lm('a2a-guard+otel', 'rps') / lm('a2a-guard', 'rps'))}, ` +
      `p50 ${fx(lm('a2a-guard+otel', 'p50') / lm('a2a-guard', 'p50'))}; spans received by the sink: ${otlp.exports} exports, ${mb(otlp.bytes)}`);
    if (COMPARE !== undefined) {
      const pairedCmp = L('a2a-guard').cpu.map((v, i) => v / (L('a2a-guard@compare').cpu[i] ?? NaN));
      log(`A/B (a2a-guard / a2a-guard@compare = ${COMPARE}, same rounds): CPU/req paired ratios ${pairedCmp.map((v) => f(v)).join(', ')}; median ${fx(median(pairedCmp))}; ` +
        `req/s ${fx(lm('a2a-guard', 'rps') / lm('a2a-guard@compare', 'rps'))}, p50 ${fx(lm('a2a-guard', 'p50') / lm('a2a-guard@compare', 'p50'))}`);
    }
    const badLoad = PATHS.filter((p) => L(p).bad > 0 || L(p).mismatch > 0).map((p) => `${p}: ${L(p).bad} non-2xx/errors, ${L(p).mismatch} not seen by the agent`);
    if (badLoad.length > 0) log(`WARNING: ${badLoad.join('; ')}`);
    log();
  }

  const S = (p: PathName) => seq.get(p) as SeqRow;
  const sm = (p: PathName, k: 'p50' | 'p99' | 'cpu') => median(S(p)[k]);
  if (PHASES.has('seq')) {
    log(`## unary message/send without load (1 connection, sequential, ${SEQ_REQUESTS} x ${ROUNDS} rounds; µs-resolution client)`);
    log();
    log(table(['path', 'p50 ms', 'p99 ms', 'added p50 vs direct ms', 'added p50 vs baseline ms', 'proxy CPU µs/req'],
      PATHS.map((p) => [p, f(sm(p, 'p50'), 3), f(sm(p, 'p99'), 3), p === 'direct' ? '—' : sign(sm(p, 'p50') - sm('direct', 'p50')),
        p === 'direct' || p === 'baseline' ? '—' : sign(sm(p, 'p50') - sm('baseline', 'p50')), p === 'direct' ? '—' : f(sm(p, 'cpu'), 1)])));
    const pairedSeq = S('a2a-guard').p50.map((v, i) => v - (S('baseline').p50[i] ?? NaN));
    if (COMPARE !== undefined) {
      const pairedCmpSeq = S('a2a-guard').cpu.map((v, i) => v / (S('a2a-guard@compare').cpu[i] ?? NaN));
      log(`A/B without load (a2a-guard / a2a-guard@compare): CPU/req paired ratios ${pairedCmpSeq.map((v) => f(v)).join(', ')}; median ${fx(median(pairedCmpSeq))}; ` +
        `p50 ${signU(sm('a2a-guard', 'p50') - sm('a2a-guard@compare', 'p50'), 'ms')}`);
    }
    log(`tracing adds (a2a-guard+otel - a2a-guard, p50 without load): ${signU(sm('a2a-guard+otel', 'p50') - sm('a2a-guard', 'p50'), 'ms')}; CPU/req ${fx(sm('a2a-guard+otel', 'cpu') / sm('a2a-guard', 'cpu'))}`);
    log(`per-round p50 a2a-guard - baseline (ms): ${pairedSeq.map((v) => sign(v)).join(', ')}`);
    const badSeq = PATHS.filter((p) => S(p).bad > 0).map((p) => `${p}: ${S(p).bad} failed`);
    if (badSeq.length > 0) log(`WARNING: ${badSeq.join('; ')}`);
    log();
  }

  const T = (k: StreamKind, p: PathName) => streams[k].get(p) as StreamRow;
  const tt = (k: StreamKind, p: PathName, q = 0.5) => pct(sortedCopy(T(k, p).ttfe), q);
  const tot = (k: StreamKind, p: PathName) => pct(sortedCopy(T(k, p).total), 0.5);
  const ev = (k: StreamKind, p: PathName, q: number) => pct(concat(T(k, p).eventLat), q);
  const inspectCalls = median(T('burst', 'a2a-guard+inspect').guardianPerStream);
  if (PHASES.has('streams')) {
    log(`## streams of ${STREAM_EVENTS} artifact events (+ task and final status = ${STREAM_EVENTS + 2} SSE events), sequential, ${ROUNDS} rounds`);
    log(`burst: the agent emits as fast as it can (${STREAMS} streams per round); paced: the agent waits 1 ms between events (${PACED_STREAMS} streams per round).`);
    log('event latency = agent publish (CLOCK_MONOTONIC stamp inside the event) -> receipt by the load generator; "added" = path minus direct;');
    log(`per-event (stream diff / ${STREAM_EVENTS}) = (median stream duration via the path - direct) / ${STREAM_EVENTS}.`);
    log();
    for (const k of ['burst', 'paced'] as const) {
      log(table([`${k} path`, 'first event p50 ms', 'first event p99 ms', 'stream p50 ms', `per-event (stream diff / ${STREAM_EVENTS}) ms`, 'event latency p50 ms', 'event latency p99 ms', 'added per event p50 ms', 'added per event p99 ms', 'proxy CPU µs/event', 'guardian calls/stream'],
        PATHS.map((p) => [p, f(tt(k, p), 3), f(tt(k, p, 0.99), 3), f(tot(k, p), 2), p === 'direct' ? '—' : sign((tot(k, p) - tot(k, 'direct')) / STREAM_EVENTS),
          f(ev(k, p, 0.5), 3), f(ev(k, p, 0.99), 3), p === 'direct' ? '—' : sign(ev(k, p, 0.5) - ev(k, 'direct', 0.5)), p === 'direct' ? '—' : sign(ev(k, p, 0.99) - ev(k, 'direct', 0.99)),
          p === 'direct' ? '—' : f(median(T(k, p).cpu), 1), p === 'direct' ? '—' : f(median(T(k, p).guardianPerStream), 0)])));
      log();
    }
    if (inspectCalls <= 1.01) log('NOTE: a2a-guard+inspect made 1 guardian call per stream: INSPECT_RESPONSES=true is not implemented (events are not inspected); its rows equal a2a-guard.');
    for (const k of ['burst', 'paced'] as const) {
      for (const p of PATHS) if (T(k, p).errors.length > 0) log(`WARNING: ${k} ${p}: ${T(k, p).errors.length} stream errors, first: ${T(k, p).errors[0]}`);
    }
    log();
  }

  if (PHASES.has('rss')) {
    log(`## RSS of a fresh process over ${RSS_REQUESTS} unary requests (${CONNECTIONS} connections${LONG ? '' : '; BENCH_LONG=1 for 100,000'})`);
    log(`"start" = after ${RSS_WARMUP} warm-up requests and 1 s idle; "end" = after the run and 3 s idle (no forced GC)`);
    log();
    log(table(['process', 'at launch', 'start', 'peak', 'end', 'end vs start', 'heapTotal start -> end', 'heapUsed start -> end', 'external start -> end'],
      rss.map((x) => [x.name, mb(x.launch.rss), mb(x.start.rss), mb(x.peak), mb(x.end.rss), `${sign(100 * (x.end.rss / x.start.rss - 1), 1)} %`,
        `${mb(x.start.heapTotal)} -> ${mb(x.end.heapTotal)}`, `${mb(x.start.heapUsed)} -> ${mb(x.end.heapUsed)}`, `${mb(x.start.external)} -> ${mb(x.end.external)}`])));
    log();
    for (const x of rss) log(`${x.name} RSS after every ${x.step} requests: ${x.series.map((v) => (v / 1048576).toFixed(1)).join(', ')} MB${x.bad > 0 ? `  WARNING: ${x.bad} non-2xx/errors` : ''}`);
    log();
  }

  if (identity !== undefined) for (const line of identity) log(line);

  const g = rss[0];
  const rssGrowth = g === undefined ? NaN : g.end.rss / g.start.rss - 1;
  const rssDone = g?.done ?? 0;
  const cpuRatio = lm('a2a-guard', 'cpu') / lm('baseline', 'cpu');
  const addedP50 = sm('a2a-guard', 'p50') - sm('baseline', 'p50');
  const firstEvent = tt('burst', 'a2a-guard') - tt('burst', 'baseline');
  const perEventBurst = (tot('burst', 'a2a-guard') - tot('burst', 'direct')) / STREAM_EVENTS;
  const perEventPaced = ev('paced', 'a2a-guard', 0.5) - ev('paced', 'direct', 0.5);
  const inspectAdded = (k: StreamKind) => (PHASES.has('streams')
    ? `${sign(ev(k, 'a2a-guard+inspect', 0.5) - ev(k, 'direct', 0.5))} / ${sign(ev(k, 'a2a-guard+inspect', 0.99) - ev(k, 'direct', 0.99))} ms` : '—');
  const verdict = (v: number, ok: boolean) => (Number.isNaN(v) ? 'not run' : ok ? 'PASS' : 'MISS');
  log('## targets');
  log();
  log(table(['target', 'measured', 'result'], [
    ['CPU per request (under load, inspection off) <= 1.10x baseline (goal 1.0x)', fx(cpuRatio), verdict(cpuRatio, cpuRatio <= 1.1)],
    ['added p50 latency without load within 0.3 ms of the baseline (a2a-guard p50 - baseline p50)', signU(addedP50, 'ms'), verdict(addedP50, addedP50 <= 0.3)],
    ['first SSE event (p50, burst) within 1 ms of the baseline', signU(firstEvent, 'ms'), verdict(firstEvent, firstEvent <= 1)],
    [`per-event overhead, inspection off: (stream duration - direct) / ${STREAM_EVENTS} <= 0.2 ms (burst)`, signU(perEventBurst, 'ms'), verdict(perEventBurst, perEventBurst <= 0.2)],
    ['per-event overhead, inspection off: added event latency p50 <= 0.2 ms (paced)', signU(perEventPaced, 'ms'), verdict(perEventPaced, perEventPaced <= 0.2)],
    [`RSS back within 10 % of start after ${rssDone} requests${rssDone < 100_000 ? ' (target is 100,000: BENCH_LONG=1)' : ''}`, signU(100 * rssGrowth, '%', 1), verdict(rssGrowth, rssGrowth <= 0.1)],
    ['INSPECT_RESPONSES=true, paced: added latency per event, median / p99 (no target)', inspectAdded('paced'), !PHASES.has('streams') ? 'not run' : inspectCalls <= 1.01 ? 'not implemented' : 'info'],
    ['INSPECT_RESPONSES=true, burst: added latency per event, median / p99 (no target; events queue behind guardian calls)', inspectAdded('burst'), !PHASES.has('streams') ? 'not run' : inspectCalls <= 1.01 ? 'not implemented' : 'info'],
  ]));
  log();
  log(`load average at start ${loadStart}, at end ${os.loadavg().map((v) => v.toFixed(2)).join(' ')} (other processes on this machine make every number noisier)`);
  log();
  for (const p of profiles) log(p + '\n');
  log(`bench took ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error)?.stack ?? String(err)}\n`);
    killAll('SIGTERM');
    process.exit(1);
  },
);
