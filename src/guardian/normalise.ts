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
const EXTEND = /[\p{M}\u0e33\u0eb3\u1161-\u1175\u11a8-\u11c2\u3133\u3135\u3136\u313a-\u313f\u314f-\u3163\uff9e\uff9f\uffa3\uffa5\uffa6\uffaa-\uffaf\uffc2-\uffc7\uffca-\uffcf\uffd2-\uffd7\uffda-\uffdc\u{16d67}]/u;
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

/** NFKC of one BMP code point, remembered (most pieces are one character; ICU per call costs more than the lookup). */
const foldedBmp: (string | undefined)[] = [];

function foldOne(ch: string): string {
  const c = ch.charCodeAt(0);
  if (c < 0x80) return ch;
  if (ch.length > 1) return ch.normalize('NFKC');
  let folded = foldedBmp[c];
  if (folded === undefined) foldedBmp[c] = folded = ch.normalize('NFKC');
  return folded;
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

/** The normalised text and where each of its units came from. */
export function normaliseMapped(text: string): MappedText {
  if (!NON_ASCII.test(text)) return { text, from: undefined, to: undefined };
  const n = text.length;
  // NFKC can lengthen a piece (up to 18 units for U+FDFA): grow the maps as needed.
  let from = new Int32Array(n + 16);
  let to = new Int32Array(n + 16);
  let out = '';
  let length = 0;
  let pieceStart = -1;
  let pieceEnd = -1;
  let piece = '';
  let pieceCodePoints = 0;

  const emit = (unit: string, start: number, end: number): void => {
    if (length === from.length) {
      const grown = Math.max(16, from.length * 2);
      const f = new Int32Array(grown);
      f.set(from);
      from = f;
      const t = new Int32Array(grown);
      t.set(to);
      to = t;
    }
    out += unit;
    from[length] = start;
    to[length] = end;
    length++;
  };
  const flush = (): void => {
    if (pieceStart < 0) return;
    const folded = pieceCodePoints === 1 ? foldOne(piece) : piece.normalize('NFKC');
    for (let k = 0; k < folded.length; ) {
      const cp = folded.codePointAt(k)!;
      const size = cp > 0xffff ? 2 : 1;
      const c = classOf(cp);
      if (c === DIGIT) emit(String.fromCharCode(asciiDigit(cp)), pieceStart, pieceEnd);
      else if (c !== IGNORED) {
        emit(folded[k]!, pieceStart, pieceEnd);
        if (size === 2) emit(folded[k + 1]!, pieceStart, pieceEnd);
      }
      k += size;
    }
    pieceStart = -1;
    piece = '';
  };

  for (let i = 0; i < n; ) {
    const cp = text.codePointAt(i)!;
    const size = cp > 0xffff ? 2 : 1;
    const c = classOf(cp);
    if (c === IGNORED) {
      i += size;
      continue;
    }
    if (c !== EXTENDS || pieceStart < 0 || pieceCodePoints === MAX_PIECE) {
      flush();
      pieceStart = i;
      pieceCodePoints = 0;
    }
    piece += size === 2 ? text.slice(i, i + 2) : text[i];
    pieceCodePoints++;
    pieceEnd = i + size;
    i += size;
  }
  flush();
  return { text: out, from: from.subarray(0, length), to: to.subarray(0, length) };
}
