/**
 * Keep-alive connections to one origin, kept per caller: a caller's idle connections carry only its own
 * next calls, as they would if it called the agent straight.
 *
 * With one shared pool, a caller starting many calls at once takes every idle connection, and another
 * caller's next call opens a new one: it waits in the agent's accept queue behind the first caller's new
 * connections (measured: 44-86 ms behind a burst of 256 calls, while the same caller straight to the agent
 * waited for none of it). A pool of its own keeps a caller's connection warm between its calls.
 *
 * Idle connections of one caller are no use to another, so callers that come and go, each with many calls at
 * once, would leave ever more of them open until the process runs out of descriptors (measured: 8 callers of
 * 100 calls each, 512 descriptors: up to 344 connections to the agent, a third of the last callers' calls failed
 * with EMFILE; one shared pool: 101). So all pools together hold at most `maxConnections`: a new connection past
 * it first closes the pools of the callers that called least recently with an idle connection (their calls in
 * flight go on; their next call opens a new pool).
 *
 * At most `maxPools` callers have pools of their own (a pool with no connection and nothing in flight is
 * closed within `sweepMs`); a new caller past that takes the place of a least recently used pool with
 * nothing in flight, else it and traffic of no caller go through the shared pool.
 */
import type { Pool, buildConnector } from 'undici';

type Connector = buildConnector.connector;

export interface CallerPoolsOptions {
  /** A new pool to the origin, opening its connections with `connect`. */
  readonly make: (connect: Connector) => Pool;
  /** Opens one connection to the origin (TCP or TLS): one for all pools, so TLS sessions are resumed across them. */
  readonly connect: Connector;
  readonly maxPools: number;
  /** Connections open to the origin across every pool. */
  readonly maxConnections: number;
  /** How often idle pools are closed. */
  readonly sweepMs: number;
  /** Idle connections closed to stay within `maxConnections`. */
  readonly onGivenUp?: (connections: number) => void;
}

/** Pools looked at, least recently used first, for one to give up to a new caller. */
const REPLACE_SCAN = 64;

export class CallerPools {
  private sharedPool: Pool;
  /** By caller, least recently used first. */
  private readonly pools = new Map<string, Pool>();
  /** Given up with calls still in flight: closed once they end, destroyed at shutdown. */
  private readonly closing = new Set<Pool>();
  private open = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly opts: CallerPoolsOptions) {
    this.sharedPool = this.make();
  }

  /** Traffic of no caller, and callers past `maxPools` while every pool has calls in flight. */
  get shared(): Pool {
    return this.sharedPool;
  }

  /** Callers with a pool of their own now. */
  get size(): number {
    return this.pools.size;
  }

  /** Connections open (or opening) to the origin now. */
  get connections(): number {
    return this.open;
  }

  /** The pool `caller`'s requests go through (undefined: the shared one). */
  for(caller: string | undefined): Pool {
    if (caller === undefined || this.closed) return this.sharedPool;
    const mine = this.pools.get(caller);
    if (mine !== undefined) {
      // Most recently used last.
      this.pools.delete(caller);
      this.pools.set(caller, mine);
      return mine;
    }
    if (this.pools.size >= this.opts.maxPools && !this.giveUpPool()) return this.sharedPool;
    const pool = this.make();
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
      this.retire(pool);
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
    const all = [this.sharedPool, ...this.pools.values(), ...this.closing];
    this.pools.clear();
    this.closing.clear();
    await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
  }

  /** A pool whose connections are counted in `open`. */
  private make(): Pool {
    const pool: Pool = this.opts.make((options, callback) => {
      if (this.open >= this.opts.maxConnections) this.makeRoom(pool);
      this.open++;
      this.opts.connect(options, (err, socket) => {
        // A failed connect calls back with the error alone (socket undefined, whatever the type says).
        if (!socket) this.open--;
        else socket.once('close', () => this.open--);
        // undici's callback type is a union of the two outcomes.
        (callback as (e: Error | null, s: typeof socket) => void)(err, socket);
      });
    });
    return pool;
  }

  /**
   * For a new caller at `maxPools`: the least recently used pool with nothing in flight, closed; false if none among
   * the first REPLACE_SCAN. Those with calls in flight go to the back, so long calls never keep the others from a look.
   */
  private giveUpPool(): boolean {
    let looked = 0;
    for (const [caller, pool] of this.pools) {
      if (looked++ >= REPLACE_SCAN) return false;
      this.pools.delete(caller);
      if (pool.stats.size === 0) {
        this.retire(pool);
        return true;
      }
      this.pools.set(caller, pool);
    }
    return false;
  }

  /** Close idle connections of other pools, least recently used first, until `opening`'s new one fits. */
  private makeRoom(opening: Pool): void {
    let room = this.opts.maxConnections - this.open;
    let givenUp = 0;
    for (const [caller, pool] of this.pools) {
      if (room > 0) break;
      if (pool === opening) continue;
      const idle = pool.stats.free;
      if (idle === 0) continue;
      this.pools.delete(caller);
      this.retire(pool);
      room += idle;
      givenUp += idle;
    }
    if (room <= 0 && this.sharedPool !== opening) {
      const idle = this.sharedPool.stats.free;
      if (idle > 0) {
        this.retire(this.sharedPool);
        this.sharedPool = this.make();
        givenUp += idle;
      }
    }
    if (givenUp > 0) this.opts.onGivenUp?.(givenUp);
  }

  /** Its idle connections close now, those with a call once the call ends. */
  private retire(pool: Pool): void {
    this.closing.add(pool);
    void pool
      .close()
      .catch(() => undefined)
      .finally(() => this.closing.delete(pool));
  }
}
