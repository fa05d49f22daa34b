/**
 * Prometheus metrics (design section 9). One registry per proxy instance so tests and embedders
 * can run several proxies in one process. Label sets are bounded: operations come from the
 * operation table, never from the wire.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Agents answer blocking calls only when the task is done: a longer tail. */
const UPSTREAM_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** The part of readiness the gauges show (admin/health's Readiness fits it). */
interface HealthView {
  readonly ready: boolean;
  readonly draining: boolean;
  readonly guardian: { readonly up: boolean | undefined };
  readonly upstream: { readonly up: boolean | undefined };
}

/** Circuit-breaker states, exposed as a state set (one series per state, 1 for the current one). */
export type BreakerState = 'closed' | 'open' | 'half_open';

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new FastCounter(
    'a2a_guard_hook_decisions_total',
    'Hook decisions by A2A operation (AOS method), hook side, phase and decision',
    this.registry,
  );
  readonly calls = new FastCounter(
    'a2a_guard_requests_total',
    'Requests seen by the proxy, by kind (a2a operation, other, refused) and outcome',
    this.registry,
  );
  readonly guardianLatency = new FastHistogramVec(
    'a2a_guard_guardian_latency_seconds',
    'Guardian call latency, by A2A operation and outcome (the decision, or why there was no valid answer)',
    LATENCY_BUCKETS,
    this.registry,
  );
  readonly addedLatency = new FastHistogramVec(
    'a2a_guard_added_latency_seconds',
    'Time a call spent in the proxy rather than waiting on the agent (total minus the upstream call), by operation',
    LATENCY_BUCKETS,
    this.registry,
  );
  readonly upstreamLatency = new FastHistogramVec(
    'a2a_guard_upstream_latency_seconds',
    'Time from sending a call to the agent to its response headers, by operation',
    UPSTREAM_BUCKETS,
    this.registry,
  );
  readonly guardianFailures = new Counter({
    name: 'a2a_guard_guardian_failures_total',
    help: 'Guardian calls without a valid answer, by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly failOpenPasses = new Counter({
    name: 'a2a_guard_fail_open_passes_total',
    help: 'Requests or events passed without a valid guardian decision (FAIL_MODE=open)',
    registers: [this.registry],
  });
  readonly shadowPasses = new Counter({
    name: 'a2a_guard_shadow_passes_total',
    help: 'Requests or events passed in SHADOW_MODE, by the decision the guardian would have enforced',
    labelNames: ['decision'] as const,
    registers: [this.registry],
  });
  readonly upstreamErrors = new Counter({
    name: 'a2a_guard_upstream_errors_total',
    help: 'Upstream agent failures (refused, reset, failed before answering)',
    registers: [this.registry],
  });
  readonly ownership = new FastCounter(
    'a2a_guard_task_ownership_total',
    'Task ownership: calls checked and refused, answers bound, lists filtered, store failures, by operation and outcome',
    this.registry,
  );
  readonly ownershipEvictions = new Counter({
    name: 'a2a_guard_task_store_evictions_total',
    help: 'Task owner bindings evicted from the in-memory store to make room (TASK_STORE_MAX_ENTRIES)',
    registers: [this.registry],
  });
  readonly openStreams = new Gauge({ name: 'a2a_guard_open_streams', help: 'SSE streams in flight', registers: [this.registry] });
  readonly policyReloads = new Counter({
    name: 'a2a_guard_policy_reloads_total',
    help: 'Policy reloads of the embedded guardian (SIGHUP or a change of POLICY_FILE), by result (ok, failed)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly traceExportFailures = new Counter({
    name: 'a2a_guard_trace_export_failures_total',
    help: 'Batches of spans the OTLP exporter could not deliver',
    registers: [this.registry],
  });
  private health: () => HealthView = () => ({ ready: true, draining: false, guardian: { up: undefined }, upstream: { up: undefined } });
  readonly healthGauges = (() => {
    const metrics = this;
    const gauge = (name: string, help: string, read: (h: HealthView) => boolean | undefined) => new Gauge({
      name, help, registers: [this.registry],
      collect() {
        this.set(read(metrics.health()) === true ? 1 : 0);
      },
    });
    return [
      gauge('a2a_guard_ready', 'What /readyz answers: 1 ready, 0 not (draining, or a dependency READINESS_REQUIRES names is down)', (h) => h.ready),
      gauge('a2a_guard_draining', '1 once shutdown began', (h) => h.draining),
      gauge('a2a_guard_guardian_up', 'The guardian answered the last AOS ping (1) or not, or not yet asked (0)', (h) => h.guardian.up),
      gauge('a2a_guard_upstream_up', 'The agent card (and, with GRPC_PORT, its gRPC endpoint) was reachable at the last check (1) or not, or not yet checked (0)', (h) => h.upstream.up),
    ];
  })();
  private breakerState: () => BreakerState = () => 'closed';
  readonly breaker = (() => {
    const metrics = this;
    return new Gauge({
      name: 'a2a_guard_guardian_breaker_state',
      help: 'Guardian circuit breaker: 1 for the current state (closed, open, half_open), 0 for the others',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const now = metrics.breakerState();
        for (const state of ['closed', 'open', 'half_open'] as const) this.set({ state }, state === now ? 1 : 0);
      },
    });
  })();
  /** Read at scrape time from the guardian client's pools (see watchGuardianQueue). */
  private guardianQueue: () => Record<'call' | 'stream', number> = () => ({ call: 0, stream: 0 });
  readonly guardianQueued = (() => {
    const metrics = this;
    return new Gauge({
      name: 'a2a_guard_guardian_queued_calls',
      help: 'Guardian calls waiting for a connection, by budget: call (request hooks, unary answers) or stream (the next event of each stream waiting for a place)',
      labelNames: ['budget'] as const,
      registers: [this.registry],
      collect() {
        const q = metrics.guardianQueue();
        this.set({ budget: 'call' }, q.call);
        this.set({ budget: 'stream' }, q.stream);
      },
    });
  })();
  /** Read at scrape time from the log sink (see countLogDrops). */
  private logDrops: () => number = () => 0;
  private logDropsSeen = 0;
  readonly logLinesDropped = (() => {
    const metrics = this;
    return new Counter({
      name: 'a2a_guard_log_lines_dropped_total',
      help: 'Log lines dropped because stdout was not being read',
      registers: [this.registry],
      collect() {
        const now = metrics.logDrops();
        if (now > metrics.logDropsSeen) this.inc(now - metrics.logDropsSeen);
        metrics.logDropsSeen = now;
      },
    });
  })();

  constructor(withProcessMetrics = false, version = 'unknown') {
    if (withProcessMetrics) collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'a2a_guard_build_info',
      help: 'Always 1; the labels name the running build',
      labelNames: ['version', 'node'] as const,
      registers: [this.registry],
    }).set({ version, node: process.version }, 1);
  }

  /** Read readiness at scrape time. */
  watchHealth(view: () => HealthView): void {
    this.health = view;
  }

  /** Read the guardian's breaker state at scrape time. */
  watchBreaker(state: () => BreakerState): void {
    this.breakerState = state;
  }

  /** One finished A2A call: its outcome, and the latency the proxy added. */
  finished(operation: string, outcome: string, addedSeconds: number): void {
    this.call(operation, outcome);
    this.addedLatency.observe(operation, () => ({ operation }), addedSeconds);
  }

  guardianCall(operation: string, outcome: string, seconds: number): void {
    this.guardianLatency.observe(`${operation}\0${outcome}`, () => ({ operation, outcome }), seconds);
  }

  upstreamCall(operation: string, seconds: number): void {
    this.upstreamLatency.observe(operation, () => ({ operation }), seconds);
  }

  /** Count the log sink's dropped lines in a2a_guard_log_lines_dropped_total. */
  countLogDrops(dropped: () => number): void {
    this.logDrops = dropped;
  }

  /** Report the guardian client's waiting calls in a2a_guard_guardian_queued_calls. */
  watchGuardianQueue(queued: () => Record<'call' | 'stream', number>): void {
    this.guardianQueue = queued;
  }

  decision(operation: string, side: string, phase: string, decision: string): void {
    this.requests.inc(`${operation}\0${side}\0${phase}\0${decision}`, () => ({ operation, side, phase, decision }));
  }

  ownershipOutcome(operation: string, outcome: string): void {
    this.ownership.inc(`${operation}\0${outcome}`, () => ({ operation, outcome }));
  }

  call(operation: string, outcome: string): void {
    this.calls.inc(`${operation}\0${outcome}`, () => ({ operation, outcome }));
  }
}

interface Sample {
  readonly metricName: string;
  readonly labels: Record<string, string | number>;
  readonly value: number;
}

/**
 * A labelled Prometheus histogram observed on every call. prom-client's Histogram allocates a
 * closure, a label object and a hash per observe(); here a call site passes the key it already has,
 * the labels are built once per distinct key, and the exposition (cumulative `_bucket{le}`, `_sum`,
 * `_count`) is rendered at scrape time. Label values come from fixed vocabularies, never the wire.
 */
export class FastHistogramVec {
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  private readonly cells = new Map<string, { labels: Record<string, string>; counts: number[]; sum: number; count: number }>();

  constructor(readonly name: string, readonly help: string, private readonly bounds: readonly number[], registry: Registry) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  observe(key: string, labels: () => Record<string, string>, value: number): void {
    if (!Number.isFinite(value)) return;
    let cell = this.cells.get(key);
    if (cell === undefined) this.cells.set(key, (cell = { labels: labels(), counts: this.bounds.map(() => 0), sum: 0, count: 0 }));
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    if (i < bounds.length) cell.counts[i] = (cell.counts[i] as number) + 1;
    cell.sum += value;
    cell.count++;
  }

  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] } {
    const values: Sample[] = [];
    for (const cell of this.cells.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += cell.counts[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, ...cell.labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...cell.labels }, value: cell.count });
      values.push({ metricName: `${this.name}_sum`, labels: cell.labels, value: cell.sum });
      values.push({ metricName: `${this.name}_count`, labels: cell.labels, value: cell.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.cells.clear();
  }
}

/**
 * A labelled Prometheus counter incremented on every call. prom-client hashes and validates the
 * label object on every inc(), even through labels(); here a call site passes the key it already
 * has, and the labels are built once per distinct key. Label values come from the operation table
 * and fixed vocabularies, never from the wire, so the set stays bounded.
 */
export class FastCounter {
  readonly type = 'counter' as const;
  readonly aggregator = 'sum' as const;
  private readonly cells = new Map<string, { labels: Record<string, string>; value: number }>();

  constructor(readonly name: string, readonly help: string, registry: Registry) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  inc(key: string, labels: () => Record<string, string>): void {
    const cell = this.cells.get(key);
    if (cell !== undefined) cell.value++;
    else this.cells.set(key, { labels: labels(), value: 1 });
  }

  get(): { name: string; help: string; type: 'counter'; aggregator: 'sum'; values: Sample[] } {
    const values: Sample[] = [];
    for (const c of this.cells.values()) values.push({ metricName: this.name, labels: c.labels, value: c.value });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.cells.clear();
  }
}
