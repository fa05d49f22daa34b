/**
 * Build a guardian's answer (AOSSuccessResult, spec 5.1.1) without hand-writing its shape.
 * `modify` echoes the envelope with the replacement payload, as AOS asks of `modifiedRequest`.
 */
import { acceptsDecision, operationForMethod } from './operations';
import type { Envelope, JsonObject, SuccessResult } from './schemas';

export interface DecisionDetails {
  /** Machine-readable reasons, e.g. ["PII_MASKED"]; a2a-guard logs them and puts them in its errors. */
  readonly reasonCode?: readonly string[];
  /** Free text for operators; a2a-guard shows it to callers only with EXPOSE_GUARDIAN_REASONING=true. */
  readonly reasoning?: string;
  readonly data?: JsonObject;
}

export function allow(message = 'Allowed.', details: DecisionDetails = {}): SuccessResult {
  return { decision: 'allow', message, ...rest(details) };
}

export function deny(message: string, details: DecisionDetails = {}): SuccessResult {
  return { decision: 'deny', message, ...rest(details) };
}

/**
 * Forward `payload` instead of the original. For request hooks it must keep the A2A method and
 * JSON-RPC id, for response hooks the id (a2a-guard refuses the answer otherwise).
 */
export function modify(envelope: Envelope, payload: JsonObject, message = 'Modified.', details: DecisionDetails = {}): SuccessResult {
  return {
    decision: 'modify',
    message,
    ...rest(details),
    modifiedRequest: { ...envelope, params: { ...envelope.params, payload } },
  };
}

function rest(d: DecisionDetails): Partial<SuccessResult> {
  const out: { reasonCode?: string[]; reasoning?: string; data?: JsonObject } = {};
  if (d.reasonCode !== undefined) out.reasonCode = [...d.reasonCode];
  if (d.reasoning !== undefined) out.reasoning = d.reasoning;
  if (d.data !== undefined) out.data = d.data;
  return out;
}

/** Whether `method` (AOS, v0.3 or v1.0 name) is an A2A operation a guardian is asked about. */
export function isA2AMethod(method: string): boolean {
  return operationForMethod(method) !== undefined;
}

/**
 * Whether a hook for `method` accepts `modify` (cancel, resubscribe and pushNotificationConfig/get
 * accept only allow or deny; a2a-guard treats a modify there as no valid answer).
 */
export function acceptsModify(method: string): boolean {
  const op = operationForMethod(method);
  return op !== undefined && acceptsDecision(op, 'modify');
}
