/**
 * Work of many callers waiting, served round-robin by caller: a caller with many items waiting puts one
 * in front of another caller's one, not all of them. Bounded in all: past the bound, the caller holding
 * the most gives up its newest, so one caller's flood is refused its own work and never another caller's.
 */
export class CallerLines<T> {
  /** Callers with items waiting, in round-robin order (the next to serve first). */
  private readonly lines = new Map<string, T[]>();
  private count = 0;

  /** `max`: items waiting in all (Infinity: unbounded, each user bounds its callers' lines itself). */
  constructor(private readonly max: number) {}

  get size(): number {
    return this.count;
  }

  /** Items waiting for `key` (0 when it has no line). */
  sizeOf(key: string): number {
    return this.lines.get(key)?.length ?? 0;
  }

  /**
   * Queue `item` for `key`. Returns what does not fit: undefined when it fits; `item` itself when the bound is
   * reached and `key` holds as many as any caller; otherwise the newest item of the caller holding the most,
   * taken out to make room.
   */
  push(key: string, item: T): T | undefined {
    let out: T | undefined;
    if (this.count >= this.max) {
      const own = this.sizeOf(key);
      let holder: string | undefined;
      let most = own;
      for (const [k, line] of this.lines) {
        if (line.length > most) {
          most = line.length;
          holder = k;
        }
      }
      if (holder === undefined) return item;
      out = this.lines.get(holder)?.pop();
      this.forget(holder);
    }
    let line = this.lines.get(key);
    if (line === undefined) {
      line = [];
      this.lines.set(key, line);
    }
    line.push(item);
    this.count++;
    return out;
  }

  /** The next item in round-robin order; its caller goes to the back of the line. */
  shift(): T | undefined {
    for (const [key, line] of this.lines) return this.takeHead(key, line);
    return undefined;
  }

  /**
   * One round: the head of every caller waiting now, once each, in round-robin order, to `take`; each caller goes
   * to the back as it is served. Items `take` queues wait for the next round.
   */
  shiftRound(take: (item: T, key: string) => void): void {
    for (const [key, line] of [...this.lines]) {
      // Emptied by `take` (its caller left) since the round began; a line begun since then waits for the next round.
      if (this.lines.get(key) !== line) continue;
      take(this.takeHead(key, line), key);
    }
  }

  /** Take `item` out of `key`'s line (its caller left); false when it is not waiting. */
  delete(key: string, item: T): boolean {
    const line = this.lines.get(key);
    const i = line?.indexOf(item) ?? -1;
    if (line === undefined || i === -1) return false;
    line.splice(i, 1);
    this.count--;
    if (line.length === 0) this.lines.delete(key);
    return true;
  }

  /** Every item waiting. */
  items(): T[] {
    return [...this.lines.values()].flat();
  }

  /** The first of `key`'s non-empty line; `key` goes to the back of the line (or leaves it, emptied). */
  private takeHead(key: string, line: T[]): T {
    const item = line.shift() as T;
    this.count--;
    this.lines.delete(key);
    if (line.length > 0) this.lines.set(key, line);
    return item;
  }

  /** After a pop: the count, and an emptied line dropped. */
  private forget(key: string): void {
    this.count--;
    if (this.lines.get(key)?.length === 0) this.lines.delete(key);
  }
}
