/**
 * Where task owners are kept: key (`t:<task id>`, `c:<context id>`) -> owner key. The first owner
 * of a key wins and is never overwritten by another (SET NX); a binding lives for a fixed TTL from
 * its creation. Two implementations: in memory (one replica) and Redis (several replicas,
 * ./redis.ts). Calls reject when the store cannot answer; the caller applies FAIL_MODE.
 */
import { randomBytes } from 'node:crypto';
import type { Owner } from './principal';

export interface OwnerStore {
  readonly kind: 'memory' | 'redis';
  /** The owner of each key (undefined: unbound or expired). */
  owners(keys: readonly string[]): Promise<(Owner | undefined)[]>;
  /** Bind every unbound key to `owner`; bound keys keep their owner. Resolves with each key's owner afterwards. */
  claim(keys: readonly string[], owner: Owner): Promise<Owner[]>;
  /**
   * A random secret shared by every replica that uses this store (page tokens are sealed under it,
   * ./page-token.ts), made once. `refresh`: look again, the cached one failed to open a token.
   */
  sharedSecret(refresh: boolean): Promise<Buffer>;
  close(): Promise<void>;
}

export const taskKey = (taskId: string): string => `t:${taskId}`;
export const contextKey = (contextId: string): string => `c:${contextId}`;

export interface MemoryStoreOptions {
  readonly ttlSeconds: number;
  readonly maxEntries: number;
  /** Told how many bindings were evicted to make room (a metric). */
  readonly onEvict?: (n: number) => void;
  /** Clock in ms (tests). */
  readonly now?: () => number;
}

/** One binding: the owner and when it expires, in whole seconds since the store started (a small integer, stored inline). */
class Binding {
  /** `order`: when it was made, as a count of bindings (a tie-break for eviction; seconds are too coarse). */
  constructor(readonly owner: Owner, readonly expires: number, readonly order: number) {}
}

/**
 * In-memory store for one replica. A Map keeps insertion order, and every binding lives the same
 * TTL, so the oldest binding is always first: expired ones are swept from the front. When the store
 * is full, the owner holding the most bindings gives up its oldest: a caller that floods the store
 * evicts its own bindings, never those of a caller holding fewer (an evicted context would otherwise
 * be unknown, and the flooder could continue it as its own). Owner strings are interned.
 */
export class MemoryOwnerStore implements OwnerStore {
  readonly kind = 'memory';
  private readonly map = new Map<string, Binding>();
  /** Each owner's keys, oldest first (a Set keeps insertion order). */
  private readonly byOwner = new Map<Owner, Set<string>>();
  private readonly interned = new Map<Owner, Owner>();
  private made = 0;
  private readonly now: () => number;
  private readonly start: number;
  /** One replica: the secret lives and dies with the process, like the bindings. */
  private readonly secret = randomBytes(32);

  constructor(private readonly opts: MemoryStoreOptions) {
    this.now = opts.now ?? Date.now;
    this.start = this.now();
  }

  get size(): number {
    return this.map.size;
  }

  private seconds(): number {
    return Math.floor((this.now() - this.start) / 1000);
  }

  private get(key: string, now: number): Owner | undefined {
    const b = this.map.get(key);
    if (b === undefined) return undefined;
    if (b.expires <= now) {
      this.drop(key, b);
      return undefined;
    }
    return b.owner;
  }

  private drop(key: string, b: Binding): void {
    this.map.delete(key);
    const keys = this.byOwner.get(b.owner);
    keys?.delete(key);
    if (keys?.size === 0) this.byOwner.delete(b.owner);
  }

  owners(keys: readonly string[]): Promise<(Owner | undefined)[]> {
    const now = this.seconds();
    return Promise.resolve(keys.map((k) => this.get(k, now)));
  }

  claim(keys: readonly string[], owner: Owner): Promise<Owner[]> {
    const now = this.seconds();
    this.sweep(now);
    const o = this.intern(owner);
    return Promise.resolve(keys.map((k) => {
      const current = this.get(k, now);
      if (current !== undefined) return current;
      this.makeRoom(o);
      this.map.set(k, new Binding(o, now + this.opts.ttlSeconds, this.made++));
      let keys = this.byOwner.get(o);
      if (keys === undefined) this.byOwner.set(o, (keys = new Set()));
      keys.add(k);
      return o;
    }));
  }

  sharedSecret(): Promise<Buffer> {
    return Promise.resolve(this.secret);
  }

  close(): Promise<void> {
    this.map.clear();
    this.byOwner.clear();
    this.interned.clear();
    return Promise.resolve();
  }

  /** Drop expired bindings from the front (the oldest). */
  private sweep(now: number): void {
    for (const [k, b] of this.map) {
      if (b.expires > now) break;
      this.drop(k, b);
    }
  }

  /**
   * Make room for one binding of `claimer`: the largest holder loses its oldest. On a tie the claimer
   * loses, else the holder whose oldest binding is youngest (the one churning), so a caller that holds
   * its share quietly keeps it.
   */
  private makeRoom(claimer: Owner): void {
    let evicted = 0;
    while (this.map.size >= this.opts.maxEntries) {
      let victim = this.byOwner.get(claimer);
      // A scan of the owners, only when the store is full (owners are few next to bindings).
      for (const keys of this.byOwner.values()) if (victim === undefined || keys.size > victim.size || (keys.size === victim.size && victim !== this.byOwner.get(claimer) && this.oldestOrder(keys) > this.oldestOrder(victim))) victim = keys;
      const oldest = victim?.values().next();
      if (oldest === undefined || oldest.done === true) break;
      const b = this.map.get(oldest.value);
      if (b === undefined) break;
      this.drop(oldest.value, b);
      evicted++;
    }
    if (evicted > 0) this.opts.onEvict?.(evicted);
  }

  private oldestOrder(keys: Set<string>): number {
    const first = keys.values().next();
    return first.done === true ? 0 : (this.map.get(first.value)?.order ?? 0);
  }

  private intern(owner: Owner): Owner {
    const seen = this.interned.get(owner);
    if (seen !== undefined) return seen;
    // Bounded: past the limit, start over (bindings keep their strings; only sharing is lost).
    if (this.interned.size >= 10_000) this.interned.clear();
    this.interned.set(owner, owner);
    return owner;
  }
}
