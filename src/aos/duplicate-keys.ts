/**
 * JSON.parse keeps the last of two members with the same name; a guardian's own parser may keep the
 * first. `{"decision":"deny",…,"decision":"allow"}` would then be a deny to the guardian and an allow
 * to the proxy, so an answer with a duplicate member is refused as not understood (design 5: no valid
 * answer). Names are compared after unescaping (`"dec\u0069sion"` is `"decision"`).
 *
 * Runs on text JSON.parse has accepted, so it only tracks strings and nesting. Cost, measured on a
 * 170-byte allow answer in a loop: ~0.4-0.7 µs, about what its JSON.parse costs. Pure.
 */
import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, OPEN_ARRAY, OPEN_OBJECT, QUOTE, isJsonSpace } from '../core/json-bytes';

/** The first member name found twice in one object of `text` (valid JSON), or undefined. */
export function duplicateKey(text: string): string | undefined {
  // One entry per open container: the names seen so far for an object (a short list, a Set once
  // it is long: a linear search would make a huge object quadratic), null for an array.
  const stack: (string[] | Set<string> | null)[] = [];
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i + 1;
      // The closing quote: the next one not escaped (preceded by an even run of backslashes).
      let end = text.indexOf('"', start);
      for (;;) {
        let k = end - 1;
        while (k >= start && text.charCodeAt(k) === BACKSLASH) k--;
        if ((end - 1 - k) % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      i = end;
      const top = stack.length > 0 ? stack[stack.length - 1] : null;
      if (top === null || top === undefined) continue;
      // A string is a member name when the next non-space character is a colon.
      let j = end + 1;
      while (j < n && text.charCodeAt(j) <= 0x20) j++;
      if (text.charCodeAt(j) !== COLON) continue;
      const raw = text.slice(start, end);
      const name = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
      if (seenBefore(stack, top, name)) return name;
    } else if (c === OPEN_OBJECT) stack.push([]);
    else if (c === OPEN_ARRAY) stack.push(null);
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) stack.pop();
  }
  return undefined;
}

/**
 * Whether the innermost open object (`top`, the last of `stack`) has a member `name` already; else it is noted there.
 * A short list, a Set once it is long: a linear search would make a huge object quadratic.
 */
function seenBefore(stack: (string[] | Set<string> | null)[], top: string[] | Set<string>, name: string): boolean {
  if (Array.isArray(top)) {
    if (top.includes(name)) return true;
    if (top.push(name) > 16) stack[stack.length - 1] = new Set(top);
    return false;
  }
  if (top.has(name)) return true;
  top.add(name);
  return false;
}

/** Bytes scanned between two turns by duplicateKeyInPieces. */
const SCAN_PIECE = 256 * 1024;

/**
 * duplicateKey of a large answer's UTF-8 bytes (valid JSON, valid UTF-8), scanned a piece per turn: the same
 * verdict, never a task over the whole text. `longStrings`: what parseJsonInPieces decoded in slices, by where its
 * token begins (a name of a piece or more is taken from there, not decoded again in one task).
 */
export async function duplicateKeyInPieces(
  bytes: Buffer,
  turn: () => Promise<void>,
  longStrings: readonly { readonly start: number; readonly str: string }[] = [],
  piece = SCAN_PIECE,
): Promise<string | undefined> {
  const long = new Map(longStrings.map((l) => [l.start, l.str]));
  const stack: (string[] | Set<string> | null)[] = [];
  const n = bytes.length;
  // The open string's opening quote (-1: none), and the last string closed in an object (a name if a colon follows).
  let open = -1;
  let last = -1;
  let lastEnd = -1;
  // The next quote at or after `i` once searched for (a long string's end is searched once, not once per piece).
  let quote = -1;
  for (let i = 0, limit = Math.min(n, piece); i < n;) {
    if (i >= limit) {
      await turn();
      limit = Math.min(n, i + piece);
    }
    if (open >= 0) {
      // Within a string: its next quote, taken in this piece if it lies there, unless escaped (an odd run of backslashes before it).
      if (quote < i) quote = bytes.indexOf(QUOTE, i);
      if (quote < 0 || quote >= limit) {
        i = limit;
        continue;
      }
      const end = quote;
      let k = end - 1;
      while (k > open && bytes[k] === BACKSLASH) k--;
      i = end + 1;
      if ((end - 1 - k) % 2 === 1) continue;
      const top = stack.length > 0 ? stack[stack.length - 1] : null;
      if (top !== null && top !== undefined) {
        last = open;
        lastEnd = end;
      }
      open = -1;
      continue;
    }
    const c = bytes[i] as number;
    if (last >= 0 && !isJsonSpace(c)) {
      if (c === COLON) {
        const name = long.get(last) ?? nameAt(bytes, last, lastEnd);
        if (seenBefore(stack, stack[stack.length - 1] as string[] | Set<string>, name)) return name;
      }
      last = -1;
    }
    if (c === QUOTE) open = i;
    else if (c === OPEN_OBJECT) stack.push([]);
    else if (c === OPEN_ARRAY) stack.push(null);
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) stack.pop();
    i++;
  }
  return undefined;
}

/** The member name whose token has its quotes at `quote` and `end`, unescaped. */
function nameAt(bytes: Buffer, quote: number, end: number): string {
  const raw = bytes.toString('utf8', quote + 1, end);
  return bytes.subarray(quote + 1, end).includes(BACKSLASH) ? (JSON.parse(`"${raw}"`) as string) : raw;
}
