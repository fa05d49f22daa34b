/**
 * Running AOS hooks for one payload: envelope -> guardian -> enforce, once per hook side, in order.
 * A `modify` from one side is what the next side sees; any block ends the run.
 *
 * Large payloads are never copied into an envelope: their UTF-8 bytes are made once (or taken from
 * the caller, `payloadBytes`) and sent between a small envelope head and tail; a run that passes
 * hands those same bytes back (`payloadBytes`), so forwarding them costs no further copy.
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Metrics } from '../admin/metrics';
import type { Operation } from '../a2a/operations';
import type { Binding } from '../a2a/classify';
import type { Guardian, GuardianBudget } from '../aos/guardian';
import { type Identities, type Side, type Phase, hookContext } from '../aos/identity';
import { buildEnvelope, envelopeBytes, envelopeJson, type EnvelopeBytes } from '../aos/envelope';
import type { A2AContext, Agent, JsonObject, JsonRpcId, PartialAgent } from '../aos/schemas';
import type { Cancellation } from '../cancel';
import { enforce, type HookAction, type HookDecision } from './enforce';
import type { ProxyError } from '../core/errors';
import type { UpstreamAnswer, UpstreamHandle } from './forward';
import type { VerifiedIdentity } from '../identity/types';
import type { AnswerHook } from './ownership';
import type { CallSpan, UpstreamSpan } from '../observe/tracing';
import type { CallOutcome } from '../observe/audit';

export interface HookDeps {
  readonly config: Config;
  readonly guardian: Guardian;
  readonly identities: Identities;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export interface HookRecord {
  readonly side: Side;
  readonly phase: Phase;
  readonly decision: HookDecision;
  readonly envelopeId: string;
  readonly guardianMs: number;
  readonly reasonCode?: readonly string[] | undefined;
  /** The guardian's message (its free-text reasoning is not kept). */
  readonly message?: string | undefined;
  /** No valid answer: the kind, and what exactly went wrong (e.g. the TLS error behind a connect failure). */
  readonly failure?: string;
  readonly detail?: string;
}

/** Per-call facts, logged once when the call is over. */
export interface Exchange {
  readonly started: number;
  readonly op: Operation;
  readonly binding: Binding;
  readonly wireMethod: string;
  /** The caller's JSON-RPC id (REST: the minted id of the equivalent request). */
  readonly id: JsonRpcId | null;
  readonly req: IncomingMessage;
  /** Fires when the caller goes away: guardian calls for this exchange are abandoned. */
  readonly caller: Cancellation;
  /** The verified caller (undefined: none, under IDENTITY_POLICY=optional or claims). */
  readonly identity: VerifiedIdentity | undefined;
  /** The caller as server-side hooks show it (`from` of a request): verified, unknown or claimed. */
  readonly callerPeer: PartialAgent;
  /** The upstream request once sent (aborted when the caller goes away). */
  upReq?: UpstreamHandle;
  readonly hooks: HookRecord[];
  /** The peer of each hook side, learned at the first hook of the call. */
  readonly peers: Partial<Record<Side, PartialAgent>>;
  /** The call's trace span (a no-op when tracing is off). */
  readonly span: CallSpan;
  /** The AOS context of each hook point of the call and its JSON, made once (a stream's events share them). */
  contexts?: Array<CallContext | undefined>;
  decision: HookDecision | 'error' | 'refused';
  upstreamStatus: number | null;
  /** Task ownership's checks of the agent's answer (proxy/ownership.ts), when the call needs them. */
  answerHook?: AnswerHook;
  events: number;
  error?: string;
  /** performance.now() when the request was sent to the agent, and how long the agent's answer took. */
  upstreamSentAt?: number;
  upstreamMs?: number;
  /** The upstream call's span (ended when the call is over) and the agent's answer. */
  upSpan?: UpstreamSpan;
  upAnswer?: UpstreamAnswer;
  /** The outcome, where the pipeline decides it rather than the facts (see observe/audit). */
  outcome?: CallOutcome;
}

/** One hook point's context, valid while the observed agent (rebuilt when its card changes) is the same object. */
interface CallContext {
  readonly observed: Agent;
  readonly context: A2AContext;
  readonly json: string;
}

/** What a hook run reads and records of a call: any binding's per-call value that has these (gRPC too). */
export type HookCall = Pick<Exchange, 'op' | 'caller' | 'callerPeer' | 'hooks' | 'peers' | 'span' | 'contexts'>;

export type HookRun =
  | {
    readonly type: 'pass'; readonly payload: JsonObject; readonly payloadJson: string;
    /** UTF-8 bytes of payloadJson when the run made (or was given) them; forward these rather than encoding again. */
    readonly payloadBytes: Buffer | undefined;
    readonly modified: boolean; readonly unchecked: boolean;
  }
  | { readonly type: 'block'; readonly error: ProxyError; readonly decision: HookDecision };

export interface HookRunInput {
  readonly ex: HookCall;
  readonly sides: readonly Side[];
  readonly phase: Phase;
  readonly payload: JsonObject;
  readonly payloadJson: string;
  /** payloadJson's UTF-8 bytes, when the caller already has them (not copied again). */
  readonly payloadBytes?: Buffer;
  /** Guardian connections to use: the call's own (default), or the stream events' (never ahead of a call's checks). */
  readonly budget?: GuardianBudget;
  readonly reasoning: string | undefined;
  readonly validateModified?: (replacement: JsonObject) => string | undefined;
}

/** Payloads from this size on travel as their own buffer between envelope head and tail. */
export const SPLICE_BYTES = 16 * 1024;

export function createHookRunner(deps: HookDeps): (input: HookRunInput) => Promise<HookRun> {
  const { config, logger, metrics } = deps;

  /** Who the observed agent is talking to, for one hook side. */
  function peerOf(side: Side, ex: HookCall): PartialAgent {
    // Server side: the caller as identified for this call (ROLE=both: its own observed client).
    return side === 'client' ? deps.identities.upstreamPeer() : ex.callerPeer;
  }

  // Context JSON per observed agent (a new object whenever its card changes), side, phase and peer:
  // the same few strings serve every call.
  const contextJsonCache = new WeakMap<Agent, Map<string, string>>();
  function contextJson(observed: Agent, side: Side, phase: Phase, peer: PartialAgent, context: A2AContext): string {
    let byPeer = contextJsonCache.get(observed);
    if (byPeer === undefined) contextJsonCache.set(observed, (byPeer = new Map()));
    // A caller's identity marker (metadata) is part of what the guardian sees, so part of the key.
    const key = `${side}\n${phase}\n${peer.url}\n${peer.name}\n${peer.version}${peer.metadata === undefined ? '' : `\n${peer.id ?? ''}\n${JSON.stringify(peer.metadata)}`}`;
    let json = byPeer.get(key);
    if (json === undefined) {
      json = JSON.stringify(context);
      if (byPeer.size >= 1024) byPeer.clear(); // callers' claims are unbounded; the cache is not
      byPeer.set(key, json);
    }
    return json;
  }

  /** The context of one hook point of a call: made at its first hook, reused by every stream event after it. */
  function callContext(ex: HookCall, side: Side, phase: Phase): CallContext {
    const observed = deps.identities.observed(side);
    const at = (side === 'client' ? 0 : 2) + (phase === 'request' ? 0 : 1);
    const contexts = (ex.contexts ??= []);
    const known = contexts[at];
    if (known !== undefined && known.observed === observed) return known;
    // Once per side and call: a stream's events all go to the same peer.
    const peer = (ex.peers[side] ??= peerOf(side, ex));
    const context = hookContext(side, phase, observed, peer);
    const made: CallContext = { observed, context, json: contextJson(observed, side, phase, peer, context) };
    contexts[at] = made;
    return made;
  }

  async function one(input: HookRunInput, side: Side, payload: JsonObject, payloadJson: string, payloadBytes: Buffer | undefined): Promise<HookAction> {
    const { ex, phase } = input;
    const { context, json: ctxJson } = callContext(ex, side, phase);
    const reasoning = side === 'client' && phase === 'request' ? input.reasoning : undefined;
    const envelope = buildEnvelope({ method: ex.op.aosMethod, payload, context, reasoning });
    const envelopeId = envelope.id as string;
    const body: string | EnvelopeBytes = payloadBytes === undefined ? envelopeJson(envelope, payloadJson, ctxJson) : envelopeBytes(envelope, payloadBytes, ctxJson);
    const span = ex.span.hook({ method: ex.op.aosMethod, side, phase, envelopeId });
    const t0 = performance.now();
    const outcome = await deps.guardian.decide(envelope, body, ex.caller, span.headers, input.budget ?? 'call');
    const guardianMs = performance.now() - t0;
    const action = enforce({
      op: ex.op, payload, phase, envelopeId, outcome, failMode: config.failMode, shadow: config.shadowMode,
      exposeReasoning: config.exposeGuardianReasoning, ...(input.validateModified === undefined ? {} : { validateModified: input.validateModified }),
    });
    const answer = action.outcome.ok ? action.outcome.result : undefined;
    const rec: HookRecord = {
      side, phase, decision: action.decision, envelopeId, guardianMs, reasonCode: answer?.reasonCode, message: answer?.message,
      ...(action.outcome.ok ? {} : { failure: action.outcome.kind, detail: action.outcome.detail }),
    };
    span.end({ decision: rec.decision, reasonCodes: rec.reasonCode, failureKind: rec.failure, failureDetail: rec.detail });
    record(ex, rec, action);
    if (logger.isLevelEnabled('debug')) logger.debug({ envelope: typeof body === 'string' ? body : Buffer.concat(body.chunks).toString('utf8'), outcome }, 'guardian exchange');
    return action;
  }

  function record(ex: HookCall, rec: HookRecord, action: HookAction): void {
    // Stream events are counted, not kept one by one: a long stream must not grow the record.
    // A block is always kept (it ends the call), and so is the first failure: the audit line must say why.
    if (rec.phase === 'request' || ex.hooks.length < 8 || action.type === 'block' || (rec.failure !== undefined && !ex.hooks.some((h) => h.failure !== undefined))) {
      ex.hooks.push(rec);
    }
    // A call abandoned because the caller left (or a stream ended before its event) decided nothing.
    if (!action.outcome.ok && action.outcome.kind === 'cancelled') return;
    metrics.decision(ex.op.aosMethod, rec.side, rec.phase, rec.decision);
    metrics.guardianCall(ex.op.aosMethod, rec.failure ?? (action.outcome.ok ? action.outcome.result.decision : 'error'), rec.guardianMs / 1000);
    if (!action.outcome.ok) {
      metrics.guardianFailures.inc({ kind: action.outcome.kind });
      if (rec.decision === 'failOpen') {
        metrics.failOpenPasses.inc();
        logger.warn({ method: ex.op.aosMethod, side: rec.side, phase: rec.phase, failure: action.outcome.kind, detail: action.outcome.detail, envelopeId: rec.envelopeId },
          'guardian gave no valid answer; passing anyway (FAIL_MODE=open)');
      }
    }
    if (rec.decision === 'shadow') {
      const would = action.outcome.ok ? action.outcome.result.decision : 'noAnswer';
      metrics.shadowPasses.inc({ decision: would });
      if (would !== 'allow') logger.info({ method: ex.op.aosMethod, side: rec.side, phase: rec.phase, wouldBe: would, envelopeId: rec.envelopeId }, 'shadow mode: not enforced');
    }
  }

  return async (input) => {
    // The first calls after start wait (bounded) for the agent cards that name the observed agent.
    const identitiesReady = deps.identities.pending;
    if (identitiesReady !== undefined) await identitiesReady;
    let payload = input.payload;
    let payloadJson = input.payloadJson;
    let payloadBytes = input.payloadBytes;
    let modified = false;
    let unchecked = false;
    for (const side of input.sides) {
      if (payloadBytes === undefined && payloadJson.length >= SPLICE_BYTES) payloadBytes = Buffer.from(payloadJson, 'utf8');
      const action = await one(input, side, payload, payloadJson, payloadBytes);
      if (action.type === 'block') return { type: 'block', error: action.error, decision: action.decision };
      if (action.decision === 'failOpen' || (action.decision === 'shadow' && !action.outcome.ok)) unchecked = true;
      if (action.payload !== payload) {
        payload = action.payload;
        payloadJson = JSON.stringify(payload);
        payloadBytes = undefined;
        modified = true;
      }
      if (input.ex.caller.cancelled) break;
    }
    return { type: 'pass', payload, payloadJson, payloadBytes, modified, unchecked };
  };
}

/** The overall decision of a run: modify if any hook modified, failOpen/shadow if any hook passed unchecked. */
export function summarize(hooks: readonly HookRecord[], phase: Phase): HookDecision {
  let d: HookDecision = 'allow';
  for (const h of hooks) {
    if (h.phase !== phase) continue;
    if (h.decision === 'failOpen' || h.decision === 'shadow') d = h.decision;
    else if (h.decision === 'modify' && d === 'allow') d = 'modify';
  }
  return d;
}
