/**
 * Work on a large request is split over turns of the event loop, so one caller's 9 MiB body never
 * holds the proxy for the whole of its handling: each copy, scan or parse of it runs in a task of its
 * own, and other callers' work runs between them (docs/performance.md, "One hostile request's longest task").
 */
import type { FairQueue, Leaving } from './fair-queue';
import { monotonicMs } from './clock';

/** Bodies (JSON text, in bytes or characters) at least this large get a turn between the costly steps of their handling. */
export const LARGE_BODY = 256 * 1024;

/** Resolves once the event loop has polled for I/O (other callers' work runs first). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Bytes made as they are written, a slice at a time (a request held as its parsed strings: json-spliced.ts); `length` is known before. */
export interface LazyBytes {
  readonly length: number;
  /** The bytes in order, made afresh on each call. */
  slices(): Iterable<Buffer>;
}

/** Bytes to send: one buffer, or bytes made as they are written. */
export type WireBytes = Buffer | LazyBytes;

/**
 * A large body to write as slices, one per turn (a buffer's are views of it, no copy): a socket write of 9 MiB
 * copies it all into the kernel at once (~100 ms on a busy machine).
 */
export function sliceInTurns(body: WireBytes, slice = LARGE_BODY): AsyncGenerator<Buffer> {
  return inTurns(Buffer.isBuffer(body) ? viewSlices(body, slice) : body.slices());
}

/** `items` one per turn of the event loop. */
export async function* inTurns<T>(items: Iterable<T>): AsyncGenerator<T> {
  let first = true;
  for (const item of items) {
    if (!first) await nextTurn();
    first = false;
    yield item;
  }
}

/** Views of `body`, `slice` bytes each. */
export function* viewSlices(body: Buffer, slice = LARGE_BODY): Generator<Buffer> {
  for (let at = 0; at < body.length; at += slice) yield body.subarray(at, at + slice);
}

/** The bytes in one buffer: a buffer itself, lazy bytes made whole (a copy: for what must have them so, a debug log). */
export function wholeBytes(body: WireBytes): Buffer {
  return Buffer.isBuffer(body) ? body : Buffer.concat([...body.slices()], body.length);
}

/**
 * The next costly step of a large body waits for this: a turn once the loop has polled for I/O, in its
 * caller's round-robin order, so a caller's large bodies take one step per round however many it sends at once. It
 * resolves when the caller left too (the step's call stops at its next check), still after the loop polled: a body
 * handled in pieces never runs its remaining pieces in one task because its caller went away.
 */
export function largeTurn(fair: FairQueue | undefined, key: string, caller: Leaving): Promise<void> {
  return fair === undefined ? nextTurn() : fair.later(key, caller).then((granted) => (granted ? undefined : nextTurn()));
}

/** A source of chunks that can stop being read (a request, the agent's answer). */
export interface Pausable {
  pause(): unknown;
  resume(): unknown;
}

/**
 * Reading a socket `slice` bytes per turn: after each slice, `source` is paused until `turn` resolves. libuv reads up
 * to 32 x 64 KiB of a socket per loop iteration, and each chunk is copied where it is kept (fresh pages): two callers'
 * 9 MiB uploads held the loop for 25-37 ms per iteration, in front of every other caller's work. `chunk` is told each
 * chunk's length; `waitedMs` is the time spent waiting for turns (the proxy's, not the sender's), the wait under way
 * included.
 */
export function readInTurns(
  source: Pausable,
  turn: () => Promise<void>,
  stopped: () => boolean,
  slice = LARGE_BODY,
): { chunk(length: number): void; readonly waitedMs: number } {
  let since = 0;
  let waitedMs = 0;
  /** When the turn waited for now was asked for: a rate checked meanwhile does not count that wait either. */
  let waitingSince: number | undefined;
  return {
    chunk(length) {
      since += length;
      if (since < slice) return;
      since = 0;
      source.pause();
      const from = monotonicMs();
      waitingSince = from;
      void turn().then(() => {
        waitedMs += monotonicMs() - from;
        waitingSince = undefined;
        if (!stopped()) source.resume();
      });
    },
    get waitedMs() {
      return waitingSince === undefined ? waitedMs : waitedMs + monotonicMs() - waitingSince;
    },
  };
}

/** Characters encoded between two turns by utf8InTurns. */
const ENCODE_SLICE = 1024 * 1024;

/**
 * `text`'s UTF-8 bytes, encoded a slice per turn into one buffer (`Buffer.from` of 9 MiB is one ~45 ms task here).
 * A surrogate pair is never cut: a half alone would be encoded as U+FFFD.
 */
export async function utf8InTurns(text: string, turn: () => Promise<void>): Promise<Buffer> {
  const out = Buffer.allocUnsafeSlow(Buffer.byteLength(text, 'utf8'));
  let written = 0;
  for (let at = 0; at < text.length;) {
    if (at > 0) await turn();
    let end = Math.min(text.length, at + ENCODE_SLICE);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    written += out.write(text.slice(at, end), written, 'utf8');
    at = end;
  }
  return written === out.length ? out : out.subarray(0, written);
}

/**
 * `bytes` (valid UTF-8) decoded a slice per turn, the slices joined into one string without a copy of the whole
 * (`toString` of 9 MiB is one ~40 ms task here). A slice never ends inside a UTF-8 sequence.
 */
export async function utf8TextInTurns(bytes: Buffer, turn: () => Promise<void>): Promise<string> {
  if (bytes.length < LARGE_BODY) return bytes.toString();
  let text = '';
  for (let at = 0; at < bytes.length;) {
    if (at > 0) await turn();
    let end = Math.min(bytes.length, at + ENCODE_SLICE);
    while (end < bytes.length && end > at && ((bytes[end] as number) & 0xc0) === 0x80) end--;
    text += bytes.toString('utf8', at, end);
    at = end;
  }
  return text;
}

/**
 * Work run one at a time per key (a caller's large bodies read one after another), other keys' side by side, in the
 * order asked. A key with nothing running or waiting holds no entry.
 */
export class OnePerKey {
  private readonly last = new Map<string, Promise<void>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.last.get(key);
    let done = (): void => undefined;
    const mine = new Promise<void>((resolve) => (done = resolve));
    this.last.set(key, mine);
    try {
      if (before !== undefined) await before;
      return await work();
    } finally {
      done();
      if (this.last.get(key) === mine) this.last.delete(key);
    }
  }
}
