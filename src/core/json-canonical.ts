/**
 * A JSON value's serialization (JSON.stringify's, to the byte) walked a piece at a time, with a turn of the event
 * loop (`turn`) every PIECE characters: compared with a text (isCanonicalJson), or written (stringifyInPieces).
 * Serializing a 9 MiB call whole is one ~60 ms task and a 9 MiB allocation at once; here the pieces are small
 * (long strings and keys in slices of STRING_SLICE). A string the piecewise parser already compared
 * (json-pieces.ts) is skipped by its position.
 */
import type { LongString } from './json-pieces';

/** Characters walked between two turns. */
const PIECE = 256 * 1024;
/** A long string is serialized this many characters at a time (a young-generation allocation, not a large object). */
const STRING_SLICE = 32 * 1024;

type Frame =
  | { readonly items: readonly unknown[]; i: number }
  | { readonly obj: Record<string, unknown>; readonly keys: readonly string[]; i: number; keyDone: boolean; written: number }
  | { readonly strs: readonly string[]; s: number; i: number; carry: string };

/**
 * `value` must be what `JSON.parse(bytes.toString())` returned (finite numbers, plain objects and arrays, no
 * `toJSON` functions), and `longStrings` what parseJsonInPieces said of its strings: then true means the UTF-8
 * encoding of `JSON.stringify(value)` is exactly `bytes`.
 */
export async function isCanonicalJson(bytes: Buffer, value: unknown, turn: () => Promise<void>, longStrings: readonly LongString[] = []): Promise<boolean> {
  const c = new Comparison(bytes, longStrings);
  return (await walk(c, value, turn)) && c.at === bytes.length;
}

/**
 * The UTF-8 bytes of JSON.stringify(value), made a piece per turn (never a text of the whole: the bytes are what
 * the guardian and the agent get); the long strings parseJsonInPieces decoded (`longStrings`) are written from
 * their pieces. undefined for a value left to JSON.stringify: one with a `toJSON`, a boxed primitive, a class
 * instance, a bigint.
 */
export async function stringifyInPieces(value: unknown, turn: () => Promise<void>, longStrings: readonly LongString[] = []): Promise<Buffer | undefined> {
  const w = new Writer(longStrings);
  try {
    if (value === undefined || w.skipped(value) || !(await walk(w, value, turn))) return undefined;
  } catch (e) {
    if (e instanceof NotPlain) return undefined;
    throw e;
  }
  const chunks = w.end();
  const bytes = Buffer.allocUnsafeSlow(chunks.reduce((n, c) => n + Buffer.byteLength(c, 'utf8'), 0));
  let at = 0;
  for (const chunk of chunks) {
    await turn();
    at += bytes.write(chunk, at, 'utf8');
  }
  return bytes;
}

/** The serialization of `value` put to `sink` piece by piece; false as soon as the sink refuses a piece. */
async function walk(sink: Walk, value: unknown, turn: () => Promise<void>): Promise<boolean> {
  const stack: Frame[] = [];
  if (!sink.value(value, stack)) return false;
  while (stack.length > 0) {
    if (sink.pending >= PIECE) {
      sink.pending = 0;
      await turn();
    }
    if (!sink.step(stack)) return false;
  }
  return true;
}

/** A value JSON.stringify would serialize otherwise than this walk does. */
class NotPlain extends Error {}

abstract class Walk {
  pending = 0;

  /** The next piece of the serialization; false: stop here. */
  abstract match(piece: string): boolean;

  /** A long string the sink has judged already (a comparison's parser compared it): its verdict; undefined: walk it. */
  protected checked(_s: string): boolean | undefined {
    return undefined;
  }

  /** A long string's pieces, when the sink has them (`holder[key]`, as the parser decoded it): walked instead of slices of it. */
  protected piecesOf(_s: string, _holder: object | undefined, _key: string | number | undefined): readonly string[] | undefined {
    return undefined;
  }

  /** A value JSON.stringify leaves out of an object and writes as null in an array (undefined, a function, a symbol). */
  skipped(_v: unknown): boolean {
    return false;
  }

  /** One element or member of the innermost open container, or its end. */
  step(stack: Frame[]): boolean {
    const f = stack[stack.length - 1] as Frame;
    if ('strs' in f) return this.slice(f, stack);
    if ('items' in f) {
      if (f.i === f.items.length) {
        stack.pop();
        return this.match(']');
      }
      if (f.i > 0 && !this.match(',')) return false;
      const at = f.i++;
      const item = f.items[at];
      return this.value(this.skipped(item) ? null : item, stack, f.items, at);
    }
    if (f.keyDone) {
      // A long key was compared in slices: now its value.
      f.keyDone = false;
      const long = f.keys[f.i - 1] as string;
      return this.match(':') && this.value(f.obj[long], stack, f.obj, long);
    }
    while (f.i < f.keys.length && this.skipped(f.obj[f.keys[f.i] as string])) f.i++;
    if (f.i === f.keys.length) {
      stack.pop();
      return this.match('}');
    }
    const key = f.keys[f.i++] as string;
    if (f.written++ > 0 && !this.match(',')) return false;
    if (key.length > STRING_SLICE) {
      f.keyDone = true;
      return this.value(key, stack);
    }
    return this.match(JSON.stringify(key)) && this.match(':') && this.value(f.obj[key], stack, f.obj, key);
  }

  /** A scalar now; a container opened (its contents come by `step`). */
  value(v: unknown, stack: Frame[], holder?: object, key?: string | number): boolean {
    if (typeof v === 'string') {
      if (v.length <= STRING_SLICE) return this.match(JSON.stringify(v));
      const verdict = this.checked(v);
      if (verdict !== undefined) return verdict;
      // A long string is walked a slice per step (of its parser's pieces, if it has them: a string joined from
      // pieces is not sliced whole, which would copy it in one piece), so the turns come between its slices too.
      stack.push({ strs: this.piecesOf(v, holder, key) ?? [v], s: 0, i: 0, carry: '' });
      return this.match('"');
    }
    if (Array.isArray(v)) {
      stack.push({ items: v, i: 0 });
      return this.match('[');
    }
    if (typeof v === 'object' && v !== null) {
      const obj = v as Record<string, unknown>;
      stack.push({ obj, keys: Object.keys(obj), i: 0, keyDone: false, written: 0 });
      return this.match('{');
    }
    // undefined for what JSON.parse never gives (undefined, a function): no serialization to match.
    const text = JSON.stringify(v) as string | undefined;
    return text !== undefined && this.match(text);
  }

  /** The next slice of a long string (its pieces in turn), or its end. */
  private slice(f: { readonly strs: readonly string[]; s: number; i: number; carry: string }, stack: Frame[]): boolean {
    const str = f.strs[f.s];
    if (str === undefined) {
      stack.pop();
      return this.match(f.carry === '' ? '"' : `${quotedInner(f.carry)}"`);
    }
    let end = Math.min(str.length, f.i + STRING_SLICE);
    // A surrogate pair is never cut: each half alone would be escaped (`\ud83d`), unlike the pair. A high
    // surrogate that ends a slice goes with the next one, the next piece's first if it ends its piece.
    let carry = '';
    const last = str.charCodeAt(end - 1);
    if (last >= 0xd800 && last <= 0xdbff && (end < str.length || f.s + 1 < f.strs.length)) {
      end--;
      if (end + 1 === str.length) carry = str.slice(end);
    }
    const text = f.carry + str.slice(f.i, end);
    f.carry = carry;
    if (end + carry.length === str.length) {
      f.s++;
      f.i = 0;
    } else f.i = end;
    return this.match(quotedInner(text));
  }
}

/** `s` as JSON.stringify writes it, without its quotes. */
function quotedInner(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

/** The walk compared with a text's UTF-8 bytes, in place. */
class Comparison extends Walk {
  at = 0;
  /** The next of `longStrings` that may still come. */
  private nextLong = 0;

  constructor(
    private readonly bytes: Buffer,
    private readonly longStrings: readonly LongString[],
  ) {
    super();
  }

  /** The next bytes of the text are `piece`'s UTF-8 encoding. */
  match(piece: string): boolean {
    const b = this.bytes;
    const at = this.at;
    const n = piece.length;
    for (let i = 0; i < n; i++) {
      const c = piece.charCodeAt(i);
      if (c >= 0x80) return this.matchEncoded(piece, i);
      if (b[at + i] !== c) return false;
    }
    this.at = at + n;
    this.pending += n;
    return true;
  }

  /** `s` is the long string the parser decoded at this place: its verdict, with the place after it. */
  protected override checked(s: string): boolean | undefined {
    const list = this.longStrings;
    while (this.nextLong < list.length && (list[this.nextLong] as LongString).start < this.at) this.nextLong++;
    const known = list[this.nextLong];
    // Normally the very string the parser made (V8 then answers at once); another of the same length is compared whole.
    if (known === undefined || known.start !== this.at || known.str !== s) return undefined;
    this.nextLong++;
    if (!known.canonical) return false;
    this.pending += known.end - known.start;
    this.at = known.end;
    return true;
  }

  /** `piece` from its first non-ASCII character at `from`, encoded and compared. */
  private matchEncoded(piece: string, from: number): boolean {
    const tail = Buffer.from(piece.slice(from), 'utf8');
    const at = this.at + from;
    if (at + tail.length > this.bytes.length || this.bytes.compare(tail, 0, tail.length, at, at + tail.length) !== 0) return false;
    this.at = at + tail.length;
    this.pending += piece.length;
    return true;
  }
}

/** The walk written: JSON.stringify's pieces, joined into chunks of about PIECE characters. */
class Writer extends Walk {
  private readonly chunks: string[] = [];
  private parts: string[] = [];
  private size = 0;
  /** The parser's long strings by the object holding them. */
  private readonly held = new Map<object | undefined, LongString[]>();

  constructor(longStrings: readonly LongString[]) {
    super();
    for (const l of longStrings) {
      const list = this.held.get(l.holder);
      if (list === undefined) this.held.set(l.holder, [l]);
      else list.push(l);
    }
  }

  /** A string the parser decoded in pieces: its pieces (the last one decoded at that place, as a duplicate key's value is). */
  protected override piecesOf(s: string, holder: object | undefined, key: string | number | undefined): readonly string[] | undefined {
    const list = this.held.get(holder);
    if (list === undefined) return undefined;
    for (let i = list.length - 1; i >= 0; i--) {
      const l = list[i] as LongString;
      if (l.key === key) return l.str === s ? l.pieces : undefined;
    }
    return undefined;
  }

  match(piece: string): boolean {
    this.parts.push(piece);
    this.size += piece.length;
    this.pending += piece.length;
    if (this.size >= PIECE) this.flush();
    return true;
  }

  override skipped(v: unknown): boolean {
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') return true;
    if (typeof v === 'bigint') throw new NotPlain();
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const proto: unknown = Object.getPrototypeOf(v);
      if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === 'function') throw new NotPlain();
    }
    return false;
  }

  end(): string[] {
    this.flush();
    return this.chunks;
  }

  private flush(): void {
    if (this.parts.length > 0) this.chunks.push(this.parts.join(''));
    this.parts = [];
    this.size = 0;
  }
}
