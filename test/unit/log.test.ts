import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LogSink, createLogger } from '../../src/runtime/log';
import fc from 'fast-check';
import { FastCounter, Metrics } from '../../src/admin/metrics';

/** A stand-in for process.stdout: records writes, reports a configurable queue length. */
class FakeOut {
  writes: string[] = [];
  writableLength = 0;
  write(chunk: string): boolean {
    this.writes.push(chunk);
    return true;
  }
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('LogSink', () => {
  test('lines logged in one turn of the event loop leave in one write, in order', async () => {
    const out = new FakeOut();
    const sink = new LogSink(out, undefined);
    sink.write('a\n');
    sink.write('b\n');
    sink.write('c\n');
    expect(out.writes).toEqual([]); // nothing on the request path
    await turn();
    expect(out.writes).toEqual(['a\nb\nc\n']);
  });

  test('lines of different turns are separate writes; nothing is written for an idle turn', async () => {
    const out = new FakeOut();
    const sink = new LogSink(out, undefined);
    sink.write('1\n');
    await turn();
    sink.write('2\n');
    await turn();
    await turn();
    expect(out.writes).toEqual(['1\n', '2\n']);
  });

  test('a reader that stopped reading: once the stream holds more than the bound, lines are dropped and counted instead of queued', async () => {
    const out = new FakeOut();
    out.writableLength = 2048;
    const sink = new LogSink(out, undefined, 1024);
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      sink.write('x\n');
      sink.write('y\n');
      await turn();
      sink.write('z\n');
      await turn();
      expect(out.writes).toEqual([]);
      expect(sink.dropped).toBe(3);
      expect(stderr).toHaveBeenCalledTimes(1); // said once, not per line
      out.writableLength = 0; // the reader is back
      sink.write('w\n');
      await turn();
      expect(out.writes).toEqual(['w\n']);
    } finally {
      stderr.mockRestore();
    }
  });

  test('flushSync writes pending lines straight to the descriptor when nothing is queued ahead', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-log-'));
    const file = path.join(dir, 'out.log');
    const fd = fs.openSync(file, 'w');
    try {
      const out = new FakeOut();
      const sink = new LogSink(out, fd);
      sink.write('first\n');
      sink.write('second\n');
      sink.flushSync();
      expect(fs.readFileSync(file, 'utf8')).toBe('first\nsecond\n');
      expect(out.writes).toEqual([]);
      sink.flushSync(); // nothing pending: nothing written twice
      expect(fs.readFileSync(file, 'utf8')).toBe('first\nsecond\n');
    } finally {
      fs.closeSync(fd);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('flushSync keeps the order behind data already queued in the stream', () => {
    const out = new FakeOut();
    out.writableLength = 10;
    const sink = new LogSink(out, 1);
    sink.write('late\n');
    sink.flushSync();
    expect(out.writes).toEqual(['late\n']);
  });

  test('pino through the sink: one JSON line per call, after the turn', async () => {
    const out = new FakeOut();
    const logger = createLogger('info', new LogSink(out, undefined));
    logger.info({ method: 'message/send', decision: 'allow' }, 'a2a call');
    logger.debug('not at info');
    await turn();
    expect(out.writes).toHaveLength(1);
    const lines = (out.writes[0] as string).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ method: 'message/send', decision: 'allow', msg: 'a2a call', service: 'a2a-guard' });
  });

  test('dropped lines are exposed as a2a_guard_log_lines_dropped_total', async () => {
    const metrics = new Metrics();
    let dropped = 0;
    metrics.countLogDrops(() => dropped);
    expect(await metrics.registry.metrics()).toMatch(/^a2a_guard_log_lines_dropped_total 0$/m);
    dropped = 7;
    expect(await metrics.registry.metrics()).toMatch(/^a2a_guard_log_lines_dropped_total 7$/m);
    dropped = 9;
    expect(await metrics.registry.metrics()).toMatch(/^a2a_guard_log_lines_dropped_total 9$/m);
  });
});

describe('FastHistogramVec (guardian latency by operation and outcome)', () => {
  test('renders the same exposition as a labelled prom-client Histogram: cumulative buckets, +Inf, sum, count', async () => {
    const { Histogram, Registry } = await import('prom-client');
    const ours = new Metrics();
    const reference = new Registry();
    const ref = new Histogram({
      name: 'a2a_guard_guardian_latency_seconds',
      help: 'Guardian call latency, by A2A operation and outcome (the decision, or why there was no valid answer)',
      labelNames: ['operation', 'outcome'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [reference],
    });
    const outcomes = ['allow', 'deny', 'timeout'];
    [0, 0.0004, 0.0005, 0.0007, 0.003, 0.003, 0.2, 1, 4.9, 5, 7, 120].forEach((v, i) => {
      const outcome = outcomes[i % 3] as string;
      ours.guardianCall('message/send', outcome, v);
      ref.observe({ operation: 'message/send', outcome }, v);
    });
    const mine = await ours.registry.getSingleMetricAsString('a2a_guard_guardian_latency_seconds');
    expect(mine).toBe(await reference.getSingleMetricAsString('a2a_guard_guardian_latency_seconds'));
    expect(mine).toContain('a2a_guard_guardian_latency_seconds_bucket{le="+Inf",operation="message/send",outcome="allow"} 4');
    ours.registry.resetMetrics();
    expect(await ours.registry.getSingleMetricAsString('a2a_guard_guardian_latency_seconds')).not.toContain('_count');
  });
});

describe('FastCounter (decisions, requests)', () => {
  test('renders the same exposition as a prom-client Counter with the same labels', async () => {
    const { Counter, Registry } = await import('prom-client');
    const ours = new Metrics();
    const reference = new Registry();
    const ref = new Counter({
      name: 'a2a_guard_hook_decisions_total',
      help: 'Hook decisions by A2A operation (AOS method), hook side, phase and decision',
      labelNames: ['operation', 'side', 'phase', 'decision'],
      registers: [reference],
    });
    const calls: [string, string, string, string][] = [
      ['message/send', 'server', 'request', 'allow'],
      ['message/send', 'server', 'request', 'allow'],
      ['tasks/get', 'client', 'response', 'deny'],
      ['message/send', 'server', 'request', 'modify'],
      ['tasks/get', 'client', 'response', 'deny'],
      ['message/send', 'server', 'request', 'allow'],
    ];
    for (const [operation, side, phase, decision] of calls) {
      ours.decision(operation, side, phase, decision);
      ref.inc({ operation, side, phase, decision });
    }
    const mine = await ours.registry.getSingleMetricAsString('a2a_guard_hook_decisions_total');
    expect(mine).toBe(await reference.getSingleMetricAsString('a2a_guard_hook_decisions_total'));
    expect(mine).toContain('a2a_guard_hook_decisions_total{operation="message/send",side="server",phase="request",decision="allow"} 3');
    ours.call('other', 'forwarded');
    expect(await ours.registry.getSingleMetricAsString('a2a_guard_requests_total')).toContain(
      'a2a_guard_requests_total{operation="other",outcome="forwarded"} 1',
    );
  });
});

describe('label cells (the labelled a2a_guard_ counters and histograms)', () => {
  const LATENCY = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
  const UPSTREAM = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
  const op = fc.constantFrom('message/send', 'tasks/get', 'other');
  const word = fc.constantFrom('allow', 'deny', 'forwarded', 'timeout', '');
  const seconds = fc.oneof(fc.double({ min: 0, max: 400, noNaN: true }), fc.constantFrom(0.001, 5, NaN, Infinity));
  type Step =
    | { kind: 'call' | 'owner'; op: string; outcome: string }
    | { kind: 'decision'; op: string; side: string; phase: string; decision: string }
    | { kind: 'guardian' | 'finished'; op: string; outcome: string; s: number }
    | { kind: 'upstream'; op: string; s: number }
    | { kind: 'reset' };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ kind: fc.constantFrom('call' as const, 'owner' as const), op, outcome: word }),
    fc.record({
      kind: fc.constant('decision' as const),
      op,
      side: fc.constantFrom('client', 'server'),
      phase: fc.constantFrom('request', 'response'),
      decision: word,
    }),
    fc.record({ kind: fc.constantFrom('guardian' as const, 'finished' as const), op, outcome: word, s: seconds }),
    fc.record({ kind: fc.constant('upstream' as const), op, s: seconds }),
    { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
  );

  test('interleaved label values, resets and counting again: the exposition prom-client gives', async () => {
    const { Counter, Histogram, Registry } = await import('prom-client');
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        const ours = new Metrics();
        const reference = new Registry();
        const help = (name: string) => (ours.registry.getSingleMetric(name) as unknown as { help: string }).help;
        const counter = (name: string, labelNames: string[]) => new Counter({ name, help: help(name), labelNames, registers: [reference] });
        const histogram = (name: string, labelNames: string[], buckets: number[]) =>
          new Histogram({ name, help: help(name), labelNames, buckets, registers: [reference] });
        const calls = counter('a2a_guard_requests_total', ['operation', 'outcome']);
        const owners = counter('a2a_guard_task_ownership_total', ['operation', 'outcome']);
        const decisions = counter('a2a_guard_hook_decisions_total', ['operation', 'side', 'phase', 'decision']);
        const guardian = histogram('a2a_guard_guardian_latency_seconds', ['operation', 'outcome'], LATENCY);
        const added = histogram('a2a_guard_added_latency_seconds', ['operation'], LATENCY);
        const upstream = histogram('a2a_guard_upstream_latency_seconds', ['operation'], UPSTREAM);
        // prom-client's histogram counts a non-finite observation; the proxy never makes one, and ours skips it.
        const observe = (h: typeof added, labels: Record<string, string>, s: number) => Number.isFinite(s) && h.observe(labels, s);
        for (const x of steps) {
          switch (x.kind) {
            case 'call':
              ours.call(x.op, x.outcome);
              calls.inc({ operation: x.op, outcome: x.outcome });
              break;
            case 'owner':
              ours.ownershipOutcome(x.op, x.outcome);
              owners.inc({ operation: x.op, outcome: x.outcome });
              break;
            case 'decision':
              ours.decision(x.op, x.side, x.phase, x.decision);
              decisions.inc({ operation: x.op, side: x.side, phase: x.phase, decision: x.decision });
              break;
            case 'guardian':
              ours.guardianCall(x.op, x.outcome, x.s);
              observe(guardian, { operation: x.op, outcome: x.outcome }, x.s);
              break;
            case 'finished':
              ours.finished(x.op, x.outcome, x.s);
              calls.inc({ operation: x.op, outcome: x.outcome });
              observe(added, { operation: x.op }, x.s);
              break;
            case 'upstream':
              ours.upstreamCall(x.op, x.s);
              observe(upstream, { operation: x.op }, x.s);
              break;
            case 'reset':
              ours.registry.resetMetrics();
              reference.resetMetrics();
              break;
          }
        }
        for (const m of reference.getMetricsAsArray()) {
          expect(await ours.registry.getSingleMetricAsString(m.name)).toBe(await reference.getSingleMetricAsString(m.name));
        }
      }),
      { numRuns: 300 },
    );
  });

  test('a one-label counter (the caller identities of server.ts)', async () => {
    const { Counter, Registry } = await import('prom-client');
    const ours = new Registry();
    const reference = new Registry();
    const mine = new FastCounter('a2a_guard_caller_identities_total', 'Callers', ['outcome'], ours);
    const ref = new Counter({ name: 'a2a_guard_caller_identities_total', help: 'Callers', labelNames: ['outcome'], registers: [reference] });
    for (const outcome of ['unverified', 'mtls', 'unverified', 'refused', 'unverified']) {
      mine.inc(outcome);
      ref.inc({ outcome });
    }
    const text = await ours.getSingleMetricAsString('a2a_guard_caller_identities_total');
    expect(text).toBe(await reference.getSingleMetricAsString('a2a_guard_caller_identities_total'));
    expect(text).toContain('a2a_guard_caller_identities_total{outcome="unverified"} 3');
  });
});

describe('LogSink when stdout fails', () => {
  test('an EPIPE from stdout is absorbed (no unhandled error); later lines are counted as dropped', async () => {
    const { EventEmitter } = await import('node:events');
    class BrokenOut extends EventEmitter {
      writableLength = 0;
      writes: string[] = [];
      write(chunk: string): boolean {
        this.writes.push(chunk);
        return true;
      }
    }
    const out = new BrokenOut();
    const sink = new LogSink(out, undefined);
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      sink.write('before\n');
      await turn();
      expect(() => out.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))).not.toThrow();
      sink.write('after\n');
      await turn();
      expect(out.writes).toEqual(['before\n']);
      expect(sink.dropped).toBe(1);
    } finally {
      stderr.mockRestore();
    }
  });
});
