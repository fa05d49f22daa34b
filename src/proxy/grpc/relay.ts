/**
 * The agent's answer to one gRPC call, relayed to the caller. Unjudged answers go through as bytes
 * with backpressure both ways. Judged ones (INSPECT_RESPONSES, a card to rewrite, task ownership)
 * go through an OrderedWindow (window.ts, whose ordering rules apply as written there): each
 * message is decoded, run through the answer stages (answers.ts) and re-encoded in the window's `decide`; a stream's messages are judged
 * up to STREAM_INSPECT_WINDOW at once on the guardian's stream budget and places (a unary answer's one
 * message on the call budget), and leave in the agent's order, each once its own decision is known.
 * A stop at message k ends the call with its error status after messages 1..k-1 and cancels the
 * agent's stream and the guardian calls still under way; the agent's trailers go out only after
 * every message it sent was released.
 */
import http2 from 'node:http2';
import type { Config } from '../../config/config';
import type { Metrics } from '../../admin/metrics';
import { HOOK_ORDER } from '../../aos/hook-points';
import type { JsonObject } from '../../aos/schemas';
import type { CardServing } from '../card-judge';
import { grpcCodec } from '../../a2a/bindings/grpc/binding';
import type { Codec } from '../../a2a/binding';
import { jsonRpcCodec } from '../../a2a/bindings/jsonrpc';
import { canonicalResponse, encodeFromPayload, encodeProblem, faithfulEncoding, type MessageCodec } from '../../a2a/bindings/grpc/codec';
import { agentStatusJson, statusProblem, statusTrailers } from '../../a2a/bindings/grpc/status';
import { GRPC_STATUS, MessageReader, frameMessage, isProblem, readMessage, type RawMessage } from '../../a2a/bindings/grpc/framing';
import { headerText } from '../headers';
import type { CallOutcome } from '../../observe/audit';
import { proxyError, type ProxyError } from '../../core/errors';
import type { HookRun, HookRunInput } from '../hooks';
import type { AnswerHook } from '../ownership';
import { answerFlow, runAnswerStages, STREAM_ANSWER, UNARY_ANSWER, type AnswerFlow, type AnswerRoad } from '../answers';
import type { Stage } from '../stages';
import { OrderedWindow, STREAM_WINDOW_MAX_BYTES, type Line, type Verdict } from '../window';
import { framingError, type CallerSide } from './caller';
import type { Exchange } from '../call';
import { trackStream } from '../admit';
import type { BodyLease } from '../budget';
import type { GrpcMethod } from '../../a2a/bindings/grpc/methods';

export interface RelayDeps {
  readonly config: Config;
  readonly metrics: Metrics;
  readonly runHooks: (input: HookRunInput) => Promise<HookRun>;
  /** Open streams, ended with UNAVAILABLE when the proxy shuts down. */
  readonly streams: Set<() => void>;
  readonly cardRewrite: (authority: string | undefined) => CardServing;
  /** Places for stream messages going to the guardian, shared with the HTTP bindings' streams (window.ts). */
  readonly streamLine?: Line | undefined;
}

/** How a judged answer ends early: the caller's error status, and what the audit line says. */
interface Stop {
  readonly error: ProxyError;
  readonly why: string;
  /** A gRPC status name instead of the error's own. */
  readonly status?: string;
  readonly outcome?: CallOutcome;
  /** Task ownership refused the answer. */
  readonly refused?: boolean;
}

/** The trailers that make a status: rebuilt from the approved JSON error when the status is judged. */
const STATUS_MEMBERS = new Set(['grpc-status', 'grpc-message', 'grpc-status-details-bin']);

/** Agent answer headers that are transport (or that the proxy changes when it re-encodes). */
const ANSWER_DROP = new Set(['content-length', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'date']);

export function relayAnswer(
  deps: RelayDeps, ex: Exchange, method: GrpcMethod, caller: CallerSide, upReq: http2.ClientHttp2Stream, codec: MessageCodec, answerHook: AnswerHook | undefined, authority: string | undefined,
  lease: Pick<BodyLease, 'take' | 'give'>,
): void {
  const { config, metrics } = deps;
  const { call, log } = ex;
  const inspect = config.inspectResponses || method.op.returnsCard || answerHook !== undefined;
  let upTrailers: http2.IncomingHttpHeaders | undefined;
  let upEncoding: string | undefined;
  let responded = false;
  let untrack: (() => void) | undefined;
  let upEnded = false;
  const reader = new MessageReader(config.maxBodyBytes);

  const stopUpstream = () => upReq.close(http2.constants.NGHTTP2_CANCEL);
  /** End the call with an error status and stop the agent's stream. */
  const endWith = (s: Stop): void => {
    log.error ??= s.why;
    if (s.outcome !== undefined) log.outcome = s.outcome;
    if (s.refused === true) log.decision = 'refused';
    caller.fail(s.error, s.status);
    stopUpstream();
  };
  const window = inspect ? judgedAnswer() : undefined;
  /** Fail now; a window also cancels the decisions under way. */
  const failAnswer = (s: Stop): void => (window === undefined ? endWith(s) : window.stop(s));
  /** The agent's stream broke: a window first releases the messages received before the break. */
  const upstreamFailed = (s: Stop): void => (window === undefined ? endWith(s) : window.upstreamEnded(() => s));

  upReq.on('error', (err) => {
    if (caller.finished) return;
    upstreamFailed({ error: proxyError('upstreamUnavailable', 'Upstream agent unavailable'), why: `upstream: ${(err as NodeJS.ErrnoException).code ?? err.message}` });
  });
  upReq.on('response', (h) => {
    const status = Number(h[':status']);
    log.upstreamStatus = status;
    metrics.upstreamCall(method.op.aosMethod, (performance.now() - (log.upstreamSentAt as number)) / 1000);
    if (status !== 200) return failAnswer({ error: proxyError('upstreamUnavailable', `Upstream agent answered HTTP ${status}`), why: `upstream HTTP ${status}` });
    if (h['grpc-status'] !== undefined) {
      // Trailers-only: the agent's status (an error, or an empty answer).
      relayStatus(h, false);
      return;
    }
    upEncoding = headerText(h['grpc-encoding']);
    responded = true;
    caller.respond(answerHeaders(h, inspect));
    if (method.streaming) {
      untrack = trackStream(deps, () => failAnswer({ error: proxyError('upstreamUnavailable', 'Proxy shutting down'), why: 'proxy shutdown', status: 'UNAVAILABLE' }));
    }
  });
  upReq.on('trailers', (t) => {
    upTrailers = t;
  });
  caller.stream.once('close', () => {
    untrack?.();
    // The caller went away: no more writes, no new decisions, the ones under way cancelled, the agent's stream cut.
    window?.close();
  });

  if (window === undefined) {
    // Nothing reads the answer: its bytes go through as they come, with backpressure both ways.
    upReq.on('data', (chunk: Buffer) => {
      if (!caller.open) return;
      if (!caller.stream.write(chunk)) {
        upReq.pause();
        caller.stream.once('drain', () => upReq.resume());
      }
    });
  } else {
    let messages = 0;
    upReq.on('data', (chunk: Buffer) => {
      const got = reader.push(chunk);
      if (!isProblem(got)) {
        messages += got.length;
        // A unary answer is one message: a second one is not an answer the caller can read one way (grpc-js waits forever).
        if (!method.streaming && messages > 1) {
          window.push(got.slice(0, Math.max(0, 1 - (messages - got.length))));
          window.upstreamEnded(() => ({ error: proxyError('upstreamUnavailable', 'Upstream agent sent more than one message for a unary call'), why: 'agent answer: two messages for a unary call', status: 'INTERNAL', outcome: 'answer_refused' }));
          return stopUpstream();
        }
        return window.push(got);
      }
      // A malformed frame is never passed unread: the messages before it go out, then the error status.
      window.upstreamEnded(() => ({ error: framingError(got), why: `agent answer: ${got.message}`, status: got.status, outcome: 'answer_refused' }));
      stopUpstream();
    });
  }
  upReq.on('end', () => {
    upEnded = true;
    log.upstreamEndedAt = performance.now();
    if (window === undefined) return finish();
    // The agent's trailers (or the error of an answer cut inside a message) once every message before them has left.
    window.upstreamEnded(reader.clean ? undefined : () => ({
      error: proxyError('upstreamUnavailable', 'Upstream agent answer ended inside a message'), why: 'truncated answer', status: 'INTERNAL', outcome: 'answer_refused',
    }));
  });
  upReq.on('close', () => {
    if (upEnded || caller.finished) return;
    log.upstreamEndedAt = performance.now();
    upstreamFailed({ error: proxyError('upstreamUnavailable', 'Upstream agent ended the call without a status'), why: `upstream closed (code ${upReq.rstCode ?? '?'})` });
  });

  /** The agent's trailers, once every message before them has gone out. */
  function finish(): void {
    if (caller.finished || !responded) return;
    untrack?.();
    if (upTrailers === undefined) return caller.end({ 'grpc-status': String(GRPC_STATUS.INTERNAL), 'grpc-message': 'agent sent no status' });
    relayStatus(upTrailers, true);
  }

  /**
   * The agent's status to the caller. With INSPECT_RESPONSES an error status is an answer like any
   * other (over HTTP the agent's JSON-RPC error or REST error body is judged): the hooks see it as
   * the JSON-RPC error it stands for, and the caller gets the status rebuilt from what was approved.
   */
  function relayStatus(h: http2.IncomingHttpHeaders, trailers: boolean): void {
    const relayed = answerHeaders(h, false, trailers);
    if (!config.inspectResponses || headerText(h['grpc-status']) === '0') return caller.end(relayed);
    judgeStatus(h, relayed).catch((err: unknown) => {
      endWith({ error: proxyError('guardianUnavailable', 'Answer inspection failed'), why: `answer inspection failed: ${err instanceof Error ? err.message : String(err)}` });
    });
  }

  /** An error status is an error answer message (the JSON-RPC error it stands for), judged by the response hooks alone. */
  async function judgeStatus(h: http2.IncomingHttpHeaders, relayed: http2.OutgoingHttpHeaders): Promise<void> {
    const payload: JsonObject = { jsonrpc: '2.0', id: call.id, error: agentStatusJson(h) };
    const road: AnswerRoad = { ...NO_STAGES, judge: hooks((p) => ('result' in p || !('error' in p) ? 'an error status stays an error' : statusProblem(p.error))) };
    const flow = answerFlow(road, ex, jsonRpcCodec, call.id, false, payload);
    await runAnswerStages(UNARY_ANSWER, flow);
    if (!caller.open) return;
    if (flow.end?.type === 'refuse') return endWith({ error: flow.end.error, why: flow.end.why });
    const approved = flow.judged?.payload ?? payload;
    // The agent's own status members give way to the approved ones (a member it had that the approval lacks is gone too).
    const rest = Object.fromEntries(Object.entries(relayed).filter(([k]) => !STATUS_MEMBERS.has(k)));
    caller.end({ ...rest, ...statusTrailers(approved.error as JsonObject) });
  }

  /** The response hooks on one answer message, with the binding's check of a modify. */
  function hooks(validateModified: (p: JsonObject) => string | undefined): AnswerRoad['judge'] {
    if (!config.inspectResponses) return undefined;
    return (payload, payloadJson) => deps.runHooks({
      ex, sides: HOOK_ORDER[config.role].response, phase: 'response', payload, payloadJson, reasoning: undefined,
      // Stream messages use the guardian's stream connections, never ahead of a call's checks (as over HTTP).
      ...(method.streaming ? { budget: 'stream' as const } : {}),
      validateModified,
    });
  }

  /** The window a judged answer's messages go through. */
  function judgedAnswer(): OrderedWindow<RawMessage, Stop> {
    const w = new OrderedWindow<RawMessage, Stop>({
      decide: judgeMessage,
      bytes: (m) => m.data.length,
      write: (frame) => {
        log.events++;
        return caller.write(frame, () => w.drained());
      },
      end: (s) => (s === undefined ? finish() : endWith(s)),
      flow: (reading) => (reading ? upReq.resume() : upReq.pause()),
      abort: () => {
        stopUpstream();
        // The exchange is over: guardian calls still in flight for later messages are cancelled.
        call.caller.cancel();
      },
      failure: (err) => ({ error: proxyError('guardianUnavailable', 'Answer inspection failed'), why: `answer inspection failed: ${err instanceof Error ? err.message : String(err)}` }),
    },
    // A stream's messages are judged several at once; a unary answer's one message as a call's check.
    method.streaming ? config.streamInspectWindow : 1, STREAM_WINDOW_MAX_BYTES,
    // Guardian places are shared only by stream messages that go to the guardian.
    method.streaming && config.inspectResponses ? deps.streamLine : undefined,
    // Messages held for judging count against the in-flight budget: many calls cannot grow memory without bound.
    { take: (n) => lease.take(n), give: (n) => lease.give(n), refused: () => ({ error: proxyError('overloaded'), why: 'answer over the in-flight budget', outcome: 'answer_refused' }) });
    return w;
  }

  /** What each answer message goes through (answers.ts); a modify must encode as written. */
  const road: AnswerRoad = {
    ...NO_STAGES, card: method.op.returnsCard ? deps.cardRewrite(authority) : undefined, answerHook, judge: hooks((p) => encodeProblem(codec, p, 'result')),
  };
  const messages: MessageRoad = { road, stages: method.streaming ? STREAM_ANSWER : UNARY_ANSWER, ex, codec, id: String(call.id), maxBodyBytes: config.maxBodyBytes };
  /** One message of the answer (the window decides them after relayAnswer returned: `messages` is set by then). */
  function judgeMessage(raw: RawMessage): Promise<Verdict<Stop>> {
    return answerMessage(messages, raw, upEncoding);
  }
}

/** What one call's answer messages go through. */
interface MessageRoad {
  readonly road: AnswerRoad;
  readonly stages: readonly Stage<AnswerFlow>[];
  readonly ex: Exchange;
  readonly codec: MessageCodec;
  /** The id the guardian sees in each message's payload. */
  readonly id: string;
  readonly maxBodyBytes: number;
}

/** One answer message: decoded, run through the answer stages, re-encoded and framed; or the stop it causes. */
async function answerMessage(m: MessageRoad, raw: RawMessage, encoding: string | undefined): Promise<Verdict<Stop>> {
  const { codec } = m;
  const bytes = await readMessage(raw, encoding, m.maxBodyBytes);
  if (isProblem(bytes)) return { stop: { error: framingError(bytes), why: `agent answer: ${bytes.message}`, status: bytes.status, outcome: 'answer_refused' } };
  let decoded: unknown;
  let result: unknown;
  try {
    decoded = codec.decode(bytes);
    result = codec.toJson(decoded);
  } catch (err) {
    return { stop: { error: proxyError('upstreamUnavailable', 'Upstream agent answer does not decode'), why: `agent answer: ${(err as Error).message}`, status: 'INTERNAL', outcome: 'answer_refused' } };
  }
  // Task ownership reads the message as the gRPC codec gives it (the result itself).
  const flow = answerFlow(m.road, m.ex, DECODED, m.id, true, result);
  await runAnswerStages(m.stages, flow);
  const end = flow.end;
  // Every message decoded is readable: an end is a refusal.
  if (end !== undefined) {
    const error = end.type === 'refuse' ? end.error : proxyError('upstreamUnavailable', 'Upstream agent answer cannot be inspected');
    const why = end.type === 'refuse' ? end.why : 'agent answer cannot be inspected';
    return { stop: { error, why, ...(end.type === 'refuse' && end.refused === true ? { refused: true } : {}) } };
  }
  const judged = flow.judged;
  try {
    if (flow.changed || judged?.modified === true) return { pass: frameMessage(encodeFromPayload(codec, judged?.payload ?? canonicalResponse(m.id, flow.body), 'result')) };
    if (judged === undefined) return { pass: frameMessage(bytes) };
    // A judged answer carries only what the guardian saw (unknown fields are not re-encoded), and all of it
    // (a value its JSON form cannot carry, an unknown enum number or a NaN, is not passed as something else).
    const encoded = faithfulEncoding(codec, decoded, result);
    if (encoded !== undefined) return { pass: frameMessage(encoded) };
    return { stop: { error: proxyError('upstreamUnavailable', 'Upstream agent answer holds values its JSON form cannot carry'), why: 'agent answer: not faithful to its JSON form', status: 'INTERNAL', outcome: 'answer_refused' } };
  } catch (err) {
    return { stop: { error: proxyError('upstreamUnavailable', 'Answer cannot be re-encoded'), why: (err as Error).message, status: 'INTERNAL', outcome: 'answer_refused' } };
  }
}

/** A message the method's codec decoded is a result, whatever its JSON form (a v0.3 push config answer may be a list or null). */
const DECODED: Codec = { ...grpcCodec, toPayload: (id, answer) => canonicalResponse(String(id), answer) };

/**
 * A gRPC answer's road without its per-call parts: a message that does not decode never reaches the
 * stages (it is refused whatever FAIL_MODE says), and protobuf JSON is the proxy's codec's own writing
 * (no member spelled otherwise).
 */
const NO_STAGES: AnswerRoad = {
  card: undefined, answerHook: undefined, judge: undefined, spelling: false, notAnObject: 'agent answer is not a JSON object',
  unreadable: (why) => proxyError('upstreamUnavailable', `Agent answer cannot be inspected: ${why}`),
};

/** The agent's response headers or trailers as relayed: pseudo and hop-by-hop headers dropped; re-encoded answers lose grpc-encoding. */
function answerHeaders(h: http2.IncomingHttpHeaders, reencoded: boolean, trailers = false): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    if (k.startsWith(':') || ANSWER_DROP.has(k) || v === undefined) continue;
    if (reencoded && k === 'grpc-encoding') continue;
    if (trailers && k === 'content-type') continue;
    out[k] = v;
  }
  if (!trailers && out['content-type'] === undefined) out['content-type'] = 'application/grpc';
  return out;
}
