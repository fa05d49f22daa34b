/**
 * Running AOS hooks for one payload: envelope -> guardian -> enforce, once per hook side, in order.
 * A `modify` from one side is what the next side sees; any block ends the run.
 *
 * Large payloads are never copied into an envelope: their UTF-8 bytes are made once (or taken from
 * the caller, `payloadBytes`) and sent between a small envelope head and tail; a run that passes
 * hands those same bytes back (`payloadBytes`), so forwarding them costs no further copy.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/config';
import type { Metrics } from '../admin/metrics';
import type { Guardian, GuardianBudget, TraceContext } from '../aos/guardian';
import type { GuardianOutcome } from '../aos/outcome';
import type { Envelope } from '../aos/schemas';
import type { CallerLimits } from './callers';
import { type Identities, hookContext } from '../aos/identity';
import type { Phase, Side } from '../aos/hook-points';
import { buildEnvelope, envelopeJson, envelopeWireBytes, envelopeSlices, type EnvelopeBytes } from '../aos/envelope';
import type { A2AContext, Agent, JsonObject, PartialAgent } from '../aos/schemas';
import { enforce, type HookAction, type HookDecision } from './enforce';
import { proxyError, type ProxyError } from '../core/errors';
import type { Exchange, HookPointContext, HookRecord } from './call';
import { serviceParametersView, type ServiceParameters } from '../a2a/service-parameters';
import { LARGE_BODY, largeTurn, utf8InTurns, type WireBytes } from '../core/turns';
import type { FairQueue } from '../core/fair-queue';

export interface HookDeps {
  readonly config: Config;
  readonly guardian: Guardian;
  readonly identities: Identities;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Per-caller shares (the guardian calls one caller may have in flight); undefined = none. */
  readonly callerLimits?: CallerLimits | undefined;
  /** Turns per caller: a large payload's costly steps take its caller's turns (proxy/fair.ts largeTurn); undefined = none. */
  readonly fair?: FairQueue | undefined;
}

export type { HookRecord } from './call';

/**
 * A payload's serialization as the caller of a run has it: its JSON text, with or without its UTF-8 bytes, or
 * (a large request) its bytes alone, never decoded to a text: the envelope, the budget and the agent's body
 * take the bytes.
 */
export type PayloadSerialization =
  | { readonly payloadJson: string; readonly payloadBytes?: undefined }
  | { readonly payloadJson: string; readonly payloadBytes: WireBytes }
  | { readonly payloadJson?: undefined; readonly payloadBytes: WireBytes };

/** A payload's size in UTF-8 bytes when its bytes exist, else in characters of its text (the large-body threshold's unit either way). */
const sizeOf = (p: PayloadSerialization): number => p.payloadBytes?.length ?? (p.payloadJson as string).length;

export type HookRun =
  | ({
      readonly type: 'pass';
      readonly payload: JsonObject;
      readonly modified: boolean;
      readonly unchecked: boolean;
      /** The service parameters approved for the agent (request runs of calls that read them). */
      readonly serviceParameters?: ServiceParameters | undefined;
    } & PayloadSerialization)
  | { readonly type: 'block'; readonly error: ProxyError; readonly decision: HookDecision };

export type HookRunInput = RunInput & PayloadSerialization;

interface RunInput {
  readonly ex: Exchange;
  readonly sides: readonly Side[];
  readonly phase: Phase;
  readonly payload: JsonObject;
  /** Guardian connections to use: the call's own (default), or the stream events' (never ahead of a call's checks). */
  readonly budget?: GuardianBudget;
  readonly reasoning: string | undefined;
  readonly validateModified?: (replacement: JsonObject) => string | undefined;
  /** Request hooks: the service parameters shown to the guardian (each side sees an earlier side's modify). */
  readonly serviceParameters?: ServiceParameters | undefined;
}

/** The run of a call whose caller left before every side was asked (nobody is answered with it). */
const CALLER_GONE: HookRun = Object.freeze({
  type: 'block',
  error: proxyError('guardianUnavailable', 'Caller went away before every hook was asked'),
  decision: 'failClosed',
});

/** Payloads from this size on travel as their own buffer between envelope head and tail. */
export const SPLICE_BYTES = 16 * 1024;

/** The context of each hook point of a call, made once and shared by the calls and events that have the same one. */
function createCallContexts(deps: HookDeps): (ex: Exchange, side: Side, phase: Phase) => HookPointContext {
  /** Who the observed agent is talking to, for one hook side. */
  function peerOf(side: Side, ex: Exchange): PartialAgent {
    // Server side: the caller as identified for this call (ROLE=both: its own observed client).
    return side === 'client' ? deps.identities.upstreamPeer() : ex.call.callerPeer;
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

  // The last context made per hook point, with its peer: an unverified caller and the upstream agent
  // are one object on every call, so most calls reuse it without building the cache key above.
  const lastMade: Array<{ readonly peer: PartialAgent; readonly made: HookPointContext } | undefined> = [];

  /** The context of one hook point of a call: made at its first hook, reused by every stream event after it. */
  function callContext(ex: Exchange, side: Side, phase: Phase): HookPointContext {
    const observed = deps.identities.observed(side);
    const at = (side === 'client' ? 0 : 2) + (phase === 'request' ? 0 : 1);
    const contexts = (ex.log.contexts ??= []);
    const known = contexts[at];
    if (known !== undefined && known.observed === observed) return known;
    // Once per side and call: a stream's events all go to the same peer.
    const peer = (ex.log.peers[side] ??= peerOf(side, ex));
    const last = lastMade[at];
    if (last !== undefined && last.peer === peer && last.made.observed === observed) return (contexts[at] = last.made);
    const context = hookContext(side, phase, observed, peer);
    const made: HookPointContext = { observed, context, json: contextJson(observed, side, phase, peer, context) };
    contexts[at] = made;
    lastMade[at] = { peer, made };
    return made;
  }

  return callContext;
}

export function createHookRunner(deps: HookDeps): (input: HookRunInput) => Promise<HookRun> {
  const { config, logger } = deps;

  const callContext = createCallContexts(deps);
  const turnOf = (ex: Exchange): Promise<void> => largeTurn(deps.fair, ex.call.key, ex.call.caller);

  async function one(input: HookRunInput, side: Side, payload: JsonObject, ser: PayloadSerialization, sp: ServiceParameters | undefined): Promise<HookAction> {
    const { ex, phase } = input;
    let { context, json: ctxJson } = callContext(ex, side, phase);
    if (sp !== undefined) {
      // Per call, after the shared context: spliced into its JSON as the last member.
      const view = serviceParametersView(sp);
      context = { ...context, serviceParameters: view };
      ctxJson = `${ctxJson.slice(0, -1)},"serviceParameters":${JSON.stringify(view)}}`;
    }
    const reasoning = side === 'client' && phase === 'request' ? input.reasoning : undefined;
    const envelope = buildEnvelope({ method: ex.call.op.aosMethod, payload, context, reasoning });
    const envelopeId = envelope.id as string;
    const body: string | EnvelopeBytes =
      ser.payloadBytes === undefined ? envelopeJson(envelope, ser.payloadJson, ctxJson) : envelopeWireBytes(envelope, ser.payloadBytes, ctxJson);
    const span = ex.call.span.hook({ method: ex.call.op.aosMethod, side, phase, envelopeId });
    const t0 = performance.now();
    const outcome = await decideInShare(deps, ex, envelope, body, span.headers, input.budget ?? 'call');
    const guardianMs = performance.now() - t0;
    // A large modify's payload came in a task of its own (the worker's copy): its checks get the next turn.
    if (sizeOf(ser) >= LARGE_BODY && outcome.ok && outcome.result.decision === 'modify') await turnOf(ex);
    const action = enforce({
      op: ex.call.op,
      payload,
      phase,
      envelopeId,
      outcome,
      failMode: config.failMode,
      shadow: config.shadowMode,
      exposeReasoning: config.exposeGuardianReasoning,
      validateModified: input.validateModified,
      serviceParameters: sp,
      allowedExtensions: config.a2aExtensions,
    });
    const o = action.outcome;
    // One literal per shape (a spread of the failure fields cost an object and a copy per hook).
    const rec: HookRecord = o.ok
      ? { side, phase, decision: action.decision, envelopeId, guardianMs, reasonCode: o.result.reasonCode, message: o.result.message }
      : { side, phase, decision: action.decision, envelopeId, guardianMs, reasonCode: undefined, message: undefined, failure: o.kind, detail: o.detail };
    span.end({ decision: rec.decision, reasonCodes: rec.reasonCode, failureKind: rec.failure, failureDetail: rec.detail });
    record(deps, ex, rec, action);
    if (logger.isLevelEnabled('debug'))
      logger.debug({ envelope: typeof body === 'string' ? body : Buffer.concat([...envelopeSlices(body)]).toString('utf8'), outcome }, 'guardian exchange');
    return action;
  }

  return async (input) => {
    // The first calls after start wait (bounded) for the agent cards that name the observed agent.
    const identitiesReady = deps.identities.pending;
    if (identitiesReady !== undefined) await identitiesReady;
    let payload = input.payload;
    let ser: PayloadSerialization = input;
    let modified = false;
    let unchecked = false;
    let sp = input.serviceParameters;
    for (const side of input.sides) {
      const large = sizeOf(ser) >= LARGE_BODY;
      if (ser.payloadBytes === undefined && ser.payloadJson.length >= SPLICE_BYTES) {
        const turn = (): Promise<void> => turnOf(input.ex);
        const text = ser.payloadJson;
        ser = { payloadJson: text, payloadBytes: large ? await utf8InTurns(text, turn) : Buffer.from(text, 'utf8') };
        if (large) await turn();
      }
      const action = await one(input, side, payload, ser, sp);
      if (action.type === 'block') return { type: 'block', error: action.error, decision: action.decision };
      sp = action.serviceParameters ?? sp;
      if (action.decision === 'failOpen' || (action.decision === 'shadow' && !action.outcome.ok)) unchecked = true;
      if (action.payload !== payload) {
        // A large modify: the guardian's payload arrived in a turn of its own (a worker's copy); its serialization gets another.
        if (large) await turnOf(input.ex);
        payload = action.payload;
        ser = await serializedModify(action, payload, () => turnOf(input.ex));
        modified = true;
      }
      // The caller left: the later sides are not asked, and a run they did not judge approves nothing.
      if (input.ex.call.caller.cancelled) return CALLER_GONE;
    }
    const { payloadJson, payloadBytes } = ser;
    return payloadJson === undefined
      ? { type: 'pass', payload, payloadBytes, modified, unchecked, serviceParameters: sp }
      : { type: 'pass', payload, payloadJson, payloadBytes, modified, unchecked, serviceParameters: sp };
  };
}

/**
 * A modify's payload serialized: as the guardian made it (a large modify from the worker: its bytes, forwarded
 * as they are), else JSON.stringify's text, and its bytes a slice per turn when large.
 */
async function serializedModify(action: HookAction, payload: JsonObject, turn: () => Promise<void>): Promise<PayloadSerialization> {
  const made = madeBytes(action);
  if (made !== undefined) return { payloadBytes: made };
  const text = JSON.stringify(payload);
  if (text.length < LARGE_BODY) return { payloadJson: text };
  await turn();
  const bytes = await utf8InTurns(text, turn);
  await turn();
  return { payloadJson: text, payloadBytes: bytes };
}

/** The UTF-8 JSON of a modify's payload as the guardian made it, when it made it and it is the payload passed on. */
function madeBytes(action: HookAction): Buffer | undefined {
  const o = action.outcome;
  if (action.type !== 'pass' || !o.ok || o.payloadBytes === undefined) return undefined;
  return o.result.modifiedRequest?.params.payload === action.payload ? o.payloadBytes : undefined;
}

/**
 * The guardian's answer, asked once the caller holds a place of its own share (GUARDIAN_CALLS_PER_CALLER):
 * a caller with many slow calls waits in its own line, and the connections stay free for the others.
 * Stream events have their own line (the windows' shared places) and are not counted here.
 */
async function decideInShare(
  deps: HookDeps,
  ex: Exchange,
  envelope: Envelope,
  body: string | EnvelopeBytes,
  headers: TraceContext | undefined,
  budget: GuardianBudget,
): Promise<GuardianOutcome> {
  const limits = deps.callerLimits;
  const key = ex.call.key;
  if (limits === undefined || budget !== 'call') return deps.guardian.decide(envelope, body, ex.call.caller, headers, budget, key);
  const place = limits.guardianPlace(key, ex.call.caller);
  if (place.entered !== true && !(await place.entered))
    return { ok: false, kind: 'cancelled', detail: 'caller went away while waiting for its share of the guardian' };
  try {
    return await deps.guardian.decide(envelope, body, ex.call.caller, headers, budget, key);
  } finally {
    place.leave();
  }
}

/** One hook's record on the call, its metrics, and the log lines of passes the guardian did not approve. */
function record(deps: HookDeps, ex: Exchange, rec: HookRecord, action: HookAction): void {
  const { logger, metrics } = deps;
  // Stream events are counted, not kept one by one: a long stream must not grow the record.
  // A block is always kept (it ends the call), and so is the first failure: the audit line must say why.
  if (
    rec.phase === 'request' ||
    ex.log.hooks.length < 8 ||
    action.type === 'block' ||
    (rec.failure !== undefined && !ex.log.hooks.some((h) => h.failure !== undefined))
  ) {
    ex.log.hooks.push(rec);
  }
  // A call abandoned because the caller left (or a stream ended before its event) decided nothing.
  if (!action.outcome.ok && action.outcome.kind === 'cancelled') return;
  metrics.decision(ex.call.op.aosMethod, rec.side, rec.phase, rec.decision);
  metrics.guardianCall(ex.call.op.aosMethod, rec.failure ?? (action.outcome.ok ? action.outcome.result.decision : 'error'), rec.guardianMs / 1000);
  if (!action.outcome.ok) {
    metrics.guardianFailures.inc({ kind: action.outcome.kind });
    if (rec.decision === 'failOpen') {
      metrics.failOpenPasses.inc();
      logger.warn(
        {
          method: ex.call.op.aosMethod,
          side: rec.side,
          phase: rec.phase,
          failure: action.outcome.kind,
          detail: action.outcome.detail,
          envelopeId: rec.envelopeId,
        },
        'guardian gave no valid answer; passing anyway (FAIL_MODE=open)',
      );
    }
  }
  if (rec.decision === 'shadow') {
    const would = action.outcome.ok ? action.outcome.result.decision : 'noAnswer';
    metrics.shadowPasses.inc({ decision: would });
    if (would !== 'allow')
      logger.info({ method: ex.call.op.aosMethod, side: rec.side, phase: rec.phase, wouldBe: would, envelopeId: rec.envelopeId }, 'shadow mode: not enforced');
  }
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
