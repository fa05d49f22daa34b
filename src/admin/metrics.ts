/**
 * Prometheus metrics (design section 9). One registry per proxy instance so tests and embedders
 * can run several proxies in one process. Label sets are bounded: operations come from the
 * operation table, never from the wire.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

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
  readonly guardianLatency = new FastHistogram(
    'a2a_guard_guardian_latency_seconds',
    'Guardian call latency',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
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

  constructor(withProcessMetrics = false) {
    if (withProcessMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Count the log sink's dropped lines in a2a_guard_log_lines_dropped_total. */
  countLogDrops(dropped: () => number): void {
    this.logDrops = dropped;
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
 * An unlabelled Prometheus histogram observed on every guardian call. prom-client's Histogram
 * allocates a closure, a label object and a hash per observe(); this one adds to an array and
 * renders the same exposition (cumulative `_bucket{le}`, `_sum`, `_count`) at scrape time.
 */
export class FastHistogram {
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(readonly name: string, readonly help: string, private readonly bounds: readonly number[], registry: Registry) {
    this.counts = bounds.map(() => 0);
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    if (i < bounds.length) this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }

  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] } {
    const values: Sample[] = [];
    let cumulative = 0;
    this.bounds.forEach((le, i) => {
      cumulative += this.counts[i] as number;
      values.push({ metricName: `${this.name}_bucket`, labels: { le }, value: cumulative });
    });
    values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf' }, value: this.count });
    values.push({ metricName: `${this.name}_sum`, labels: {}, value: this.sum });
    values.push({ metricName: `${this.name}_count`, labels: {}, value: this.count });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
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
