/**
 * `size` places shared by every caller; while all are taken, the next free one goes to the callers waiting
 * in round-robin order (core/caller-lines.ts), not first come, first served. Each caller's own share bounds
 * what it may have waiting here (the user holds that gate first), so no line here grows without bound.
 *
 * For the guardian's connections: a caller's share is a quarter of them (GUARDIAN_CALLS_PER_CALLER), so a
 * few callers at their share (or one attacker with a few identities or addresses) fill them; first come,
 * first served, another caller's call then waited behind every call queued before it.
 */
import { CallerLines } from './caller-lines';
import type { Cancellation } from './cancel';

/** A call waiting for a place: `admit` gives it one (true) or turns it away; undefined once it has its answer. */
export interface Waiter {
  admit: ((entered: boolean) => void) | undefined;
}

/**
 * A call's wait for a place: `queue` puts its waiter in line; once `caller` goes away, `unqueue` takes it out (false:
 * it was no longer there) and the wait ends false. Resolves false at once when the caller is gone already.
 */
export function waitForPlace(caller: Cancellation | undefined, queue: (w: Waiter) => void, unqueue: (w: Waiter) => boolean): Promise<boolean> {
  if (caller?.cancelled === true) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    let off: (() => void) | undefined;
    const w: Waiter = {
      admit: (entered) => {
        off?.();
        resolve(entered);
      },
    };
    queue(w);
    off = caller?.onCancel(() => {
      if (w.admit === undefined || !unqueue(w)) return;
      w.admit = undefined;
      resolve(false);
    });
  });
}

export class FairGate {
  private held = 0;
  private readonly lines = new CallerLines<Waiter>(Infinity);

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`gate size must be a positive integer, got ${size}`);
  }

  /** Places taken now. */
  get taken(): number {
    return this.held;
  }

  /** Calls waiting now, across callers. */
  get waiting(): number {
    return this.lines.size;
  }

  /** true at once when a place is free and nobody waits; else a promise: true once admitted, false if the caller left first. */
  enter(key: string, caller?: Cancellation): true | Promise<boolean> {
    if (this.held < this.size && this.lines.size === 0) {
      this.held++;
      return true;
    }
    return waitForPlace(
      caller,
      (w) => this.lines.push(key, w),
      (w) => this.lines.delete(key, w),
    );
  }

  /** Give a place back: it passes to the next caller in round-robin order, or is freed. */
  leave(): void {
    const next = this.lines.shift();
    if (next === undefined) {
      this.held--;
      return;
    }
    const admit = next.admit;
    next.admit = undefined;
    admit?.(true);
  }
}
