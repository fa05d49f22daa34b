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
import { answerFlow, STREAM_ANSWER, UNARY_ANSWER, type AnswerFlow, type AnswerRoad } from '../answers';
import type { Stage } from '../stages';
import { STREAM_WINDOW_MAX_BYTES, type Line, type OrderedWindow, type Verdict } from '../window';
import { answerVerdict, answerWindow, type AnswerChannel, type Decoded } from '../relay-core';
import { turnsOf, type FairTurns, type Turns } from '../fair';
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
  /** Judging answers takes per-caller turns (relay-core.ts), as the request stages do. */
  readonly fair?: FairTurns | undefined;
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
  deps: RelayDeps,
  ex: Exchange,
  method: GrpcMethod,
  caller: CallerSide,
  upReq: http2.ClientHttp2Stream,
  codec: MessageCodec,
  answerHook: AnswerHook | undefined,
  authority: string | undefined,
  lease: Pick<BodyLease, 'take' | 'give'>,
): void {
  new GrpcAnswer(deps, ex, method, caller, upReq, codec, answerHook, authority, lease).start();
}

/** The framing of one call's answer: reads the agent's HTTP/2 stream, writes frames and trailers; judged messages go through the relay core. */
class GrpcAnswer {
  private upTrailers: http2.IncomingHttpHeaders | undefined;
  private upEncoding: string | undefined;
  private responded = false;
  private untrack: (() => void) | undefined;
  private upEnded = false;
  private messages = 0;
  private readonly inspect: boolean;
  private readonly reader: MessageReader;
  private readonly window: OrderedWindow<RawMessage, Stop> | undefined;
  private readonly turns: Turns;

  constructor(
    private readonly deps: RelayDeps,
    private readonly ex: Exchange,
    private readonly method: GrpcMethod,
    private readonly caller: CallerSide,
    private readonly upReq: http2.ClientHttp2Stream,
    private readonly codec: MessageCodec,
    private readonly answerHook: AnswerHook | undefined,
    private readonly authority: string | undefined,
    private readonly lease: Pick<BodyLease, 'take' | 'give'>,
  ) {
    this.inspect = deps.config.inspectResponses || method.op.returnsCard || answerHook !== undefined;
    this.turns = turnsOf(deps);
    this.reader = new MessageReader(deps.config.maxBodyBytes);
    this.window = this.inspect ? this.judgedWindow() : undefined;
  }

  start(): void {
    const { upReq, caller, ex } = this;
    upReq.on('error', (err) => {
      if (caller.finished) return;
      this.upstreamFailed({
        error: proxyError('upstreamUnavailable', 'Upstream agent unavailable'),
        why: `upstream: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
      });
    });
    upReq.on('response', (h) => this.onResponse(h));
    upReq.on('trailers', (t) => {
      this.upTrailers = t;
    });
    caller.stream.once('close', () => {
      this.untrack?.();
      // The caller went away: no more writes, no new decisions, the ones under way cancelled, the agent's stream cut.
      this.window?.close();
    });
    upReq.on('data', (chunk: Buffer) => (this.window === undefined ? this.passBytes(chunk) : this.readMessages(this.window, chunk)));
    upReq.on('end', () => {
      this.upEnded = true;
      ex.log.upstreamEndedAt = performance.now();
      if (this.window === undefined) return this.finish();
      // The agent's trailers (or the error of an answer cut inside a message) once every message before them has left.
      this.window.upstreamEnded(
        this.reader.clean
          ? undefined
          : () => ({
              error: proxyError('upstreamUnavailable', 'Upstream agent answer ended inside a message'),
              why: 'truncated answer',
              status: 'INTERNAL',
              outcome: 'answer_refused',
            }),
      );
    });
    upReq.on('close', () => {
      if (this.upEnded || caller.finished) return;
      ex.log.upstreamEndedAt = performance.now();
      this.upstreamFailed({
        error: proxyError('upstreamUnavailable', 'Upstream agent ended the call without a status'),
        why: `upstream closed (code ${upReq.rstCode ?? '?'})`,
      });
    });
  }

  private stopUpstream(): void {
    this.upReq.close(http2.constants.NGHTTP2_CANCEL);
  }

  /** End the call with an error status and stop the agent's stream. */
  private endWith(s: Stop): void {
    const { log } = this.ex;
    log.error ??= s.why;
    if (s.outcome !== undefined) log.outcome = s.outcome;
    if (s.refused === true) log.decision = 'refused';
    this.caller.fail(s.error, s.status);
    this.stopUpstream();
  }

  /** Fail now; a window also cancels the decisions under way. */
  private failAnswer(s: Stop): void {
    if (this.window === undefined) this.endWith(s);
    else this.window.stop(s);
  }

  /** The agent's stream broke: a window first releases the messages received before the break. */
  private upstreamFailed(s: Stop): void {
    if (this.window === undefined) this.endWith(s);
    else this.window.upstreamEnded(() => s);
  }

  private onResponse(h: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader): void {
    const { ex, method } = this;
    const status = Number(h[':status']);
    ex.log.upstreamStatus = status;
    this.deps.metrics.upstreamCall(method.op.aosMethod, (performance.now() - (ex.log.upstreamSentAt as number)) / 1000);
    if (status !== 200)
      return this.failAnswer({ error: proxyError('upstreamUnavailable', `Upstream agent answered HTTP ${status}`), why: `upstream HTTP ${status}` });
    // Trailers-only: the agent's status (an error, or an empty answer).
    if (h['grpc-status'] !== undefined) return this.relayStatus(h, false);
    this.upEncoding = headerText(h['grpc-encoding']);
    this.responded = true;
    this.caller.respond(answerHeaders(h, this.inspect));
    if (method.streaming) {
      this.untrack = trackStream(this.deps, () =>
        this.failAnswer({ error: proxyError('upstreamUnavailable', 'Proxy shutting down'), why: 'proxy shutdown', status: 'UNAVAILABLE' }),
      );
    }
  }

  /** Nothing reads the answer: its bytes go through as they come, with backpressure both ways. */
  private passBytes(chunk: Buffer): void {
    const { caller, upReq } = this;
    if (!caller.open) return;
    if (!caller.stream.write(chunk)) {
      upReq.pause();
      caller.stream.once('drain', () => upReq.resume());
    }
  }

  private readMessages(window: OrderedWindow<RawMessage, Stop>, chunk: Buffer): void {
    const got = this.reader.push(chunk);
    if (isProblem(got)) {
      // A malformed frame is never passed unread: the messages before it go out, then the error status.
      window.upstreamEnded(() => ({ error: framingError(got), why: `agent answer: ${got.message}`, status: got.status, outcome: 'answer_refused' }));
      return this.stopUpstream();
    }
    this.messages += got.length;
    // A unary answer is one message: a second one is not an answer the caller can read one way (grpc-js waits forever).
    if (!this.method.streaming && this.messages > 1) {
      window.push(got.slice(0, Math.max(0, 1 - (this.messages - got.length))));
      window.upstreamEnded(() => ({
        error: proxyError('upstreamUnavailable', 'Upstream agent sent more than one message for a unary call'),
        why: 'agent answer: two messages for a unary call',
        status: 'INTERNAL',
        outcome: 'answer_refused',
      }));
      return this.stopUpstream();
    }
    window.push(got);
  }

  /** The agent's trailers, once every message before them has gone out. */
  private finish(): void {
    if (this.caller.finished || !this.responded) return;
    this.untrack?.();
    if (this.upTrailers === undefined) return this.caller.end({ 'grpc-status': String(GRPC_STATUS.INTERNAL), 'grpc-message': 'agent sent no status' });
    this.relayStatus(this.upTrailers, true);
  }

  /**
   * The agent's status to the caller. With INSPECT_RESPONSES an error status is an answer like any
   * other (over HTTP the agent's JSON-RPC error or REST error body is judged): the hooks see it as
   * the JSON-RPC error it stands for, and the caller gets the status rebuilt from what was approved.
   */
  private relayStatus(h: http2.IncomingHttpHeaders, trailers: boolean): void {
    const relayed = answerHeaders(h, false, trailers);
    if (!this.deps.config.inspectResponses || headerText(h['grpc-status']) === '0') return this.caller.end(relayed);
    this.judgeStatus(h, relayed).catch((err: unknown) => this.endWith(inspectionFailed(err)));
  }

  /** An error status is an error answer message (the JSON-RPC error it stands for), judged by the response hooks alone, in the core's order. */
  private async judgeStatus(h: http2.IncomingHttpHeaders, relayed: http2.OutgoingHttpHeaders): Promise<void> {
    const { ex, caller } = this;
    const payload: JsonObject = { jsonrpc: '2.0', id: ex.call.id, error: agentStatusJson(h) };
    const road: AnswerRoad = {
      ...NO_STAGES,
      judge: this.hooks((p) => ('result' in p || !('error' in p) ? 'an error status stays an error' : statusProblem(p.error))),
    };
    let flow: AnswerFlow | undefined;
    const status: AnswerChannel<JsonObject, Stop> = {
      stages: UNARY_ANSWER,
      decode: () => ({ flow: (flow = answerFlow(road, ex, jsonRpcCodec, ex.call.id, false, payload)) }),
      // No frame: the trailers are rebuilt below from what the flow approved.
      encode: ({ flow: f }) => (f.end?.type === 'refuse' ? { stop: { error: f.end.error, why: f.end.why } } : { pass: NO_FRAME }),
      refused: turnsRefused,
    };
    const v = await answerVerdict(status, this.turns, ex, payload);
    if (!caller.open) return;
    if ('stop' in v) return this.endWith(v.stop);
    const approved = flow?.judged?.payload ?? payload;
    // The agent's own status members give way to the approved ones (a member it had that the approval lacks is gone too).
    const rest = Object.fromEntries(Object.entries(relayed).filter(([k]) => !STATUS_MEMBERS.has(k)));
    caller.end({ ...rest, ...statusTrailers(approved.error as JsonObject) });
  }

  /** The response hooks on one answer message, with the binding's check of a modify. */
  private hooks(validateModified: (p: JsonObject) => string | undefined): AnswerRoad['judge'] {
    const { deps, ex, method } = this;
    if (!deps.config.inspectResponses) return undefined;
    return (payload, payloadJson) =>
      deps.runHooks({
        ex,
        sides: HOOK_ORDER[deps.config.role].response,
        phase: 'response',
        payload,
        payloadJson,
        reasoning: undefined,
        // Stream messages use the guardian's stream connections, never ahead of a call's checks (as over HTTP).
        ...(method.streaming ? { budget: 'stream' as const } : {}),
        validateModified,
      });
  }

  /** The window a judged answer's messages go through (the relay core). */
  private judgedWindow(): OrderedWindow<RawMessage, Stop> {
    const { deps, ex, method, caller } = this;
    const { config } = deps;
    /** What each answer message goes through (answers.ts); a modify must encode as written. */
    const road: AnswerRoad = {
      ...NO_STAGES,
      card: method.op.returnsCard ? deps.cardRewrite(this.authority) : undefined,
      answerHook: this.answerHook,
      judge: this.hooks((p) => encodeProblem(this.codec, p, 'result')),
    };
    const channel = messageChannel(
      { road, stages: method.streaming ? STREAM_ANSWER : UNARY_ANSWER, ex, codec: this.codec, id: String(ex.call.id), maxBodyBytes: config.maxBodyBytes },
      () => this.upEncoding,
    );
    const w: OrderedWindow<RawMessage, Stop> = answerWindow(
      channel,
      this.turns,
      ex,
      {
        bytes: (m) => m.data.length,
        write: (frame) => {
          ex.log.events++;
          return caller.write(frame, () => w.drained());
        },
        end: (s) => (s === undefined ? this.finish() : this.endWith(s)),
        flow: (reading) => (reading ? this.upReq.resume() : this.upReq.pause()),
        abort: () => {
          this.stopUpstream();
          // The exchange is over: guardian calls still in flight for later messages are cancelled.
          ex.call.caller.cancel();
        },
        failure: inspectionFailed,
      },
      {
        // A stream's messages are judged several at once; a unary answer's one message as a call's check.
        size: method.streaming ? config.streamInspectWindow : 1,
        maxBytes: STREAM_WINDOW_MAX_BYTES,
        // Guardian places are shared only by stream messages that go to the guardian.
        line: method.streaming && config.inspectResponses ? deps.streamLine : undefined,
        // Messages held for judging count against the in-flight budget: many calls cannot grow memory without bound.
        budget: {
          take: (n) => this.lease.take(n),
          give: (n) => this.lease.give(n),
          refused: () => ({ error: proxyError('overloaded'), why: 'answer over the in-flight budget', outcome: 'answer_refused' }),
        },
      },
    );
    return w;
  }
}

const NO_FRAME = Buffer.alloc(0);

function turnsRefused(error: ProxyError): Stop {
  return { error, why: 'answer refused: caller turns full' };
}

function inspectionFailed(err: unknown): Stop {
  return {
    error: proxyError('guardianUnavailable', 'Answer inspection failed'),
    why: `answer inspection failed: ${err instanceof Error ? err.message : String(err)}`,
  };
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

/** A message decoded: its bytes, the generated code's message and its JSON form. */
interface DecodedMessage extends Decoded {
  readonly bytes: Buffer;
  readonly decoded: unknown;
  readonly result: unknown;
}

/** The gRPC answer channel: a message is decompressed and decoded, judged, re-encoded and framed. */
function messageChannel(m: MessageRoad, encoding: () => string | undefined): AnswerChannel<RawMessage, Stop, DecodedMessage> {
  return {
    stages: m.stages,
    decode: (raw) => decodeMessage(m, raw, encoding()),
    encode: (d) => encodeMessage(m, d),
    refused: turnsRefused,
  };
}

async function decodeMessage(m: MessageRoad, raw: RawMessage, encoding: string | undefined): Promise<DecodedMessage | Verdict<Stop>> {
  const { codec } = m;
  const bytes = await readMessage(raw, encoding, m.maxBodyBytes);
  if (isProblem(bytes)) return { stop: { error: framingError(bytes), why: `agent answer: ${bytes.message}`, status: bytes.status, outcome: 'answer_refused' } };
  try {
    const decoded = codec.decode(bytes);
    const result = codec.toJson(decoded);
    // Task ownership reads the message as the gRPC codec gives it (the result itself).
    return { flow: answerFlow(m.road, m.ex, DECODED, m.id, true, result), bytes, decoded, result };
  } catch (err) {
    return {
      stop: {
        error: proxyError('upstreamUnavailable', 'Upstream agent answer does not decode'),
        why: `agent answer: ${(err as Error).message}`,
        status: 'INTERNAL',
        outcome: 'answer_refused',
      },
    };
  }
}

/** One answer message judged: re-encoded and framed, or the stop it causes. */
function encodeMessage(m: MessageRoad, { flow, bytes, decoded, result }: DecodedMessage): Verdict<Stop> {
  const { codec } = m;
  const end = flow.end;
  // Every message decoded is readable: an end is a refusal.
  if (end !== undefined) {
    const error = end.type === 'refuse' ? end.error : proxyError('upstreamUnavailable', 'Upstream agent answer cannot be inspected');
    const why = end.type === 'refuse' ? end.why : 'agent answer cannot be inspected';
    return { stop: { error, why, ...(end.type === 'refuse' && end.refused === true ? { refused: true } : {}) } };
  }
  const judged = flow.judged;
  try {
    if (flow.changed || judged?.modified === true)
      return { pass: frameMessage(encodeFromPayload(codec, judged?.payload ?? canonicalResponse(m.id, flow.body), 'result')) };
    if (judged === undefined) return { pass: frameMessage(bytes) };
    // A judged answer carries only what the guardian saw (unknown fields are not re-encoded), and all of it
    // (a value its JSON form cannot carry, an unknown enum number or a NaN, is not passed as something else).
    const encoded = faithfulEncoding(codec, decoded, result);
    if (encoded !== undefined) return { pass: frameMessage(encoded) };
    return {
      stop: {
        error: proxyError('upstreamUnavailable', 'Upstream agent answer holds values its JSON form cannot carry'),
        why: 'agent answer: not faithful to its JSON form',
        status: 'INTERNAL',
        outcome: 'answer_refused',
      },
    };
  } catch (err) {
    return {
      stop: {
        error: proxyError('upstreamUnavailable', 'Answer cannot be re-encoded'),
        why: (err as Error).message,
        status: 'INTERNAL',
        outcome: 'answer_refused',
      },
    };
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
  card: undefined,
  answerHook: undefined,
  judge: undefined,
  spelling: false,
  notAnObject: 'agent answer is not a JSON object',
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
