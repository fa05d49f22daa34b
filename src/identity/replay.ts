/**
 * Assertion ids seen, each kept until its assertion expires: a second use is a replay. Bounded:
 * only assertions whose signature verified are recorded (so only holders of a trusted key can fill
 * it), and when it is full of live entries a new id is refused rather than an old one forgotten
 * (forgetting would let that one be replayed). Per process: replicas do not share it (README).
 */
export class ReplayCache {
  /** id -> expiry (epoch seconds), in insertion order. */
  private readonly seen = new Map<string, number>();

  constructor(private readonly max: number, private readonly nowSeconds: () => number = () => Date.now() / 1000) {}

  get size(): number {
    return this.seen.size;
  }

  /**
   * Record `id` until `expiresAt` (epoch seconds). 'fresh' the first time, 'replayed' when it is
   * already recorded and not yet expired, 'full' when the cache cannot remember another id.
   */
  add(id: string, expiresAt: number): 'fresh' | 'replayed' | 'full' {
    const now = this.nowSeconds();
    const prior = this.seen.get(id);
    if (prior !== undefined && prior >= now) return 'replayed';
    if (prior !== undefined) this.seen.delete(id);
    this.dropExpiredHead(now);
    if (this.seen.size >= this.max) {
      // Lifetimes differ per signer, so expired entries can hide behind live ones: sweep all.
      for (const [k, exp] of this.seen) if (exp < now) this.seen.delete(k);
      if (this.seen.size >= this.max) return 'full';
    }
    this.seen.set(id, expiresAt);
    return 'fresh';
  }

  /** Entries arrive roughly in expiry order: drop expired ones from the front (amortised O(1)). */
  private dropExpiredHead(now: number): void {
    for (const [k, exp] of this.seen) {
      if (exp >= now) return;
      this.seen.delete(k);
    }
  }
}
