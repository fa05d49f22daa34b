/**
 * A large JSON text's UTF-8 bytes held without a second copy of its long strings (json-pieces.ts decoded them into the
 * parsed value): the byte runs between them are copied out, and each long string's bytes are made again from its
 * decoded pieces as they are written. A 9 MiB message is then held once, as its parsed text, instead of twice (its
 * bytes and its text) while it is judged and forwarded.
 *
 * Only a long string whose token the parser found to be its pieces' own serialization (`canonical`) is spliced: a
 * piece without escapes is its token's UTF-8 exactly (that holds only for valid UTF-8: a body is refused before it is
 * parsed if it is not, a2a/classify.ts), and one with escapes is exactly JSON.stringify's (checked as it was decoded).
 * Every piece made again is checked against its token's length. So the bytes written are the
 * caller's own, byte for byte, every time they are written (the guardian and the agent get the same bytes).
 */
import type { LongString } from './json-pieces';
import { LARGE_BODY, type LazyBytes } from './turns';

/** Bytes of a run copied between two turns. */
const COPY_SLICE = 1024 * 1024;

type Spliced = { readonly pieces: readonly string[]; readonly sizes: readonly number[]; readonly plain: readonly boolean[] };

export class SplicedJson implements LazyBytes {
  private constructor(
    readonly length: number,
    private readonly parts: readonly (Buffer | Spliced)[],
  ) {}

  /**
   * `bytes` held as spliced parts, given what parseJsonInPieces said of its long strings; undefined when there is none,
   * or one is not canonical (its bytes cannot be made again from its pieces). The runs are copied a slice per turn.
   */
  static async from(bytes: Buffer, longStrings: readonly LongString[], turn: () => Promise<void>): Promise<SplicedJson | undefined> {
    if (longStrings.length === 0 || longStrings.some((l) => !l.canonical)) return undefined;
    const parts: (Buffer | Spliced)[] = [];
    let at = 0;
    for (const l of longStrings) {
      // The quotes stay in the runs: a long string's part is its token's inside.
      parts.push(await copied(bytes, at, l.start + 1, turn));
      parts.push({ pieces: l.pieces, sizes: l.sizes, plain: l.plain });
      at = l.end - 1;
    }
    parts.push(await copied(bytes, at, bytes.length, turn));
    return new SplicedJson(bytes.length, parts);
  }

  *slices(): Generator<Buffer> {
    for (const part of this.parts) {
      if (Buffer.isBuffer(part)) {
        for (let at = 0; at < part.length; at += LARGE_BODY) yield part.subarray(at, at + LARGE_BODY);
        continue;
      }
      for (let i = 0; i < part.pieces.length; i++) {
        const piece = part.pieces[i] as string;
        const made = part.plain[i] === true ? Buffer.from(piece, 'utf8') : Buffer.from(JSON.stringify(piece), 'utf8').subarray(1, -1);
        // Never happens for a canonical piece; a wrong length would send other bytes than the caller's.
        if (made.length !== part.sizes[i]) throw new Error('a spliced string did not make its own bytes again');
        if (made.length > 0) yield made;
      }
    }
  }
}

/** `bytes[from, to)` in a buffer of its own (not a view: the caller's buffer is let go). */
async function copied(bytes: Buffer, from: number, to: number, turn: () => Promise<void>): Promise<Buffer> {
  const out = Buffer.allocUnsafeSlow(to - from);
  for (let at = from; at < to; at += COPY_SLICE) {
    if (at > from) await turn();
    bytes.copy(out, at - from, at, Math.min(to, at + COPY_SLICE));
  }
  return out;
}
