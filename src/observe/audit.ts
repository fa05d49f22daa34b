/**
 * The audit record of one A2A call: what happened, why (the guardian's reason codes and message),
 * between whom (the peer, and whether its identity was verified), from where, in which trace, and
 * each hook's outcome with its failure detail. Pure: the pipeline gathers the facts, this shapes
 * them; the same record is the log line, the decision-log entry and the metrics' outcome.
 */
import type { Phase, Side } from '../aos/hook-points';

/** How a call ended, as counted in a2a_guard_requests_total{outcome}. */
export type CallOutcome =
  | 'forwarded' // the agent's answer went back (request allowed or modified)
  | 'forwarded_unchecked' // passed without a valid guardian decision (FAIL_MODE=open, or SHADOW_MODE without an answer)
  | 'denied' // a request or response hook denied it
  | 'guardian_unavailable' // no valid guardian answer under FAIL_MODE=closed
  | 'upstream_error' // the agent was unreachable, or failed or cut the answer
  | 'answer_refused' // the agent's answer could not be inspected and was refused (FAIL_MODE=closed)
  | 'cancelled' // the caller went away before the end
  | 'refused'; // the proxy refused the request before any hook (not A2A-valid, too large, ...)

export const CALL_OUTCOMES: readonly CallOutcome[] = [
  'forwarded',
  'forwarded_unchecked',
  'denied',
  'guardian_unavailable',
  'upstream_error',
  'answer_refused',
  'cancelled',
  'refused',
];

export interface AuditHook {
  readonly side: Side;
  readonly phase: Phase;
  /** allow | deny | modify | failOpen | failClosed | shadow */
  readonly decision: string;
  readonly envelopeId: string;
  readonly guardianMs: number;
  readonly reasonCode?: readonly string[] | undefined;
  /** The guardian's message (its `reasoning` is never logged above debug). */
  readonly message?: string | undefined;
  /** Why there was no valid answer: the failure kind and its detail (e.g. the TLS error). */
  readonly failure?: string | undefined;
  readonly detail?: string | undefined;
}

export interface AuditPeer {
  readonly name: string;
  readonly url: string;
  readonly version: string;
  /** The identity was proven (signed assertion, mTLS, token); false = a claim from request headers or a card. */
  readonly verified: boolean;
}

export interface CallFacts {
  readonly method: string;
  readonly wireMethod: string;
  readonly binding: string;
  readonly role: string;
  /** The summarized decision of the call (enforce's vocabulary, or 'error'). */
  readonly decision: string;
  readonly hooks: readonly AuditHook[];
  readonly peer: AuditPeer | undefined;
  readonly remoteAddress: string | undefined;
  readonly traceId: string | undefined;
  readonly spanId: string | undefined;
  readonly a2aId: unknown;
  readonly upstreamStatus: number | null;
  /** The request went to the agent. */
  readonly forwarded: boolean;
  /** Dispatch to the end of the agent's answer, when it was forwarded. */
  readonly upstreamMs: number | undefined;
  readonly totalMs: number;
  /** The answer to the caller was completely written. */
  readonly finished: boolean;
  readonly events: number;
  readonly error: string | undefined;
  /** Set where the pipeline knows better than the facts above (an uninspectable answer). */
  readonly outcome?: CallOutcome | undefined;
}

/** The hook that blocked the call (a request, a response, or a stream event), if one did. */
function blockingHook(hooks: readonly AuditHook[]): AuditHook | undefined {
  return hooks.find((h) => h.decision === 'deny' || h.decision === 'failClosed');
}

/** The call's decision: the block, if a hook blocked (also in the response phase), else the request's. */
export function callDecision(f: CallFacts): string {
  return blockingHook(f.hooks)?.decision ?? f.decision;
}

/** The outcome of a call from its facts. */
export function callOutcome(f: CallFacts): CallOutcome {
  return f.outcome ?? outcomeOf(f, callDecision(f));
}

function outcomeOf(f: CallFacts, decision: string): CallOutcome {
  if (decision === 'refused') return 'refused';
  if (decision === 'deny') return 'denied';
  if (decision === 'failClosed') return 'guardian_unavailable';
  if (f.error !== undefined) return 'upstream_error';
  if (!f.forwarded || !f.finished) return 'cancelled';
  return f.hooks.some((h) => h.decision === 'failOpen' || (h.decision === 'shadow' && h.failure !== undefined)) ? 'forwarded_unchecked' : 'forwarded';
}

/** Reason codes of every hook, in order, each once. */
export function reasonCodes(hooks: readonly AuditHook[]): string[] {
  const out: string[] = [];
  for (const h of hooks) for (const c of h.reasonCode ?? []) if (!out.includes(c)) out.push(c);
  return out;
}

/** The hook that decided the call: the first that did not simply allow, else the first. */
function decidingHook(hooks: readonly AuditHook[]): AuditHook | undefined {
  return hooks.find((h) => h.decision !== 'allow') ?? hooks[0];
}

const round = (ms: number) => Math.round(ms * 100) / 100;

export interface AuditRecord {
  /** warn when the guardian gave no valid answer or the agent failed; info otherwise. */
  readonly level: 'info' | 'warn';
  readonly outcome: CallOutcome;
  readonly decision: string;
  readonly reasonCodes: readonly string[];
  readonly fields: Record<string, unknown>;
}

/**
 * The log line of a call. The per-hook list is kept when it says more than the top-level fields
 * (several hooks, or a failure); a single clean hook is fully described by them.
 */
const MAX_LOGGED_ID = 256;

export function auditRecord(f: CallFacts): AuditRecord {
  const hooks = f.hooks;
  // The blocking hook is found once and serves the decision, the outcome and the deciding hook.
  const blocking = blockingHook(hooks);
  const decision = blocking?.decision ?? f.decision;
  const outcome = f.outcome ?? outcomeOf(f, decision);
  const codes = reasonCodes(hooks);
  const deciding = blocking ?? decidingHook(hooks);
  let failed: AuditHook | undefined;
  let guardianMs = 0;
  for (const h of hooks) {
    guardianMs += h.guardianMs;
    if (failed === undefined && h.failure !== undefined && h.failure !== 'cancelled') failed = h;
  }
  // One literal, every field in the line's order (auditMembers writes an ordinary call's fields in it
  // too): pino and JSON.stringify leave the undefined ones out, and the record keeps one shape
  // (fields added one by one made a shape per kind of call, and megamorphic stores).
  const fields: Record<string, unknown> = {
    method: f.method,
    wireMethod: f.wireMethod,
    binding: f.binding,
    role: f.role,
    outcome,
    decision,
    reasonCode: codes.length > 0 ? codes : undefined,
    guardianMessage: deciding?.message,
    peer: f.peer,
    remoteAddress: f.remoteAddress,
    traceId: f.traceId,
    spanId: f.spanId,
    guardianMs: round(guardianMs),
    upstreamStatus: f.upstreamStatus,
    upstreamMs: f.upstreamMs === undefined ? undefined : round(f.upstreamMs),
    totalMs: round(f.totalMs),
    // The caller's id, as long as the body allows (MAX_BODY_BYTES): kept to what identifies a call in a log line.
    a2aId: typeof f.a2aId === 'string' && f.a2aId.length > MAX_LOGGED_ID ? `${f.a2aId.slice(0, MAX_LOGGED_ID)}…(${f.a2aId.length} chars)` : f.a2aId,
    envelopeId: hooks[0]?.envelopeId,
    failure: failed?.failure,
    failureDetail: failed?.detail,
    hooks: hooks.length > 1 || failed !== undefined ? hooks.map(hookEntry) : undefined,
    events: f.events > 0 ? f.events : undefined,
    error: f.error,
    // Set by writeAuditLine when it knows them (a verified caller, a decision-log record).
    caller: undefined,
    callerSource: undefined,
    decisionSeq: undefined,
    decisionHash: undefined,
  };
  const level = failed !== undefined || outcome === 'upstream_error' || outcome === 'answer_refused' ? 'warn' : 'info';
  return { level, outcome, decision, reasonCodes: codes, fields };
}

function hookEntry(h: AuditHook): Record<string, unknown> {
  const e: Record<string, unknown> = { side: h.side, phase: h.phase, decision: h.decision, envelopeId: h.envelopeId, ms: round(h.guardianMs) };
  if (h.reasonCode !== undefined && h.reasonCode.length > 0) e.reasonCode = h.reasonCode;
  if (h.failure !== undefined) {
    e.failure = h.failure;
    e.detail = h.detail;
  }
  return e;
}
