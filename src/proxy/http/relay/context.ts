/**
 * What a relay of the agent's answer gets from the pipeline (the seam between proxy/stages or
 * pipeline and responses.ts / relay/stream.ts). Its own module, so neither relay imports the other for it.
 */
import type { Turns } from '../../fair';
import type { ServerResponse } from 'node:http';
import type { JsonObject, JsonRpcId } from '../../../aos/schemas';
import type { GuardianBudget } from '../../../aos/guardian';
import type { rewriteCard } from '../../../a2a/card';
import type { SseCodec } from '../../../a2a/binding';
import type { ProxyError } from '../../../core/errors';
import type { CallOutcome } from '../../../observe/audit';
import type { UpstreamAnswer, UpstreamHandle } from '../forward';
import type { HookRun } from '../../hooks';
import type { Exchange } from '../../call';
import type { AnswerHook } from '../../ownership';
import type { Line } from '../../window';
import type { AnswerRoad } from '../../answers';
import type { BodyLease } from '../../budget';
import { unreadableAnswer } from '../../enforce';
import type { ProxyDeps } from '../deps';

export interface RelayContext {
  /** The binding the call came by: answers, payloads and errors in its terms. */
  readonly codec: SseCodec;
  /** The caller's JSON-RPC id, echoed in errors. */
  readonly id: JsonRpcId | null;
  /** The A2A exchange, or undefined for traffic that is not A2A. */
  readonly ex: Exchange | undefined;
  readonly res: ServerResponse;
  readonly upRes: UpstreamAnswer;
  readonly upReq: UpstreamHandle;
  /** Run the response hooks (all sides, in response order) on one payload; stream events pass budget 'stream'. */
  readonly inspect: ((payload: JsonObject, payloadJson: string, budget?: GuardianBudget) => Promise<HookRun>) | undefined;
  /** Rewrite agent-card results (extended card operations) with these options. */
  readonly rewriteCard: Parameters<typeof rewriteCard>[1] | undefined;
  readonly maxBodyBytes: number;
  /**
   * The call's share of the in-flight budget (MAX_INFLIGHT_BODY_BYTES, shared with request bodies):
   * the bytes of the agent's answer held for inspection are taken from it (false: over the budget,
   * nothing taken) and given back as they leave.
   */
  readonly lease: Pick<BodyLease, 'take' | 'give'>;
  readonly onUpstreamFailure: (why: string) => void;
  /**
   * An answer (or event) that the response hooks cannot read: returns the error to send instead
   * (FAIL_MODE=closed), or undefined to pass it on (FAIL_MODE=open, logged and counted).
   */
  readonly onUninspectable: (why: string) => ProxyError | undefined;
  /** Track an open stream so a shutdown can end it with an error event; returns the untrack function. */
  readonly trackStream: (terminate: () => void) => () => void;
  /** Task ownership's checks of this answer (learn owners, filter task lists), before the response hooks. */
  readonly answerHook?: AnswerHook | undefined;
  /** Stream events judged at once (STREAM_INSPECT_WINDOW); default 16. */
  readonly streamWindow?: number;
  /** Places shared by all streams' events going to the guardian (one per stream-budget connection). */
  readonly streamLine?: Line;
  /** Judging the answer takes per-caller turns (relay-core.ts). */
  readonly turns?: Turns;
}

/**
 * What a call's answers go through (answers.ts), from the relay's context: `notAnObject` names the
 * framing; `judged` counts each message shown to the guardian.
 */
export function answerRoad(ctx: RelayContext, notAnObject: string, budget?: GuardianBudget, judged?: () => void): AnswerRoad {
  const inspect = ctx.inspect;
  return {
    card: ctx.rewriteCard,
    answerHook: ctx.answerHook,
    unreadable: ctx.onUninspectable,
    notAnObject,
    spelling: true,
    judge:
      inspect === undefined
        ? undefined
        : (payload, payloadJson) => {
            judged?.();
            return inspect(payload, payloadJson, budget);
          },
  };
}

/**
 * The unreadable-answer policy (FAIL_MODE) as a relay applies it: the error to send instead, or undefined
 * to pass the answer on, logged and counted; `mark` records the outcome on the call, where there is one.
 */
export function uninspectable(deps: ProxyDeps, method: string | undefined, mark: (outcome: CallOutcome) => void): (why: string) => ProxyError | undefined {
  const { config, logger, metrics } = deps;
  return (why) => {
    const action = unreadableAnswer(why, config.failMode, config.shadowMode);
    if (action.type === 'refuse') {
      mark('answer_refused');
      logger.warn({ method, why }, 'agent answer cannot be inspected; refused (FAIL_MODE=closed)');
      return action.error;
    }
    mark('forwarded_unchecked');
    metrics.failOpenPasses.inc();
    logger.warn({ method, why }, 'agent answer cannot be inspected; passed (FAIL_MODE=open)');
    return undefined;
  };
}
