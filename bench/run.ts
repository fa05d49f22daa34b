/**
 * `npm run bench`: a2a-guard's overhead on this machine, every figure next to its reference from the
 * same run.
 *
 * Processes (each a child with its own process.cpuUsage, see ipc.ts):
 *   agent      real @a2a-js/sdk agent (agent-child.ts), instant answers, 100-event streams
 *   guardian   instant AOS guardian (guardian-child.ts), always `allow`; guardian@5ms answers after 5 ms
 *   baseline   minimal undici guardian-consulting proxy (baseline-proxy.ts)
 *   a2a-guard  the product (proxy-child.ts), ROLE=server, LOG_LEVEL=info to /dev/null;
 *              +inspect: INSPECT_RESPONSES=true; @5ms: asking guardian@5ms; +otel: OpenTelemetry tracing on
 *              (OTLP/HTTP protobuf, every call sampled) to a sink in this process that reads and drops the spans
 * This process is the load generator (autocannon + a raw node:http client). On machines with
 * 2+ cores it pins itself to core 0 and the servers to the other core(s) with taskset.
 *
 * Phases, in interleaved rounds where they compare paths (the order rotates every round; medians):
 *   load        unary message/send under load (autocannon, fixed connections and amount per round)
 *   seq         unary message/send without load (1 connection, sequential)
 *   streams     streams of 100 events, burst and paced, guardian 0 and 5 ms, inspection off and on
 *   concurrent  N streams open at once, one event per stream per second (concurrent.ts)
 *   startup     spawn to first served call and idle RSS against a bare node:http server (startup.ts)
 *   memory      peak RSS per in-flight byte with 1 MB bodies against the baseline (memory.ts)
 *   rss         RSS of a fresh a2a-guard (and baseline) before / after RSS_REQUESTS requests
 *   identity    a sidecar pair (ROLE=client -> ROLE=server) without and with signed ES256 identity
 *               assertions, unary under load and sequential (identity.ts)
 *   instructions  (only when asked for: BENCH_ONLY=instructions; ~10 min) user-space instructions per unary
 *               call of the baseline and a2a-guard (and @compare) under valgrind callgrind (instructions.ts)
 *   --profile   --cpu-prof and, where available, perf of a2a-guard and the baseline (profiling.ts)
 *
 * Options (env, or flags after `npm run bench --`): --long / BENCH_LONG=1 (100,000 requests in the
 * RSS phase), --quick / BENCH_QUICK=1 (fewer rounds, 500 concurrent streams, shorter windows: a
 * smoke run, not the figures to report), --profile / BENCH_PROFILE=1, --profile-only,
 * BENCH_PHASES=load,seq,streams,concurrent,startup,memory,rss,identity (a subset; BENCH_ONLY is the same),
 * BENCH_COMPARE=<another checkout, built> (adds a2a-guard@compare to the unary and start-up phases, for an A/B; its node flags:
 * BENCH_COMPARE_NODE_ARGS), BENCH_LOG_LEVEL,
 * BENCH_ROUNDS, BENCH_LOAD_ROUNDS, BENCH_AMOUNT, BENCH_CONNECTIONS, BENCH_SEQ, BENCH_STREAMS,
 * BENCH_PACED_STREAMS, BENCH_CONC_STREAMS (5000), BENCH_CONC_WINDOW_S, BENCH_STARTUP_ROUNDS,
 * BENCH_MEMORY_ROUNDS, BENCH_RSS_REQUESTS, BENCH_PROFILE_REQUESTS, BENCH_PERF_G=1 (perf records call graphs: `perf
 * report -G` names who called a runtime function), BENCH_CG_WARM (8000), BENCH_CG_CALLS (20000), BENCH_PIN=0 (no taskset).
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { loadRound, post, seqRound, streamBody, streamOnce, UNARY_BODY, UNARY_HEADERS, type StreamResult } from './clients';
import { concurrentRun, type ConcurrentResult } from './concurrent';
import {
  argv,
  choosePinning,
  codeVersion,
  concat,
  cpuModel,
  env,
  f,
  fx,
  killAll,
  log,
  mb,
  median,
  nproc,
  num,
  pct,
  progress,
  rotated,
  setCores,
  sign,
  ROOT,
  signU,
  sleep,
  sortedCopy,
  startChild,
  startCommand,
  table,
  verdict,
  type Child,
} from './lib';
import { identityPhase } from './identity';
import { instructionsPhase } from './instructions';
import { memoryMedian, memoryPhase } from './memory';
import { runProfiles } from './profiling';
import { SETTLED_MS, startupMedian, startupPhase, startupSubjects } from './startup';
import type { StatsReply } from './ipc';

/* ------------------------------------------------------------------------------------------ */
/* Settings                                                                                   */
/* ------------------------------------------------------------------------------------------ */

const LONG = env.BENCH_LONG === '1' || argv.includes('--long');
const QUICK = env.BENCH_QUICK === '1' || argv.includes('--quick');
const PROFILE_ONLY = env.BENCH_PROFILE === 'only' || argv.includes('--profile-only');
const PROFILE = PROFILE_ONLY || env.BENCH_PROFILE === '1' || argv.includes('--profile');
/** Rounds of the latency and stream phases; the load phase has its own (fewer, bigger rounds). */
const ROUNDS = num('BENCH_ROUNDS', QUICK ? 3 : 5);
const LOAD_ROUNDS = num('BENCH_LOAD_ROUNDS', QUICK ? 3 : 5);
const ALL_PHASES = ['load', 'seq', 'streams', 'concurrent', 'startup', 'memory', 'rss', 'identity'];
/** Phases run only when named (too long for every run). */
const OPTIONAL_PHASES = ['instructions'];
const PHASES = new Set((env.BENCH_ONLY ?? env.BENCH_PHASES ?? ALL_PHASES.join(',')).split(',').map((p) => p.trim()));
for (const p of PHASES)
  if (!ALL_PHASES.includes(p) && !OPTIONAL_PHASES.includes(p))
    throw new Error(`unknown bench phase "${p}" (phases: ${[...ALL_PHASES, ...OPTIONAL_PHASES].join(', ')})`);
const CONNECTIONS = num('BENCH_CONNECTIONS', 10);
const LOAD_AMOUNT = num('BENCH_AMOUNT', QUICK ? 1000 : 2000);
const SEQ_REQUESTS = num('BENCH_SEQ', QUICK ? 200 : 300);
const STREAMS = num('BENCH_STREAMS', QUICK ? 4 : 6);
const PACED_STREAMS = num('BENCH_PACED_STREAMS', 3);
const STREAM_EVENTS = 100;
const SLOW_GUARDIAN_MS = 5;
const CONC_STREAMS = num('BENCH_CONC_STREAMS', QUICK ? 500 : 5000);
const CONC_WINDOW_MS = num('BENCH_CONC_WINDOW_S', QUICK ? 5 : 10) * 1000;
const CONC_OPEN_DEADLINE_MS = 90_000;
const STARTUP_ROUNDS = num('BENCH_STARTUP_ROUNDS', QUICK ? 3 : 5);
const MEMORY_ROUNDS = num('BENCH_MEMORY_ROUNDS', QUICK ? 1 : 2);
const MEMORY_BODY_BYTES = 1024 * 1024;
const MEMORY_CONNECTIONS = 8;
const MEMORY_REQUESTS = QUICK ? 100 : 200;
const RSS_REQUESTS = num('BENCH_RSS_REQUESTS', LONG ? 100_000 : QUICK ? 5_000 : 10_000);
const PROFILE_REQUESTS = num('BENCH_PROFILE_REQUESTS', 30_000);
const CG_WARM = num('BENCH_CG_WARM', 8000);
const CG_CALLS = num('BENCH_CG_CALLS', 20_000);

/** The agent emits 100 events as fast as it can. */
const BURST_BODY = streamBody('stream please');
/** The agent waits 1 ms between events (no CPU contention between agent and proxy). */
const PACED_BODY = streamBody('stream paced please');
type StreamKind = 'burst' | 'paced';

type PathName = 'direct' | 'baseline' | 'a2a-guard' | 'a2a-guard+inspect' | 'a2a-guard+otel' | 'a2a-guard@compare' | 'a2a-guard@5ms' | 'a2a-guard+inspect@5ms';
const COMPARE = env.BENCH_COMPARE !== undefined && env.BENCH_COMPARE !== '' ? path.resolve(env.BENCH_COMPARE) : undefined;
/** Node flags for a2a-guard@compare only (an A/B of a V8 flag: BENCH_COMPARE=. with BENCH_COMPARE_NODE_ARGS). */
const COMPARE_NODE_ARGS = (env.BENCH_COMPARE_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
const UNARY_PATHS: readonly PathName[] = [
  'direct',
  'baseline',
  'a2a-guard',
  'a2a-guard+inspect',
  'a2a-guard+otel',
  ...(COMPARE === undefined ? [] : ['a2a-guard@compare' as const]),
];
const STREAM_PATHS: readonly PathName[] = ['direct', 'baseline', 'a2a-guard', 'a2a-guard+inspect', 'a2a-guard@5ms', 'a2a-guard+inspect@5ms'];

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
async function measured<T>(
  s: Servers,
  p: PathName,
  work: () => Promise<T>,
): Promise<{ r: T; proxyUs: number; agentUs: number; guardianUs: number; agentCount: number; guardianCount: number }> {
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

const streamOf = (url: string, kind: StreamKind): Promise<StreamResult> => streamOnce(url, kind === 'burst' ? BURST_BODY : PACED_BODY, STREAM_EVENTS + 2);

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
  sink.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return sink;
}

async function sanity(s: Servers): Promise<void> {
  for (const p of new Set([...UNARY_PATHS, ...STREAM_PATHS])) {
    const r = await post(urlOf(s, p), UNARY_BODY, UNARY_HEADERS);
    if (r.status !== 200 || !r.text.includes('"result"') || !r.text.includes('COMPLETED')) {
      throw new Error(`${p}: message/send did not return a completed task: HTTP ${r.status} ${r.text.slice(0, 400)}`);
    }
    if (!STREAM_PATHS.includes(p)) continue;
    for (const k of ['burst', 'paced'] as const) {
      const st = await streamOf(urlOf(s, p), k);
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

/** Memory of one fresh proxy process over RSS_REQUESTS unary requests; stops the process. */
async function rssPhase(name: string, c: Child): Promise<RssResult> {
  const launch = await c.stats();
  await loadRound(c.url, RSS_WARMUP, CONNECTIONS);
  await sleep(1000);
  const start = await c.stats();
  let peak = start.rss;
  const sampler = setInterval(() => {
    c.stats().then(
      (st) => (peak = Math.max(peak, st.rss)),
      () => undefined,
    );
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

async function main(): Promise<void> {
  const started = Date.now();
  const cores = nproc();
  const pin = choosePinning(cores);
  const loadStart = os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');
  const logLevel = env.BENCH_LOG_LEVEL ?? 'info';
  log('# a2a-guard bench');
  log();
  log(`machine: ${cpuModel()}, nproc ${cores}, ${mb(os.totalmem())} RAM, ${os.type()} ${os.release()}, node ${process.version}`);
  log(`code: a2a-guard ${codeVersion()}${QUICK ? '  (--quick: a smoke run with fewer rounds and 500 concurrent streams)' : ''}`);
  log(`pinning: ${pin.text}`);
  log(
    `load average at start: ${loadStart}${(os.loadavg()[0] as number) > cores / 2 ? '  WARNING: the machine is busy with other work; numbers will be noisy' : ''}`,
  );
  log(`load: unary SendMessage (A2A-Version 1.0, JSON-RPC) to a real @a2a-js/sdk agent; interleaved rounds (order rotates), medians over rounds`);
  log(
    `      under load: autocannon ${CONNECTIONS} connections x ${LOAD_AMOUNT} requests x ${LOAD_ROUNDS} rounds; without load: ${SEQ_REQUESTS} sequential requests x ${ROUNDS} rounds`,
  );
  log(
    `      streams: ${STREAMS} burst + ${PACED_STREAMS} paced sequential SendStreamingMessage streams x ${ROUNDS} rounds, ${STREAM_EVENTS} artifact events each`,
  );
  log(`a2a-guard: ROLE=server, LOG_LEVEL=${logLevel} (one pino line per call, stdout -> /dev/null), FAIL_MODE=closed, default pools and window;`);
  log(
    `           guardian: instant local guardian (@5ms: one that answers after ${SLOW_GUARDIAN_MS} ms); baseline: bench/baseline-proxy.ts (minimal undici proxy)`,
  );
  if (PHASES.size < ALL_PHASES.length || OPTIONAL_PHASES.some((p) => PHASES.has(p))) log(`phases: ${[...PHASES].join(', ')} (BENCH_PHASES)`);
  log();

  const agent = await startChild('agent', 'agent-child.js', { PORT: '0', STREAM_EVENTS: String(STREAM_EVENTS) }, pin.agent);
  const guardian = await startChild('guardian', 'guardian-child.js', { PORT: '0' }, pin.guardian);
  const slowGuardian = await startChild('guardian@5ms', 'guardian-child.js', { PORT: '0', DELAY_MS: String(SLOW_GUARDIAN_MS) }, pin.guardian);
  const proxyEnv = (inspect: boolean, g: Child = guardian): Record<string, string> => ({
    PORT: '0',
    HOST: '127.0.0.1',
    UPSTREAM_URL: agent.url,
    GUARDIAN_URL: g.url,
    ROLE: 'server',
    LOG_LEVEL: logLevel,
    ADMIN_PORT: '0',
    PUSH_RELAY_PORT: '0',
    INSPECT_RESPONSES: inspect ? 'true' : 'false',
    FAIL_MODE: 'closed',
  });
  const baselineEnv = { PORT: '0', UPSTREAM_URL: agent.url, GUARDIAN_URL: guardian.url };
  const proxies = new Map<PathName, Child>();
  proxies.set('baseline', await startChild('baseline', 'baseline-proxy.js', baselineEnv, pin.proxy));
  proxies.set('a2a-guard', await startChild('a2a-guard', 'proxy-child.js', proxyEnv(false), pin.proxy));
  proxies.set('a2a-guard+inspect', await startChild('a2a-guard+inspect', 'proxy-child.js', proxyEnv(true), pin.proxy));
  proxies.set('a2a-guard@5ms', await startChild('a2a-guard@5ms', 'proxy-child.js', proxyEnv(false, slowGuardian), pin.proxy));
  proxies.set('a2a-guard+inspect@5ms', await startChild('a2a-guard+inspect@5ms', 'proxy-child.js', proxyEnv(true, slowGuardian), pin.proxy));
  const otlp = await startOtlpSink();
  proxies.set(
    'a2a-guard+otel',
    await startChild(
      'a2a-guard+otel',
      'proxy-child.js',
      { ...proxyEnv(false), OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'a2a-guard-bench' },
      pin.proxy,
    ),
  );
  if (COMPARE !== undefined)
    proxies.set(
      'a2a-guard@compare',
      await startChild('a2a-guard@compare', path.join(COMPARE, 'dist/bench/proxy-child.js'), proxyEnv(false), pin.proxy, COMPARE_NODE_ARGS),
    );
  const s: Servers = { agent, guardian, proxies };
  const stopAll = async () => {
    for (const c of [...proxies.values(), agent, guardian, slowGuardian]) await c.stop();
    await otlp.close();
  };

  await sanity(s);
  if (PROFILE_ONLY) {
    const profiles = await runProfiles(agent, guardian, pin, proxyEnv, PROFILE_REQUESTS, CONNECTIONS);
    await stopAll();
    for (const p of profiles) log(p + '\n');
    return;
  }

  // Warm-up: JIT, connection pools, the agent's task store (only for the phases that use these processes).
  if (['load', 'seq', 'streams', 'concurrent'].some((p) => PHASES.has(p))) progress('warm-up');
  for (const p of ['load', 'seq', 'streams', 'concurrent'].some((x) => PHASES.has(x)) ? STREAM_PATHS : []) {
    if (UNARY_PATHS.includes(p)) {
      await loadRound(urlOf(s, p), 2000, CONNECTIONS);
      await seqRound(urlOf(s, p), 100);
    }
    for (let i = 0; i < 3; i++) await streamOf(urlOf(s, p), 'burst');
    await streamOf(urlOf(s, p), 'paced');
  }

  /* 1. unary under load */
  type LoadRow = { rps: number[]; p50: number[]; p99: number[]; cpu: number[]; agentCpu: number[]; guardianCpu: number[]; bad: number; mismatch: number };
  const load = new Map<PathName, LoadRow>(
    UNARY_PATHS.map((p) => [p, { rps: [], p50: [], p99: [], cpu: [], agentCpu: [], guardianCpu: [], bad: 0, mismatch: 0 }]),
  );
  if (PHASES.has('load')) {
    progress('phase: unary under load');
    for (let r = 0; r < LOAD_ROUNDS; r++) {
      for (const p of rotated(UNARY_PATHS, r)) {
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
  const seq = new Map<PathName, SeqRow>(UNARY_PATHS.map((p) => [p, { p50: [], p99: [], cpu: [], bad: 0 }]));
  if (PHASES.has('seq')) {
    progress('phase: unary without load');
    for (let r = 0; r < ROUNDS; r++) {
      for (const p of rotated(UNARY_PATHS, r)) {
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
  const newRows = () =>
    new Map<PathName, StreamRow>(STREAM_PATHS.map((p) => [p, { ttfe: [], total: [], eventLat: [], cpu: [], guardianPerStream: [], errors: [] }]));
  const streams: Record<StreamKind, Map<PathName, StreamRow>> = { burst: newRows(), paced: newRows() };
  if (PHASES.has('streams')) {
    progress('phase: streams');
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of ['burst', 'paced'] as const) {
        const count = kind === 'burst' ? STREAMS : PACED_STREAMS;
        for (const p of rotated(STREAM_PATHS, r)) {
          const m = await measured(s, p, async () => {
            const out: StreamResult[] = [];
            for (let i = 0; i < count; i++) out.push(await streamOf(urlOf(s, p), kind));
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
          // guardian@5ms counts its own calls: the instant guardian's count says nothing for the @5ms paths.
          row.guardianPerStream.push(p.endsWith('@5ms') ? NaN : m.guardianCount / count);
        }
      }
    }
  }

  /* 4. concurrent streams: every process may use every core (a capacity test of the machine) */
  const concurrent: ConcurrentResult[] = [];
  if (PHASES.has('concurrent')) {
    const everyone = [agent, guardian, slowGuardian, ...proxies.values()];
    for (const c of everyone) setCores(c.proc.pid, pin.all);
    setCores(process.pid, pin.all);
    try {
      const o = { streams: CONC_STREAMS, openDeadlineMs: CONC_OPEN_DEADLINE_MS, settleMs: 3000, windowMs: CONC_WINDOW_MS };
      for (const p of ['direct', 'a2a-guard', 'a2a-guard+inspect'] as const) concurrent.push(await concurrentRun(p, urlOf(s, p), proxies.get(p), agent, o));
    } finally {
      setCores(process.pid, pin.load);
      setCores(agent.proc.pid, pin.agent);
      for (const c of [guardian, slowGuardian]) setCores(c.proc.pid, pin.guardian);
      for (const c of proxies.values()) setCores(c.proc.pid, pin.proxy);
    }
  }

  /* 5. start-up */
  const startup = PHASES.has('startup') ? await startupPhase(STARTUP_ROUNDS, agent.url, guardian.url, pin, COMPARE) : undefined;

  /* 6. large bodies */
  const memory = PHASES.has('memory')
    ? await memoryPhase(
        { rounds: MEMORY_ROUNDS, bodyBytes: MEMORY_BODY_BYTES, requests: MEMORY_REQUESTS, connections: MEMORY_CONNECTIONS },
        (subject) => (subject === 'baseline' ? baselineEnv : proxyEnv(false)),
        pin,
      )
    : undefined;

  /* 7. RSS of a fresh a2a-guard (and, for comparison, a fresh baseline) */
  const rss: RssResult[] = [];
  if (PHASES.has('rss')) {
    progress(`phase: RSS over ${RSS_REQUESTS} requests`);
    rss.push(await rssPhase('a2a-guard', await startChild('a2a-guard (rss)', 'proxy-child.js', proxyEnv(false), pin.proxy)));
    rss.push(await rssPhase('baseline', await startChild('baseline (rss)', 'baseline-proxy.js', baselineEnv, pin.proxy)));
  }

  /* 8. identity assertions on a sidecar pair */
  const identity = PHASES.has('identity')
    ? await identityPhase(agent, guardian, pin, {
        rounds: Math.min(LOAD_ROUNDS, 3),
        amount: LOAD_AMOUNT,
        connections: CONNECTIONS,
        seq: SEQ_REQUESTS,
        logLevel,
      })
    : undefined;

  /* 9. instructions per call under valgrind */
  const instructions = PHASES.has('instructions')
    ? await instructionsPhase(agent.url, guardian.url, proxyEnv(false), COMPARE, { warm: CG_WARM, calls: CG_CALLS, connections: CONNECTIONS })
    : undefined;

  /* 10. profiles */
  const profiles = PROFILE ? await runProfiles(agent, guardian, pin, proxyEnv, PROFILE_REQUESTS, CONNECTIONS) : [];

  await stopAll();

  /* ---------------------------------------------------------------------------------------- */
  /* Report                                                                                   */
  /* ---------------------------------------------------------------------------------------- */
  const L = (p: PathName) => load.get(p) as LoadRow;
  const lm = (p: PathName, k: 'rps' | 'p50' | 'p99' | 'cpu' | 'agentCpu' | 'guardianCpu') => median(L(p)[k]);
  if (PHASES.has('load')) {
    log(`## unary message/send under load (${CONNECTIONS} connections, ${LOAD_AMOUNT} requests x ${LOAD_ROUNDS} rounds, medians of rounds)`);
    log();
    log(
      table(
        [
          'path',
          'req/s',
          'p50 ms',
          'p99 ms',
          'proxy CPU µs/req',
          'agent CPU µs/req',
          'guardian CPU µs/req',
          'req/s vs direct',
          'p50 vs direct',
          'CPU vs baseline',
        ],
        UNARY_PATHS.map((p) => [
          p,
          f(lm(p, 'rps'), 0),
          f(lm(p, 'p50')),
          f(lm(p, 'p99')),
          p === 'direct' ? '—' : f(lm(p, 'cpu'), 1),
          f(lm(p, 'agentCpu'), 1),
          p === 'direct' ? '—' : f(lm(p, 'guardianCpu'), 1),
          fx(lm(p, 'rps') / lm('direct', 'rps')),
          fx(lm(p, 'p50') / lm('direct', 'p50')),
          p === 'direct' || p === 'baseline' ? '—' : fx(lm(p, 'cpu') / lm('baseline', 'cpu')),
        ]),
      ),
    );
    log();
    log(
      table(
        ['ratio (medians)', 'req/s', 'p50', 'p99', 'proxy CPU/req'],
        [
          [
            'a2a-guard / direct',
            fx(lm('a2a-guard', 'rps') / lm('direct', 'rps')),
            fx(lm('a2a-guard', 'p50') / lm('direct', 'p50')),
            fx(lm('a2a-guard', 'p99') / lm('direct', 'p99')),
            '—',
          ],
          [
            'a2a-guard / baseline',
            fx(lm('a2a-guard', 'rps') / lm('baseline', 'rps')),
            fx(lm('a2a-guard', 'p50') / lm('baseline', 'p50')),
            fx(lm('a2a-guard', 'p99') / lm('baseline', 'p99')),
            fx(lm('a2a-guard', 'cpu') / lm('baseline', 'cpu')),
          ],
          [
            'baseline / direct',
            fx(lm('baseline', 'rps') / lm('direct', 'rps')),
            fx(lm('baseline', 'p50') / lm('direct', 'p50')),
            fx(lm('baseline', 'p99') / lm('direct', 'p99')),
            '—',
          ],
        ],
      ),
    );
    const paired = L('a2a-guard').cpu.map((v, i) => v / (L('baseline').cpu[i] ?? NaN));
    log(
      `per-round proxy CPU µs/req, a2a-guard: ${L('a2a-guard')
        .cpu.map((v) => f(v, 1))
        .join(', ')}; baseline: ${L('baseline')
        .cpu.map((v) => f(v, 1))
        .join(', ')}; ` + `paired ratios: ${paired.map((v) => f(v)).join(', ')} (median ${fx(median(paired))})`,
    );
    const pairedOtel = L('a2a-guard+otel').cpu.map((v, i) => v / (L('a2a-guard').cpu[i] ?? NaN));
    log(
      `tracing overhead (a2a-guard+otel / a2a-guard, same rounds): CPU/req ${fx(lm('a2a-guard+otel', 'cpu') / lm('a2a-guard', 'cpu'))} ` +
        `(paired ratios ${pairedOtel.map((v) => f(v)).join(', ')}; median ${fx(median(pairedOtel))}), req/s ${fx(lm('a2a-guard+otel', 'rps') / lm('a2a-guard', 'rps'))}, ` +
        `p50 ${fx(lm('a2a-guard+otel', 'p50') / lm('a2a-guard', 'p50'))}; spans received by the sink: ${otlp.exports} exports, ${mb(otlp.bytes)}`,
    );
    if (COMPARE !== undefined) {
      const pairedCmp = L('a2a-guard').cpu.map((v, i) => v / (L('a2a-guard@compare').cpu[i] ?? NaN));
      log(
        `A/B (a2a-guard / a2a-guard@compare = ${COMPARE}, same rounds): CPU/req paired ratios ${pairedCmp.map((v) => f(v)).join(', ')}; median ${fx(median(pairedCmp))}; ` +
          `req/s ${fx(lm('a2a-guard', 'rps') / lm('a2a-guard@compare', 'rps'))}, p50 ${fx(lm('a2a-guard', 'p50') / lm('a2a-guard@compare', 'p50'))}`,
      );
    }
    const badLoad = UNARY_PATHS.filter((p) => L(p).bad > 0 || L(p).mismatch > 0).map(
      (p) => `${p}: ${L(p).bad} non-2xx/errors, ${L(p).mismatch} not seen by the agent`,
    );
    if (badLoad.length > 0) log(`WARNING: ${badLoad.join('; ')}`);
    log();
  }

  const S = (p: PathName) => seq.get(p) as SeqRow;
  const sm = (p: PathName, k: 'p50' | 'p99' | 'cpu') => median(S(p)[k]);
  if (PHASES.has('seq')) {
    log(`## unary message/send without load (1 connection, sequential, ${SEQ_REQUESTS} x ${ROUNDS} rounds; µs-resolution client)`);
    log();
    log(
      table(
        ['path', 'p50 ms', 'p99 ms', 'added p50 vs direct ms', 'added p50 vs baseline ms', 'proxy CPU µs/req'],
        UNARY_PATHS.map((p) => [
          p,
          f(sm(p, 'p50'), 3),
          f(sm(p, 'p99'), 3),
          p === 'direct' ? '—' : sign(sm(p, 'p50') - sm('direct', 'p50')),
          p === 'direct' || p === 'baseline' ? '—' : sign(sm(p, 'p50') - sm('baseline', 'p50')),
          p === 'direct' ? '—' : f(sm(p, 'cpu'), 1),
        ]),
      ),
    );
    const pairedSeq = S('a2a-guard').p50.map((v, i) => v - (S('baseline').p50[i] ?? NaN));
    log(`per-round p50 a2a-guard - baseline (ms): ${pairedSeq.map((v) => sign(v)).join(', ')}`);
    log(
      `tracing adds (a2a-guard+otel - a2a-guard, p50 without load): ${signU(sm('a2a-guard+otel', 'p50') - sm('a2a-guard', 'p50'), 'ms')}; CPU/req ${fx(sm('a2a-guard+otel', 'cpu') / sm('a2a-guard', 'cpu'))}`,
    );
    const badSeq = UNARY_PATHS.filter((p) => S(p).bad > 0).map((p) => `${p}: ${S(p).bad} failed`);
    if (badSeq.length > 0) log(`WARNING: ${badSeq.join('; ')}`);
    log();
  }

  const T = (k: StreamKind, p: PathName) => streams[k].get(p) as StreamRow;
  const tt = (k: StreamKind, p: PathName, q = 0.5) => pct(sortedCopy(T(k, p).ttfe), q);
  const tot = (k: StreamKind, p: PathName) => pct(sortedCopy(T(k, p).total), 0.5);
  const ev = (k: StreamKind, p: PathName, q: number) => pct(concat(T(k, p).eventLat), q);
  if (PHASES.has('streams')) {
    log(`## streams of ${STREAM_EVENTS} artifact events (+ task and final status = ${STREAM_EVENTS + 2} SSE events), sequential, ${ROUNDS} rounds`);
    log(
      `burst: the agent emits as fast as it can (${STREAMS} streams per round); paced: the agent waits 1 ms between events (${PACED_STREAMS} streams per round).`,
    );
    log(
      `@5ms: the proxy asks a guardian that answers every call after ${SLOW_GUARDIAN_MS} ms (the request hook too: the first event comes ${SLOW_GUARDIAN_MS} ms later).`,
    );
    log('event latency = agent publish (CLOCK_MONOTONIC stamp inside the event) -> receipt by the load generator; "added" = path minus direct;');
    log(
      `per-event (stream diff / ${STREAM_EVENTS}) = (median stream duration via the path - direct) / ${STREAM_EVENTS}; x events x latency = stream duration / (${STREAM_EVENTS} x ${SLOW_GUARDIAN_MS} ms).`,
    );
    log();
    for (const k of ['burst', 'paced'] as const) {
      log(
        table(
          [
            `${k} path`,
            'first event p50 ms',
            'stream p50 ms',
            `per-event (stream diff / ${STREAM_EVENTS}) ms`,
            'x events x latency',
            'event latency p50 ms',
            'event latency p99 ms',
            'added per event p50 ms',
            'added per event p99 ms',
            'proxy CPU µs/event',
            'guardian calls/stream',
          ],
          STREAM_PATHS.map((p) => [
            p,
            f(tt(k, p), 3),
            f(tot(k, p), 2),
            p === 'direct' ? '—' : sign((tot(k, p) - tot(k, 'direct')) / STREAM_EVENTS),
            p.endsWith('@5ms') ? fx(tot(k, p) / (STREAM_EVENTS * SLOW_GUARDIAN_MS)) : '—',
            f(ev(k, p, 0.5), 3),
            f(ev(k, p, 0.99), 3),
            p === 'direct' ? '—' : sign(ev(k, p, 0.5) - ev(k, 'direct', 0.5)),
            p === 'direct' ? '—' : sign(ev(k, p, 0.99) - ev(k, 'direct', 0.99)),
            p === 'direct' ? '—' : f(median(T(k, p).cpu), 1),
            p === 'direct' ? '—' : f(median(T(k, p).guardianPerStream), 0),
          ]),
        ),
      );
      log();
    }
    if (median(T('burst', 'a2a-guard+inspect').guardianPerStream) <= 1.01)
      log('NOTE: a2a-guard+inspect made 1 guardian call per stream: events were not inspected.');
    for (const k of ['burst', 'paced'] as const) {
      for (const p of STREAM_PATHS)
        if (T(k, p).errors.length > 0) log(`WARNING: ${k} ${p}: ${T(k, p).errors.length} stream errors, first: ${T(k, p).errors[0]}`);
    }
    log();
  }

  const concIn = concurrent.find((c) => c.path === 'a2a-guard+inspect');
  if (concurrent.length > 0) {
    log(
      `## ${CONC_STREAMS} concurrent streams, one event per stream per second (the agent's hand-made /a2a/tick streams); every process may use every core in this phase`,
    );
    log(
      `opened = first SSE event received within ${CONC_OPEN_DEADLINE_MS / 1000} s (at most 256 opens unanswered at a time); events/s over a ${CONC_WINDOW_MS / 1000} s window once open;`,
    );
    log('expected = streams open in the window x 1/s; RSS per stream = (proxy RSS in the window - before the phase) / open streams;');
    log('unary = one SendMessage every 100 ms through the same proxy during the window (request checks next to the stream events).');
    log();
    log(
      table(
        [
          'path',
          'opened',
          'last open at s',
          'failed',
          'events/s',
          'expected/s',
          'delivered',
          'proxy RSS before',
          'proxy RSS in window',
          'RSS per stream',
          'proxy CPU µs/event',
          'unary p50 ms',
          'unary p99 ms',
          'unary max ms',
          'unary failed',
        ],
        concurrent.map((c) => [
          c.path,
          `${c.opened}/${c.target}`,
          f(c.openSeconds, 1),
          String(c.failed),
          f(c.eventsPerSecond, 0),
          f(c.expectedPerSecond, 0),
          `${f((100 * c.eventsPerSecond) / c.expectedPerSecond, 1)} %`,
          mb(c.rssBefore),
          mb(c.rssDuring),
          Number.isFinite(c.rssDuring) ? `${f((c.rssDuring - c.rssBefore) / 1024 / Math.max(1, c.opened), 1)} KB` : '—',
          f(c.cpuUsPerEvent, 1),
          f(c.unary.p50, 2),
          f(c.unary.p99, 2),
          f(c.unary.max, 2),
          `${c.unary.bad}/${c.unary.n}`,
        ]),
      ),
    );
    for (const c of concurrent) if (c.firstError !== undefined) log(`WARNING: ${c.path}: first error: ${c.firstError}`);
    log();
  }

  if (startup !== undefined) {
    log(
      `## start-up: spawn -> first served call, and RSS 2 s and ${SETTLED_MS / 1000} s later (${STARTUP_ROUNDS} rounds, medians; the ${SETTLED_MS / 1000} s figure from the last round; ${path.relative(ROOT, startCommand().script)}, what npm start runs, with the admin server)`,
    );
    log();
    const bare = startup.get('bare node:http');
    log(
      table(
        [
          'process',
          'spawn -> first served call ms',
          'vs bare',
          'CPU to first call ms',
          'CPU vs bare',
          'RSS 2 s after',
          `RSS ${SETTLED_MS / 1000} s after (settled)`,
          'per-round ms',
        ],
        startupSubjects(COMPARE).map((x) => {
          const r = startup.get(x);
          return [
            x,
            f(startupMedian(r, 'ms'), 0),
            fx(startupMedian(r, 'ms') / startupMedian(bare, 'ms')),
            f(startupMedian(r, 'cpu'), 0),
            fx(startupMedian(r, 'cpu') / startupMedian(bare, 'cpu')),
            mb(startupMedian(r, 'rss')),
            mb(startupMedian(r, 'settled')),
            (r?.ms ?? []).map((v) => f(v, 0)).join(', '),
          ];
        }),
      ),
    );
    log(
      'CPU to first call: user + system time of the process when it served its first call (/proc/<pid>/stat, 10 ms ticks): start-up cost without the time other processes took the core.',
    );
    for (const x of startupSubjects(COMPARE)) for (const e of startup.get(x)?.failures ?? []) log(`WARNING: ${x}: ${e}`);
    log();
  }

  const memB = memory?.get('baseline');
  const memG = memory?.get('a2a-guard');
  if (memory !== undefined) {
    log(
      `## large bodies: ${MEMORY_REQUESTS} message/send of ${MEMORY_BODY_BYTES / 1048576} MB, ${MEMORY_CONNECTIONS} connections, fresh processes, ${MEMORY_ROUNDS} round(s)`,
    );
    log(`peak RSS per in-flight byte = (peak RSS - RSS before) / (${MEMORY_CONNECTIONS} x body bytes)`);
    log();
    log(
      table(
        ['proxy', 'peak RSS - before (median)', 'per in-flight byte', 'per round', 'failed'],
        [
          ['baseline', memB],
          ['a2a-guard', memG],
        ].map(([n, r]) => {
          const x = r as typeof memB;
          return [
            n as string,
            mb(memoryMedian(x, 'peakDelta')),
            f(memoryMedian(x, 'perByte'), 2),
            (x?.perByte ?? []).map((v) => f(v, 2)).join(', '),
            String(x?.bad ?? 0),
          ];
        }),
      ),
    );
    log();
  }

  if (PHASES.has('rss')) {
    log(`## RSS of a fresh process over ${RSS_REQUESTS} unary requests (${CONNECTIONS} connections${LONG ? '' : '; BENCH_LONG=1 for 100,000'})`);
    log(`"start" = after ${RSS_WARMUP} warm-up requests and 1 s idle; "end" = after the run and 3 s idle (no forced GC)`);
    log();
    log(
      table(
        ['process', 'at launch', 'start', 'peak', 'end', 'end vs start', 'heapTotal start -> end', 'heapUsed start -> end', 'external start -> end'],
        rss.map((x) => [
          x.name,
          mb(x.launch.rss),
          mb(x.start.rss),
          mb(x.peak),
          mb(x.end.rss),
          `${sign(100 * (x.end.rss / x.start.rss - 1), 1)} %`,
          `${mb(x.start.heapTotal)} -> ${mb(x.end.heapTotal)}`,
          `${mb(x.start.heapUsed)} -> ${mb(x.end.heapUsed)}`,
          `${mb(x.start.external)} -> ${mb(x.end.external)}`,
        ]),
      ),
    );
    log();
    for (const x of rss)
      log(
        `${x.name} RSS after every ${x.step} requests: ${x.series.map((v) => (v / 1048576).toFixed(1)).join(', ')} MB${x.bad > 0 ? `  WARNING: ${x.bad} non-2xx/errors` : ''}`,
      );
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
  const slowBurst = tot('burst', 'a2a-guard+inspect@5ms') / (STREAM_EVENTS * SLOW_GUARDIAN_MS);
  const inspectPerEvent = (tot('burst', 'a2a-guard+inspect') - tot('burst', 'direct')) / STREAM_EVENTS;
  const inspectPaced = ev('paced', 'a2a-guard+inspect', 0.5) - ev('paced', 'direct', 0.5);
  const concDelivered = concIn === undefined ? NaN : concIn.eventsPerSecond / concIn.expectedPerSecond;
  const concOk = concIn !== undefined && concIn.opened === concIn.target && concDelivered >= 0.95;
  const startRatio = startupMedian(startup?.get('a2a-guard (GUARDIAN_URL)'), 'ms') / startupMedian(startup?.get('bare node:http'), 'ms');
  const startCpuRatio = startupMedian(startup?.get('a2a-guard (GUARDIAN_URL)'), 'cpu') / startupMedian(startup?.get('bare node:http'), 'cpu');
  const idleRss = startupMedian(startup?.get('a2a-guard (GUARDIAN_URL)'), 'rss');
  const settledRss = startupMedian(startup?.get('a2a-guard (GUARDIAN_URL)'), 'settled');
  const memRatio = memoryMedian(memG, 'perByte') / memoryMedian(memB, 'perByte');
  log('## targets');
  log();
  log(
    table(
      ['target', 'measured', 'result'],
      [
        ['CPU per unary call (under load, inspection off) <= 1.0x the minimal undici proxy', fx(cpuRatio), verdict(cpuRatio, cpuRatio <= 1.0)],
        [
          'the same, as user-space instructions per call under valgrind (BENCH_ONLY=instructions)',
          fx(instructions?.ratio ?? NaN),
          verdict(instructions?.ratio ?? NaN, (instructions?.ratio ?? NaN) <= 1.0),
        ],
        [
          'added p50 latency without load within 0.3 ms of the baseline (a2a-guard p50 - baseline p50)',
          signU(addedP50, 'ms'),
          verdict(addedP50, addedP50 <= 0.3),
        ],
        ['first SSE event (p50, burst) within 1 ms of the baseline', signU(firstEvent, 'ms'), verdict(firstEvent, firstEvent <= 1)],
        [
          `per-event overhead, inspection off: (stream duration - direct) / ${STREAM_EVENTS} <= 0.2 ms (burst)`,
          signU(perEventBurst, 'ms'),
          verdict(perEventBurst, perEventBurst <= 0.2),
        ],
        [
          'per-event overhead, inspection off: added event latency p50 <= 0.2 ms (paced)',
          signU(perEventPaced, 'ms'),
          verdict(perEventPaced, perEventPaced <= 0.2),
        ],
        [
          `inspected stream, ${SLOW_GUARDIAN_MS} ms guardian, burst: stream duration <= 0.4x events x latency`,
          fx(slowBurst),
          verdict(slowBurst, slowBurst <= 0.4),
        ],
        [
          `inspected stream, instant guardian: (stream duration - direct) / ${STREAM_EVENTS} <= +0.3 ms per event (burst)`,
          signU(inspectPerEvent, 'ms'),
          verdict(inspectPerEvent, inspectPerEvent <= 0.3),
        ],
        [
          'inspected stream, instant guardian, paced: added event latency p50 (no target: one guardian round trip per event)',
          signU(inspectPaced, 'ms'),
          Number.isNaN(inspectPaced) ? 'not run' : 'info',
        ],
        [
          `${CONC_STREAMS} concurrent inspected streams: all open, >= 95 % of events delivered${CONC_STREAMS < 5000 ? ' (the target is 5,000)' : ''}`,
          concIn === undefined ? '—' : `${concIn.opened}/${concIn.target} open, ${f(100 * concDelivered, 1)} %`,
          concIn === undefined ? 'not run' : concOk ? 'PASS' : 'MISS',
        ],
        ['start-up: spawn -> first served call <= 2x a bare node:http server', fx(startRatio), verdict(startRatio, startRatio <= 2)],
        [
          "start-up, CPU to the first served call vs a bare node:http server (the same target, without other processes' time)",
          fx(startCpuRatio),
          verdict(startCpuRatio, startCpuRatio <= 2),
        ],
        ['idle RSS < 60 MB, 2 s after the first call', mb(idleRss), verdict(idleRss, idleRss < 60 * 1048576)],
        [`idle RSS < 60 MB, settled (${SETTLED_MS / 1000} s after the first call)`, mb(settledRss), verdict(settledRss, settledRss < 60 * 1048576)],
        ['1 MB bodies: peak RSS per in-flight byte vs the baseline (no target; lower is better)', fx(memRatio), Number.isNaN(memRatio) ? 'not run' : 'info'],
        [
          `RSS back within 10 % of start after ${rssDone} requests${rssDone < 100_000 ? ' (target is 100,000: BENCH_LONG=1)' : ''}`,
          signU(100 * rssGrowth, '%', 1),
          verdict(rssGrowth, rssGrowth <= 0.1),
        ],
      ],
    ),
  );
  log();
  log(
    `load average at start ${loadStart}, at end ${os
      .loadavg()
      .map((v) => v.toFixed(2))
      .join(' ')} (other processes on this machine make every number noisier)`,
  );
  log();
  if (instructions !== undefined) {
    for (const l of instructions.lines) log(l);
    log();
  }
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
