/**
 * A large JSON text (UTF-8 bytes) parsed a piece at a time, with a turn of the event loop between pieces:
 * the value is exactly `JSON.parse(bytes.toString())`'s, but no task decodes or parses more than about
 * PIECE bytes. One `JSON.parse` of 9 MiB is a single task (~40 ms here, and ~100 ms when its 100,000 small
 * values are scavenged at once); in pieces, each task allocates little and the young generation is
 * collected between them.
 *
 * Runs of whole elements or members that fit in PIECE bytes go to the native `JSON.parse` (which also
 * checks their syntax); a container too large for that is opened here and filled run by run; a string too
 * large is decoded in slices (never cut inside an escape or a UTF-8 sequence) into one string. Anything else
 * (a number or a key of PIECE bytes, a BOM, text after the value, bad syntax) gives up: the caller parses the
 * whole text as before, so a text JSON.parse refuses is never given a value here.
 */
import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE, isJsonSpace } from './json-bytes';

export interface PieceSizes {
  /** Bytes parsed between two turns. */
  readonly piece: number;
  /** Bytes of a long string decoded at once. */
  readonly stringPiece: number;
}

const SIZES: PieceSizes = { piece: 256 * 1024, stringPiece: 256 * 1024 };

/** A string decoded in slices: where its token lies, and whether the token is its JSON.stringify. */
export interface LongString {
  readonly str: string;
  /** Byte offsets of the token, quotes included. */
  readonly start: number;
  readonly end: number;
  readonly canonical: boolean;
  /** Its decoded slices, in order (`str` is them joined): serialized one by one, the whole is never flattened. */
  readonly pieces: readonly string[];
  /** The bytes of the token each piece was decoded from (its quotes aside, they add up to `end - start - 2`). */
  readonly sizes: readonly number[];
  /** Whether each piece's token bytes held no escape (they are then the piece's own UTF-8). */
  readonly plain: readonly boolean[];
  /** The array or object holding it, and its index or key there (none: the whole text is this string). */
  holder?: object;
  key?: string | number;
}

export interface PiecewiseJson {
  readonly value: unknown;
  /** The strings decoded in slices, in the order of the text (json-canonical.ts skips them by position). */
  readonly longStrings: readonly LongString[];
}

type Frame = { readonly arr: unknown[]; first: boolean } | { readonly obj: Record<string, unknown>; first: boolean };

class GiveUp extends Error {}
/** The text is not JSON: a run JSON.parse refused, an unterminated string, text after the value, a missing comma or colon. */
class NotJson extends Error {}

/** A character JSON strings may not hold unescaped. */
const CONTROL = /[\u0000-\u001f]/;

/**
 * `bytes` must be valid UTF-8. undefined: not parsed here (see the header); parse the whole text instead.
 * 'not json': JSON.parse would refuse the text, which begins (after JSON whitespace) with `[` or `{`. Its boundaries
 * are exact on any JSON text, so a run JSON.parse refuses is a text it refuses whole; it is not parsed again.
 */
export async function parseJsonInPieces(bytes: Buffer, turn: () => Promise<void>, sizes: PieceSizes = SIZES): Promise<PiecewiseJson | 'not json' | undefined> {
  const p = new Pieces(bytes, turn, sizes);
  try {
    const value = await p.run();
    return { value, longStrings: p.longStrings };
  } catch (e) {
    if (e instanceof NotJson || e instanceof SyntaxError) return p.container ? 'not json' : undefined;
    if (e instanceof GiveUp) return undefined;
    throw e;
  }
}

/**
 * Where a JSON text's value lies: past its leading and before its trailing JSON whitespace, found a piece per turn.
 * JSON.parse reads the text between as it reads the whole (its whitespace is skipped, a refusal is a refusal).
 */
export async function withoutJsonSpace(bytes: Buffer, turn: () => Promise<void>, piece = SIZES.piece): Promise<readonly [number, number]> {
  let from = 0;
  let to = bytes.length;
  while (from < to && isJsonSpace(bytes[from])) if (++from % piece === 0) await turn();
  while (to > from && isJsonSpace(bytes[to - 1])) if (--to % piece === 0) await turn();
  return [from, to];
}

/** An own data member, as JSON.parse makes it (`__proto__` too: an assignment would set the prototype). */
function setMember(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

class Pieces {
  at = 0;
  /** The text's value is an array or an object (opened after JSON whitespace only). */
  container = false;
  /** Bytes handled since the last turn. */
  private since = 0;
  /** containerEnd's scan: where it stopped, the containers open there (their starts), and whether in a string. */
  private readonly scan = { at: 0, open: [] as number[], inString: false };
  readonly longStrings: LongString[] = [];

  constructor(
    private readonly b: Buffer,
    private readonly turn: () => Promise<void>,
    private readonly sizes: PieceSizes,
  ) {}

  async run(): Promise<unknown> {
    const stack: Frame[] = [];
    await this.space();
    const root = await this.open(stack);
    this.container = stack.length > 0;
    while (stack.length > 0) {
      if (this.since >= this.sizes.piece) {
        this.since = 0;
        await this.turn();
      }
      await this.step(stack);
    }
    await this.space();
    if (this.at !== this.b.length) throw new NotJson();
    return root;
  }

  /** In the innermost container: its end, or a run of elements, or one large element opened. */
  private async step(stack: Frame[]): Promise<void> {
    const f = stack[stack.length - 1] as Frame;
    const b = this.b;
    await this.space();
    const close = 'arr' in f ? CLOSE_ARRAY : CLOSE_OBJECT;
    if (b[this.at] === close) {
      this.at++;
      this.since++;
      stack.pop();
      return;
    }
    if (!f.first) {
      if (b[this.at] !== COMMA) throw new NotJson();
      this.at++;
      await this.space();
    }
    f.first = false;
    const arr = 'arr' in f ? f.arr : undefined;
    const obj = 'obj' in f ? f.obj : undefined;
    if (this.batch(arr, obj)) return;
    // What is left of this piece is too short for the next element: a whole piece after a turn may not be.
    if (this.since > 0) {
      this.since = 0;
      await this.turn();
      if (this.batch(arr, obj)) return;
    }
    if (arr !== undefined) {
      const at = arr.length;
      arr.push(await this.open(stack));
      this.held(arr, at);
      return;
    }
    const key = await this.key();
    setMember(obj as Record<string, unknown>, key, await this.open(stack));
    this.held(obj as object, key);
  }

  /**
   * The elements (or members) from here that fit in what is left of this piece, parsed natively into `arr` (or
   * `obj`); false when not even the first fits.
   */
  private batch(arr: unknown[] | undefined, obj: Record<string, unknown> | undefined): boolean {
    const b = this.b;
    const start = this.at;
    const limit = Math.min(b.length, start + Math.max(1, this.sizes.piece - this.since));
    let end = this.element(start, limit, obj !== undefined);
    if (end < 0) return false;
    for (;;) {
      const comma = this.skipSpace(end, limit);
      if (b[comma] !== COMMA || comma >= limit) break;
      const next = this.element(this.skipSpace(comma + 1, limit), limit, obj !== undefined);
      if (next < 0) break;
      end = next;
    }
    const text = b.toString('utf8', start, end);
    if (arr !== undefined) {
      const items = JSON.parse(`[${text}]`) as unknown[];
      for (const item of items) arr.push(item);
    } else {
      const members = JSON.parse(`{${text}}`) as Record<string, unknown>;
      for (const key of Object.keys(members)) setMember(obj as Record<string, unknown>, key, members[key]);
    }
    this.since += end - start;
    this.at = end;
    return true;
  }

  /** The end of the element (or `"key": value` member) at `i`, if it ends before `limit`; else -1. */
  private element(i: number, limit: number, member: boolean): number {
    if (!member) {
      const end = this.valueEnd(i, limit);
      return end === i ? -1 : end;
    }
    const keyEnd = this.valueEnd(i, limit);
    if (keyEnd <= i) return -1;
    const colon = this.skipSpace(keyEnd, limit);
    if (this.b[colon] !== COLON || colon >= limit) return -1;
    const value = this.skipSpace(colon + 1, limit);
    const end = this.valueEnd(value, limit);
    return end === value ? -1 : end;
  }

  /** The end of the value at `i` if it ends before `limit`; else -1. Lenient: JSON.parse checks what it spans. */
  private valueEnd(i: number, limit: number): number {
    const b = this.b;
    return b[i] === OPEN_ARRAY || b[i] === OPEN_OBJECT ? this.containerEnd(i, limit) : this.scanEnd(i, limit);
  }

  /** valueEnd's scan from `i`, with nothing known of the text. */
  private scanEnd(i: number, limit: number): number {
    const b = this.b;
    let depth = 0;
    for (; i < limit; i++) {
      const c = b[i];
      if (c === QUOTE) {
        for (i++; i < limit; i++) {
          const d = b[i];
          if (d === QUOTE) break;
          if (d === BACKSLASH) i++;
        }
        if (i >= limit) return -1;
        if (depth === 0) return i + 1;
      } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) depth++;
      else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
        if (depth === 0) return i;
        if (--depth === 0) return i + 1;
      } else if (depth === 0 && (c === COMMA || c === COLON || isJsonSpace(c))) return i;
    }
    return -1;
  }

  /**
   * The end of the container at `start` if it ends before `limit`; else -1. A scan stopped by its limit is resumed
   * where it stopped, never repeated: each container of a chain nested inside ones larger than a piece
   * (`[1,[1,[1,...`) would otherwise cost a piece of scanning, depth times the body's size in all.
   */
  private containerEnd(start: number, limit: number): number {
    const s = this.scan;
    let k = start < s.at ? s.open.lastIndexOf(start) : -1;
    if (k < 0) {
      // Closed before where the last scan stopped (so within reach), or not seen by it: scanned afresh.
      if (start < s.at) return this.scanEnd(start, limit);
      s.open.length = 0;
      s.at = start;
      s.inString = false;
      k = 0;
    }
    const b = this.b;
    const open = s.open;
    let inString = s.inString;
    let i = s.at;
    for (; i < limit; i++) {
      const c = b[i];
      if (inString) {
        if (c === BACKSLASH) i++;
        else if (c === QUOTE) inString = false;
      } else if (c === QUOTE) inString = true;
      else if (c === OPEN_ARRAY || c === OPEN_OBJECT) open.push(i);
      else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
        open.pop();
        if (open.length === k) {
          s.at = i + 1;
          s.inString = false;
          return i + 1;
        }
      }
    }
    // Past `limit` when it cut an escape: the escaped byte is read already.
    s.at = i;
    s.inString = inString;
    return -1;
  }

  /** A large member's key (one of a piece or more decoded as a long string), and its colon. */
  private async key(): Promise<string> {
    const start = this.at;
    if (this.b[start] !== QUOTE) throw new NotJson();
    const end = this.valueEnd(start, Math.min(this.b.length, start + this.sizes.piece));
    const key = end < 0 ? await this.longString() : (JSON.parse(this.b.toString('utf8', start, end)) as unknown);
    if (typeof key !== 'string') throw new NotJson();
    if (end >= 0) this.at = end;
    this.since += this.at - start;
    await this.space();
    if (this.b[this.at] !== COLON) throw new NotJson();
    this.at++;
    this.since++;
    await this.space();
    return key;
  }

  /** The long string just decoded (if it was one) is held at `holder[key]`. */
  private held(holder: object, key: string | number): void {
    const last = this.longStrings[this.longStrings.length - 1];
    if (last !== undefined && last.end === this.at && last.holder === undefined) {
      last.holder = holder;
      last.key = key;
    }
  }

  /** A value too large for one piece: a container opened (filled by `step`), or a long string decoded. */
  private async open(stack: Frame[]): Promise<unknown> {
    const c = this.b[this.at];
    if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      this.at++;
      this.since++;
      if (c === OPEN_ARRAY) {
        const arr: unknown[] = [];
        stack.push({ arr, first: true });
        return arr;
      }
      const obj: Record<string, unknown> = {};
      stack.push({ obj, first: true });
      return obj;
    }
    if (c === QUOTE) return this.longString();
    // Where a value must begin: a number or literal longer than a piece is left to JSON.parse; punctuation is no value.
    if (c === undefined || c === CLOSE_ARRAY || c === CLOSE_OBJECT || c === COMMA || c === COLON) throw new NotJson();
    throw new GiveUp();
  }

  /** A string decoded a slice per turn, as one string (the slices joined: no copy of the whole). */
  private async longString(): Promise<string> {
    const b = this.b;
    const start = this.at;
    let from = start + 1;
    let out = '';
    const pieces: string[] = [];
    const sizes: number[] = [];
    const plain: boolean[] = [];
    let canonical = true;
    /** The last slice ended in a high surrogate. */
    let high = false;
    for (;;) {
      const limit = Math.min(b.length, from + this.sizes.stringPiece);
      const slice = b.subarray(from, limit);
      const quote = slice.indexOf(QUOTE);
      const backslash = slice.indexOf(BACKSLASH);
      let i = from;
      let escape = -1;
      if (backslash === -1 || (quote !== -1 && quote < backslash)) i = quote === -1 ? limit : from + quote;
      else {
        for (; i < limit; i++) {
          const d = b[i];
          if (d === QUOTE) break;
          if (d === BACKSLASH) escape = i++;
        }
      }
      const closed = i < limit;
      if (!closed && limit === b.length) throw new NotJson();
      const cut = closed ? i : this.cut(from, limit, escape);
      const raw = b.toString('utf8', from, cut);
      let piece: string;
      const unescaped = backslash === -1 || backslash >= cut - from;
      if (unescaped) {
        // No escape: the text is the string, and its own serialization (a control character JSON.parse refuses, and so does the whole).
        if (CONTROL.test(raw)) throw new NotJson();
        piece = raw;
      } else {
        const quoted = `"${raw}"`;
        piece = JSON.parse(quoted) as string;
        if (canonical && !sameAsStringify(piece, quoted)) canonical = false;
      }
      // A pair cut at a slice's edge was escaped (UTF-8 is never cut), where JSON.stringify writes it as it is. A lone
      // surrogate at an edge is escaped by both, as the slice's comparison found.
      if (canonical && high && startsWithLowSurrogate(piece)) canonical = false;
      high = endsInHighSurrogate(piece);
      out += piece;
      pieces.push(piece);
      sizes.push(cut - from);
      plain.push(unescaped);
      this.since += cut - from;
      if (closed) {
        this.at = cut + 1;
        break;
      }
      from = cut;
      if (this.since >= this.sizes.piece) {
        this.since = 0;
        await this.turn();
      }
    }
    this.longStrings.push({ str: out, start, end: this.at, canonical, pieces, sizes, plain });
    return out;
  }

  /** Where a slice ending near `limit` may be cut: not inside the escape that began at `escape`, nor inside a UTF-8 sequence. */
  private cut(from: number, limit: number, escape: number): number {
    const b = this.b;
    let cut = limit;
    if (escape >= from && escape + (b[escape + 1] === 0x75 ? 6 : 2) > cut) cut = escape;
    while (cut > from && ((b[cut] as number) & 0xc0) === 0x80) cut--;
    if (cut === from) throw new GiveUp();
    return cut;
  }

  /** Past JSON whitespace, a piece per turn: 9 MiB of spaces (a small gzip bomb's) is no one task. */
  private async space(): Promise<void> {
    for (;;) {
      const limit = Math.min(this.b.length, this.at + this.sizes.piece);
      const at = this.skipSpace(this.at, limit);
      this.since += at - this.at;
      this.at = at;
      if (at < limit || at === this.b.length) return;
      this.since = 0;
      await this.turn();
    }
  }

  private skipSpace(i: number, limit: number): number {
    while (i < limit && isJsonSpace(this.b[i])) i++;
    return i;
  }
}

function sameAsStringify(piece: string, quoted: string): boolean {
  return JSON.stringify(piece) === quoted;
}

/** The slice ends in a high surrogate: the next slice may begin with its pair (escaped halves, `\\ud83d` `\\ude00`). */
function endsInHighSurrogate(s: string): boolean {
  const last = s.charCodeAt(s.length - 1);
  return last >= 0xd800 && last <= 0xdbff;
}

function startsWithLowSurrogate(s: string): boolean {
  const first = s.charCodeAt(0);
  return first >= 0xdc00 && first <= 0xdfff;
}
