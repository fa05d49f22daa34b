/**
 * A bounded memo where each caller has a share of its own: a caller's entries live in its own
 * bucket (at most `share`, oldest forgotten first), and at most `callers` buckets are kept (the
 * caller unseen longest is forgotten whole). One caller filling its share only ever evicts its
 * own entries, never another's.
 */
import { monotonicMs } from './clock';

interface Entry<V> {
  readonly value: V;
  readonly at: number;
}

export class CallerShares<V> {
  private readonly buckets = new Map<string, Map<string, Entry<V>>>();

  /** `ttlMs`: an entry older than this is not returned (Infinity: kept until evicted). */
  constructor(
    private readonly share: number,
    private readonly callers: number,
    private readonly ttlMs = Infinity,
  ) {}

  get(caller: string, key: string): V | undefined {
    const bucket = this.buckets.get(caller);
    const entry = bucket?.get(key);
    if (bucket === undefined || entry === undefined) return undefined;
    if (monotonicMs() - entry.at > this.ttlMs) {
      bucket.delete(key);
      return undefined;
    }
    // Most recently used last, in both maps.
    bucket.delete(key);
    bucket.set(key, entry);
    this.touch(caller, bucket);
    return entry.value;
  }

  set(caller: string, key: string, value: V): void {
    let bucket = this.buckets.get(caller);
    if (bucket === undefined) {
      if (this.buckets.size >= this.callers) {
        const oldest = this.buckets.keys().next();
        if (oldest.done !== true) this.buckets.delete(oldest.value);
      }
      bucket = new Map();
    }
    bucket.delete(key);
    if (bucket.size >= this.share) {
      const oldest = bucket.keys().next();
      if (oldest.done !== true) bucket.delete(oldest.value);
    }
    bucket.set(key, { value, at: monotonicMs() });
    this.touch(caller, bucket);
  }

  clear(): void {
    this.buckets.clear();
  }

  /** Entries held by one caller (tests, metrics). */
  size(caller: string): number {
    return this.buckets.get(caller)?.size ?? 0;
  }

  private touch(caller: string, bucket: Map<string, Entry<V>>): void {
    this.buckets.delete(caller);
    this.buckets.set(caller, bucket);
  }
}
