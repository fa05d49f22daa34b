/**
 * Where task owners are kept: key (`t:<task id>`, `c:<context id>`) -> owner key. The first owner
 * of a key wins and is never overwritten by another; a binding lives for a fixed TTL from its
 * creation. Two implementations: in memory (one replica) and Redis (several replicas, ./redis.ts).
 * Calls reject when the store cannot answer; the caller applies FAIL_MODE.
 *
 * A binding is first provisional: a call that names a context nobody holds holds it for its caller
 * while it runs (`provisional`, a short TTL renewed while the call lasts, counted per call), so no
 * other caller can join a conversation while its first call is judged and answered. The agent's
 * answer confirms it (`claim`: the full TTL); a call that ends without that (denied, refused, failed)
 * lets go (`release`), and a key no call holds any longer is unbound.
 */
import { randomBytes } from 'node:crypto';
import type { Owner } from './principal';

export interface OwnerStore {
  readonly kind: 'memory' | 'redis';
  /** The owner of each key (undefined: unbound or expired); a provisional holder counts as the owner. */
  owners(keys: readonly string[]): Promise<(Owner | undefined)[]>;
  /**
   * Bind every unbound key to `owner` for the full TTL (a key `owner` holds provisionally is
   * confirmed); keys bound to another keep their owner. Resolves with each key's owner afterwards.
   */
  claim(keys: readonly string[], owner: Owner): Promise<Owner[]>;
  /** Hold every unbound key for `owner` for `ttlSeconds`, once more for each call: each key's owner afterwards. */
  provisional(keys: readonly string[], owner: Owner, ttlSeconds: number): Promise<Owner[]>;
  /** Keep `owner`'s provisional holds of `keys` for another `ttlSeconds` (a long call). */
  renew(keys: readonly string[], owner: Owner, ttlSeconds: number): Promise<void>;
  /** One call's provisional hold of each key ends: a key no call holds any longer, never confirmed, is unbound. */
  release(keys: readonly string[], owner: Owner): Promise<void>;
  /**
   * How many bindings `owner` holds, as far as the store knows without asking: exact in memory; in
   * Redis the count its last confirmed binding returned, for a minute (undefined: not known).
   */
  held(owner: Owner): number | undefined;
  /**
   * A random secret shared by every replica that uses this store (page tokens are sealed under it,
   * ./page-token.ts), made once. `refresh`: look again, the cached one failed to open a token.
   */
  sharedSecret(refresh: boolean): Promise<Buffer>;
  close(): Promise<void>;
}

export const taskKey = (taskId: string): string => `t:${taskId}`;
export const contextKey = (contextId: string): string => `c:${contextId}`;

/**
 * Heap bytes one in-memory binding is accounted for besides its key: the Map entry, the binding
 * object, the owner's Set entry (a binding of a 38-character key measured ~215 B of V8 heap on 64-bit).
 */
export const BINDING_OVERHEAD_BYTES = 140;

/** What one in-memory binding of `key` is accounted for: its overhead and the key's text at two bytes a character (V8's widest). */
export const bindingBytes = (key: string): number => BINDING_OVERHEAD_BYTES + 2 * key.length;

export interface MemoryStoreOptions {
  readonly ttlSeconds: number;
  readonly maxEntries: number;
  /** Accounted bytes of all bindings (bindingBytes); default unbounded. */
  readonly maxBytes?: number;
  /** Told how many bindings were evicted to make room (a metric). */
  readonly onEvict?: (n: number) => void;
  /** Clock in ms (tests). */
  readonly now?: () => number;
}

/** One binding: the owner and when it expires, in whole seconds since the store started (a small integer, stored inline). */
class Binding {
  /**
   * `order`: when it was made or confirmed, as a count of bindings (a tie-break for eviction; seconds
   * are too coarse). `pending`: the calls holding it provisionally (0: confirmed).
   */
  constructor(
    readonly owner: Owner,
    public expires: number,
    public order: number,
    readonly bytes: number,
    public pending: number,
  ) {}
}

/** An owner's bindings, oldest first (a Set keeps insertion order), and their accounted bytes. */
interface Holding {
  readonly keys: Set<string>;
  bytes: number;
}

/**
 * In-memory store for one replica, bounded in bindings (`maxEntries`) and accounted bytes
 * (`maxBytes`). A Map keeps insertion order and confirmed bindings live the same TTL, so the oldest
 * is first: expired ones are swept from the front (a binding confirmed later moves to the end).
 * When the store is full, the owner holding the most bytes gives up its oldest binding: a caller
 * that floods the store evicts its own bindings, never those of a caller holding less (an evicted
 * context would otherwise be unknown, and the flooder could continue it as its own). Owner strings
 * are interned.
 */
export class MemoryOwnerStore implements OwnerStore {
  readonly kind = 'memory';
  private readonly map = new Map<string, Binding>();
  private readonly byOwner = new Map<Owner, Holding>();
  private readonly interned = new Map<Owner, Owner>();
  private made = 0;
  private total = 0;
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

  /** Accounted bytes of all bindings. */
  get bytes(): number {
    return this.total;
  }

  private seconds(): number {
    return Math.floor((this.now() - this.start) / 1000);
  }

  private live(key: string, now: number): Binding | undefined {
    const b = this.map.get(key);
    if (b === undefined) return undefined;
    if (b.expires <= now) {
      this.drop(key, b);
      return undefined;
    }
    return b;
  }

  private drop(key: string, b: Binding): void {
    this.map.delete(key);
    this.total -= b.bytes;
    const holding = this.byOwner.get(b.owner);
    if (holding === undefined) return;
    holding.keys.delete(key);
    holding.bytes -= b.bytes;
    if (holding.keys.size === 0) this.byOwner.delete(b.owner);
  }

  private add(key: string, owner: Owner, expires: number, pending: number): void {
    const bytes = bindingBytes(key);
    this.makeRoom(owner, bytes);
    this.map.set(key, new Binding(owner, expires, this.made++, bytes, pending));
    let holding = this.byOwner.get(owner);
    if (holding === undefined) this.byOwner.set(owner, (holding = { keys: new Set(), bytes: 0 }));
    holding.keys.add(key);
    holding.bytes += bytes;
    this.total += bytes;
  }

  /** A binding confirmed or renewed moves to the end, where the youngest are. */
  private touch(key: string, b: Binding, expires: number): void {
    b.expires = expires;
    b.order = this.made++;
    this.map.delete(key);
    this.map.set(key, b);
    const keys = this.byOwner.get(b.owner)?.keys;
    keys?.delete(key);
    keys?.add(key);
  }

  owners(keys: readonly string[]): Promise<(Owner | undefined)[]> {
    const now = this.seconds();
    return Promise.resolve(keys.map((k) => this.live(k, now)?.owner));
  }

  claim(keys: readonly string[], owner: Owner): Promise<Owner[]> {
    const now = this.seconds();
    this.sweep(now);
    const o = this.intern(owner);
    return Promise.resolve(
      keys.map((k) => {
        const b = this.live(k, now);
        if (b === undefined) this.add(k, o, now + this.opts.ttlSeconds, 0);
        else if (b.owner === o && b.pending > 0) {
          b.pending = 0;
          this.touch(k, b, now + this.opts.ttlSeconds);
        } else return b.owner;
        return o;
      }),
    );
  }

  provisional(keys: readonly string[], owner: Owner, ttlSeconds: number): Promise<Owner[]> {
    const now = this.seconds();
    this.sweep(now);
    const o = this.intern(owner);
    return Promise.resolve(
      keys.map((k) => {
        const b = this.live(k, now);
        if (b === undefined) this.add(k, o, now + ttlSeconds, 1);
        else if (b.owner === o && b.pending > 0) {
          b.pending++;
          b.expires = Math.max(b.expires, now + ttlSeconds);
        } else return b.owner;
        return o;
      }),
    );
  }

  renew(keys: readonly string[], owner: Owner, ttlSeconds: number): Promise<void> {
    const now = this.seconds();
    for (const k of keys) {
      const b = this.live(k, now);
      if (b !== undefined && b.owner === owner && b.pending > 0) b.expires = Math.max(b.expires, now + ttlSeconds);
    }
    return Promise.resolve();
  }

  release(keys: readonly string[], owner: Owner): Promise<void> {
    for (const k of keys) {
      const b = this.map.get(k);
      if (b === undefined || b.owner !== owner || b.pending === 0) continue;
      if (--b.pending === 0) this.drop(k, b);
    }
    return Promise.resolve();
  }

  held(owner: Owner): number {
    return this.byOwner.get(owner)?.keys.size ?? 0;
  }

  sharedSecret(): Promise<Buffer> {
    return Promise.resolve(this.secret);
  }

  close(): Promise<void> {
    this.map.clear();
    this.byOwner.clear();
    this.interned.clear();
    this.total = 0;
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
   * Make room for a binding of `bytes` for `claimer`: the holder of the most bytes loses its oldest.
   * On a tie the claimer loses, else the holder whose oldest binding is youngest (the one churning),
   * so a caller that holds its share quietly keeps it.
   */
  private makeRoom(claimer: Owner, bytes: number): void {
    const maxBytes = this.opts.maxBytes ?? Infinity;
    let evicted = 0;
    while (this.map.size > 0 && (this.map.size >= this.opts.maxEntries || this.total + bytes > maxBytes)) {
      const mine = this.byOwner.get(claimer);
      let victim = mine;
      // A scan of the owners, only when the store is full (owners are few next to bindings).
      for (const h of this.byOwner.values())
        if (victim === undefined || h.bytes > victim.bytes || (h.bytes === victim.bytes && victim !== mine && this.oldestOrder(h) > this.oldestOrder(victim)))
          victim = h;
      const oldest = victim?.keys.values().next();
      if (oldest === undefined || oldest.done === true) break;
      const b = this.map.get(oldest.value);
      if (b === undefined) break;
      this.drop(oldest.value, b);
      evicted++;
    }
    if (evicted > 0) this.opts.onEvict?.(evicted);
  }

  private oldestOrder(h: Holding): number {
    const first = h.keys.values().next();
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
