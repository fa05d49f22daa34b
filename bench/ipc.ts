/**
 * Bench-only IPC between `run.ts` (parent, load generator) and its server children
 * (agent, guardian, baseline proxy, a2a-guard). The parent asks, the child answers with its own
 * `process.cpuUsage()` and RSS, so CPU deltas per round belong to that one process.
 */
export interface StatsRequest {
  readonly t: 'stats';
  readonly seq: number;
}

export interface ReadyMessage {
  readonly t: 'ready';
  readonly url: string;
}

export interface StatsReply {
  readonly t: 'stats';
  readonly seq: number;
  /** process.cpuUsage() in microseconds. */
  readonly user: number;
  readonly system: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  /** memoryUsage().external (includes arrayBuffers). */
  readonly external: number;
  /** Child-specific work counter (agent: executions, guardian: decisions); 0 for proxies. */
  readonly count: number;
}

/**
 * Child side: announce readiness, answer stats requests, and exit when the parent goes away
 * (IPC disconnect) or asks us to stop (SIGTERM/SIGINT). Exiting through process.exit lets
 * `--cpu-prof` write its profile.
 */
export function serveIpc(url: string, count: () => number = () => 0): void {
  const send = process.send?.bind(process);
  if (send === undefined) {
    process.stderr.write(`listening on ${url} (no IPC channel; run me from bench/run)\n`);
    return;
  }
  process.on('message', (m: StatsRequest) => {
    if (m?.t !== 'stats') return;
    const cpu = process.cpuUsage();
    const mem = process.memoryUsage();
    const reply: StatsReply = {
      t: 'stats',
      seq: m.seq,
      user: cpu.user,
      system: cpu.system,
      rss: mem.rss,
      heapUsed: mem.heapUsed,
      heapTotal: mem.heapTotal,
      external: mem.external,
      count: count(),
    };
    send(reply);
  });
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
  process.on('SIGINT', () => process.exit(0));
  const ready: ReadyMessage = { t: 'ready', url };
  send(ready);
}

export function fail(what: string, err: unknown): never {
  process.stderr.write(`${what}: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
}
