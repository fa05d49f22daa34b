/**
 * Assertion ids seen, each kept until its assertion expires: a second use is a replay.
 *
 * - Only assertions whose signature and claims verified are recorded, and only when their request
 *   routes to an A2A operation or a forwarded route (the assertion is spent: proxy/http/pipeline.ts); a
 *   request refused before (a 404) only looks: outsiders and refused requests cannot fill it.
 * - Per signer (the key, `kid`): each trusted key may hold `share` live ids (ASSERTION_REPLAY_CACHE_SIZE
 *   divided among the trusted keys). A signer whose share is full has its new assertions refused
 *   rather than an old id forgotten (forgetting would let that one be replayed); other signers are
 *   unaffected.
 * - `ReplayCache` is this process's; with TASK_STORE_URL the ids are kept in Redis instead
 *   (ownership/redis.ts), so an assertion is used once across every replica. Redis not answering:
 *   FAIL_MODE=closed refuses the assertion, open checks it against this replica's cache.
 */
import type { Logger } from 'pino';

export type ReplayVerdict = 'fresh' | 'replayed' | 'full' | 'unavailable';

export interface ReplayGuard {
  /** Record `id` of `signer` until `expiresAt` (epoch seconds), holding at most `share` live ids per signer. */
  add(signer: string, id: string, expiresAt: number, share: number): ReplayVerdict | Promise<ReplayVerdict>;
  /** Recorded already and not expired (a look, nothing recorded; undefined: cannot tell now). */
  seen(signer: string, id: string): boolean | undefined | Promise<boolean | undefined>;
}

/** This process's cache: per signer, id -> expiry (epoch seconds) in insertion order. */
export class ReplayCache implements ReplayGuard {
  private readonly bySigner = new Map<string, Map<string, number>>();

  constructor(private readonly nowSeconds: () => number = () => Date.now() / 1000) {}

  /** Live and not yet swept ids, all signers. */
  get size(): number {
    let n = 0;
    for (const ids of this.bySigner.values()) n += ids.size;
    return n;
  }

  seen(signer: string, id: string): boolean {
    const exp = this.bySigner.get(signer)?.get(id);
    return exp !== undefined && exp >= this.nowSeconds();
  }

  add(signer: string, id: string, expiresAt: number, share: number): 'fresh' | 'replayed' | 'full' {
    const now = this.nowSeconds();
    let seen = this.bySigner.get(signer);
    const prior = seen?.get(id);
    if (prior !== undefined && prior >= now) return 'replayed';
    if (seen === undefined) this.bySigner.set(signer, (seen = new Map()));
    if (prior !== undefined) seen.delete(id);
    dropExpiredHead(seen, now);
    if (seen.size >= share) {
      // Lifetimes may differ within a signer, so expired entries can hide behind live ones: sweep them all.
      for (const [k, exp] of seen) if (exp < now) seen.delete(k);
      if (seen.size >= share) return 'full';
    }
    seen.set(id, expiresAt);
    if (this.bySigner.size > 1) this.dropIdleSigners(now, signer);
    return 'fresh';
  }

  /** Signers whose ids all expired (a key rotated out) leave no map behind. */
  private dropIdleSigners(now: number, current: string): void {
    for (const [s, ids] of this.bySigner) {
      if (s === current) continue;
      dropExpiredHead(ids, now);
      if (ids.size === 0) this.bySigner.delete(s);
    }
  }
}

/** Entries arrive roughly in expiry order: drop expired ones from the front (amortised O(1)). */
function dropExpiredHead(seen: Map<string, number>, now: number): void {
  for (const [k, exp] of seen) {
    if (exp >= now) return;
    seen.delete(k);
  }
}

/** Where every replica sees the ids (ownership/redis.ts). */
export interface SharedReplayStore {
  add(signer: string, id: string, expiresAt: number, share: number): Promise<'fresh' | 'replayed' | 'full'>;
  seen(signer: string, id: string): Promise<boolean>;
}

/**
 * Ids kept where every replica sees them (`shared`, Redis). When it fails: FAIL_MODE=closed answers
 * 'unavailable' (the assertion is refused), open asks this replica's cache, logged once per outage.
 */
export class SharedReplayGuard implements ReplayGuard {
  private down = false;

  constructor(
    private readonly shared: SharedReplayStore,
    private readonly local: ReplayCache,
    private readonly failMode: 'closed' | 'open',
    private readonly logger: Logger,
  ) {}

  async add(signer: string, id: string, expiresAt: number, share: number): Promise<ReplayVerdict> {
    try {
      const verdict = await this.shared.add(signer, id, expiresAt, share);
      this.down = false;
      return verdict;
    } catch (err) {
      this.failed(err);
      return this.failMode === 'closed' ? 'unavailable' : this.local.add(signer, id, expiresAt, share);
    }
  }

  async seen(signer: string, id: string): Promise<boolean | undefined> {
    try {
      return await this.shared.seen(signer, id);
    } catch (err) {
      this.failed(err);
      // `add` decides when the request routes somewhere (refused there under FAIL_MODE=closed).
      return this.failMode === 'closed' ? undefined : this.local.seen(signer, id);
    }
  }

  private failed(err: unknown): void {
    if (this.down) return;
    this.down = true;
    this.logger.warn(
      { err: (err as Error).message, failMode: this.failMode },
      this.failMode === 'closed'
        ? 'assertion replay store unavailable: assertions are refused until it answers (FAIL_MODE=closed)'
        : 'assertion replay store unavailable: each replica checks replays alone until it answers (FAIL_MODE=open)',
    );
  }
}
