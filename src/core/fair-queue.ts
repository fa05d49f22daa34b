/**
 * Turns on the event loop, shared fairly between callers. Node runs ready callbacks first come, first
 * served: a caller with 400 requests in flight puts 400 pieces of work in front of another caller's
 * one. A stage that costs CPU (verifying a credential, parsing, building an envelope) first asks for a
 * turn under its caller's key:
 *
 * - while nobody waits and the loop has spent less than `sliceMs` on turns since it last polled for
 *   I/O, the turn is taken at once (no promise, no cost on an idle proxy);
 * - otherwise the work waits in its caller's own queue, and turns are handed out one per loop
 *   iteration (I/O is polled between two), round-robin over the callers that wait: a caller flooding
 *   the proxy waits behind its own queue, and another caller's work runs after at most one turn of
 *   each other waiting caller;
 * - a caller whose queue holds `maxQueuedPerCaller` turns is refused the next one (its caller answers
 *   429 / -31429); a caller that leaves is dropped from its queue.
 *
 * A turn is the work that runs from the grant to its next wait on real I/O (its promise chain runs
 * before the loop polls again).
 */
import { monotonicMs } from './clock';

/** A caller that may go away (the proxy's Cancellation). */
export interface Leaving {
  onCancel(fn: () => void): () => void;
}

export interface FairQueueOptions {
  /** Turns one caller may have waiting; the next is refused. */
  readonly maxQueuedPerCaller: number;
  /** Time the loop spends on turns taken at once before the next ones wait for I/O to be polled. */
  readonly sliceMs: number;
  readonly now?: () => number;
  /** Runs `fn` once the loop has polled for I/O (setImmediate). */
  readonly defer?: (fn: () => void) => void;
}

/** true: the turn is now; a promise: true once granted, false when the caller left first; 'full': refused. */
export type Turn = true | Promise<boolean> | 'full';

interface Waiter {
  readonly resolve: (granted: boolean) => void;
  unsubscribe: (() => void) | undefined;
}

export class FairQueue {
  /** Callers with turns waiting, in round-robin order (the next to serve first). */
  private readonly queues = new Map<string, Waiter[]>();
  private waiting = 0;
  private dispatching = false;
  /** When the loop began spending its current slice on turns taken at once (undefined: not yet this iteration). */
  private sliceStart: number | undefined;
  private readonly now: () => number;
  private readonly defer: (fn: () => void) => void;

  constructor(private readonly opts: FairQueueOptions) {
    this.now = opts.now ?? monotonicMs;
    this.defer = opts.defer ?? ((fn) => void setImmediate(fn));
  }

  /** Turns waiting now, across callers. */
  get size(): number {
    return this.waiting;
  }

  /** Turns waiting now for `key`. */
  queuedFor(key: string): number {
    return this.queues.get(key)?.length ?? 0;
  }

  /** A turn for `key`; `caller` going away drops a waiting turn (its promise resolves false). */
  turn(key: string, caller?: Leaving): Turn {
    if (this.waiting === 0 && this.withinSlice()) return true;
    let q = this.queues.get(key);
    if (q !== undefined && q.length >= this.opts.maxQueuedPerCaller) return 'full';
    if (this.opts.maxQueuedPerCaller <= 0) return 'full';
    if (q === undefined) {
      q = [];
      this.queues.set(key, q);
    }
    const queue = q;
    return new Promise<boolean>((resolve) => {
      const w: Waiter = { resolve, unsubscribe: undefined };
      queue.push(w);
      this.waiting++;
      w.unsubscribe = caller?.onCancel(() => {
        const i = queue.indexOf(w);
        if (i === -1) return;
        queue.splice(i, 1);
        this.waiting--;
        if (queue.length === 0 && this.queues.get(key) === queue) this.queues.delete(key);
        resolve(false);
      });
      this.schedule();
    });
  }

  /** Turns taken at once count against the slice until the loop next polls for I/O. */
  private withinSlice(): boolean {
    if (this.dispatching) return false;
    const now = this.now();
    if (this.sliceStart === undefined) {
      this.sliceStart = now;
      this.defer(() => {
        this.sliceStart = undefined;
      });
      return true;
    }
    return now - this.sliceStart < this.opts.sliceMs;
  }

  private schedule(): void {
    if (this.dispatching) return;
    this.dispatching = true;
    this.defer(() => this.grantNext());
  }

  /** One turn, to the caller first in line, which then goes to the back of the line. */
  private grantNext(): void {
    const first = this.queues.entries().next();
    if (first.done === true) {
      this.dispatching = false;
      return;
    }
    const [key, queue] = first.value;
    const w = queue.shift() as Waiter;
    this.waiting--;
    this.queues.delete(key);
    if (queue.length > 0) this.queues.set(key, queue);
    w.unsubscribe?.();
    w.resolve(true);
    if (this.waiting > 0) this.defer(() => this.grantNext());
    else this.dispatching = false;
  }
}
