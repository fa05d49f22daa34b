/**
 * One A2A call as the pipeline carries it, whatever its binding (architecture.md, "call.ts"):
 * - `Call`: the facts fixed once the call is classified and its caller known. Frozen: no stage and
 *   no relay can change what the call is after the guardian was asked about it.
 * - `CallLog`: what happens to it (hook records, decision, upstream timings), written as the call
 *   goes and read once, when the call is over, by `finishCall` for the audit line, the decision log,
 *   the metrics and the span.
 */
import type { Codec, ErrorShape } from '../a2a/binding';
import type { Operation } from '../a2a/operations';
import type { Side } from '../aos/hook-points';
import type { A2AContext, Agent, JsonRpcId, PartialAgent } from '../aos/schemas';
import type { Cancellation } from '../core/cancel';
import type { VerifiedIdentity } from '../identity/types';
import type { Owner } from '../ownership/principal';
import type { AuditHook, CallOutcome } from '../observe/audit';
import type { CallSpan, UpstreamSpan } from '../observe/tracing';
import type { HookDecision } from './enforce';
import type { ServiceParameters } from '../a2a/service-parameters';
import { writeAuditLine, type AuditLineDeps } from './audit-line';

export interface Call {
  /** performance.now() when the call arrived. */
  readonly started: number;
  /** The binding it came by: its answers and errors are written in this binding's terms. */
  readonly codec: Codec;
  readonly op: Operation;
  /** The method as the caller named it (JSON-RPC method, REST route's v1.0 name, gRPC RPC name). */
  readonly wireMethod: string;
  /** The caller's JSON-RPC id (REST and gRPC: the minted id of the equivalent request). */
  readonly id: JsonRpcId | null;
  /** The form the binding's error answers take for this call (v0.3 shapes, streaming). */
  readonly shape: ErrorShape;
  /** Fires when the caller goes away: guardian calls for this call are abandoned. */
  readonly caller: Cancellation;
  /** The verified caller (undefined: none, under IDENTITY_POLICY=optional or claims). */
  readonly identity: VerifiedIdentity | undefined;
  /** The caller as server-side hooks show it (`from` of a request): verified, unknown or claimed. */
  readonly callerPeer: PartialAgent;
  /** Task ownership's key of the caller. */
  readonly owner: Owner;
  /** The key the caller's shares and turns are counted under (proxy/callers.ts callerKey). */
  readonly key: string;
  /** The call's trace span (a no-op when tracing is off). */
  readonly span: CallSpan;
  readonly remoteAddress: string | undefined;
  /** The caller's A2A service parameters, as request hooks show them (undefined: not read for this call). */
  readonly serviceParameters?: ServiceParameters;
}

/** One hook's outcome: the audit record's hook, with enforce's decision. */
export interface HookRecord extends AuditHook {
  readonly decision: HookDecision;
}

/** One hook point's AOS context, valid while the observed agent (rebuilt when its card changes) is the same object. */
export interface HookPointContext {
  readonly observed: Agent;
  readonly context: A2AContext;
  readonly json: string;
}

export interface CallLog {
  readonly hooks: HookRecord[];
  /** The peer of each hook side, learned at the first hook of the call. */
  readonly peers: Partial<Record<Side, PartialAgent>>;
  /** The AOS context of each hook point and its JSON, made once (a stream's events share them). */
  contexts?: Array<HookPointContext | undefined>;
  decision: HookDecision | 'error' | 'refused';
  upstreamStatus: number | null;
  /** Answer messages (stream events) judged. */
  events: number;
  error?: string;
  /** The outcome, where the pipeline decides it rather than the facts (see observe/audit). */
  outcome?: CallOutcome;
  /** performance.now() when the request left for the agent, and when the agent's answer ended. */
  upstreamSentAt?: number;
  upstreamEndedAt?: number;
  /** The upstream call's span (the adapter ends it: at the answer's end, on an upstream error, or when the caller leaves). */
  upSpan?: UpstreamSpan;
}

export interface Exchange {
  readonly call: Call;
  readonly log: CallLog;
  /** What the call holds until it ends (task ownership's provisional holds), let go by finishCall. */
  onEnd?: () => void;
}

export function openExchange(call: Call): Exchange {
  return {
    call: Object.freeze(call),
    log: { hooks: [], peers: {}, decision: 'allow', upstreamStatus: null, events: 0 },
  };
}

export interface FinishDeps extends AuditLineDeps {
  readonly config: { readonly role: string };
}

/** The call is over: what it held let go, one audit line (and decision-log record), its outcome and added latency counted, its span ended. */
export function finishCall(deps: FinishDeps, ex: Exchange, finished: boolean): void {
  ex.onEnd?.();
  const { call, log } = ex;
  const now = performance.now();
  const upstreamMs = log.upstreamSentAt === undefined ? undefined : (log.upstreamEndedAt ?? now) - log.upstreamSentAt;
  const side = log.hooks[0]?.side;
  const peer = side === undefined ? undefined : log.peers[side];
  const record = writeAuditLine(
    deps,
    {
      method: call.op.aosMethod,
      wireMethod: call.wireMethod,
      binding: call.codec.name,
      role: deps.config.role,
      decision: log.decision,
      hooks: log.hooks,
      // The caller (server side) is verified when an identity was proven; a card or a header claim is not.
      // A literal of these four (peerLiteral, below): the audit line keeps the text of its head by their values.
      peer:
        peer === undefined
          ? undefined
          : {
              name: peer.name,
              url: peer.url,
              version: peer.version,
              verified: side === 'server' && call.identity !== undefined && call.identity.source !== 'local',
            },
      remoteAddress: call.remoteAddress,
      traceId: call.span.traceId,
      spanId: call.span.spanId,
      a2aId: call.id,
      upstreamStatus: log.upstreamStatus,
      forwarded: log.upstreamSentAt !== undefined,
      upstreamMs,
      totalMs: now - call.started,
      finished,
      events: log.events,
      error: log.error,
      outcome: log.outcome,
    },
    call.identity,
    true,
  );
  call.span.end({ outcome: record.outcome, decision: record.decision, reasonCodes: record.reasonCodes, upstreamStatus: log.upstreamStatus, error: log.error });
}
