/**
 * Bytes gathered up to a limit: what every bounded body read keeps (a request body, an agent card,
 * a guardian answer, an envelope sent to the embedded server). Past the limit nothing more is kept;
 * the reader decides what that means (refuse with 413, abort the download, report "too large").
 */
export class BoundedBytes {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private over = false;

  constructor(readonly limit: number) {}

  /** Keep a chunk. False once the total would pass the limit: that chunk and every later one are dropped. */
  push(chunk: Buffer): boolean {
    if (this.over) return false;
    if (this.size + chunk.length > this.limit) {
      this.over = true;
      return false;
    }
    this.size += chunk.length;
    this.chunks.push(chunk);
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
    return this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
  }

  text(): string {
    return this.buffer().toString('utf8');
  }
}
