/**
 * Keep-alive connections to one origin, kept per caller: a caller's idle connections carry only its own
 * next calls, as they would if it called the agent straight.
 *
 * With one shared pool, a caller starting many calls at once takes every idle connection, and another
 * caller's next call opens a new one: it waits in the agent's accept queue behind the first caller's new
 * connections (measured: 44-86 ms behind a burst of 256 calls, while the same caller straight to the agent
 * waited for none of it). A pool of its own keeps a caller's connection warm between its calls.
 *
 * At most `maxPools` callers have pools of their own (a pool with no connection and nothing in flight is
 * closed within `sweepMs`); past that, and for traffic of no caller, the shared pool serves.
 */
import type { Dispatcher, Pool } from 'undici';

export interface CallerPoolsOptions {
  /** A new pool to the origin. */
  readonly make: () => Pool;
  readonly maxPools: number;
  /** How often idle pools are closed. */
  readonly sweepMs: number;
}

export class CallerPools {
  /** Traffic of no caller, and callers past `maxPools`. */
  readonly shared: Pool;
  private readonly pools = new Map<string, Pool>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly opts: CallerPoolsOptions) {
    this.shared = opts.make();
  }

  /** Callers with a pool of their own now. */
  get size(): number {
    return this.pools.size;
  }

  /** The pool `caller`'s requests go through (undefined: the shared one). */
  for(caller: string | undefined): Dispatcher {
    if (caller === undefined || this.closed) return this.shared;
    const mine = this.pools.get(caller);
    if (mine !== undefined) return mine;
    if (this.pools.size >= this.opts.maxPools) return this.shared;
    const pool = this.opts.make();
    this.pools.set(caller, pool);
    this.timer ??= setInterval(() => this.sweep(), this.opts.sweepMs).unref();
    return pool;
  }

  /** Close the pools with no connection and nothing queued or running. */
  sweep(): void {
    for (const [caller, pool] of this.pools) {
      const s = pool.stats;
      if (s.connected > 0 || s.size > 0) continue;
      this.pools.delete(caller);
      void pool.close().catch(() => undefined);
    }
    if (this.pools.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  async destroy(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    const all = [this.shared, ...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
  }
}
