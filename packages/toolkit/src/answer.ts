/**
 * The hot path's check of a guardian's success answer: the same acceptance as the zod schema
 * `GuardianSuccess` (schemas.ts), written out by hand. zod's safeParse of an allow answer (its copy
 * of the object included) was ~4 µs of a unary call's CPU under load (V8 profile of `npm run bench`,
 * 2026-11-24); this check hands back the object itself (interpret() hot in a loop: 0.64 -> 0.50 µs).
 * test/unit/aos/answer.test.ts proves with generated answers that both accept exactly the same
 * values; a rejected answer goes to zod for the issue it names. One difference in the value: an own
 * "__proto__" member of a record stays a plain member (zod's copy leaves it out), so a modify's
 * payload is exactly what the guardian sent. Pure.
 */
import type { JsonObject, JsonRpcId, SuccessResult } from './schemas';

export interface GuardianSuccessAnswer {
  readonly jsonrpc: '2.0';
  readonly id: JsonRpcId;
  readonly result: SuccessResult;
}

/** A plain object, as zod's object and record schemas take it (no array, no null). */
export function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** zod's z.number() takes finite numbers only. */
const isId = (v: unknown): v is JsonRpcId => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

function isStringArray(v: unknown): boolean {
  if (!Array.isArray(v)) return false;
  for (const e of v) if (typeof e !== 'string') return false;
  return true;
}

/** `SuccessResult` (looseObject: members beyond these are kept as they are). */
function isSuccessResult(r: unknown): r is SuccessResult {
  if (!isPlainObject(r)) return false;
  const d = r.decision;
  if (d !== 'allow' && d !== 'deny' && d !== 'modify') return false;
  if (typeof r.message !== 'string') return false;
  if (r.reasoning !== undefined && typeof r.reasoning !== 'string') return false;
  if (r.reasonCode !== undefined && !isStringArray(r.reasonCode)) return false;
  if (r.data !== undefined && !isPlainObject(r.data)) return false;
  const m = r.modifiedRequest;
  if (m === undefined) return true;
  return isPlainObject(m) && isPlainObject(m.params) && isPlainObject(m.params.payload);
}

/** The answer when it is an AOS success response (spec 5.1), else undefined. */
export function guardianSuccess(json: unknown): GuardianSuccessAnswer | undefined {
  if (!isPlainObject(json) || json.jsonrpc !== '2.0' || !isId(json.id) || !isSuccessResult(json.result)) return undefined;
  return json as unknown as GuardianSuccessAnswer;
}

/** `PingAnswer` (schemas.ts, spec 5.3): the members the ping reads. */
export interface PingAnswerFields {
  readonly id: JsonRpcId;
  readonly status: 'connected' | 'error';
}

/**
 * The answer when it is an AOS ping success response, else undefined: the same acceptance as the zod
 * schema `PingAnswer` (test/unit/aos/answer.test.ts), by hand so that the ping the proxy sends at
 * start does not load zod and build the AOS schemas (~10 ms of CPU and ~0.5 MB of young-generation
 * allocation before the first served call, in-process marks on the bench machine).
 */
export function pingAnswer(json: unknown): PingAnswerFields | undefined {
  if (!isPlainObject(json) || json.jsonrpc !== '2.0' || !isId(json.id)) return undefined;
  const r = json.result;
  if (!isPlainObject(r) || (r.status !== 'connected' && r.status !== 'error') || typeof r.version !== 'string' || typeof r.timestamp !== 'string')
    return undefined;
  return { id: json.id, status: r.status };
}
