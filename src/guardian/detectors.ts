/**
 * The reference guardian's detectors as linear scans, each the exact equivalent of the regular
 * expression named in its comment (test/guardian/detectors-linear.test.ts checks them against those
 * expressions): a native search finds where a match can start (one character and the one before it),
 * code reads the match from there, and the search resumes after it.
 *
 * Work bound: every character is read a bounded number of times, with no allocation per match but the
 * output text: at most DETECTOR_STEP_BOUND[detector] steps per input character, whatever the input
 * (runs of digits and separators, long tokens, many '@' or '+'). `work.steps` counts the steps (a
 * character passed by a search, read by code, or a card window judged), so tests assert the bound
 * without a clock.
 */
import type { Detector } from './policy';

/**
 * Work counters of the reference guardian, for tests that assert its bounds: detector steps
 * (characters read, card windows judged); characters the engine hands to deny matching (after NFKC)
 * and to masking; names tried for masked data keys.
 */
export const work = { steps: 0, denyChars: 0, maskChars: 0, keyNames: 0 };

/**
 * Steps per input character, at most, for one call of a detector (proved in the comment of each
 * scan below; asserted by test/guardian/detectors-linear.test.ts): n characters cost at most
 * bound * n + 8 steps.
 */
export const DETECTOR_STEP_BOUND: Readonly<Record<Detector, number>> = { email: 6, card: 12, nationalId: 16, phone: 24 };

/** Character codes. */
const SPACE = 32;
const PLUS = 43;
const PERCENT = 37;
const L_PAREN = 40;
const R_PAREN = 41;
const DASH = 45;
const DOT = 46;
const ZERO = 48;
const NINE = 57;
const UPPER_A = 65;
const UPPER_D = 68;
const UPPER_Z = 90;
const UNDERSCORE = 95;
const LOWER_A = 97;
const LOWER_Z = 122;

const isDigit = (c: number): boolean => c >= ZERO && c <= NINE;
const isUpper = (c: number): boolean => c >= UPPER_A && c <= UPPER_Z;
const isAlpha = (c: number): boolean => isUpper(c) || (c >= LOWER_A && c <= LOWER_Z);
const isAlnum = (c: number): boolean => isAlpha(c) || isDigit(c);
/** `\w` without the u flag. */
const isWord = (c: number): boolean => isAlnum(c) || c === UNDERSCORE;
/** `[\w.%+-]`: an email's local part. */
const isLocal = (c: number): boolean => isWord(c) || c === DOT || c === PERCENT || c === PLUS || c === DASH;
/** `[A-Za-z0-9-]`: a domain label. */
const isLabel = (c: number): boolean => isAlnum(c) || c === DASH;

/** Characters read by the bounded match attempts (NINO, national phone forms), added to work.steps by their scans. */
let reads = 0;

/** text.charCodeAt(p), counted (NaN past the end: every class test is false for it). */
function code(text: string, p: number): number {
  reads++;
  return text.charCodeAt(p);
}

/** Characters passed by the start searches, added to work.steps by their scans. */
let skipped = 0;

/**
 * Where the next match of `start` (a global expression matching one character, after a one-character
 * lookbehind) is at or after `from`, or the text's length. Native, and allocates nothing.
 */
function nextStart(start: RegExp, text: string, from: number): number {
  start.lastIndex = from;
  const at = start.test(text) ? start.lastIndex - 1 : text.length;
  skipped += at - from + 1;
  return at;
}

/** Where a scan reports its matches: start and end indices, in order, not overlapping. */
export interface MatchSink {
  match(start: number, end: number): void;
}

/** Text out of a scan: the input's slices with replacements, built only when something is replaced. */
class Rewrite implements MatchSink {
  private out = '';
  private from = 0;
  private changed = false;
  constructor(
    private readonly text: string,
    private readonly replacement: string,
  ) {}
  match(start: number, end: number): void {
    this.out += this.text.slice(this.from, start) + this.replacement;
    this.from = end;
    this.changed = true;
  }
  result(): string {
    return this.changed ? this.out + this.text.slice(this.from) : this.text;
  }
}

// ---------------------------------------------------------------------------------------------
// email: /(?<![\w.%+-])[\w.%+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])/g
// ---------------------------------------------------------------------------------------------

/**
 * A match starts a run of local-part characters (no '@' among them, so the run is the whole local
 * part) and needs '@' right after it: so each '@' is tried once, with the run that ends before it
 * (a run that reaches back into the previous match starts nowhere: the expression resumes after a
 * match). The domain is labels of 1-63 characters, each followed by a '.', then a top-level name:
 * the expression's backtracking settles on the last label boundary after which 2-24 letters end the
 * name (followed by neither a word character nor '-').
 * Bound: a character is read once going back over a local run, at most twice in a domain (labels,
 * then the top-level test over the letters of one label), and passed once by the search for '@':
 * <= 6 per character.
 */
function scanEmail(text: string, out: MatchSink): void {
  let q = text.indexOf('@');
  if (q === -1) return;

  let steps = q + 1;
  let from = 0;
  while (q !== -1) {
    let p = q;
    while (p > from && isLocal(text.charCodeAt(p - 1))) {
      p--;
      steps++;
    }
    const starts = p < q && (p === 0 || !isLocal(text.charCodeAt(p - 1)));
    const domain = starts ? scanDomain(text, q + 1) : NO_DOMAIN;
    steps += domain.steps;
    const next = domain.end < 0 ? q + 1 : domain.end;
    if (domain.end >= 0) {
      out.match(p, domain.end);
      from = domain.end;
    }
    q = text.indexOf('@', next);
    steps += (q === -1 ? text.length : q) - next + 1;
  }
  work.steps += steps;
}

const NO_DOMAIN = { end: -1, steps: 0 };
const domainResult = { end: -1, steps: 0 };

/** Where the domain starting at `d` ends for the email expression, or -1. */
function scanDomain(text: string, d: number): { end: number; steps: number } {
  const n = text.length;
  let steps = 0;
  let end = -1;
  let t = d;
  let labels = 0;
  for (;;) {
    // A top-level name at t (after at least one label): the letters there, 2-24 of them, then no word character or '-'.
    if (labels > 0) {
      let a = t;
      while (a < n && a - t <= 24 && isAlpha(text.charCodeAt(a))) {
        a++;
        steps++;
      }
      const len = a - t;
      if (len >= 2 && len <= 24) {
        const next = a < n ? text.charCodeAt(a) : -1;
        steps++;
        if (next === -1 || !(isWord(next) || next === DASH)) end = a;
      }
    }
    // A label at t: 1-63 label characters, alphanumeric at both ends, then '.'.
    let e = t;
    while (e < n && e - t < 64 && isLabel(text.charCodeAt(e))) {
      e++;
      steps++;
    }
    const len = e - t;
    if (len < 1 || len > 63 || e >= n || text.charCodeAt(e) !== DOT) break;
    steps++;
    if (!isAlnum(text.charCodeAt(t)) || !isAlnum(text.charCodeAt(e - 1))) break;
    labels++;
    t = e + 1;
  }
  domainResult.end = end;
  domainResult.steps = steps;
  return domainResult;
}

// ---------------------------------------------------------------------------------------------
// card: runs of /(?<![\d-])\d(?:[ -]?\d)*/g, masked when whole groups of a run form a card number
// ---------------------------------------------------------------------------------------------

/** A digit that starts a run. */
const CARD_START = /(?<![\d-])\d/g;

/** A window of whole groups holds at most 19 digits, so at most 19 groups: the last ones, in a ring (a power of 2). */
const RING = 32;
const RING_MASK = RING - 1;
const groupStart = new Int32Array(RING);
const groupLength = new Int32Array(RING);
/** Luhn sums of a group with its last digit not doubled / doubled. */
const groupSumEven = new Int32Array(RING);
const groupSumOdd = new Int32Array(RING);

/**
 * A run is digit groups joined by one ' ' or '-'. It is masked like this: the longest window of
 * whole groups that is a card number (13-19 digits, Luhn, not starting with 0 or 1), the first such
 * window when several are as long; the whole run when the run itself is one.
 * Each group is read once for its Luhn sums (both parities), and each window is judged from those
 * sums at constant cost; the windows ending at a group start at most 19 groups back.
 * Bound: 1 step per character passed by the search for a run's start, 1 per digit for its sums, 1 per
 * separator, and 19 windows per group, a group and its separator being 2 characters at least: <= 12
 * per character.
 */
function scanCard(text: string, out: MatchSink): void {
  const n = text.length;
  let steps = 0;
  skipped = 0;
  let i = nextStart(CARD_START, text, 0);
  while (i < n) {
    // A run starts at i. Windows: ring of its last groups (at most 19 digits in all).
    let ringFirst = 0; // index (mod RING) of the oldest group kept
    let ringCount = 0;
    let ringDigits = 0;
    let bestStart = -1;
    let bestEnd = -1;
    let bestLength = 0;
    let p = i;
    for (;;) {
      // One group: digits from p.
      let e = p;
      let sumEven = 0; // last digit not doubled
      let sumOdd = 0; // last digit doubled
      while (e < n) {
        const d = text.charCodeAt(e) - ZERO;
        if (d < 0 || d > 9) break;
        steps++;
        // Appending a digit: the digits before it move one place from the end.
        const doubled = d * 2 > 9 ? d * 2 - 9 : d * 2;
        const nextEven = sumOdd + d;
        sumOdd = sumEven + doubled;
        sumEven = nextEven;
        e++;
      }
      const length = e - p;
      if (length > 19) {
        ringCount = 0;
        ringDigits = 0;
      } else {
        const slot = (ringFirst + ringCount) & RING_MASK;
        groupStart[slot] = p;
        groupLength[slot] = length;
        groupSumEven[slot] = sumEven;
        groupSumOdd[slot] = sumOdd;
        ringCount++;
        ringDigits += length;
        while (ringDigits > 19) {
          ringDigits -= groupLength[ringFirst]!;
          ringFirst = (ringFirst + 1) & RING_MASK;
          ringCount--;
        }
        // Windows ending with this group, growing leftwards.
        let digits = 0;
        let sum = 0;
        for (let k = ringCount - 1; k >= 0; k--) {
          const g = (ringFirst + k) & RING_MASK;
          steps++;
          const len = groupLength[g]!;
          // The window's digits after this group decide whether its last digit is doubled.
          sum += (digits & 1) === 0 ? groupSumEven[g]! : groupSumOdd[g]!;
          digits += len;
          if (digits < 13) continue;
          const start = groupStart[g]!;
          const first = text.charCodeAt(start);
          if (first === ZERO || first === ZERO + 1 || sum % 10 !== 0) continue;
          if (digits > bestLength || (digits === bestLength && start < bestStart)) {
            bestLength = digits;
            bestStart = start;
            bestEnd = e;
          }
        }
      }
      // The run goes on with a digit, or with one separator and a digit.
      if (e + 1 < n) {
        const sep = text.charCodeAt(e);
        if ((sep === SPACE || sep === DASH) && isDigit(text.charCodeAt(e + 1))) {
          steps++;
          p = e + 1;
          continue;
        }
      }
      i = nextStart(CARD_START, text, e);
      break;
    }
    if (bestStart >= 0) out.match(bestStart, bestEnd);
  }
  work.steps += steps + skipped;
}

// ---------------------------------------------------------------------------------------------
// nationalId: US SSN /(?<![\w-])(\d{3})-(\d{2})-(\d{4})(?![\w-])/g (never-issued numbers kept),
// then UK NINO /(?<![A-Za-z0-9])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])/g
// ---------------------------------------------------------------------------------------------

/**
 * Bound: 1 step per character passed by the start search; an attempt reads on over digits and '-'
 * only, and the next start comes after the character that stopped it, so attempts read disjoint
 * stretches: <= 3 per character.
 */
function scanSsn(text: string, out: MatchSink): void {
  const n = text.length;
  let steps = 0;
  skipped = 0;
  let i = nextStart(SSN_START, text, 0);
  while (i < n) {
    const end = i + 11;
    let ok = end <= n;
    for (let k = 1; ok && k < 11; k++) {
      steps++;
      const c = text.charCodeAt(i + k);
      ok = k === 3 || k === 6 ? c === DASH : isDigit(c);
    }
    if (ok && end < n) {
      steps++;
      const after = text.charCodeAt(end);
      ok = !(isWord(after) || after === DASH);
    }
    if (!ok) {
      i = nextStart(SSN_START, text, i + 1);
      continue;
    }
    const area = text.slice(i, i + 3);
    // Area 000, 666 and 9xx, group 00 and serial 0000 are never issued: kept, and skipped as a match.
    const issued = area !== '000' && area !== '666' && area[0] !== '9' && text.slice(i + 4, i + 6) !== '00' && text.slice(i + 7, i + 11) !== '0000';
    if (issued) out.match(i, end);
    i = nextStart(SSN_START, text, end);
  }
  work.steps += steps + skipped;
}

/** A digit after no word character or '-'. */
const SSN_START = /(?<![\w-])\d/g;

/** First letter of a NINO: [A-CEGHJ-PR-TW-Z]; second: [A-CEGHJ-NPR-TW-Z]. */
const codes = (letters: string): ReadonlySet<number> => new Set([...letters].map((l) => l.charCodeAt(0)));
const NINO_FIRST = codes('ABCEGHJKLMNOPRSTWXYZ');
const NINO_SECOND = codes('ABCEGHJKLMNPRSTWXYZ');
const NINO_BARRED = new Set(['BG', 'GB', 'NK', 'KN', 'TN', 'NT', 'ZZ']);

/**
 * Bound: 1 step per character passed by the start search; an attempt reads at most 14 characters,
 * and only one other start (the letter after the last optional space) lies among them: <= 5 per
 * character.
 */
function scanNino(text: string, out: MatchSink): void {
  const n = text.length;
  let steps = 0;
  skipped = 0;
  let i = nextStart(NINO_START, text, 0);
  while (i < n) {
    reads = 0;
    const end = ninoEnd(text, i);
    steps += reads;
    if (end < 0) {
      i = nextStart(NINO_START, text, i + 1);
      continue;
    }
    out.match(i, end);
    i = nextStart(NINO_START, text, end);
  }
  work.steps += steps + skipped;
}

/** A capital letter after no letter or digit. */
const NINO_START = /(?<![A-Za-z0-9])[A-Z]/g;

/** End of a NINO starting at i, or -1. Reads <= 14 characters. */
function ninoEnd(text: string, i: number): number {
  const a = code(text, i);
  const b = code(text, i + 1);
  if (!NINO_FIRST.has(a) || !NINO_SECOND.has(b) || NINO_BARRED.has(String.fromCharCode(a, b))) return -1;
  let p = i + 2;
  // ' ?\d{2}' three times: a space is taken when there is one (without it the digit test fails).
  for (let k = 0; k < 3; k++) {
    if (code(text, p) === SPACE) p++;
    if (!(isDigit(code(text, p)) && isDigit(code(text, p + 1)))) return -1;
    p += 2;
  }
  if (code(text, p) === SPACE) p++;
  const last = code(text, p);
  if (!(last >= UPPER_A && last <= UPPER_D)) return -1;
  p++;
  return isAlnum(code(text, p)) ? -1 : p;
}

// ---------------------------------------------------------------------------------------------
// phone: /(?<![\w+])\+\d(?:[ .\-()]{0,2}\d){7,14}(?!\d)/g, then national forms (PHONE_NATIONAL below)
// ---------------------------------------------------------------------------------------------

const isPhoneSep = (c: number): boolean => c === SPACE || c === DOT || c === DASH || c === L_PAREN || c === R_PAREN;
const iterationEnds = new Int32Array(15);

/**
 * After "+digit", each repetition is 0-2 separators and a digit (separators are no digits, so each
 * repetition is the only one possible); the expression then backs off from 14 repetitions to the
 * last one not followed by a digit, down to 7.
 * Bound: 1 step per character passed by the start search; an attempt reads separators and digits
 * only (a '+' stops it, so attempts read disjoint stretches) and tests at most 8 ends, with a start
 * at every second character at most: <= 6 per character.
 */
function scanPhoneIntl(text: string, out: MatchSink): void {
  const n = text.length;
  let steps = 0;
  skipped = 0;
  let i = nextStart(INTL_START, text, 0);
  while (i < n) {
    steps++;
    if (!isDigit(text.charCodeAt(i + 1))) {
      i = nextStart(INTL_START, text, i + 1);
      continue;
    }
    let p = i + 2;
    let count = 0;
    while (count < 14) {
      let q = p;
      while (q < n && q - p < 2 && isPhoneSep(text.charCodeAt(q))) {
        q++;
        steps++;
      }
      steps++;
      if (q >= n || !isDigit(text.charCodeAt(q))) break;
      p = q + 1;
      iterationEnds[++count] = p;
    }
    let end = -1;
    for (let k = count; k >= 7; k--) {
      steps++;
      const at = iterationEnds[k]!;
      if (at >= n || !isDigit(text.charCodeAt(at))) {
        end = at;
        break;
      }
    }
    if (end < 0) {
      i = nextStart(INTL_START, text, i + 1);
      continue;
    }
    out.match(i, end);
    i = nextStart(INTL_START, text, end);
  }
  work.steps += steps + skipped;
}

/** A '+' after no word character or '+'. */
const INTL_START = /(?<![\w+])\+/g;

/** Digits at p, counting up to `max` (max + 1 means "more"). */
function digitRun(text: string, p: number, max: number): number {
  let k = 0;
  while (k <= max && isDigit(code(text, p + k))) k++;
  return k;
}

const isNationalSep = (c: number): boolean => c === SPACE || c === DOT || c === DASH;

/** `(?![\w-])` at p. */
function endsToken(text: string, p: number): boolean {
  if (p >= text.length) return true;
  const c = code(text, p);
  return !(isWord(c) || c === DASH);
}

/**
 * National forms, in the expression's order (the first alternative and the first repetition count
 * that ends the token wins), after (?<![\w+.-]) and before (?![\w-]):
 *   A \(\d{2,4}\)[ .-]?\d{3,4}[ .-]?\d{4}      (555) 123-4567
 *   B \d{3}[.-]\d{3}[.-]\d{4}                   555-123-4567, 555.123.4567
 *   C 0\d(?:[ .-]\d{2}){4}                      01 23 45 67 89
 *   D 0\d{2,4} \d{3,4} ?\d{3,4}                 020 7946 0958, 07700 900123
 * Each returns the end of its match at i, or -1; each reads a bounded number of characters.
 */
function nationalA(text: string, i: number): number {
  if (code(text, i) !== L_PAREN) return -1;
  const area = digitRun(text, i + 1, 4);
  if (area < 2 || area > 4 || code(text, i + 1 + area) !== R_PAREN) return -1;
  let p = i + 2 + area;
  // '[ .-]?' takes a separator when there is one (without it the digit test fails).
  if (isNationalSep(code(text, p))) p++;
  const mid = digitRun(text, p, 4);
  for (let m = Math.min(mid, 4); m >= 3; m--) {
    let q = p + m;
    if (isNationalSep(code(text, q))) q++;
    if (digitRun(text, q, 4) >= 4 && endsToken(text, q + 4)) return q + 4;
  }
  return -1;
}

const isDotOrDash = (c: number): boolean => c === DOT || c === DASH;

function nationalB(text: string, i: number): number {
  if (digitRun(text, i, 3) < 3 || !isDotOrDash(code(text, i + 3))) return -1;
  if (digitRun(text, i + 4, 3) < 3 || !isDotOrDash(code(text, i + 7))) return -1;
  if (digitRun(text, i + 8, 4) < 4 || !endsToken(text, i + 12)) return -1;
  return i + 12;
}

function nationalC(text: string, i: number): number {
  if (code(text, i) !== ZERO || !isDigit(code(text, i + 1))) return -1;
  let p = i + 2;
  for (let k = 0; k < 4; k++) {
    if (!isNationalSep(code(text, p)) || digitRun(text, p + 1, 2) < 2) return -1;
    p += 3;
  }
  return endsToken(text, p) ? p : -1;
}

function nationalD(text: string, i: number): number {
  if (code(text, i) !== ZERO) return -1;
  const area = digitRun(text, i + 1, 4);
  if (area < 2 || area > 4 || code(text, i + 1 + area) !== SPACE) return -1;
  const p = i + 2 + area;
  const mid = digitRun(text, p, 4);
  for (let m = Math.min(mid, 4); m >= 3; m--) {
    // ' ?' takes a space when there is one; without it the digit test fails at that space.
    const r = code(text, p + m) === SPACE ? p + m + 1 : p + m;
    const last = digitRun(text, r, 4);
    for (let l = Math.min(last, 4); l >= 3; l--) if (endsToken(text, r + l)) return r + l;
  }
  return -1;
}

/**
 * Bound: 1 step per character passed by the start search; an attempt reads a bounded number of
 * characters (the four forms, with their back-offs, within the next 20), and reads far only over
 * digits, where no start is: <= 17 per character, with the international scan's 6 under 24.
 */
function scanPhoneNational(text: string, out: MatchSink): void {
  const n = text.length;
  let steps = 0;
  skipped = 0;
  let i = nextStart(NATIONAL_START, text, 0);
  while (i < n) {
    reads = 0;
    let end = nationalA(text, i);
    if (end < 0) end = nationalB(text, i);
    if (end < 0) end = nationalC(text, i);
    if (end < 0) end = nationalD(text, i);
    steps += reads;
    if (end < 0) {
      i = nextStart(NATIONAL_START, text, i + 1);
      continue;
    }
    out.match(i, end);
    i = nextStart(NATIONAL_START, text, end);
  }
  work.steps += steps + skipped;
}

/** A digit or '(' after no word character, '+', '.' or '-'. */
const NATIONAL_START = /(?<![\w+.-])[\d(]/g;

// ---------------------------------------------------------------------------------------------

const HAS_DIGIT = /\d/;

/** One pass of a detector over a text: reports its matches. */
export type DetectorPass = (text: string, out: MatchSink) => void;

const digits =
  (scan: DetectorPass): DetectorPass =>
  (text, out) => {
    if (HAS_DIGIT.test(text)) scan(text, out);
  };

/**
 * Each detector as its passes, in order: a pass reads the text the previous one left (its matches
 * replaced). The engine runs them on normalised text, where every decimal digit is an ASCII one, so
 * the ASCII digit tests here match a digit of any script.
 */
export const DETECTOR_PASSES: Readonly<Record<Detector, readonly DetectorPass[]>> = {
  email: [scanEmail],
  card: [digits(scanCard)],
  nationalId: [digits(scanSsn), digits(scanNino)],
  phone: [digits(scanPhoneIntl), digits(scanPhoneNational)],
};

/** A detector over raw text: its passes in turn, each match replaced by `replacement`. */
function rewriteWith(passes: readonly DetectorPass[]): (text: string, replacement: string) => string {
  return (text, replacement) => {
    let out = text;
    for (const pass of passes) {
      const rewrite = new Rewrite(out, replacement);
      pass(out, rewrite);
      out = rewrite.result();
    }
    return out;
  };
}

export const DETECTORS: Readonly<Record<Detector, (text: string, replacement: string) => string>> = {
  email: rewriteWith(DETECTOR_PASSES.email),
  card: rewriteWith(DETECTOR_PASSES.card),
  nationalId: rewriteWith(DETECTOR_PASSES.nationalId),
  phone: rewriteWith(DETECTOR_PASSES.phone),
};
