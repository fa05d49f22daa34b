/**
 * Guardian answer -> action (design section 5). Pure: no I/O, no clock.
 */
import { acceptsDecision, type Operation } from '../a2a/operations';
import type { JsonObject, SuccessResult } from '../aos/schemas';
import { proxyError, type ProxyError } from '../core/errors';
import type { Phase } from '../aos/hook-points';
import type { GuardianOutcome } from '../aos/outcome';
import { modifiedServiceParameters, type ServiceParameters } from '../a2a/service-parameters';

/** What the hook decided, as logged and counted. */
export type HookDecision = 'allow' | 'deny' | 'modify' | 'failOpen' | 'failClosed' | 'shadow';

export type HookAction =
  | {
      readonly type: 'pass';
      readonly payload: JsonObject;
      readonly decision: 'allow' | 'modify' | 'failOpen' | 'shadow';
      readonly outcome: GuardianOutcome;
      /** The service parameters approved (a modify's, else the input's); undefined when the input had none. */
      readonly serviceParameters?: ServiceParameters | undefined;
    }
  | { readonly type: 'block'; readonly error: ProxyError; readonly decision: 'deny' | 'failClosed'; readonly outcome: GuardianOutcome };

export interface EnforceInput {
  readonly op: Operation;
  /** The payload the guardian saw (an A2A request, or a response / stream event). */
  readonly payload: JsonObject;
  readonly phase: Phase;
  readonly envelopeId: string;
  readonly outcome: GuardianOutcome;
  readonly failMode: 'closed' | 'open';
  readonly shadow: boolean;
  readonly exposeReasoning: boolean;
  /** Binding-specific check of a replacement (e.g. REST: path parameters unchanged); returns a problem or undefined. */
  readonly validateModified?: (replacement: JsonObject) => string | undefined;
  /** The request's service parameters as the guardian saw them (request hooks); a modify may change its extensions. */
  readonly serviceParameters?: ServiceParameters | undefined;
  /** A2A_EXTENSIONS: a modify may not ask for an extension outside it. */
  readonly allowedExtensions?: readonly string[] | undefined;
}

export function sameId(a: unknown, b: unknown): boolean {
  return a === b || (a === undefined && b === null) || (a === null && b === undefined);
}

/**
 * A modify is valid only for operations that accept it and when the replacement keeps the A2A
 * method and id (requests) or is a JSON-RPC response with the caller's id (responses).
 */
export function checkModified(op: Operation, phase: Phase, original: JsonObject, result: SuccessResult): JsonObject | string {
  if (!acceptsDecision(op, 'modify')) return `modify is not accepted for ${op.aosMethod}`;
  const replacement = result.modifiedRequest?.params.payload;
  if (replacement === undefined) return 'modify without modifiedRequest.params.payload';
  if (!sameId(replacement.id, original.id)) return 'modify changed the JSON-RPC id';
  if (phase === 'request') {
    if (replacement.method !== original.method) return 'modify changed the A2A method';
  } else if ('result' in original || 'error' in original) {
    if (!('result' in replacement) && !('error' in replacement)) return 'modified response has neither result nor error';
  }
  return replacement;
}

function decisionMetadata(envelopeId: string, r: SuccessResult | undefined, exposeReasoning: boolean): Record<string, string> {
  const md: Record<string, string> = { envelopeId };
  if (r === undefined) return md;
  md.message = r.message;
  if (r.reasonCode !== undefined && r.reasonCode.length > 0) md.reasonCode = r.reasonCode.join(',');
  if (exposeReasoning && r.reasoning !== undefined) md.reasoning = r.reasoning;
  return md;
}

/** A modify's service parameters: the input's unless it sent its own (within A2A_EXTENSIONS), or the problem. */
function approvedParameters(input: EnforceInput, r: SuccessResult): ServiceParameters | string | undefined {
  const original = input.serviceParameters;
  if (original === undefined) return undefined;
  const sp = modifiedServiceParameters(original, r.modifiedRequest?.params);
  if ('problem' in sp) return sp.problem;
  const outside = input.allowedExtensions === undefined ? undefined : sp.extensions.find((e) => !input.allowedExtensions?.includes(e));
  return outside === undefined ? sp : `modify asked for an extension outside A2A_EXTENSIONS: ${outside.slice(0, 256)}`;
}

export function enforce(input: EnforceInput): HookAction {
  const { outcome } = input;
  let failure: GuardianOutcome = outcome;
  if (outcome.ok) {
    const r = outcome.result;
    if (input.shadow) return { type: 'pass', payload: input.payload, decision: 'shadow', outcome, serviceParameters: input.serviceParameters };
    if (r.decision === 'allow') return { type: 'pass', payload: input.payload, decision: 'allow', outcome, serviceParameters: input.serviceParameters };
    if (r.decision === 'deny') {
      const err = proxyError('denied', `Blocked by guardian: ${r.message}`, decisionMetadata(input.envelopeId, r, input.exposeReasoning));
      return { type: 'block', error: err, decision: 'deny', outcome };
    }
    let checked = checkModified(input.op, input.phase, input.payload, r);
    if (typeof checked !== 'string') checked = input.validateModified?.(checked) ?? checked;
    const sp = typeof checked === 'string' ? undefined : approvedParameters(input, r);
    if (typeof sp === 'string') checked = sp;
    else if (typeof checked !== 'string') return { type: 'pass', payload: checked, decision: 'modify', outcome, serviceParameters: sp };
    failure = { ok: false, kind: 'invalidModify', detail: checked };
  }
  if (input.shadow || input.failMode === 'open')
    return {
      type: 'pass',
      payload: input.payload,
      decision: input.shadow ? 'shadow' : 'failOpen',
      outcome: failure,
      serviceParameters: input.serviceParameters,
    };
  const detail = failure.ok ? '' : failure.kind;
  const err = proxyError('guardianUnavailable', 'Guardian unavailable: no valid decision', { envelopeId: input.envelopeId, failure: detail });
  return { type: 'block', error: err, decision: 'failClosed', outcome: failure };
}

/** What happens to an agent answer the proxy cannot read (not JSON, compressed, misspelled, ...). */
export type UnreadableAction = { readonly type: 'refuse'; readonly error: ProxyError } | { readonly type: 'pass' };

/**
 * An answer the response hooks cannot read is refused (FAIL_MODE=closed), or passed unjudged
 * (FAIL_MODE=open, or SHADOW_MODE, which never blocks).
 */
export function unreadableAnswer(why: string, failMode: 'closed' | 'open', shadow: boolean): UnreadableAction {
  if (failMode === 'closed' && !shadow) return { type: 'refuse', error: proxyError('upstreamUnavailable', `Agent answer cannot be inspected: ${why}`) };
  return { type: 'pass' };
}
