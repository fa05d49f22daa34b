/**
 * One gRPC call through the proxy, in order: door checks (method, content type, encoding, deadline)
 * -> the one request message (bounded, decompressed, decoded) -> caller identity -> task ownership ->
 * request hooks on the canonical JSON-RPC request -> the approved message re-encoded to the agent ->
 * its answer relayed message by message (response hooks per message when inspected) -> its trailers.
 *
 * Ordering rules of the relay: messages are decoded, judged and written one at a time, in order; the
 * agent's stream is paused while a message is judged and while the caller's side is full; a block
 * ends the caller's stream with the error status and cancels the agent's stream; the agent's
 * trailers are sent only after every message it sent was written.
 */
import { randomUUID } from 'node:crypto';
import http2 from 'node:http2';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../../config';
import type { Metrics } from '../../admin/metrics';
import type { Identities, Side } from '../../aos/identity';
import type { JsonObject } from '../../aos/schemas';
import { rewriteCard, type CardJson, type RewriteOptions } from '../../a2a/card';
import { grpcMethodForPath, type GrpcMethod } from '../../a2a/bindings/grpc/methods';
import { canonicalRequest, canonicalResponse, codecFor, encodeFromPayload, type MessageCodec } from '../../a2a/bindings/grpc/codec';
import {
  GRPC_STATUS, MessageReader, formatTimeout, frameMessage, grpcStatusCode, isProblem, parseTimeout, readMessage, supportedEncoding,
  SUPPORTED_ENCODINGS, type FramingProblem, type RawMessage,
} from '../../a2a/bindings/grpc/framing';
import { encodeGrpcMessage, statusDetailsBin, type ErrorInfoJson } from '../../a2a/bindings/grpc/status';
import { Cancellation } from '../../cancel';
import type { CallerIdentifier, CallerResult } from '../../identity/caller';
import type { VerifiedIdentity } from '../../identity/types';
import { ownerKey } from '../../ownership/principal';
import type { CallSpan } from '../../observe/tracing';
import type { Tracer } from '../../observe/tracing';
import { auditRecord, type AuditRecord, type CallOutcome } from '../../observe/audit';
import { grpcErrorParts, proxyError, type ProxyError } from '../errors';
import { forwardRequestHeaders, headerText } from '../forward';
import type { BodyBudget, BodyLease } from '../body';
import { summarize, type HookCall, type HookRecord, type HookRun, type HookRunInput } from '../hooks';
import type { HookDecision } from '../enforce';
import type { AnswerCheck, AnswerHook, TaskOwnership } from '../ownership';
import type { GrpcUpstream } from './upstream';

export interface GrpcDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly identities: Identities;
  readonly identify: CallerIdentifier;
  readonly signAssertion: (() => Promise<string>) | undefined;
  readonly ownership?: TaskOwnership | undefined;
  readonly tracer: Tracer;
  readonly decisionLog?: ((record: AuditRecord) => void) | undefined;
  /** The same hook runner the HTTP bindings use (proxy/hooks.ts). */
  readonly runHooks: (input: HookRunInput) => Promise<HookRun>;
  readonly upstream: GrpcUpstream;
  /** Open streams, ended with UNAVAILABLE when the proxy shuts down. */
  readonly streams: Set<() => void>;
  /** Request bytes held across all calls, HTTP and gRPC (MAX_INFLIGHT_BODY_BYTES). */
  readonly bodyBudget: BodyBudget;
  /** Card rewrite for GetExtendedAgentCard answers, given the `:authority` the caller used. */
  readonly cardRewrite: (authority: string | undefined) => RewriteOptions;
}

const REQUEST_SIDES: Record<Config['role'], readonly Side[]> = { client: ['client'], server: ['server'], both: ['client', 'server'] };
const RESPONSE_SIDES: Record<Config['role'], readonly Side[]> = { client: ['client'], server: ['server'], both: ['server', 'client'] };

/** Headers of the caller's request that are HTTP/2 or gRPC transport, set by the proxy itself towards the agent. */
const TRANSPORT_HEADERS = new Set(['host', 'grpc-encoding', 'grpc-accept-encoding', 'grpc-timeout', 'content-length', 'te', 'content-type', 'user-agent']);
/** Agent answer headers that are transport (or that the proxy changes when it re-encodes). */
const ANSWER_DROP = new Set(['content-length', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'date']);

/** Per-call facts (the gRPC counterpart of the HTTP pipeline's Exchange). */
interface GrpcCall extends HookCall {
  readonly started: number;
  readonly method: GrpcMethod;
  readonly id: string;
  readonly identity: VerifiedIdentity | undefined;
  readonly remoteAddress: string | undefined;
  decision: HookDecision | 'error' | 'refused';
  events: number;
  error?: string;
  outcome?: CallOutcome;
  upstreamSentAt?: number;
  upstreamEndedAt?: number;
  upstreamStatus: number | null;
}

/** The caller's side of one call: answers in gRPC terms, whatever state the stream is in. */
class CallerSide {
  private trailers: http2.OutgoingHttpHeaders | undefined;
  finished = false;

  constructor(readonly stream: http2.ServerHttp2Stream) {
    stream.on('wantTrailers', () => {
      stream.sendTrailers(this.trailers ?? { 'grpc-status': String(GRPC_STATUS.INTERNAL), 'grpc-message': 'answer ended without a status' });
    });
  }

  get open(): boolean {
    return !this.stream.destroyed && !this.stream.closed && !this.finished;
  }

  /** Headers of a response that will carry messages and then trailers. */
  respond(headers: http2.OutgoingHttpHeaders): void {
    if (this.stream.headersSent || !this.open) return;
    this.stream.respond({ ...headers, ':status': 200 }, { waitForTrailers: true });
  }

  /** End with a status: trailers-only before any message, trailers after them. */
  end(status: http2.OutgoingHttpHeaders): void {
    if (!this.open) return;
    this.finished = true;
    if (!this.stream.headersSent) {
      this.stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...status }, { endStream: true });
      // Refused before the request was read to its end: RST_STREAM(NO_ERROR) tells the caller to stop sending (RFC 9113 8.1).
      if (!this.stream.readableEnded) this.stream.close(http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
    this.trailers = status;
    this.stream.end();
  }

  fail(err: ProxyError, statusOverride?: string): void {
    this.end(errorStatus(err, statusOverride));
  }

  /** Write one message; resolves when the caller's side can take more (backpressure). */
  write(frame: Buffer): Promise<void> {
    if (!this.open) return Promise.resolve();
    if (this.stream.write(frame)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.stream.off('drain', done);
        this.stream.off('close', done);
        resolve();
      };
      this.stream.once('drain', done);
      this.stream.once('close', done);
    });
  }
}

/** The status headers of a proxy error, with its ErrorInfo in grpc-status-details-bin. */
export function errorStatus(err: ProxyError, statusOverride?: string): http2.OutgoingHttpHeaders {
  const parts = grpcErrorParts(err, statusOverride);
  const code = grpcStatusCode(parts.status);
  return {
    'grpc-status': String(code),
    'grpc-message': encodeGrpcMessage(parts.message),
    'grpc-status-details-bin': statusDetailsBin(code, parts.message, parts.details as readonly ErrorInfoJson[]).toString('base64'),
  };
}

function framingError(p: FramingProblem): ProxyError {
  return proxyError(p.status === 'UNIMPLEMENTED' ? 'methodNotFound' : 'rejected', p.message);
}

export function createGrpcHandler(deps: GrpcDeps): (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void {
  const { config, logger, metrics } = deps;

  function refuse(caller: CallerSide, err: ProxyError, status: string | undefined, remoteAddress: string | undefined, extra: http2.OutgoingHttpHeaders = {}): void {
    metrics.call('refused', 'refused');
    logger.info({ outcome: 'refused', binding: 'grpc', reason: err.message, remoteAddress }, 'request refused');
    caller.end({ ...errorStatus(err, status), ...extra });
  }

  return (stream, headers) => {
    const caller = new CallerSide(stream);
    // A stream error (a reset, a protocol error) only ends this call.
    stream.on('error', () => undefined);
    handle(caller, headers).catch((err: unknown) => {
      logger.error({ err }, 'internal error while handling a gRPC call');
      caller.fail(proxyError('rejected', 'Internal proxy error'), 'INTERNAL');
    });
  };

  async function handle(caller: CallerSide, headers: http2.IncomingHttpHeaders): Promise<void> {
    const started = performance.now();
    const stream = caller.stream;
    const remoteAddress = stream.session?.socket.remoteAddress;
    const path = String(headers[':path'] ?? '');
    const door = doorCheck(headers);
    if (door.type === 'refuse') return refuse(caller, door.error, door.status, remoteAddress, door.extra);
    const { method, encoding, timeoutMs } = door;

    // Identity checks and signing start now and run while the message arrives.
    const who = identifyCaller(headers, stream);
    const assertion = signFor();
    const lease = deps.bodyBudget.lease();
    stream.once('close', lease.release);
    const body = await readRequestMessage(stream, encoding, config.maxBodyBytes, config.bodyTimeoutMs, lease);
    if (body === 'gone') return;
    if (body === 'overloaded') return refuse(caller, proxyError('overloaded'), undefined, remoteAddress);
    if (isProblem(body)) return refuse(caller, framingError(body), body.status, remoteAddress);
    // The frame bytes are dropped once read: hold what is kept.
    lease.resize(body.length);
    const codec = codecFor(method);
    let decoded: unknown;
    let params: JsonObject;
    try {
      decoded = codec.request.decode(body);
      params = codec.request.toJson(decoded);
    } catch (err) {
      return refuse(caller, proxyError('invalidRequest', `request message does not decode as ${method.request}: ${(err as Error).message}`), 'INVALID_ARGUMENT', remoteAddress);
    }
    const known = await who;
    if (!known.ok) return refuse(caller, proxyError('unauthenticated', known.message, { ...known.metadata }), undefined, remoteAddress);

    const id = `grpc-${randomUUID()}`;
    const request = canonicalRequest(method, params, id);
    const span = deps.tracer.startCall(headers, { method: method.op.aosMethod, wireMethod: method.name, binding: 'grpc', role: config.role, httpMethod: 'POST', path, remoteAddress });
    const call: GrpcCall = {
      started, method, op: method.op, id, caller: new Cancellation(), identity: known.identity, callerPeer: known.peer,
      hooks: [], peers: {}, span, decision: 'allow', events: 0, upstreamStatus: null, remoteAddress,
    };
    let upReq: http2.ClientHttp2Stream | undefined;
    let deadline: NodeJS.Timeout | undefined;
    stream.once('close', () => {
      if (deadline !== undefined) clearTimeout(deadline);
      if (!caller.finished) {
        // The caller went away (or reset the stream): stop the guardian calls and the agent's call.
        call.caller.cancel();
        upReq?.close(http2.constants.NGHTTP2_CANCEL);
      }
      logCall(call, caller.finished);
    });
    if (timeoutMs !== undefined) {
      const left = timeoutMs - (performance.now() - call.started);
      deadline = setTimeout(() => {
        call.error = 'deadline exceeded';
        call.outcome = 'cancelled';
        caller.end({ 'grpc-status': String(GRPC_STATUS.DEADLINE_EXCEEDED), 'grpc-message': 'Deadline exceeded' });
        call.caller.cancel();
        upReq?.close(http2.constants.NGHTTP2_CANCEL);
      }, Math.max(0, left));
      deadline.unref();
    }

    // Task ownership: another caller's task is "not found", before the guardian or the agent sees the call.
    const owner = ownerKey(call.identity);
    let answerHook: AnswerHook | undefined;
    if (deps.ownership !== undefined) {
      const owned = await deps.ownership.checkRequest(owner, method.op, request);
      if (!caller.open) return;
      if (owned.type === 'refuse') {
        call.decision = 'refused';
        return caller.fail(owned.error);
      }
      answerHook = deps.ownership.answerHook(owner, method.op, 'jsonrpc');
    }

    const run = await deps.runHooks({
      ex: call, sides: REQUEST_SIDES[config.role], phase: 'request', payload: request, payloadJson: JSON.stringify(request),
      reasoning: headerText(headers[config.reasoningHeader]),
      // A replacement must still be a message the agent can read.
      validateModified: (p) => encodeProblem(codec.request, p, 'params'),
    });
    if (!caller.open) return;
    if (run.type === 'block') {
      call.decision = run.decision;
      return caller.fail(run.error);
    }
    if (run.modified && deps.ownership !== undefined) {
      const again = await deps.ownership.checkRequest(owner, method.op, run.payload);
      if (!caller.open) return;
      if (again.type === 'refuse') {
        call.decision = 'refused';
        return caller.fail(again.error);
      }
    }
    // What the agent decodes is what the guardian approved: the decoded message (unknown fields dropped) or the replacement.
    const message = run.modified ? encodeFromPayload(codec.request, run.payload, 'params') : codec.request.encode(decoded);
    call.decision = summarize(call.hooks, 'request');
    const outHeaders = upstreamHeaders(headers, stream, run.unchecked, await assertion, timeoutMs === undefined ? undefined : timeoutMs - (performance.now() - call.started));
    if (!caller.open) return;
    try {
      upReq = deps.upstream.request(outHeaders);
    } catch (err) {
      call.error = (err as Error).message;
      return caller.fail(proxyError('upstreamUnavailable', 'Upstream agent unavailable: no gRPC endpoint known'));
    }
    call.upstreamSentAt = performance.now();
    upReq.end(frameMessage(message));
    // The request has left: its bytes no longer count against the in-flight budget.
    lease.release();
    relay(call, caller, upReq, codec.response, answerHook, headerText(headers[':authority']));
  }

  function relay(call: GrpcCall, caller: CallerSide, upReq: http2.ClientHttp2Stream, codec: MessageCodec, answerHook: AnswerHook | undefined, authority: string | undefined): void {
    const method = call.method;
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
      call.error ??= why;
      if (outcome !== undefined) call.outcome = outcome;
      caller.fail(err, status);
      stopUpstream();
    };

    upReq.on('error', (err) => {
      if (caller.finished) return;
      failAnswer(proxyError('upstreamUnavailable', 'Upstream agent unavailable'), `upstream: ${(err as NodeJS.ErrnoException).code ?? err.message}`);
    });
    upReq.on('response', (h) => {
      const status = Number(h[':status']);
      call.upstreamStatus = status;
      metrics.upstreamCall(method.op.aosMethod, (performance.now() - (call.upstreamSentAt as number)) / 1000);
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
        untrack = trackStream(() => failAnswer(proxyError('upstreamUnavailable', 'Proxy shutting down'), 'proxy shutdown', 'UNAVAILABLE'));
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
      call.upstreamEndedAt = performance.now();
      if (!working) finish();
    });
    upReq.on('close', () => {
      if (!upEnded && !caller.finished) {
        call.upstreamEndedAt = performance.now();
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
          call.events++;
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
      let payload = canonicalResponse(call.id, result);
      if (answerHook !== undefined) {
        const check = await answerCheck(answerHook, method.streaming, payload);
        if (!caller.open) return undefined;
        if (check.type === 'refuse') {
          call.decision = 'refused';
          failAnswer(check.error, 'task ownership refused the answer');
          return undefined;
        }
        if (check.type === 'replace') {
          payload = check.body as JsonObject;
          changed = true;
        }
      }
      if (config.inspectResponses) {
        const run = await deps.runHooks({
          ex: call, sides: RESPONSE_SIDES[config.role], phase: 'response', payload, payloadJson: JSON.stringify(payload), reasoning: undefined,
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
  function trackStream(terminate: () => void): () => void {
    deps.streams.add(terminate);
    metrics.openStreams.inc();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (deps.streams.delete(terminate)) metrics.openStreams.dec();
    };
  }

  function identifyCaller(headers: http2.IncomingHttpHeaders, stream: http2.ServerHttp2Stream): Promise<CallerResult> {
    return deps.identify(headers, stream.session?.socket as Socket).catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'caller identity could not be checked');
      return { ok: false as const, message: 'Caller identity could not be checked', metadata: {} };
    });
  }

  function signFor(): Promise<string | undefined> {
    if (deps.signAssertion === undefined) return Promise.resolve(undefined);
    return deps.signAssertion().catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'could not sign the identity assertion; forwarding without it');
      return undefined;
    });
  }

  /**
   * The agent's request headers: the caller's metadata under the same rules as HTTP headers (reasoning
   * removed, X-AOS-Agent-* the proxy's, assertion, unchecked marker), transport headers the proxy's own.
   */
  function upstreamHeaders(incoming: http2.IncomingHttpHeaders, stream: http2.ServerHttp2Stream, unchecked: boolean, signed: string | undefined, leftMs: number | undefined): http2.OutgoingHttpHeaders {
    const metadata: http2.IncomingHttpHeaders = {};
    for (const [k, v] of Object.entries(incoming)) {
      if (k.startsWith(':') || TRANSPORT_HEADERS.has(k)) continue;
      metadata[k] = v;
    }
    const out = forwardRequestHeaders(metadata, {
      role: config.role, reasoningHeader: config.reasoningHeader,
      announce: config.role === 'server' ? undefined : deps.identities.clientAsPeer(),
      assertion: signed, unchecked, bodyLength: null, upstreamHost: '', remoteAddress: stream.session?.socket.remoteAddress,
      encrypted: stream.session?.encrypted === true,
    });
    delete out.host;
    delete out['x-forwarded-host'];
    return {
      ...out,
      ':method': 'POST',
      ':path': String(incoming[':path']),
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-accept-encoding': 'identity',
      ...(leftMs === undefined ? {} : { 'grpc-timeout': formatTimeout(leftMs) }),
    };
  }

  function logCall(call: GrpcCall, finished: boolean): void {
    const now = performance.now();
    const totalMs = now - call.started;
    const upstreamMs = call.upstreamSentAt === undefined ? undefined : (call.upstreamEndedAt ?? now) - call.upstreamSentAt;
    const side = call.hooks[0]?.side;
    const peer = side === undefined ? undefined : call.peers[side];
    const record = auditRecord({
      method: call.op.aosMethod, wireMethod: call.method.name, binding: 'grpc', role: config.role, decision: call.decision, hooks: call.hooks as readonly HookRecord[],
      peer: peer === undefined ? undefined : { name: peer.name, url: peer.url, version: peer.version, verified: side === 'server' && call.identity !== undefined && call.identity.source !== 'local' },
      remoteAddress: call.remoteAddress, traceId: call.span.traceId, spanId: call.span.spanId, a2aId: call.id,
      upstreamStatus: call.upstreamStatus, forwarded: call.upstreamSentAt !== undefined, upstreamMs, totalMs, finished,
      events: call.events, error: call.error, outcome: call.outcome,
    });
    if (call.identity !== undefined && call.identity.source !== 'local') {
      record.fields.caller = call.identity.subject;
      record.fields.callerSource = call.identity.source;
    }
    if (record.level === 'warn') logger.warn(record.fields, 'a2a call');
    else logger.info(record.fields, 'a2a call');
    metrics.finished(call.op.aosMethod, record.outcome, Math.max(0, totalMs - (upstreamMs ?? 0)) / 1000);
    (call.span as CallSpan).end({ outcome: record.outcome, decision: record.decision, reasonCodes: record.reasonCodes, upstreamStatus: call.upstreamStatus, error: call.error });
    deps.decisionLog?.(record);
  }
}

type Door =
  | { readonly type: 'pass'; readonly method: GrpcMethod; readonly encoding: string | undefined; readonly timeoutMs: number | undefined }
  | { readonly type: 'refuse'; readonly error: ProxyError; readonly status: string; readonly extra?: http2.OutgoingHttpHeaders };

/**
 * The checks before a byte of the body is read (pure). The positive model: only the exact `:path` of a
 * known RPC, over POST with a gRPC (protobuf) content type, in an encoding the proxy reads, passes.
 */
export function doorCheck(headers: http2.IncomingHttpHeaders): Door {
  const refuse = (error: ProxyError, status: string, extra?: http2.OutgoingHttpHeaders): Door => ({ type: 'refuse', error, status, ...(extra === undefined ? {} : { extra }) });
  if (headers[':method'] !== 'POST') return refuse(proxyError('methodNotFound', 'gRPC calls are POST'), 'UNIMPLEMENTED');
  const contentType = headerText(headers['content-type']) ?? '';
  if (!/^application\/grpc(\+proto)?(\s*;.*)?$/i.test(contentType)) {
    return refuse(proxyError('contentTypeNotSupported', `content-type ${contentType.slice(0, 64) || '(none)'} is not application/grpc`), 'INVALID_ARGUMENT');
  }
  const path = String(headers[':path'] ?? '');
  const method = grpcMethodForPath(path);
  if (method === undefined) return refuse(proxyError('methodNotFound', `Unknown method ${path.slice(0, 128)}`), 'UNIMPLEMENTED');
  const encoding = headerText(headers['grpc-encoding']);
  if (!supportedEncoding(encoding)) {
    return refuse(proxyError('methodNotFound', `grpc-encoding ${String(encoding).slice(0, 32)} is not supported`), 'UNIMPLEMENTED', { 'grpc-accept-encoding': SUPPORTED_ENCODINGS.join(',') });
  }
  const timeoutMs = parseTimeout(headerText(headers['grpc-timeout']));
  if (timeoutMs === null) return refuse(proxyError('rejected', 'malformed grpc-timeout'), 'INTERNAL');
  return { type: 'pass', method, encoding, timeoutMs };
}

/** Task ownership's check of one answer message: a stream's events, or the unary answer. */
function answerCheck(hook: AnswerHook, streaming: boolean, payload: JsonObject): AnswerCheck | Promise<AnswerCheck> {
  if (streaming && hook.event !== undefined) return hook.event(payload);
  return hook.unary?.(payload, true) ?? { type: 'pass' };
}

/** A problem string when a replacement payload does not encode, for enforce's "no valid answer". */
function encodeProblem(codec: MessageCodec, payload: JsonObject, member: 'params' | 'result'): string | undefined {
  try {
    encodeFromPayload(codec, payload, member);
    return undefined;
  } catch (err) {
    return `modified ${member} do not encode: ${(err as Error).message}`;
  }
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

/** The one request message of a call (every A2A RPC takes exactly one), bounded and decompressed. */
function readRequestMessage(
  stream: http2.ServerHttp2Stream, encoding: string | undefined, maxBytes: number, timeoutMs: number, lease: BodyLease,
): Promise<Buffer | FramingProblem | 'gone' | 'overloaded'> {
  return new Promise((resolve) => {
    const reader = new MessageReader(maxBytes);
    const messages: RawMessage[] = [];
    let settled = false;
    const done = (v: Buffer | FramingProblem | 'gone' | 'overloaded' | Promise<Buffer | FramingProblem>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('close', onClose);
      if (v !== 'gone' && !(v instanceof Promise) && !Buffer.isBuffer(v)) stream.pause();
      void Promise.resolve(v).then(resolve);
    };
    const timer = setTimeout(() => done({ status: 'INTERNAL', message: 'request message did not arrive in time' }), timeoutMs);
    timer.unref();
    const onData = (chunk: Buffer) => {
      if (!lease.take(chunk.length)) return done('overloaded');
      const got = reader.push(chunk);
      if (isProblem(got)) return done(got);
      messages.push(...got);
      if (messages.length > 1) done({ status: 'INTERNAL', message: 'more than one request message for a unary-request method' });
    };
    const onEnd = () => {
      if (!reader.clean) return done({ status: 'INTERNAL', message: 'request ended inside a message' });
      const m = messages[0];
      if (m === undefined) return done({ status: 'INTERNAL', message: 'no request message' });
      done(readMessage(m, encoding, maxBytes));
    };
    const onClose = () => done('gone');
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('close', onClose);
  });
}
