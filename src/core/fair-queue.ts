/**
 * Turns on the event loop, shared fairly between callers. Node runs ready callbacks first come, first
 * served: a caller with 400 requests in flight puts 400 pieces of work in front of another caller's
 * one. A stage that costs CPU (verifying a credential, parsing, building an envelope) first asks for a
 * turn under its caller's key:
 *
 * - while the loop has spent less than `sliceMs` on turns taken at once since it last polled for I/O,
 *   a turn is taken at once (no promise, no cost on an idle proxy) when nobody waits, and, while some
 *   callers wait, by a caller with nothing waiting that has had no turn in this iteration;
 * - otherwise the work waits in its caller's own queue; once per loop iteration (I/O is polled between
 *   two) each waiting caller is granted one turn, in round-robin order: a caller flooding the proxy
 *   waits behind its own queue, and another caller's work runs after at most one turn of each other
 *   waiting caller;
 * - a caller whose queue holds `maxQueuedPerCaller` turns is refused the next one (its caller answers
 *   429 / -31429); a caller that leaves is dropped from its queue.
 *
 * A turn is the work that runs from the grant to its next wait on real I/O (its promise chain runs
 * before the loop polls again).
 */
import { CallerLines } from './caller-lines';
import { monotonicMs } from './clock';

/** A caller that may go away (the proxy's Cancellation). */
export interface Leaving {
  onCancel(fn: () => void): () => void;
  /** Ends the caller's connection (or stream) without an answer, where it can be. */
  drop?(): void;
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
  /** Callers' waiting turns, round-robin; each caller's bounded by `maxQueuedPerCaller` here, not in all. */
  private readonly queues = new CallerLines<Waiter>(Infinity);
  private dispatching = false;
  /** When the loop began spending its current slice on turns taken at once (undefined: not yet this iteration). */
  private sliceStart: number | undefined;
  /** Callers that had a turn since the loop last polled for I/O. */
  private readonly served = new Set<string>();
  /** Turns waiting by `laterWithin`, per caller with some. */
  private readonly within = new Map<string, number>();
  private resetScheduled = false;
  private readonly now: () => number;
  private readonly defer: (fn: () => void) => void;

  constructor(private readonly opts: FairQueueOptions) {
    this.now = opts.now ?? monotonicMs;
    this.defer = opts.defer ?? ((fn) => void setImmediate(fn));
  }

  /** Turns waiting now, across callers. */
  get size(): number {
    return this.queues.size;
  }

  /** Turns waiting now for `key`. */
  queuedFor(key: string): number {
    return this.queues.sizeOf(key);
  }

  /** A turn for `key`; `caller` going away drops a waiting turn (its promise resolves false). */
  turn(key: string, caller?: Leaving): Turn {
    // While nobody waits, the slice is anyone's; while some wait, a caller gets one turn per iteration at once.
    const queued = this.queues.sizeOf(key);
    if (queued === 0 && (this.queues.size === 0 || !this.served.has(key)) && this.withinSlice()) {
      this.served.add(key);
      return true;
    }
    if (queued >= this.opts.maxQueuedPerCaller) return 'full';
    return this.enqueue(key, caller);
  }

  /**
   * A turn once the loop has polled for I/O, in `key`'s round-robin order (never at once): for the next costly step of a
   * large body, so one caller's large bodies take one step per round between other callers' work. Never refused: a call
   * waits for one at a time, so a caller has no more of these waiting than it has calls in flight (a bounded share).
   */
  later(key: string, caller?: Leaving): Promise<boolean> {
    return this.enqueue(key, caller);
  }

  /**
   * `later`, with at most `max` of these waiting per caller: 'full' past it. For work a caller's flood makes without
   * bound (its refusals past `maxQueuedPerCaller`), which would otherwise wait here without bound.
   */
  laterWithin(key: string, max: number, caller?: Leaving): Promise<boolean> | 'full' {
    const waiting = this.within.get(key) ?? 0;
    if (waiting >= max) return 'full';
    this.within.set(key, waiting + 1);
    return this.enqueue(key, caller).then((granted) => {
      const left = (this.within.get(key) ?? 1) - 1;
      if (left > 0) this.within.set(key, left);
      else this.within.delete(key);
      return granted;
    });
  }

  private enqueue(key: string, caller: Leaving | undefined): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const w: Waiter = { resolve, unsubscribe: undefined };
      this.queues.push(key, w);
      w.unsubscribe = caller?.onCancel(() => {
        if (this.queues.delete(key, w)) resolve(false);
      });
      this.schedule();
    });
  }

  /** Turns taken at once count against the slice until the loop next polls for I/O. */
  private withinSlice(): boolean {
    const now = this.now();
    if (this.sliceStart === undefined) {
      this.sliceStart = now;
      this.endOfIteration();
      return true;
    }
    return now - this.sliceStart < this.opts.sliceMs;
  }

  /** Once the loop has polled for I/O, the slice and the round start again. */
  private endOfIteration(): void {
    if (this.resetScheduled) return;
    this.resetScheduled = true;
    this.defer(() => {
      this.resetScheduled = false;
      this.sliceStart = undefined;
      this.served.clear();
    });
  }

  private schedule(): void {
    if (this.dispatching) return;
    this.dispatching = true;
    this.defer(() => this.grantRound());
  }

  /** One turn to each waiting caller, in round-robin order; the next round after the loop polled for I/O. */
  private grantRound(): void {
    // Each served caller goes to the back: the next round begins with the callers not served first now.
    this.queues.shiftRound((w, key) => {
      this.served.add(key);
      w.unsubscribe?.();
      w.resolve(true);
    });
    this.endOfIteration();
    if (this.queues.size > 0) this.defer(() => this.grantRound());
    else this.dispatching = false;
  }
}
