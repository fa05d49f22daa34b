/**
 * The agent's answer on its way to the caller, as named stages (the `Stage` shape of stages.ts): one
 * answer message (a unary body, one SSE event's data, one gRPC message, all in their JSON form) goes
 * through the card rewrite, task ownership, the unreadable-answer policy, the spelling rule and the
 * response hooks, on every binding alike. A stage hands the message on, or ends it with `flow.end`:
 * refused (the caller gets an error instead), or passed unjudged (FAIL_MODE=open). What the caller then
 * gets is the binding's to write (http/responses.ts, http/relay/stream.ts, grpc/relay.ts): the agent's bytes when
 * nothing changed them, else the proxy's encoding of `flow.body` or of the judged payload.
 */
import type { JsonObject, JsonRpcId } from '../core/json';
import type { Codec } from '../a2a/binding';
import type { CardJson } from '../a2a/card';
import { UNVERIFIED } from '../identity/caller';
import { cardRefusal, cardVerdict, type CardServing, type CardVerdict, type CardViewer } from './card-judge';
import { misspelledAnswer } from '../a2a/fields';
import { isObject } from '../core/json';
import { proxyError, type ProxyError } from '../core/errors';
import type { CallOutcome } from '../observe/audit';
import type { Exchange } from './call';
import type { HookRun } from './hooks';
import type { AnswerCheck, AnswerHook } from './ownership';
import { END, type Stage, type Step } from './stages';

/** How an answer message ends early. */
export type AnswerEnd =
  | {
      readonly type: 'refuse';
      readonly error: ProxyError;
      /** What the audit line says went wrong. */
      readonly why: string;
      readonly outcome?: CallOutcome;
      /** Task ownership refused it (the call's decision becomes `refused`). */
      readonly refused?: boolean;
      /** The agent failed (counted as an upstream error): a card that cannot be read. */
      readonly agentFailed?: boolean;
    }
  /** Passed as the proxy read it, unjudged (an unreadable answer under FAIL_MODE=open). */
  | { readonly type: 'unjudged' };

/** One answer message and what the stages made of it. */
export interface AnswerFlow {
  /** What this call's answers go through. */
  readonly road: AnswerRoad;
  readonly ex: Exchange | undefined;
  /** The binding the call came by: its payload and result forms. */
  readonly codec: Codec;
  /** The caller's JSON-RPC id, in the answer's payload. */
  readonly id: JsonRpcId | null;
  /** A 2xx unary answer; for a stream message, not an error event (nor a JSON-RPC error). */
  readonly ok: boolean;
  /** An SSE `event: error` event (task ownership reads its data as any other's). */
  readonly errorEvent: boolean;
  /** Why the bytes cannot be read as JSON (the codec's decodeAnswer failed); `body` is then undefined. */
  readonly unread: string | undefined;
  /** The answer as JSON, replaced by the stages that change it. */
  body: unknown;
  /** A stage replaced `body` (a card rewritten, a task list filtered): the caller gets it re-encoded. */
  changed: boolean;
  /** Set by the spelling stage when the hooks will judge it: the response-hook payload. */
  payload: JsonObject | undefined;
  /** Set by the response hooks: what they approved (the payload, or a modify's replacement). */
  judged: { readonly payload: JsonObject; readonly payloadJson: string | undefined; readonly modified: boolean } | undefined;
  end: AnswerEnd | undefined;
}

/** What a call's answers go through, fixed when its answer arrives. */
export interface AnswerRoad {
  /** Rewrite agent-card results with these options (operations that return a card). */
  readonly card: CardServing | undefined;
  /** Task ownership's checks of this call's answers. */
  readonly answerHook: AnswerHook | undefined;
  /**
   * The response hooks (undefined when answers are not inspected), with the binding's budget and its
   * validation of a modify (gRPC: the replacement must encode as written).
   */
  readonly judge: ((payload: JsonObject, payloadJson: string) => Promise<HookRun>) | undefined;
  /** An answer the proxy cannot read: the error to send (FAIL_MODE=closed), or undefined to pass it unjudged (enforce.ts unreadableAnswer). */
  readonly unreadable: (why: string) => ProxyError | undefined;
  /** The words for an answer that is not a JSON object (they name the binding's framing). */
  readonly notAnObject: string;
  /** Whether the spelling rule applies (JSON an agent wrote; not protobuf JSON the proxy's codec wrote). */
  readonly spelling: boolean;
}

/** A fresh flow for one answer message. */
export function answerFlow(
  road: AnswerRoad,
  ex: Exchange | undefined,
  codec: Codec,
  id: JsonRpcId | null,
  ok: boolean,
  body: unknown,
  unread?: string,
  errorEvent = false,
): AnswerFlow {
  return { road, ex, codec, id, ok, errorEvent, unread, body, changed: false, payload: undefined, judged: undefined, end: undefined };
}

const CARD_UNREADABLE = 'agent card result cannot be read';

function endWith(flow: AnswerFlow, end: AnswerEnd): typeof END {
  flow.end = end;
  return END;
}

/** The binding's unreadable-answer policy: refused, or passed unjudged. */
function unreadable(flow: AnswerFlow, why: string): typeof END {
  const err = flow.road.unreadable(why);
  return endWith(flow, err === undefined ? { type: 'unjudged' } : { type: 'refuse', error: err, why });
}

/**
 * An agent-card result is rewritten so its URLs lead through the proxy (and signed by it, with a key);
 * one that cannot be read and rewritten, or whose own signature fails CARD_SIGNATURES=require, is never relayed, whatever FAIL_MODE says (the card route refuses the same way). An error
 * answer (JSON-RPC: 200 with an error) carries no card.
 */
export const rewriteCardAnswer: Stage<AnswerFlow> = {
  name: 'rewrite card',
  run(flow) {
    const opts = flow.road.card;
    if (opts === undefined || !flow.ok) return undefined;
    const card = flow.unread === undefined ? flow.codec.resultOf(flow.body) : undefined;
    if (isObject(card)) {
      const viewer = answerViewer(flow);
      const verdict = cardVerdict(card as CardJson, opts, viewer.key, async () => viewer);
      return verdict instanceof Promise ? verdict.then((v) => cardServed(flow, v)) : cardServed(flow, verdict);
    }
    if (flow.unread === undefined && isErrorAnswer(flow)) return undefined;
    return endWith(flow, {
      type: 'refuse',
      error: proxyError('upstreamUnavailable', 'Agent card unavailable: the answer cannot be read'),
      why: CARD_UNREADABLE,
      agentFailed: true,
    });
  },
};

function cardServed(flow: AnswerFlow, v: CardVerdict): Step {
  if (v.type === 'refuse')
    return endWith(flow, { type: 'refuse', error: cardRefusal(v), why: v.why, ...(v.cause === 'signature' ? { agentFailed: true } : {}) });
  flow.body = flow.codec.withResult(flow.body, v.card);
  flow.changed = true;
  return undefined;
}

/** The caller of an extended-card call, as the card judge keys and shows it. */
function answerViewer(flow: AnswerFlow): CardViewer {
  const call = flow.ex?.call;
  if (call === undefined) return { key: 'unknown', peer: UNVERIFIED };
  return { key: call.key, peer: call.callerPeer, caller: call.caller };
}

/** A 2xx answer that is an error in the binding's terms (JSON-RPC's error member). */
function isErrorAnswer(flow: AnswerFlow): boolean {
  const payload = flow.codec.toPayload(flow.id, flow.body, true);
  return payload !== undefined && 'error' in payload && !('result' in payload);
}

type Form = 'unary' | 'event';

/** Task ownership's check of one message: a stream's event form, else the unary form. */
function ownershipCheck(flow: AnswerFlow, form: Form): AnswerCheck | Promise<AnswerCheck> | undefined {
  const hook = flow.road.answerHook;
  if (hook === undefined) return undefined;
  if (form === 'event' && hook.event !== undefined) return hook.event(flow.body, flow.errorEvent);
  return hook.unary?.(flow.body, flow.ok);
}

/** Whether task ownership reads this message (it then refused a misspelled one itself). */
function ownershipReads(flow: AnswerFlow, form: Form): boolean {
  const hook = flow.road.answerHook;
  if (form === 'event') return hook?.event !== undefined;
  return hook?.unary !== undefined && flow.ok;
}

/**
 * Task ownership: bind the tasks an answer names to the caller before it goes out, filter a task
 * list, seal page tokens; an answer naming another caller's task is refused. A unary answer is
 * checked even when it is not JSON (an answer that should have been read is not passed unread).
 */
function bindOwnership(form: Form): Stage<AnswerFlow> {
  return {
    name: `ownership (${form})`,
    run(flow) {
      if (form === 'event' && flow.unread !== undefined) return undefined;
      const owned = ownershipCheck(flow, form);
      if (owned === undefined) return undefined;
      return owned instanceof Promise ? owned.then((o) => owns(flow, o)) : owns(flow, owned);
    },
  };
}

function owns(flow: AnswerFlow, owned: AnswerCheck): Step {
  if (owned.type === 'refuse') return endWith(flow, { type: 'refuse', error: owned.error, why: 'task ownership refused the answer', refused: true });
  if (owned.type === 'replace') {
    flow.body = owned.body;
    flow.changed = true;
  }
  return undefined;
}

/**
 * An answer the proxy cannot read as JSON: passed as it came when nothing reads it (no hooks, and
 * task ownership does not read this answer), else the unreadable-answer policy. A laxer reader (NaN,
 * comments) could find an A2A answer in it that nobody judged.
 */
function unreadableAnswer(form: Form): Stage<AnswerFlow> {
  return {
    name: 'unreadable answer',
    run(flow) {
      if (flow.unread === undefined) return undefined;
      if (flow.road.judge === undefined && !ownershipReads(flow, form)) return endWith(flow, { type: 'unjudged' });
      return unreadable(flow, flow.unread);
    },
  };
}

/**
 * The response-hook payload, and the spelling rule: an A2A member spelled another way (`Tasks`) is
 * what the guardian reads past and a case-insensitive caller acts on. (Task ownership already refused
 * such an answer, whatever FAIL_MODE says: walked once.)
 */
function spelling(form: Form): Stage<AnswerFlow> {
  return {
    name: 'spelling',
    run(flow) {
      if (flow.road.judge === undefined) return undefined;
      const payload = flow.codec.toPayload(flow.id, flow.body, flow.ok);
      if (payload === undefined) return unreadable(flow, flow.road.notAnObject);
      if (flow.road.spelling && !ownershipReads(flow, form)) {
        const miss = form === 'event' ? misspelledAnswer(flow.body, !flow.ok) : flow.ok ? misspelledAnswer(flow.body) : undefined;
        if (miss !== undefined) return unreadable(flow, miss);
      }
      flow.payload = payload;
      return undefined;
    },
  };
}

/**
 * The response hooks. The guardian reads the proxy's serialization of the answer, never the agent's
 * text: that text could mean one thing to a last-wins reader and another to a first-match one (a
 * member given twice). A block refuses the answer; a modify replaces it.
 */
export const judgeAnswer: Stage<AnswerFlow> = {
  name: 'response hooks',
  run(flow) {
    const { judge } = flow.road;
    const payload = flow.payload;
    if (judge === undefined || payload === undefined) return undefined;
    // Past a stop or a caller gone, no guardian call starts (nobody reads this answer any more).
    if (flow.ex?.call.caller.cancelled === true)
      return endWith(flow, { type: 'refuse', error: proxyError('upstreamUnavailable', 'Call ended'), why: 'call ended' });
    const payloadJson = JSON.stringify(payload);
    return judge(payload, payloadJson).then((run): Step => {
      if (run.type === 'block') return endWith(flow, { type: 'refuse', error: run.error, why: `response hook: ${run.decision}` });
      flow.judged = run.modified ? { payload: run.payload, payloadJson: undefined, modified: true } : { payload, payloadJson, modified: false };
      return undefined;
    });
  },
};

/** A unary answer's stages, in order. */
export const UNARY_ANSWER: readonly Stage<AnswerFlow>[] = [
  rewriteCardAnswer,
  bindOwnership('unary'),
  unreadableAnswer('unary'),
  spelling('unary'),
  judgeAnswer,
];

/** A stream message's stages, in order (a data event that is not JSON meets the policy before task ownership). */
export const STREAM_ANSWER: readonly Stage<AnswerFlow>[] = [unreadableAnswer('event'), bindOwnership('event'), spelling('event'), judgeAnswer];

/**
 * Run answer stages in order until one ends the message. Unlike runStages, a run whose stages are all
 * synchronous stays synchronous (an event that needs no guardian leaves in the same turn).
 */
export function runAnswerStages(stages: readonly Stage<AnswerFlow>[], flow: AnswerFlow, from = 0): void | Promise<void> {
  for (let i = from; i < stages.length; i++) {
    const step = (stages[i] as Stage<AnswerFlow>).run(flow);
    if (step instanceof Promise) return step.then((s) => (s === END ? undefined : runAnswerStages(stages, flow, i + 1)));
    if (step === END) return undefined;
  }
  return undefined;
}
