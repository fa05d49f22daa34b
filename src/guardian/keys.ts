/**
 * Protocol key names as the A2A SDK reads them. Its ts-proto `fromJSON` accepts each field under
 * its JSON name (lowerCamel, `taskPushNotificationConfig`) and its proto name (snake_case,
 * `task_push_notification_config`), the first one set winning; two v0.3 proto fields also take a
 * `json_name` unrelated to their proto name (`message` is read from `request` in SendMessageRequest
 * and from `update` in TaskStatus). The engine compares protocol keys only through `canonicalKey`,
 * so every spelling the SDK acts on gets the rules of its canonical twin.
 */
import type { JsonObject } from '../aos/schemas';

/** Proto field names the v0.3 proto serialises under a different JSON name. */
const PROTO_NAME_ALIASES: ReadonlyMap<string, string> = new Map([
  ['request', 'message'],
  ['update', 'message'],
]);
const SNAKE_CASE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/;

const canonicalCache = new Map<string, string>();

/** The lowerCamel JSON name of a key in any spelling the SDK accepts; other keys unchanged. */
export function canonicalKey(key: string): string {
  let canonical = canonicalCache.get(key);
  if (canonical === undefined) {
    canonical = PROTO_NAME_ALIASES.get(key) ?? (SNAKE_CASE.test(key) ? key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) : key);
    // Key names repeat across calls; remember a bounded number of them.
    if (canonicalCache.size < 10_000) canonicalCache.set(key, canonical);
  }
  return canonical;
}

/** A set of protocol keys, matched in any spelling the SDK accepts. */
export interface KeySet {
  has(key: string): boolean;
}

export function keySet(canonicalNames: readonly string[]): KeySet {
  const names = new Set(canonicalNames);
  return { has: (key) => names.has(canonicalKey(key)) };
}

/**
 * Every value an object holds under any spelling of `canonical`. The engine checks them all: which
 * one the agent reads (camelCase first in ts-proto) is the parser's choice, not the guardian's.
 */
export function readField(obj: JsonObject, canonical: string): unknown[] {
  const out: unknown[] = [];
  for (const key in obj) {
    if (canonicalKey(key) === canonical) out.push(obj[key]);
  }
  return out;
}
