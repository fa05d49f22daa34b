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
    ['operation', 'side', 'phase', 'decision'],
    this.registry,
  );
  readonly calls = new FastCounter(
    'a2a_guard_requests_total',
    'Requests seen by the proxy, by kind (a2a operation, other, refused) and outcome',
    ['operation', 'outcome'],
    this.registry,
  );
  readonly guardianLatency = new FastHistogramVec(
    'a2a_guard_guardian_latency_seconds',
    'Guardian call latency, by A2A operation and outcome (the decision, or why there was no valid answer)',
    ['operation', 'outcome'],
    LATENCY_BUCKETS,
    this.registry,
  );
  readonly addedLatency = new FastHistogramVec(
    'a2a_guard_added_latency_seconds',
    'Time a call spent in the proxy rather than waiting on the agent (total minus the upstream call), by operation',
    ['operation'],
    LATENCY_BUCKETS,
    this.registry,
  );
  readonly upstreamLatency = new FastHistogramVec(
    'a2a_guard_upstream_latency_seconds',
    'Time from sending a call to the agent to its response headers, by operation',
    ['operation'],
    UPSTREAM_BUCKETS,
    this.registry,
  );
  readonly guardianFailures = new Counter({
    name: 'a2a_guard_guardian_failures_total',
    help: 'Guardian calls without a valid answer, by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly callerLimited = new Counter({
    name: 'a2a_guard_caller_limited_total',
    help: 'Calls refused because their caller was at its own share (calls in flight, rate, request bytes, turns), connections given up or refused at MAX_CONNECTIONS, and idle connections to the agent closed at it (agent_connections), by resource',
    labelNames: ['resource'] as const,
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
  readonly upgrades = new Counter({
    name: 'a2a_guard_upgrades_total',
    help: 'HTTP upgrade requests by outcome: forwarded (101), refused_path, refused_identity, refused_limit (over MAX_CALLS_PER_CALLER or the rate), not_switched (the agent answered without 101: dropped), failed',
    labelNames: ['outcome'] as const,
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
    ['operation', 'outcome'],
    this.registry,
  );
  readonly ownershipEvictions = new Counter({
    name: 'a2a_guard_task_store_evictions_total',
    help: 'Task owner bindings evicted from the in-memory store to make room (TASK_STORE_MAX_ENTRIES)',
    registers: [this.registry],
  });
  readonly pushDeliveries = new Counter({
    name: 'a2a_guard_push_deliveries_total',
    help: 'Push notifications the agent delivered to the push relay, by outcome (delivered, denied, refused_address, refused_key, refused_task, refused_queue, failed, retried, ...)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly openStreams = new Gauge({ name: 'a2a_guard_open_streams', help: 'SSE streams in flight', registers: [this.registry] });
  readonly policyReloads = new Counter({
    name: 'a2a_guard_policy_reloads_total',
    help: 'Policy reloads of the embedded guardian (SIGHUP or a change of POLICY_FILE), by result (ok, failed)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  /** Set once at start (proxy/connections.ts): the bounds in use after fitting the pools to the file descriptors. */
  readonly connectionBounds = new Gauge({
    name: 'a2a_guard_connection_bounds',
    help: 'Connections each pool may open, as fitted at start to the file descriptors the process may open (docs/operations.md#file-descriptors), by pool (listeners, agent, guardian_call, guardian_stream, push); a pool not in use is left out',
    labelNames: ['pool'] as const,
    registers: [this.registry],
  });
  readonly traceExportFailures = new Counter({
    name: 'a2a_guard_trace_export_failures_total',
    help: 'Batches of spans the OTLP exporter could not deliver',
    registers: [this.registry],
  });
  private bodyBytes: () => number = () => 0;
  /** Bytes held now of MAX_INFLIGHT_BODY_BYTES (request bodies, answers and events held for the guardian). */
  readonly inflightBodyBytes = (() => {
    const metrics = this;
    return new Gauge({
      name: 'a2a_guard_inflight_body_bytes',
      help: 'Bytes held now of MAX_INFLIGHT_BODY_BYTES (request bodies, answers and stream events held for the guardian)',
      registers: [this.registry],
      collect() {
        this.set(metrics.bodyBytes());
      },
    });
  })();

  /** Read the in-flight body bytes from this function (the proxy's budget). */
  watchBodyBudget(read: () => number): void {
    this.bodyBytes = read;
  }

  /** The in-flight body bytes now, as the gauge reports them. */
  bodyBytesInFlight(): number {
    return this.bodyBytes();
  }

  private health: () => HealthView = () => ({ ready: true, draining: false, guardian: { up: undefined }, upstream: { up: undefined } });
  readonly healthGauges = (() => {
    const metrics = this;
    const gauge = (name: string, help: string, read: (h: HealthView) => boolean | undefined) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(metrics.health()) === true ? 1 : 0);
        },
      });
    return [
      gauge('a2a_guard_ready', 'What /readyz answers: 1 ready, 0 not (draining, or a dependency READINESS_REQUIRES names is down)', (h) => h.ready),
      gauge('a2a_guard_draining', '1 once shutdown began', (h) => h.draining),
      gauge('a2a_guard_guardian_up', 'The guardian answered the last AOS ping (1) or not, or not yet asked (0)', (h) => h.guardian.up),
      gauge(
        'a2a_guard_upstream_up',
        'The agent card (and, with GRPC_PORT, its gRPC endpoint) was reachable at the last check (1) or not, or not yet checked (0)',
        (h) => h.upstream.up,
      ),
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
    this.calls.inc(operation, outcome);
    this.addedLatency.observe(addedSeconds, operation);
  }

  guardianCall(operation: string, outcome: string, seconds: number): void {
    this.guardianLatency.observe(seconds, operation, outcome);
  }

  upstreamCall(operation: string, seconds: number): void {
    this.upstreamLatency.observe(seconds, operation);
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
    this.requests.inc(operation, side, phase, decision);
  }

  ownershipOutcome(operation: string, outcome: string): void {
    this.ownership.inc(operation, outcome);
  }

  call(operation: string, outcome: string): void {
    this.calls.inc(operation, outcome);
  }
}

interface Sample {
  readonly metricName: string;
  readonly labels: Record<string, string | number>;
  readonly value: number;
}

/**
 * The cells of a labelled metric, found by their label values (one Map level per label) and kept in
 * the order they were first seen (the exposition's order). The hot call sites pass the values they
 * have: joining them into one key cost a concatenation, a flattening and a hash per update, and a
 * closure for the labels (a unary call's five updates: ~6,900 instructions, now ~850; callgrind).
 * Label values come from fixed vocabularies, never the wire, so the set stays bounded.
 */
class LabelCells<C> {
  private root = new Map<string, unknown>();
  private made: C[] = [];

  constructor(
    private readonly names: readonly string[],
    private readonly make: (labels: Record<string, string>) => C,
  ) {}

  /** The values found last, and their cell: a call site mostly counts what the one before it counted (a hit: ~20 instructions, a Map a label ~90). */
  private lastA: string | undefined;
  private lastB: string | undefined;
  private lastC: string | undefined;
  private lastD: string | undefined;
  private lastCell: C | undefined;

  /** The cell of these values, one per label name and in their order. */
  get(a: string, b?: string, c?: string, d?: string): C {
    if (this.lastCell !== undefined && a === this.lastA && b === this.lastB && c === this.lastC && d === this.lastD) return this.lastCell;
    const cell = this.find(a, b, c, d);
    this.lastA = a;
    this.lastB = b;
    this.lastC = c;
    this.lastD = d;
    this.lastCell = cell;
    return cell;
  }

  private find(a: string, b?: string, c?: string, d?: string): C {
    let node: unknown = this.root;
    for (let i = 0; i < this.names.length; i++) {
      node = (node as Map<string, unknown>).get((i === 0 ? a : i === 1 ? b : i === 2 ? c : d) ?? '');
      if (node === undefined) return this.add([a, b, c, d]);
    }
    return node as C;
  }

  private add(values: ReadonlyArray<string | undefined>): C {
    const labels: Record<string, string> = {};
    this.names.forEach((name, i) => (labels[name] = values[i] ?? ''));
    const cell = this.make(labels);
    let level = this.root;
    this.names.forEach((name, i) => {
      const v = labels[name] as string;
      if (i === this.names.length - 1) return void level.set(v, cell);
      let next = level.get(v) as Map<string, unknown> | undefined;
      if (next === undefined) level.set(v, (next = new Map()));
      level = next;
    });
    this.made.push(cell);
    return cell;
  }

  all(): readonly C[] {
    return this.made;
  }

  clear(): void {
    this.lastCell = undefined;
    this.root = new Map();
    this.made = [];
  }
}

/**
 * A labelled Prometheus histogram observed on every call. prom-client's Histogram allocates a
 * closure, a label object and a hash per observe(); here a call site passes its label values, the
 * labels are built once per distinct set, and the exposition (cumulative `_bucket{le}`, `_sum`,
 * `_count`) is rendered at scrape time. With the counter below, A/B in one `npm run bench`
 * (2026-11-29, docs/performance.md): CPU per unary call under load 8 % less than prom-client's.
 */
export class FastHistogramVec {
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  private readonly cells: LabelCells<{ labels: Record<string, string>; counts: number[]; sum: number; count: number }>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    this.cells = new LabelCells(labelNames, (labels) => ({ labels, counts: bounds.map(() => 0), sum: 0, count: 0 }));
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** One observation for the label values, given in the order of the label names. */
  observe(value: number, a: string, b?: string): void {
    if (!Number.isFinite(value)) return;
    const cell = this.cells.get(a, b);
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    if (i < bounds.length) cell.counts[i] = (cell.counts[i] as number) + 1;
    cell.sum += value;
    cell.count++;
  }

  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] } {
    const values: Sample[] = [];
    for (const cell of this.cells.all()) {
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
 * label object on every inc(), even through labels(); here a call site passes its label values and
 * the labels are built once per distinct set.
 */
export class FastCounter {
  readonly type = 'counter' as const;
  readonly aggregator = 'sum' as const;
  private readonly cells: LabelCells<{ labels: Record<string, string>; value: number }>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    this.cells = new LabelCells(labelNames, (labels) => ({ labels, value: 0 }));
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** Count one for the label values, given in the order of the label names. */
  inc(a: string, b?: string, c?: string, d?: string): void {
    this.cells.get(a, b, c, d).value++;
  }

  get(): { name: string; help: string; type: 'counter'; aggregator: 'sum'; values: Sample[] } {
    const values: Sample[] = [];
    for (const c of this.cells.all()) values.push({ metricName: this.name, labels: c.labels, value: c.value });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.cells.clear();
  }
}
