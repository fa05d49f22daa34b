/**
 * Text as an agent's model reads it, the one form every deny and mask rule of the reference guardian
 * runs on: default-ignorable code points removed (zero-width characters, joiners, variation selectors,
 * tag characters, Hangul fillers, soft hyphen, ...), NFKC (full-width and other compatibility forms),
 * and every Unicode decimal digit (\p{Nd}) read as its ASCII digit.
 *
 * Masks are found on the normalised text and put back onto the original: `normaliseMapped` gives, for
 * each normalised UTF-16 unit, the original range it came from. The text is normalised in pieces (a
 * character with the marks and conjoining characters that can compose with it), each piece on its own,
 * so every normalised unit maps to one piece; test/guardian/normalise.test.ts checks the pieces give what
 * NFKC of the whole text gives. Linear: each character is read once, and each piece is at most 31 code points.
 */

/** Characters that can join the piece before them: marks, and what NFKC turns into a composing or combining character. */
const EXTEND =
  /[\p{M}\u0e33\u0eb3\u1161-\u1175\u11a8-\u11c2\u3133\u3135\u3136\u313a-\u313f\u314f-\u3163\uff9e\uff9f\uffa3\uffa5\uffa6\uffaa-\uffaf\uffc2-\uffc7\uffca-\uffcf\uffd2-\uffd7\uffda-\uffdc\u{16d67}]/u;
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
const DECIMAL = /\p{Nd}/u;

/** Class of a code point: what the normaliser does with it. */
const OTHER = 1;
const IGNORED = 2;
const EXTENDS = 3;
const DIGIT = 4;

/** Classes of BMP code points, filled in as they are met (0: not seen yet); the astral ones in a bounded map. */
const bmpClass = new Uint8Array(0x10000);
const bmpDigit = new Uint8Array(0x10000);
const astral = new Map<number, number>();

function classOf(cp: number): number {
  if (cp < 0x80) return cp >= 0x30 && cp <= 0x39 ? DIGIT : OTHER;
  if (cp < 0x10000) {
    const known = bmpClass[cp]!;
    if (known !== 0) return known;
    const c = classify(cp);
    bmpClass[cp] = c;
    if (c === DIGIT) bmpDigit[cp] = digitValue(cp);
    return c;
  }
  const known = astral.get(cp);
  if (known !== undefined) return known & 7;
  const c = classify(cp);
  const entry = c === DIGIT ? c | (digitValue(cp) << 3) : c;
  if (astral.size < 10_000) astral.set(cp, entry);
  return c;
}

function classify(cp: number): number {
  const ch = String.fromCodePoint(cp);
  if (IGNORABLE.test(ch)) return IGNORED;
  if (EXTEND.test(ch)) return EXTENDS;
  return DECIMAL.test(ch) ? DIGIT : OTHER;
}

/**
 * Unicode encodes each decimal digit set as ten consecutive code points, 0 to 9, sets sometimes side by
 * side (the mathematical digits): the value is the position in the run of digits, modulo 10.
 */
function digitValue(cp: number): number {
  let run = 0;
  while (DECIMAL.test(String.fromCodePoint(cp - run - 1))) run++;
  return run % 10;
}

/** The ASCII digit of a decimal digit code point. */
function asciiDigit(cp: number): number {
  if (cp < 0x80) return cp;
  if (cp < 0x10000) return 0x30 + bmpDigit[cp]!;
  return 0x30 + ((astral.get(cp) ?? DIGIT | (digitValue(cp) << 3)) >> 3);
}

/**
 * A piece holds a base and at most 30 characters after it, as Unicode's stream-safe format (UAX #15)
 * bounds them: ICU reorders a run of marks in quadratic time (a letter with 200,000 marks took 45 s).
 */
const MAX_PIECE = 31;

const NON_ASCII = /[^\x00-\x7f]/;

/**
 * What one BMP code point alone becomes (NFKC, then ignorables dropped and digits read as ASCII), as UTF-16
 * units, remembered: most pieces are one character, and ICU per call costs more than the lookup.
 */
const unitsBmp: (Uint16Array | undefined)[] = [];

function unitsOf(folded: string): Uint16Array {
  const out: number[] = [];
  for (let k = 0; k < folded.length;) {
    const cp = folded.codePointAt(k)!;
    const size = cp > 0xffff ? 2 : 1;
    const c = classOf(cp);
    if (c === DIGIT) out.push(asciiDigit(cp));
    else if (c !== IGNORED) {
      out.push(folded.charCodeAt(k));
      if (size === 2) out.push(folded.charCodeAt(k + 1));
    }
    k += size;
  }
  return Uint16Array.from(out);
}

function bmpUnits(c: number): Uint16Array {
  let units = unitsBmp[c];
  if (units === undefined) unitsBmp[c] = units = unitsOf(String.fromCharCode(c).normalize('NFKC'));
  return units;
}

/** The normalised text alone (deny rules). */
export function normalise(text: string): string {
  return NON_ASCII.test(text) ? normaliseMapped(text).text : text;
}

export interface MappedText {
  readonly text: string;
  /** Original range [from[i], to[i]) of normalised unit i; undefined when the text is its own normal form. */
  readonly from: Int32Array | undefined;
  readonly to: Int32Array | undefined;
}

/** The one unit a BMP code point alone becomes, or -1 (none, several, or a surrogate): remembered. */
const singleBmp = new Int32Array(0x10000).fill(-2);

function singleUnit(c: number): number {
  let u = singleBmp[c]!;
  if (u === -2) {
    const units = c >= 0xd800 && c <= 0xdfff ? undefined : bmpUnits(c);
    singleBmp[c] = u = units !== undefined && units.length === 1 ? units[0]! : -1;
  }
  return u;
}

/** A BMP character that never joins the piece before it, nor lets a later one join (not a mark, not ignorable, no surrogate). */
function isFree(c: number): boolean {
  if (c >= 0xd800 && c <= 0xdfff) return false;
  const k = classOf(c);
  return k === OTHER || k === DIGIT;
}

/** UTF-16 units to a string, in slices small enough for fromCharCode's argument list. */
function unitsToString(units: Uint16Array): string {
  let out = '';
  for (let i = 0; i < units.length; i += 8192) out += String.fromCharCode.apply(null, units.subarray(i, i + 8192) as unknown as number[]);
  return out;
}

/** The normalised units and their origins, grown as needed (NFKC can lengthen a piece: up to 18 units for U+FDFA). */
class MappedUnits {
  buf: Uint16Array;
  from: Int32Array;
  to: Int32Array;
  length = 0;

  constructor(capacity: number) {
    this.buf = new Uint16Array(capacity);
    this.from = new Int32Array(capacity);
    this.to = new Int32Array(capacity);
  }

  one(unit: number, start: number, end: number): void {
    if (this.length === this.buf.length) this.grow();
    const k = this.length++;
    this.buf[k] = unit;
    this.from[k] = start;
    this.to[k] = end;
  }

  all(units: Uint16Array, start: number, end: number): void {
    for (let k = 0; k < units.length; k++) this.one(units[k]!, start, end);
  }

  private grow(): void {
    const cap = this.buf.length * 2;
    const b = new Uint16Array(cap);
    b.set(this.buf);
    this.buf = b;
    const f = new Int32Array(cap);
    f.set(this.from);
    this.from = f;
    const t = new Int32Array(cap);
    t.set(this.to);
    this.to = t;
  }
}

/** The last text normalised (deny rules and masks read the same strings one after the other). */
let last: { readonly text: string; readonly mapped: MappedText } | undefined;

/** Let go of the last normalised text (a large one holds ten bytes per unit). */
export function forgetNormalised(): void {
  last = undefined;
}

/**
 * The normalised text and where each of its units came from. The output is written as UTF-16 units into
 * typed arrays (no string per character: a 9 MiB text made that the garbage collector's work).
 */
export function normaliseMapped(text: string): MappedText {
  if (!NON_ASCII.test(text)) return { text, from: undefined, to: undefined };
  if (last !== undefined && last.text === text) return last.mapped;
  const n = text.length;
  const out = new MappedUnits(n + 16);
  for (let i = 0; i < n;) {
    // The common case: a BMP character that becomes one unit alone, before one that cannot join it.
    const c0 = text.charCodeAt(i);
    const u = c0 < 0x80 ? c0 : singleUnit(c0);
    if (u >= 0) {
      const next = i + 1 < n ? text.charCodeAt(i + 1) : 0x20;
      if (next < 0x80 || isFree(next)) {
        out.one(u, i, i + 1);
        i++;
        continue;
      }
    }
    const cp = text.codePointAt(i)!;
    const size = cp > 0xffff ? 2 : 1;
    if (classOf(cp) === IGNORED) {
      i += size;
      continue;
    }
    // The piece: this character and the characters after it that can compose with it (ignorables skipped).
    let end = i + size;
    let extra = '';
    let count = 1;
    for (let k = end; k < n && count < MAX_PIECE;) {
      const cp2 = text.codePointAt(k)!;
      const size2 = cp2 > 0xffff ? 2 : 1;
      const c2 = classOf(cp2);
      if (c2 === EXTENDS) {
        extra += text.slice(k, k + size2);
        count++;
        end = k + size2;
      } else if (c2 !== IGNORED) break;
      k += size2;
    }
    if (count === 1 && size === 1) out.all(cp < 0x80 ? asciiUnit(cp) : bmpUnits(cp), i, end);
    else out.all(unitsOf((text.slice(i, i + size) + extra).normalize('NFKC')), i, end);
    i = end;
  }
  const mapped = { text: unitsToString(out.buf.subarray(0, out.length)), from: out.from.subarray(0, out.length), to: out.to.subarray(0, out.length) };
  last = { text, mapped };
  return mapped;
}

/** An ASCII character's one unit (ASCII is its own normal form). */
const ASCII_UNITS: readonly Uint16Array[] = Array.from({ length: 0x80 }, (_, c) => Uint16Array.of(c));
const asciiUnit = (c: number): Uint16Array => ASCII_UNITS[c]!;
