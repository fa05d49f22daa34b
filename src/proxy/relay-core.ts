/**
 * The one relay core of an agent's answer, whatever its channel: messages come in as the channel read
 * them (a unary body, an SSE event, a gRPC message) and go through one order, each in its caller's
 * turn: take a turn -> decode -> answer stages (answers.ts) -> take a turn again if the stages waited
 * on the guardian -> encode -> the verdict (bytes to write, or the stop that ends the answer). An
 * OrderedWindow (window.ts) owns the order between messages: a unary answer is a window of size 1.
 * A channel (http/responses.ts, http/relay/stream.ts, grpc/relay.ts) is framing only: how it reads
 * messages and writes bytes, error events or trailers, given as an `AnswerChannel` and a window's sockets.
 *
 * Turns: judging an answer (building the guardian's envelope, posting it, running the embedded
 * guardian, re-encoding) costs CPU on the event loop. It takes turns per caller (core/fair-queue.ts),
 * as the request stages do: one caller's many answers or streams wait behind each other, not in front
 * of another caller's answer. A caller with FAIR_QUEUE_PER_CALLER turns waiting gets its answer
 * stopped with the binding's 429 / -31429 / RESOURCE_EXHAUSTED.
 */
import { proxyError, type ProxyError } from '../core/errors';
import { takeTurn, type Turns } from './fair';
import { runAnswerStages, type AnswerFlow } from './answers';
import { END, type Stage, type Step } from './stages';
import { OrderedWindow, type Line, type Verdict, type WindowBudget, type WindowIo } from './window';
import type { Exchange } from './call';

/** A message decoded: its answer flow, and what the channel keeps to encode it. */
export interface Decoded {
  readonly flow: AnswerFlow;
}

/**
 * What one answer channel makes of its messages: `T` one message as read, `S` the stop that ends the
 * answer, `D` a message decoded.
 */
export interface AnswerChannel<T, S, D extends Decoded = Decoded> {
  /** The answer stages each message goes through (answers.ts UNARY_ANSWER or STREAM_ANSWER). */
  readonly stages: readonly Stage<AnswerFlow>[];
  /** A message as an answer flow; or its verdict at once when no stage reads it (a keep-alive, bytes that do not decode). */
  decode(msg: T): D | Verdict<S> | Promise<D | Verdict<S>>;
  /** What leaves for a message once its stages ran (`flow.end` set: refused, or passed unjudged). */
  encode(decoded: D, msg: T): Verdict<S>;
  /** The stop for an answer refused by the core itself (its caller's turns are full). */
  refused(err: ProxyError): S;
}

const isPromise = <V>(v: V | Promise<V>): v is Promise<V> => typeof (v as { then?: unknown } | undefined)?.then === 'function';

/**
 * One message's verdict, in the core's order. Synchronous when every step is (an event no guardian
 * reads leaves in the same turn); a turn that must wait, or a caller gone while waiting, is a promise.
 */
export function answerVerdict<T, S, D extends Decoded>(
  channel: AnswerChannel<T, S, D>,
  turns: Turns | undefined,
  ex: Exchange | undefined,
  msg: T,
): Verdict<S> | Promise<Verdict<S>> {
  const stopped: { stop?: S } = {};
  const turn = (): Step | Promise<Step> =>
    callerTurn(turns, ex, (err) => {
      stopped.stop = channel.refused(err);
      return END;
    });
  const afterTurn = (step: Step): Verdict<S> | Promise<Verdict<S>> => {
    if (step === END) return { stop: stopped.stop ?? channel.refused(gone()) };
    const decoded = channel.decode(msg);
    return isPromise(decoded) ? decoded.then(judge) : judge(decoded);
  };
  const judge = (decoded: D | Verdict<S>): Verdict<S> | Promise<Verdict<S>> => {
    if (!('flow' in decoded)) return decoded;
    const ran = runAnswerStages(channel.stages, decoded.flow);
    if (ran === undefined) return channel.encode(decoded, msg);
    // The stages waited (the guardian): re-encoding what it approved is work of this caller's again.
    return ran.then(turn).then((step) => (step === END ? { stop: stopped.stop ?? channel.refused(gone()) } : channel.encode(decoded, msg)));
  };
  const first = turn();
  return isPromise(first) ? first.then(afterTurn) : afterTurn(first);
}

/** The caller left while its turn waited: nobody reads the stop. */
const gone = (): ProxyError => proxyError('upstreamUnavailable', 'Call ended');

/** Wait for the answer's caller's turn (no exchange, no turns: at once). */
function callerTurn(turns: Turns | undefined, ex: Exchange | undefined, refuse: (err: ProxyError) => typeof END): Step | Promise<Step> {
  if (turns === undefined || ex === undefined) return undefined;
  const { call } = ex;
  return takeTurn(turns, call.key, call.caller, (err) => {
    ex.log.error ??= 'answer refused: caller turns full';
    return refuse(err);
  });
}

/** How many messages are judged at once and what they hold (window.ts). */
export interface WindowShape<S> {
  readonly size: number;
  readonly maxBytes?: number;
  readonly line?: Line | undefined;
  readonly budget?: WindowBudget<S> | undefined;
}

/** The window an answer's messages go through: each decided by the core, released in the agent's order. */
export function answerWindow<T, S, D extends Decoded>(
  channel: AnswerChannel<T, S, D>,
  turns: Turns | undefined,
  ex: Exchange | undefined,
  io: Omit<WindowIo<T, S>, 'decide'>,
  shape: WindowShape<S>,
): OrderedWindow<T, S> {
  return new OrderedWindow<T, S>({ ...io, decide: (msg) => answerVerdict(channel, turns, ex, msg) }, shape.size, shape.maxBytes, shape.line, shape.budget);
}
