/**
 * The caller's JSON-RPC id for a refusal: a JSON-RPC error carries the request's id wherever the request
 * could be read far enough to find it (an SDK client drops an answer whose id is not its request's, and
 * reports "ID mismatch" instead of the refusal). Only a body that is not JSON at all answers `"id": null`,
 * as JSON-RPC 2.0 asks for a parse error. Pure.
 */
import type { JsonRpcId } from '../core/json';
import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE, isJsonSpace } from '../core/json-bytes';

/** A value a JSON-RPC answer can echo as the id: a string or a finite number; else null. */
export function echoableId(id: unknown): JsonRpcId | null {
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/** A value reached the end of the bytes (a body cut at the size limit, or still arriving). */
const CUT = -1;

/**
 * The top-level `id` of a JSON object, read from its bytes without parsing the rest: a body too large,
 * too deep or not yet whole (over MAX_BODY_BYTES, past its deadline, over the in-flight budget) still
 * names its id when the members before it were read. Members are read in order and a later `id` wins,
 * as JSON.parse reads them; a body cut short answers the last id read before the cut. Returns null
 * when the bytes are not a JSON object up to there (the contents of strings and nested values are not
 * checked), or name no id it can echo. One pass, no recursion.
 */
export function leadingId(b: Buffer): JsonRpcId | null {
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_OBJECT) return null;
  let found: JsonRpcId | null = null;
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_OBJECT) return null;
  for (;;) {
    if (i >= b.length) return found;
    if (b[i] !== QUOTE) return null;
    const keyEnd = stringEnd(b, i);
    if (keyEnd === CUT) return found;
    const key = token(b, i, keyEnd);
    if (typeof key !== 'string') return null;
    i = skipSpace(b, keyEnd);
    if (i >= b.length) return found;
    if (b[i] !== COLON) return null;
    i = skipSpace(b, i + 1);
    if (i >= b.length) return found;
    const valueEnd = skipValue(b, i);
    if (valueEnd === CUT) return found;
    const c0 = b[i];
    // A number or literal must be one (strings and nested values are skipped unchecked).
    if (key !== 'id' && c0 !== QUOTE && c0 !== OPEN_OBJECT && c0 !== OPEN_ARRAY && token(b, i, valueEnd) === undefined) return null;
    if (key === 'id') {
      // An object or array id is read as one (and echoed as none); a scalar must be a JSON token.
      if (c0 === OPEN_OBJECT || c0 === OPEN_ARRAY) found = null;
      else {
        const v = token(b, i, valueEnd);
        if (v === undefined) return null;
        found = echoableId(v);
      }
    }
    i = skipSpace(b, valueEnd);
    if (i >= b.length) return found;
    if (b[i] === CLOSE_OBJECT) return found;
    if (b[i] !== COMMA) return null;
    i = skipSpace(b, i + 1);
  }
}

/** Bytes from each end of a large body read for its id: the work of a refusal stays bounded whatever the body's size. */
export const ID_SCAN_BYTES = 64 * 1024;

/**
 * The id to answer a refusal of `b` with, in bounded work: leadingId of a body under 2 × ID_SCAN_BYTES; of a larger
 * one, its last member when that is `"id"` with a scalar value (where JSON.parse's later id wins, and where SDK clients
 * write it: after `params`), else leadingId of its first ID_SCAN_BYTES. A whole scan of 9 MiB took 10-16 ms in one
 * task on every refusal (a 9 KiB gzip body decodes to 9 MiB). An id between two large members is not found (null).
 */
export function refusalId(b: Buffer): JsonRpcId | null {
  if (b.length < 2 * ID_SCAN_BYTES) return leadingId(b);
  const last = trailingId(b);
  return last !== undefined ? last : leadingId(b.subarray(0, ID_SCAN_BYTES));
}

/** The value of an object's last member when it is `"id"` with a scalar value, read back from the end (undefined: not that). */
function trailingId(b: Buffer): JsonRpcId | null | undefined {
  const floor = Math.max(0, b.length - ID_SCAN_BYTES);
  let j = spaceBefore(b, b.length, floor);
  if (j <= floor || b[j - 1] !== CLOSE_OBJECT) return undefined;
  const valueEnd = spaceBefore(b, j - 1, floor);
  let valueStart = valueEnd - 1;
  if (valueStart < floor) return undefined;
  if (b[valueStart] === QUOTE) {
    // A string: its opening quote is the first unescaped quote before its closing one.
    do valueStart--;
    while (valueStart >= floor && !(b[valueStart] === QUOTE && backslashesBefore(b, valueStart, floor) % 2 === 0));
  } else {
    while (valueStart > floor && !isDelimiter(b[valueStart - 1])) valueStart--;
  }
  if (valueStart <= floor) return undefined;
  j = spaceBefore(b, valueStart, floor);
  if (b[j - 1] !== COLON) return undefined;
  j = spaceBefore(b, j - 1, floor);
  // The name: exactly "id", its opening quote not escaped and opening a member (after `{` or `,`).
  if (j - 4 < floor || b.toString('latin1', j - 4, j) !== '"id"' || backslashesBefore(b, j - 4, floor) % 2 !== 0) return undefined;
  const before = b[spaceBefore(b, j - 4, floor) - 1];
  if (before !== COMMA && before !== OPEN_OBJECT) return undefined;
  const v = token(b, valueStart, valueEnd);
  return v === undefined ? undefined : echoableId(v);
}

/** Index after the last non-space byte before `i` (not below `floor`). */
function spaceBefore(b: Buffer, i: number, floor: number): number {
  while (i > floor && isJsonSpace(b[i - 1])) i--;
  return i;
}

/** The run of backslashes before `i`; -1 (neither even nor odd) when it reaches `floor`: the scan stays in the tail. */
function backslashesBefore(b: Buffer, i: number, floor: number): number {
  let n = 0;
  while (b[i - n - 1] === BACKSLASH) if (i - ++n <= floor) return -1;
  return n;
}

const isDelimiter = (c: number | undefined): boolean => isJsonSpace(c) || c === COLON || c === COMMA || c === OPEN_OBJECT;

/** JSON whitespace only (a byte order mark or NUL is not). */
function skipSpace(b: Buffer, i: number): number {
  while (i < b.length) {
    const c = b[i];
    if (!isJsonSpace(c)) return i;
    i++;
  }
  return i;
}

/** Index after the string starting at `i` (a quote), or CUT. */
function stringEnd(b: Buffer, i: number): number {
  for (let j = i + 1; j < b.length; j++) {
    const c = b[j];
    if (c === BACKSLASH) j++;
    else if (c === QUOTE) return j + 1;
  }
  return CUT;
}

/** Index after the value starting at `i`, or CUT. Nested values are skipped by counting brackets outside strings. */
function skipValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return stringEnd(b, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (let j = i; j < b.length; j++) {
      const d = b[j];
      if (d === QUOTE) {
        j = stringEnd(b, j);
        if (j === CUT) return CUT;
        j--;
      } else if (d === OPEN_OBJECT || d === OPEN_ARRAY) depth++;
      else if (d === CLOSE_OBJECT || d === CLOSE_ARRAY) {
        if (--depth === 0) return j + 1;
      }
    }
    return CUT;
  }
  // A number or literal ends at a delimiter; one that reaches the end of the bytes may have been cut.
  for (let j = i; j < b.length; j++) {
    const d = b[j];
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || d === 0x20 || d === 0x09 || d === 0x0a || d === 0x0d) return j;
  }
  return CUT;
}

/** The JSON value of bytes [start, end), or undefined when they are not one. */
function token(b: Buffer, start: number, end: number): unknown {
  try {
    return JSON.parse(b.toString('utf8', start, end)) as unknown;
  } catch {
    return undefined;
  }
}
