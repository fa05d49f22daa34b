/**
 * The ordering core of an inspected stream, without sockets or a binding: events go in as the agent
 * sent them, several are judged at once, and they come out in the same order, each once its own
 * decision is known. An event is an SSE event (relay/stream.ts) or a gRPC answer message
 * (grpc/relay.ts); what passes is bytes, and a stop is the binding's end of the stream with an error
 * (an SSE error frame; a gRPC error status in trailers), written "error frame" below.
 *
 * Ordering rules (test/unit/proxy/window.test.ts checks each one):
 *  1. Order. Events leave in the order the agent sent them. Event k leaves only after every event
 *     before it has left and once event k's own decision is known; a later event decided sooner
 *     waits for the ones before it.
 *  2. Window. At most `size` events are admitted at a time (being judged, or judged and waiting to
 *     leave), and past the first one at most `maxBytes` of them. Only admitted events have a
 *     decision under way. Parsed events beyond that wait in the backlog with nothing started.
 *     With a shared `line` (one per proxy, as many places as the guardian has connections for
 *     stream events) an event is admitted only once it holds a place, kept until its decision is
 *     known: across all streams, no more decisions are under way than there are connections, and
 *     the events of a stream waiting for a place cost nothing but their parsed bytes. Streams get
 *     places in the order they asked.
 *  3. Backpressure both ways. The agent is read only while the backlog is empty, the window has
 *     room and the caller's socket is not full. A slow caller (nothing leaves) or a slow guardian
 *     (the window stays full) therefore pauses the agent; memory per stream is the window plus the
 *     rest of the chunk being parsed.
 *  4. Stop at k. A stop decision for event k (deny, fail-closed, unreadable under FAIL_MODE=closed)
 *     writes its error frame in place of event k and ends the response: nothing after k is written,
 *     the decisions under way for later events are cancelled and their answers ignored, and the
 *     upstream is aborted (`abort`).
 *  5. Own bytes. A pass decision writes exactly the bytes decided for that event (the original
 *     frame, or the replacement of a modify); one event's decision never changes another's bytes.
 *  6. End after the events. The end of the agent's stream is acted on once every event before it
 *     has left: a complete stream ends the response, a cut one (or an event too large to inspect)
 *     ends it with its error frame.
 *  7. Caller gone. `close()` stops at once: no more writes, no new decisions, the ones under way
 *     cancelled, the upstream aborted.
 * A decision that throws or rejects is a stop with `failure()`'s frame (never a pass).
 */
import type { SseEvent } from '../a2a/sse';
import { Cancellation } from '../core/cancel';

/** What leaves for one event: its bytes (pass), or the error that ends the stream (stop; an SSE error frame by default). */
export type Verdict<S = Buffer> = { readonly pass: Buffer } | { readonly stop: S };

/** The window's sockets: `T` is one event as parsed from the agent's stream, `S` the error that ends the stream. */
export interface WindowIo<T = SseEvent, S = Buffer> {
  /** Judge one event; called in stream order, only for admitted events, never after the window ended. */
  decide(ev: T): Verdict<S> | Promise<Verdict<S>>;
  /** The bytes an event holds while admitted (counted against `maxBytes`). */
  bytes(ev: T): number;
  /** Write to the caller; false when its socket is full (then call `drained()` once it is not). */
  write(bytes: Buffer): boolean;
  /** End the caller's response, with `frame` (the error) when given. */
  end(frame?: S): void;
  /** Read from the agent (true) or pause it (false); called only when the wish changes. */
  flow(reading: boolean): void;
  /** Abort the upstream request and cancel every decision still under way. */
  abort(): void;
  /** The error that ends the stream when a decision throws. */
  failure(err: unknown): S;
}

/** Past the first event, the events judged at once hold at most this many bytes (the `maxBytes` the relays use). */
export const STREAM_WINDOW_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Bytes held across all calls (the in-flight budget, proxy/budget.ts): an admitted event holds its
 * bytes there until it leaves. An event the budget cannot take is not judged: the stream stops there
 * with `refused()` (after the events before it have left), as a request over the budget is refused.
 */
export interface WindowBudget<S> {
  take(n: number): boolean;
  give(n: number): void;
  refused(): S;
}

/** Places shared by the windows of all streams (aos/gate.ts Gate). */
export interface Line {
  enter(caller?: Cancellation): true | Promise<boolean>;
  leave(): void;
}

interface Slot<S> {
  readonly bytes: number;
  verdict: Verdict<S> | undefined;
  /** Holds a place in the line until its decision is known. */
  placed: boolean;
}

const isPromise = <T>(v: T | Promise<T>): v is Promise<T> => typeof (v as { then?: unknown }).then === 'function';

export class OrderedWindow<T = SseEvent, S = Buffer> {
  /** Parsed, not admitted: no decision started. Consumed from `head` (no shift() on a long array). */
  private backlog: Array<T | undefined> = [];
  private head = 0;
  /** Admitted, in stream order; slots[0] leaves next. */
  private readonly slots: Array<Slot<S>> = [];
  private heldBytes = 0;
  /** The caller's socket is full. */
  private blocked = false;
  /** The agent's stream ended; `endFrame` (undefined = complete) is written once all before it left. */
  private upstreamOver = false;
  private endFrame: (() => S) | undefined;
  /** The response is over (stop, end, or caller gone): nothing more happens. */
  private over = false;
  private reading = true;
  private pumping = false;
  private again = false;
  /** A place in the line, granted and not yet used by an admitted event. */
  private place = false;
  private askingForPlace = false;
  /** Ends this window's wait in the line when the window ends. */
  private readonly gone = new Cancellation();
  /** Most events ever admitted at once (for tests and the bench: never above `size`). */
  peakAdmitted = 0;

  constructor(
    private readonly io: WindowIo<T, S>,
    readonly size: number,
    readonly maxBytes: number = Infinity,
    private readonly line?: Line,
    private readonly budget?: WindowBudget<S>,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`window size must be a positive integer, got ${size}`);
  }

  /** Events just parsed from the agent's stream, in order. */
  push(events: readonly T[]): void {
    if (this.over || this.upstreamOver) return;
    for (const e of events) this.backlog.push(e);
    this.pump();
  }

  /** The agent's stream ended: complete (no frame), or cut / unreadable (the frame that says so). */
  upstreamEnded(frame?: () => S): void {
    if (this.over || this.upstreamOver) return;
    this.upstreamOver = true;
    this.endFrame = frame;
    this.pump();
  }

  /** The caller's socket can take more. */
  drained(): void {
    if (!this.blocked) return;
    this.blocked = false;
    this.pump();
  }

  /** End the stream now with `frame` (a proxy shutdown): as a stop decision at the current position. */
  stop(frame: S): void {
    if (this.over) return;
    this.finish(frame, true);
  }

  /** The caller went away. */
  close(): void {
    if (this.over) return;
    this.over = true;
    this.drop();
    this.io.abort();
  }

  get admitted(): number {
    return this.slots.length;
  }

  get ended(): boolean {
    return this.over;
  }

  private pump(): void {
    // A decision or write may call back in (a synchronous verdict, a drain): run the loop once more instead of nesting.
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        while (!this.over && (this.release() || this.admit()));
      } while (this.again && !this.over);
    } finally {
      this.pumping = false;
    }
    if (this.over) return;
    if (this.upstreamOver && this.slots.length === 0 && this.head === this.backlog.length) {
      const frame = this.endFrame?.();
      this.finish(frame, false);
      return;
    }
    this.setReading(!this.upstreamOver && !this.blocked && this.head === this.backlog.length && this.hasRoom());
  }

  /** Write the decided events at the front; true if one left. */
  private release(): boolean {
    const first = this.slots[0];
    if (this.blocked || first?.verdict === undefined) return false;
    this.slots.shift();
    this.heldBytes -= first.bytes;
    this.budget?.give(first.bytes);
    const v = first.verdict;
    if ('stop' in v) {
      this.finish(v.stop, true);
      return true;
    }
    if (!this.io.write(v.pass)) this.blocked = true;
    return true;
  }

  private hasRoom(): boolean {
    return this.slots.length === 0 || (this.slots.length < this.size && this.heldBytes < this.maxBytes);
  }

  /** Start the decision of the next backlog event if the window has room (and it holds a place); true if one was admitted. */
  private admit(): boolean {
    if (this.head === this.backlog.length || !this.hasRoom() || !this.holdPlace()) return false;
    const ev = this.backlog[this.head] as T;
    this.backlog[this.head++] = undefined;
    if (this.head === this.backlog.length) {
      this.backlog = [];
      this.head = 0;
    }
    const bytes = this.io.bytes(ev);
    if (this.budget !== undefined && !this.budget.take(bytes)) {
      // Over the in-flight budget: this event is where the stream stops (rule 4), never judged.
      this.releaseUnusedPlace();
      this.upstreamOver = true;
      this.backlog = [];
      this.head = 0;
      // The agent is no longer read; it is aborted when the stop leaves (after the events before it).
      this.slots.push({ bytes: 0, verdict: { stop: this.budget.refused() }, placed: false });
      return true;
    }
    const slot: Slot<S> = { bytes, verdict: undefined, placed: this.place };
    this.place = false;
    this.slots.push(slot);
    this.heldBytes += slot.bytes;
    if (this.slots.length > this.peakAdmitted) this.peakAdmitted = this.slots.length;
    let result: Verdict<S> | Promise<Verdict<S>>;
    try {
      result = this.io.decide(ev);
    } catch (err) {
      result = { stop: this.io.failure(err) };
    }
    if (!isPromise(result)) {
      this.givePlaceBack(slot);
      slot.verdict = result;
      return true;
    }
    result.then(
      (v) => this.decided(slot, v),
      (err: unknown) => this.decided(slot, { stop: this.io.failure(err) }),
    );
    return true;
  }

  /** True when no line is used, or a place is held for the next event; else asks for one (once). */
  private holdPlace(): boolean {
    if (this.line === undefined || this.place) return true;
    if (this.askingForPlace) return false;
    const entered = this.line.enter(this.gone);
    if (entered === true) return (this.place = true);
    this.askingForPlace = true;
    entered.then(
      (ok) => {
        this.askingForPlace = false;
        if (!ok) return;
        this.place = true;
        if (this.over) this.releaseUnusedPlace();
        else this.pump();
      },
      () => undefined,
    );
    return false;
  }

  private givePlaceBack(slot: Slot<S>): void {
    if (!slot.placed) return;
    slot.placed = false;
    this.line?.leave();
  }

  private releaseUnusedPlace(): void {
    if (!this.place) return;
    this.place = false;
    this.line?.leave();
  }

  private decided(slot: Slot<S>, v: Verdict<S>): void {
    // The place goes back as soon as the decision is known, even one that comes after the end.
    this.givePlaceBack(slot);
    if (this.over) return; // stopped or caller gone: the answer is ignored
    slot.verdict = v;
    this.pump();
  }

  private finish(frame: S | undefined, abort: boolean): void {
    this.over = true;
    this.drop();
    this.io.end(frame);
    if (abort) this.io.abort();
  }

  private drop(): void {
    // Places come back now: those of undecided events (their decisions are being cancelled) and an unused one.
    for (const slot of this.slots) this.givePlaceBack(slot);
    this.releaseUnusedPlace();
    this.gone.cancel();
    this.backlog = [];
    this.head = 0;
    this.slots.length = 0;
    this.budget?.give(this.heldBytes);
    this.heldBytes = 0;
  }

  private setReading(reading: boolean): void {
    if (reading === this.reading) return;
    this.reading = reading;
    this.io.flow(reading);
  }
}
