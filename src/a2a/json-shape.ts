/**
 * Bounds on a JSON body's shape, read on its bytes before JSON.parse (which builds the whole value in
 * one task of the event loop): nesting depth, values in all, and members of one object. V8 builds an
 * object of many members slowly (measured in docs/performance.md), so a single wide object costs far
 * more than the same count of values spread over small ones. A2A requests are far below every bound.
 */

export interface JsonLimits {
  /** Containers open at once. */
  readonly depth: number;
  /** Members and elements in all (a member counts twice: name and value). */
  readonly values: number;
  /** Members of any one object. */
  readonly objectMembers: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = Object.freeze({ depth: 64, values: 100_000, objectMembers: 10_000 });

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * A scan of JSON text that can stop and go on (a large body is read in slices, one per turn of the event
 * loop). Strings are skipped with Buffer.indexOf, so the loop touches only the bytes outside them.
 */
export class JsonShapeScan {
  private at = 0;
  private depth = 0;
  private values = 0;
  /** Members so far of each open container, by depth (an array's stay 0: a ':' in one is not JSON). */
  private readonly members: Int32Array;

  constructor(private readonly limits: JsonLimits) {
    this.members = new Int32Array(limits.depth + 2);
  }

  /** Reads on from where it stopped to at least `until` (a string open there is read to its end): the bound crossed, or where it stopped (>= b.length: done). */
  run(b: Buffer, until: number): string | number {
    const { limits, members } = this;
    const end = Math.min(until, b.length);
    let { at: i, depth, values } = this;
    for (; i < end; i++) {
      const c = b[i];
      if (c === QUOTE) {
        i = closingQuote(b, i + 1);
        continue;
      }
      if (c === 0x7b || c === 0x5b) {
        if (++depth > limits.depth) return `JSON nested deeper than ${limits.depth}`;
        members[depth] = 0;
        if (++values > limits.values) return `JSON with more than ${limits.values} members or elements`;
      } else if (c === 0x7d || c === 0x5d) {
        if (depth > 0) depth--;
      } else if (c === 0x3a) {
        if (++members[depth]! > limits.objectMembers) return `JSON object with more than ${limits.objectMembers} members`;
        if (++values > limits.values) return `JSON with more than ${limits.values} members or elements`;
      } else if (c === 0x2c) {
        if (++values > limits.values) return `JSON with more than ${limits.values} members or elements`;
      }
    }
    this.at = i;
    this.depth = depth;
    this.values = values;
    return i;
  }
}

/** Index of the quote that closes a string whose text starts at `from` (b.length when it never closes). */
function closingQuote(b: Buffer, from: number): number {
  for (let q = b.indexOf(QUOTE, from); q !== -1; q = b.indexOf(QUOTE, q + 1)) {
    let slashes = 0;
    for (let k = q - 1; k >= from && b[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return q;
  }
  return b.length;
}

/** The first bound JSON text crosses, or undefined. */
export function jsonTooComplex(b: Buffer, limits: JsonLimits): string | undefined {
  const r = new JsonShapeScan(limits).run(b, b.length);
  return typeof r === 'string' ? r : undefined;
}

/**
 * Bounds jsonTooComplex cannot find crossed, told without its byte loop: the depth never exceeds the
 * number of '{' and '[', the members of an object the number of ':', and each value it counts is a byte
 * of its own (in strings or not). `text` is the body's UTF-8 decoding, whose ASCII characters are its
 * bytes below 0x80. String.indexOf hops over the text: ~1k instructions for a unary call's body where
 * the byte loop took ~5k (callgrind).
 */
export function surelyWithinBounds(text: string, bytes: number, limits: JsonLimits): boolean {
  if (bytes > limits.values) return false;
  let opens = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++opens > limits.depth) return false;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++opens > limits.depth) return false;
  if (bytes <= limits.objectMembers) return true;
  let colons = 0;
  for (let i = text.indexOf(':'); i !== -1; i = text.indexOf(':', i + 1)) if (++colons > limits.objectMembers) return false;
  return true;
}
