/**
 * Bytes gathered up to a limit: what every bounded body read keeps (a request body, an agent card,
 * a guardian answer, an envelope sent to the embedded server). Past the limit nothing more is kept;
 * the reader decides what that means (refuse with 413, abort the download, report "too large").
 *
 * Past GATHER_AT bytes, chunks are copied into one buffer as they arrive, so a large body is never
 * copied whole in one task (9 MiB at once takes ~40 ms on a small machine, mostly the kernel giving fresh pages). That
 * buffer is reserved at the expected size (the declared length, else the limit) and its pages are only
 * taken as they are written: memory grows with the bytes received, not with the reservation. A buffer grown by
 * doubling would copy up to half the limit at once (4 concurrent 9 MiB gzip bombs: a loop delay of 49-101 ms, against
 * 17-55 ms reserved).
 */
const GATHER_AT = 256 * 1024;

/**
 * A gathered body held in more than this many times its size of reservation is copied into a buffer of its own size
 * when it is taken: the copy is at most a quarter of the limit (2.5 MiB of 10 MiB, ~1 ms), and what stays reserved
 * is at most this many times the body.
 */
const SHRINK_PAST = 4;

/**
 * Copies of a request's size a call holds at once while it is judged (the bytes, the parsed request,
 * the guardian's envelope, the agent's request), taken as each byte arrives: a body the budget cannot
 * carry through judging is cut while it is read, never read whole and refused after its parse.
 * A JSON-RPC request forwarded as the caller's own bytes gives one back once read (held spliced: json-spliced.ts).
 * Counted so, 20 concurrent 9 MiB calls peak at 0.44-0.97 bytes of RSS per budget byte (npm run bench:hostile).
 */
export const HELD_COPIES = 3;

export class BoundedBytes {
  private chunks: Buffer[] = [];
  private target: Buffer | undefined;
  /** Chunks were gathered once (after more than announced came, they are kept as they come). */
  private gathered = false;
  private size = 0;
  private over = false;

  /** `expected`: the size announced (a Content-Length), if any. */
  constructor(
    readonly limit: number,
    private readonly expected?: number,
  ) {}

  /** Keep a chunk. False once the total would pass the limit: that chunk and every later one are dropped. */
  push(chunk: Buffer): boolean {
    if (this.over) return false;
    if (this.size + chunk.length > this.limit) {
      this.over = true;
      return false;
    }
    if (this.target !== undefined && this.size + chunk.length <= this.target.length) {
      chunk.copy(this.target, this.size);
      this.size += chunk.length;
      return true;
    }
    if (this.target !== undefined) {
      // More than announced: what came so far is one chunk, the rest are kept as they come.
      this.chunks = [this.target.subarray(0, this.size)];
      this.target = undefined;
    }
    this.size += chunk.length;
    this.chunks.push(chunk);
    if (this.size >= GATHER_AT && this.chunks.length > 1 && !this.gathered) this.gather();
    return true;
  }

  /** Bytes kept so far. */
  get length(): number {
    return this.size;
  }

  /** A push went past the limit. */
  get overflowed(): boolean {
    return this.over;
  }

  /** What was kept as one buffer (the chunk itself when there is only one: no copy). */
  buffer(): Buffer {
    if (this.target !== undefined && this.target.length > SHRINK_PAST * this.size) {
      // A body far smaller than its reservation (no declared length) is copied out, so the reservation is not held
      // with it: a view would keep the whole limit allocated (external memory) while the call is judged.
      const exact = Buffer.allocUnsafeSlow(this.size);
      this.target.copy(exact, 0, 0, this.size);
      this.target = exact;
    }
    if (this.target !== undefined) return this.target.subarray(0, this.size);
    return this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
  }

  text(): string {
    return this.buffer().toString('utf8');
  }

  /** From now on chunks are copied into one buffer as they arrive. */
  private gather(): void {
    const room = Math.min(this.limit, Math.max(this.size, this.expected ?? this.limit));
    const target = Buffer.allocUnsafeSlow(room);
    let at = 0;
    for (const c of this.chunks) at += c.copy(target, at);
    this.chunks = [];
    this.target = target;
    this.gathered = true;
  }
}

/**
 * Give `bytes`' memory back now, not at the next full collection (a body read once and long held is in the old
 * generation: dropped, it stays allocated until then). Its buffer is detached: `bytes` and every view of it read as
 * empty from here on, so only a buffer nothing else reads any more may be given. A buffer that is part of a larger
 * one (a pool slice) is left to the collector.
 */
export function giveBack(bytes: Buffer): void {
  const whole = bytes.buffer;
  if (bytes.byteOffset !== 0 || bytes.byteLength !== whole.byteLength || !(whole instanceof ArrayBuffer)) return;
  try {
    // Moved to a new buffer that nothing holds: the next young-generation collection frees it.
    structuredClone(whole, { transfer: [whole] });
  } catch {
    // Not transferable (a buffer node keeps for itself): the collector frees it in time.
  }
}
