/**
 * Open connections of every caller, bounded in all (MAX_CONNECTIONS). Each costs a file descriptor and ~9 KiB of
 * memory while it waits, so one caller opening thousands and sending nothing (or its headers a byte at a time)
 * would otherwise lock every other caller out once the process runs out of either. Past the bound, the caller
 * holding the most connections gives up its oldest idle one (no call in flight on it) for the new one: a flood of
 * idle connections is dropped from its own end, another caller's new connection still gets in, and no connection
 * carrying a call is ever cut. A caller that holds the most with none idle is refused the new one. One caller holds at
 * most half the bound: past it, its own oldest idle connection is given up for its new one, or it is refused the new
 * one when it has none idle, so its calls in flight (bodies still arriving, calls waiting for a place) never take every
 * connection and refuse everyone else's.
 * A caller is its address here (an IPv6 one by its /64): connections are counted before any credential arrives.
 */

interface Entry<C> {
  readonly id: string;
  readonly key: string;
  readonly conn: C;
  /** Calls in flight on it (requests, streams, an upgraded connection). */
  calls: number;
}

export class ConnectionShares<C> {
  /** Each caller's connections by id, oldest first. */
  private readonly byKey = new Map<string, Map<string, Entry<C>>>();
  private readonly entries = new Map<string, Entry<C>>();
  /** What one caller may hold: half the bound. */
  private readonly perCaller: number;

  /** `drop`: close a connection given up (its 'close' then comes to `closed`, which ignores it). */
  constructor(
    private readonly max: number,
    private readonly drop: (conn: C) => void,
  ) {
    this.perCaller = Math.max(1, Math.ceil(max / 2));
  }

  get size(): number {
    return this.entries.size;
  }

  /** Connections `key` holds. */
  heldBy(key: string): number {
    return this.byKey.get(key)?.size ?? 0;
  }

  /**
   * A new connection of `key` (`id`: what names it while it is open, however it is wrapped later, e.g. in TLS): 'open'
   * (its own idle one given up at half the bound, another's if the bound was reached), or 'refused' (close it).
   */
  open(id: string, conn: C, key: string): 'open' | 'refused' {
    const atShare = this.heldBy(key) >= this.perCaller;
    if (atShare || this.entries.size >= this.max) {
      const idle = this.oldestIdle(atShare ? key : this.holderOfMost(key));
      if (idle === undefined) return 'refused';
      this.forget(idle);
      this.drop(idle.conn);
    }
    const stale = this.entries.get(id);
    if (stale !== undefined) this.forget(stale);
    const entry: Entry<C> = { id, key, conn, calls: 0 };
    this.entries.set(id, entry);
    let line = this.byKey.get(key);
    if (line === undefined) this.byKey.set(key, (line = new Map()));
    line.set(id, entry);
    return 'open';
  }

  /** A call began on the connection `id`: it is not idle until the call ends. */
  callStarted(id: string): void {
    const e = this.entries.get(id);
    if (e !== undefined) e.calls++;
  }

  callEnded(id: string): void {
    const e = this.entries.get(id);
    if (e !== undefined && e.calls > 0) e.calls--;
  }

  /** `conn` closed: forgotten (unless it was given up already, or `id` names a newer connection since). */
  closed(id: string, conn: C): void {
    const e = this.entries.get(id);
    if (e !== undefined && e.conn === conn) this.forget(e);
  }

  /** The caller that gives up a connection: the one holding the most; `key` itself when it holds as many as any. */
  private holderOfMost(key: string): string {
    let holder = key;
    let most = this.heldBy(key);
    for (const [k, line] of this.byKey) {
      if (line.size > most) {
        most = line.size;
        holder = k;
      }
    }
    return holder;
  }

  private oldestIdle(key: string): Entry<C> | undefined {
    for (const e of this.byKey.get(key)?.values() ?? []) if (e.calls === 0) return e;
    return undefined;
  }

  private forget(e: Entry<C>): void {
    this.entries.delete(e.id);
    const line = this.byKey.get(e.key);
    line?.delete(e.id);
    if (line?.size === 0) this.byKey.delete(e.key);
  }
}
