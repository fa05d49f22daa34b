/**
 * The stages of an A2A call, as named values run in order (as node-http-proxy's passes). A stage
 * either hands the call on or ends it (it answered the caller, or the caller is gone). The stages
 * here are the binding-neutral middle of every call: task ownership, the request hooks, and the
 * ownership re-check of a modified call; each inbound adapter (pipeline.ts for HTTP, grpc/call.ts)
 * puts its own door in front and its own rebuild and forward stages behind them.
 *
 * What a stage works on is a flow: the frozen `Call` and its `CallLog` (call.ts), the canonical
 * JSON-RPC request as classified, the caller's side, and the outputs of earlier stages, each set
 * once by the stage that makes it.
 */
import type { JsonObject } from '../core/json';
import type { ProxyError } from '../core/errors';
import type { WireBytes } from '../core/turns';
import type { Config } from '../config/config';
import type { Side } from '../aos/hook-points';
import type { Exchange } from './call';
import { summarize, type HookRun, type HookRunInput } from './hooks';
import { withTaskOwnership, type AnswerHook, type CallHolds, type TaskOwnership } from './ownership';

/** A stage's word: END stops the run (the call is answered or gone); anything else hands it on. */
export const END = Symbol('end');
export type Step = typeof END | void;

export interface Stage<F> {
  readonly name: string;
  run(flow: F): Step | Promise<Step>;
}

/** Run stages in order until one ends the call. Synchronous stages cost no promise. */
export async function runStages<F>(stages: readonly Stage<F>[], flow: F): Promise<void> {
  for (const stage of stages) {
    let step = stage.run(flow);
    if (step instanceof Promise) step = await step;
    if (step === END) return;
  }
}

/** The caller's side of a call, in its binding's terms. */
export interface CallerPort {
  /** Still there to answer. */
  readonly open: boolean;
  /** Answer with the binding's error (in the agent's own form where the error is one the agent gives). */
  fail(err: ProxyError): void;
}

/** What the binding-neutral stages read and write. */
export interface CallFlow {
  readonly ex: Exchange;
  readonly port: CallerPort;
  /** The canonical JSON-RPC request, as classified (task ownership may replace it before the guardian sees it). */
  request: JsonObject;
  /** Its serialization, when the adapter made it while classifying. */
  requestJson: string | undefined;
  /**
   * Its UTF-8 bytes, when they are the caller's own (a large body sent as its canonical serialization: not encoded
   * again; held as its parsed strings and made as they are written, core/json-spliced.ts), or made in pieces.
   */
  requestBytes?: WireBytes | undefined;
  /** The agent's reasoning (client-side request hooks only). */
  readonly reasoning: string | undefined;
  /** A guardian's replacement must still be one request with one meaning on this binding: a problem, or undefined. */
  readonly validateModified: (replacement: JsonObject) => string | undefined;
  /** Set by the ownership stage: task ownership's checks of the agent's answer. */
  answerHook: AnswerHook | undefined;
  /** Set by the ownership stages: the new contexts the call holds provisionally. */
  holds?: CallHolds;
  /** Set by the request-hook stage: the approved (or replaced) request. */
  approved: Extract<HookRun, { type: 'pass' }> | undefined;
}

export interface StageDeps {
  readonly config: Pick<Config, 'role'>;
  readonly ownership?: TaskOwnership | undefined;
  readonly runHooks: (input: HookRunInput) => Promise<HookRun>;
  /** Hook sides of a request, in the order they run (client side first). */
  readonly requestSides: readonly Side[];
  /** Push deliveries through the proxy: its stage rewrites approved webhook configs (push/relay.ts). */
  readonly push?: { stage(): Stage<CallFlow> } | undefined;
}

function refuse(flow: CallFlow, err: ProxyError): typeof END {
  // Counted (outcome refused) with the call's audit line when it closes.
  flow.ex.log.decision = 'refused';
  fail(flow, err);
  return END;
}

/** Answer with an error: the new contexts the call held are let go first, so they are free once the caller reads it. */
function fail(flow: CallFlow, err: ProxyError): void {
  flow.holds?.end();
  flow.port.fail(err);
}

/** Task ownership: another caller's task is "not found", before the guardian or the agent sees the call. */
export function ownRequest(ownership: TaskOwnership, deps: StageDeps): Stage<CallFlow> {
  return {
    name: 'ownership',
    async run(flow) {
      const { call, log } = flow.ex;
      const owned = await ownership.checkRequest(call.owner, call.op, flow.request, 'caller', () => holdsOf(ownership, flow));
      if (!flow.port.open) return END;
      if (owned.type === 'refuse') return refuse(flow, owned.error);
      if (owned.request !== flow.request) {
        // Its page token unsealed: what the guardian judges and the agent receives.
        flow.request = owned.request;
        flow.requestJson = undefined;
        flow.requestBytes = undefined;
      }
      // The answer checks read answers as the call's binding writes them.
      flow.answerHook = ownership.answerHook(call.owner, call.op, call.codec);
      // A call about existing tasks shows the guardian whose they are (the caller's, or unchecked under FAIL_MODE=open).
      if (deps.config.role !== 'client' && owned.state !== 'none') log.peers.server = withTaskOwnership(call.callerPeer, call.owner, owned.state);
      return undefined;
    },
  };
}

/** The request hooks (envelope -> guardian -> enforce, per side): a block answers the caller. */
export function judgeRequest(deps: StageDeps): Stage<CallFlow> {
  return {
    name: 'request hooks',
    async run(flow) {
      const { ex } = flow;
      const run = await deps.runHooks({
        ex,
        sides: deps.requestSides,
        phase: 'request',
        payload: flow.request,
        ...(flow.requestBytes === undefined
          ? { payloadJson: flow.requestJson ?? JSON.stringify(flow.request) }
          : { payloadJson: flow.requestJson, payloadBytes: flow.requestBytes }),
        reasoning: flow.reasoning,
        validateModified: flow.validateModified,
        serviceParameters: ex.call.serviceParameters,
      });
      // A run the caller's cancellation cut short skipped its later sides: never an approval, whatever
      // the port says (an adapter might cancel before its port notices).
      if (!flow.port.open || ex.call.caller.cancelled) return END;
      if (run.type === 'block') {
        ex.log.decision = run.decision;
        fail(flow, run.error);
        return END;
      }
      flow.approved = run;
      ex.log.decision = summarize(ex.log.hooks, 'request');
      return undefined;
    },
  };
}

/** A modify may not re-target the call at a task the caller does not own. */
export function ownModified(ownership: TaskOwnership): Stage<CallFlow> {
  return {
    name: 'ownership of the modified call',
    run(flow) {
      const approved = flow.approved;
      if (approved === undefined || !approved.modified) return undefined;
      return recheck(flow, approved.payload);
    },
  };

  async function recheck(flow: CallFlow, payload: JsonObject): Promise<Step> {
    const { call } = flow.ex;
    // The guardian's payload carries the agent's own page tokens (it saw them unsealed).
    const again = await ownership.checkRequest(call.owner, call.op, payload, 'guardian', () => holdsOf(ownership, flow));
    if (!flow.port.open) return END;
    if (again.type === 'refuse') return refuse(flow, again.error);
    return undefined;
  }
}

/** The call's provisional holds of new contexts: made once, let go when the call ends (finishCall). */
function holdsOf(ownership: TaskOwnership, flow: CallFlow): CallHolds {
  if (flow.holds === undefined) {
    const holds = ownership.holdsFor(flow.ex.call.owner);
    flow.holds = holds;
    flow.ex.onEnd = () => holds.end();
  }
  return flow.holds;
}

/** The binding-neutral middle of every call, in order (task ownership's stages only when it is on). */
export function callStages(deps: StageDeps): readonly Stage<CallFlow>[] {
  const own = deps.ownership;
  const judged = own === undefined ? [judgeRequest(deps)] : [ownRequest(own, deps), judgeRequest(deps), ownModified(own)];
  return deps.push === undefined ? judged : [...judged, deps.push.stage()];
}
