/**
 * The agent's answer to one gRPC call, relayed to the caller. Unjudged answers go through as bytes
 * with backpressure both ways. Judged ones (INSPECT_RESPONSES, a card to rewrite, task ownership)
 * follow these ordering rules: messages are decoded, checked, judged and written one at a time, in
 * order; the agent's stream is paused while a message is judged and while the caller's side is full;
 * a block ends the caller's stream with the error status and cancels the agent's stream; the agent's
 * trailers are sent only after every message it sent was written.
 */
import http2 from 'node:http2';
import type { Config } from '../../config';
import type { Metrics } from '../../admin/metrics';
import { HOOK_ORDER } from '../../aos/hook-points';
import type { JsonObject } from '../../aos/schemas';
import { rewriteCard, type CardJson, type RewriteOptions } from '../../a2a/card';
import { canonicalResponse, encodeFromPayload, encodeProblem, type MessageCodec } from '../../a2a/bindings/grpc/codec';
import { GRPC_STATUS, MessageReader, frameMessage, isProblem, readMessage, type RawMessage } from '../../a2a/bindings/grpc/framing';
import { headerText } from '../forward';
import type { CallOutcome } from '../../observe/audit';
import { proxyError, type ProxyError } from '../../core/errors';
import type { HookRun, HookRunInput } from '../hooks';
import type { AnswerCheck, AnswerHook } from '../ownership';
import { framingError, type CallerSide } from './caller';
import type { Exchange } from '../call';
import type { GrpcMethod } from '../../a2a/bindings/grpc/methods';

export interface RelayDeps {
  readonly config: Config;
  readonly metrics: Metrics;
  readonly runHooks: (input: HookRunInput) => Promise<HookRun>;
  /** Open streams, ended with UNAVAILABLE when the proxy shuts down. */
  readonly streams: Set<() => void>;
  readonly cardRewrite: (authority: string | undefined) => RewriteOptions;
}

/** Agent answer headers that are transport (or that the proxy changes when it re-encodes). */
const ANSWER_DROP = new Set(['content-length', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'date']);

export function relayAnswer(
  deps: RelayDeps, ex: Exchange, method: GrpcMethod, caller: CallerSide, upReq: http2.ClientHttp2Stream, codec: MessageCodec, answerHook: AnswerHook | undefined, authority: string | undefined,
): void {
  const { config, metrics } = deps;
  const { call, log } = ex;
  const inspect = config.inspectResponses || method.op.returnsCard || answerHook !== undefined;
  let upTrailers: http2.IncomingHttpHeaders | undefined;
  let upEncoding: string | undefined;
  let responded = false;
  let untrack: (() => void) | undefined;
  const reader = new MessageReader(config.maxBodyBytes);
  const queue: RawMessage[] = [];
  let working = false;
  let upEnded = false;

  const stopUpstream = () => upReq.close(http2.constants.NGHTTP2_CANCEL);
  const failAnswer = (err: ProxyError, why: string, status?: string, outcome?: CallOutcome) => {
    log.error ??= why;
    if (outcome !== undefined) log.outcome = outcome;
    caller.fail(err, status);
    stopUpstream();
  };

  upReq.on('error', (err) => {
    if (caller.finished) return;
    failAnswer(proxyError('upstreamUnavailable', 'Upstream agent unavailable'), `upstream: ${(err as NodeJS.ErrnoException).code ?? err.message}`);
  });
  upReq.on('response', (h) => {
    const status = Number(h[':status']);
    log.upstreamStatus = status;
    metrics.upstreamCall(method.op.aosMethod, (performance.now() - (log.upstreamSentAt as number)) / 1000);
    if (status !== 200) return failAnswer(proxyError('upstreamUnavailable', `Upstream agent answered HTTP ${status}`), `upstream HTTP ${status}`);
    if (h['grpc-status'] !== undefined) {
      // Trailers-only: the agent's status (an error, or an empty answer) goes back as it is.
      caller.end(answerHeaders(h, false));
      return;
    }
    upEncoding = headerText(h['grpc-encoding']);
    responded = true;
    caller.respond(answerHeaders(h, inspect));
    if (method.streaming) {
      untrack = trackStream(deps, () => failAnswer(proxyError('upstreamUnavailable', 'Proxy shutting down'), 'proxy shutdown', 'UNAVAILABLE'));
    }
  });
  upReq.on('trailers', (t) => {
    upTrailers = t;
  });
  caller.stream.once('close', () => untrack?.());

  if (!inspect) {
    // Nothing reads the answer: its bytes go through as they come, with backpressure both ways.
    upReq.on('data', (chunk: Buffer) => {
      if (!caller.open) return;
      if (!caller.stream.write(chunk)) {
        upReq.pause();
        caller.stream.once('drain', () => upReq.resume());
      }
    });
  } else {
    upReq.on('data', (chunk: Buffer) => {
      const got = reader.push(chunk);
      if (isProblem(got)) return failAnswer(framingError(got), `agent answer: ${got.message}`, got.status, 'answer_refused');
      queue.push(...got);
      if (queue.length > 0) void drainQueue();
    });
  }
  upReq.on('end', () => {
    upEnded = true;
    log.upstreamEndedAt = performance.now();
    if (!working) finish();
  });
  upReq.on('close', () => {
    if (!upEnded && !caller.finished) {
      log.upstreamEndedAt = performance.now();
      failAnswer(proxyError('upstreamUnavailable', 'Upstream agent ended the call without a status'), `upstream closed (code ${upReq.rstCode ?? '?'})`);
    }
  });

  function finish(): void {
    if (caller.finished || !responded) return;
    if (!reader.clean) return failAnswer(proxyError('upstreamUnavailable', 'Upstream agent answer ended inside a message'), 'truncated answer', 'INTERNAL', 'answer_refused');
    untrack?.();
    caller.end(upTrailers === undefined ? { 'grpc-status': String(GRPC_STATUS.INTERNAL), 'grpc-message': 'agent sent no status' } : answerHeaders(upTrailers, false, true));
  }

  async function drainQueue(): Promise<void> {
    if (working) return;
    working = true;
    upReq.pause();
    try {
      while (queue.length > 0 && caller.open) {
        const raw = queue.shift() as RawMessage;
        const out = await judgeMessage(raw);
        if (out === undefined) return;
        log.events++;
        await caller.write(frameMessage(out));
      }
    } finally {
      working = false;
      if (caller.open) {
        if (upEnded) finish();
        else upReq.resume();
      }
    }
  }

  /** One answer message: decoded, checked, judged, re-encoded; undefined when the call was ended instead. */
  async function judgeMessage(raw: RawMessage): Promise<Buffer | undefined> {
    const bytes = await readMessage(raw, upEncoding, config.maxBodyBytes);
    if (isProblem(bytes)) {
      failAnswer(framingError(bytes), `agent answer: ${bytes.message}`, bytes.status, 'answer_refused');
      return undefined;
    }
    let decoded: unknown;
    let result: JsonObject;
    try {
      decoded = codec.decode(bytes);
      result = codec.toJson(decoded);
    } catch (err) {
      failAnswer(proxyError('upstreamUnavailable', 'Upstream agent answer does not decode'), `agent answer: ${(err as Error).message}`, 'INTERNAL', 'answer_refused');
      return undefined;
    }
    let changed = false;
    if (method.op.returnsCard) {
      result = rewriteCard(result as CardJson, deps.cardRewrite(authority)) as JsonObject;
      changed = true;
    }
    if (answerHook !== undefined) {
      // Task ownership reads the message as the gRPC codec gives it (the result itself).
      const check = await answerCheck(answerHook, method.streaming, result);
      if (!caller.open) return undefined;
      if (check.type === 'refuse') {
        log.decision = 'refused';
        failAnswer(check.error, 'task ownership refused the answer');
        return undefined;
      }
      if (check.type === 'replace') {
        result = check.body as JsonObject;
        changed = true;
      }
    }
    let payload = canonicalResponse(String(call.id), result);
    if (config.inspectResponses) {
      const run = await deps.runHooks({
        ex, sides: HOOK_ORDER[config.role].response, phase: 'response', payload, payloadJson: JSON.stringify(payload), reasoning: undefined,
        // Stream events use the guardian's stream connections, never ahead of a call's checks (as over HTTP).
        ...(method.streaming ? { budget: 'stream' as const } : {}),
        validateModified: (p) => encodeProblem(codec, p, 'result'),
      });
      if (!caller.open) return undefined;
      if (run.type === 'block') {
        failAnswer(run.error, `response hook: ${run.decision}`);
        return undefined;
      }
      if (run.modified) {
        payload = run.payload;
        changed = true;
      }
    }
    try {
      if (changed) return encodeFromPayload(codec, payload, 'result');
      // A judged answer carries only what the guardian saw (unknown fields are not re-encoded); an unjudged one goes as it came.
      return config.inspectResponses ? codec.encode(decoded) : bytes;
    } catch (err) {
      failAnswer(proxyError('upstreamUnavailable', 'Answer cannot be re-encoded'), (err as Error).message, 'INTERNAL', 'answer_refused');
      return undefined;
    }
  }
}

/** An open stream: counted in the gauge and ended by a shutdown; returns the untrack function. */
function trackStream(deps: RelayDeps, terminate: () => void): () => void {
  deps.streams.add(terminate);
  deps.metrics.openStreams.inc();
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (deps.streams.delete(terminate)) deps.metrics.openStreams.dec();
  };
}

/** Task ownership's check of one answer message: a stream's events, or the unary answer. */
function answerCheck(hook: AnswerHook, streaming: boolean, payload: JsonObject): AnswerCheck | Promise<AnswerCheck> {
  if (streaming && hook.event !== undefined) return hook.event(payload);
  return hook.unary?.(payload, true) ?? { type: 'pass' };
}

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
