/**
 * JSON shapes every layer speaks (A2A payloads, JSON-RPC ids). Plain types, no schema library:
 * protocol code (a2a/) reads them without importing the AOS schemas; aos/schemas.ts parses into
 * the same types.
 */

/** A JSON-RPC id as A2A and AOS use it. */
export type JsonRpcId = string | number;

/** Any JSON object (A2A payloads are carried as they are). */
export type JsonObject = Record<string, unknown>;

/** A JSON object (not an array, not null). */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The value when it is a JSON object, else undefined (for optional chaining over untrusted JSON). */
export function asObject(v: unknown): JsonObject | undefined {
  return isObject(v) ? v : undefined;
}

/** Longest identity text kept (names, URLs, ids); longer values are refused, not cut. */
export const MAX_FIELD_LENGTH = 1024;

/** A string usable as an identity field (the guardian sees it, the log keeps it): non-empty, bounded, no control characters. */
export function fieldValue(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' && v.length <= MAX_FIELD_LENGTH && !/[\u0000-\u001f\u007f]/.test(v) ? v : undefined;
}

/**
 * Unicode-aware case fold (ſ -> s, K (Kelvin) -> k), as case-insensitive JSON decoders do. An ASCII
 * name (nearly all) folds as it lower-cases, and a lower-case one is its own fold: no case mapping.
 */
export function fold(k: string): string {
  let upper = false;
  for (let i = 0; i < k.length; i++) {
    const c = k.charCodeAt(i);
    if (c > 0x7f) return k.toUpperCase().toLowerCase();
    if (c >= 0x41 && c <= 0x5a) upper = true;
  }
  return upper ? k.toLowerCase() : k;
}
/**
 * Spellings one decoder or another takes for the same field: case, snake_case, kebab-case. Keys of
 * letters and digits (nearly all) skip the Unicode fold: every member name of every call goes
 * through here (test/unit/a2a/classify-keys.test.ts checks the shortcut).
 */
export function fieldKey(k: string): string {
  // /^[A-Za-z0-9]*$/ as a loop that also learns whether there is a capital to fold (a regex call cost more than the loop).
  let upper = false;
  for (let i = 0; i < k.length; i++) {
    const c = k.charCodeAt(i);
    if (c >= 0x61 && c <= 0x7a) continue;
    if (c >= 0x41 && c <= 0x5a) upper = true;
    else if (c < 0x30 || c > 0x39) return fold(k).replace(/[_-]/g, '');
  }
  return upper ? k.toLowerCase() : k;
}

/**
 * The first answer `visit` gives for an object in `root` (arrays are entered), or undefined. Walks
 * without recursion, so hostile nesting cannot blow the stack; `skip(k)` leaves member `k`'s value unvisited.
 */
export function findInObjects(root: unknown, visit: (o: JsonObject, keys: string[]) => string | undefined, skip?: (k: string) => boolean): string | undefined {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const e of v) if (typeof e === 'object' && e !== null) stack.push(e);
    } else if (typeof v === 'object' && v !== null) {
      const o = v as JsonObject;
      const keys = Object.keys(o);
      const found = visit(o, keys);
      if (found !== undefined) return found;
      for (const k of keys) {
        if (skip?.(k) === true) continue;
        const child = o[k];
        if (typeof child === 'object' && child !== null) stack.push(child);
      }
    }
  }
  return undefined;
}
