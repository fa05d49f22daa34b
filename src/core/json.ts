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
