/**
 * A line in front of a limited resource: at most `size` holders at a time, the others wait in
 * arrival order. Nothing runs while a call waits (no timer, no socket), so a time budget can start
 * when the call gets its place; a waiter whose caller goes away leaves the line.
 */
import type { Cancellation } from '../core/cancel';
import { waitForPlace, type Waiter } from '../core/fair-gate';

export class Gate {
  private held = 0;
  private line: Waiter[] = [];
  private head = 0;
  private waiters = 0;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`gate size must be a positive integer, got ${size}`);
  }

  /** Nobody holds or waits for a place. */
  get idle(): boolean {
    return this.held === 0 && this.waiters === 0;
  }

  /** Calls waiting for a place now. */
  get waiting(): number {
    return this.waiters;
  }

  /** true at once when a place is free; else a promise: true once admitted, false if the caller left first. */
  enter(caller?: Cancellation): true | Promise<boolean> {
    if (this.held < this.size && this.waiters === 0) {
      this.held++;
      return true;
    }
    return waitForPlace(
      caller,
      (w) => {
        this.line.push(w);
        this.waiters++;
      },
      () => {
        // Left in the line: skipped when its turn comes.
        this.waiters--;
        return true;
      },
    );
  }

  /** Give a place back: the next caller in line gets it. */
  leave(): void {
    while (this.head < this.line.length) {
      const w = this.line[this.head++] as Waiter;
      const admit = w.admit;
      if (admit === undefined) continue;
      w.admit = undefined;
      this.waiters--;
      this.compact();
      admit(true); // the place passes straight on
      return;
    }
    this.compact();
    this.held--;
  }

  private compact(): void {
    if (this.head === this.line.length) {
      this.line = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.line.length) {
      this.line = this.line.slice(this.head);
      this.head = 0;
    }
  }
}
