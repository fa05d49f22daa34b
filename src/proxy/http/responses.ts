/**
 * The agent's answer on its way back: plain relay (pipe, chunk by chunk), or, with response
 * inspection (and for agent-card results, which are always rewritten), unary bodies through the
 * response hooks, and SSE events through them pipelined and in order (relay/stream.ts).
 */
import { isUtf8 } from 'node:buffer';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { JsonRpcId } from '../../aos/schemas';
import type { Codec, ErrorShape, SseCodec } from '../../a2a/binding';
import { BoundedBytes } from '../../core/bounded';
import { largeTurn, readInTurns } from '../../core/turns';
import { isEncoded } from '../../core/http';
import { proxyError, type ProxyError } from '../../core/errors';
import { dropAgentBytes, headersForOwnBody, type UpstreamAnswer } from './forward';
import { headerText } from '../headers';
import { decodeBody } from './body';
import { answerFlow, UNARY_ANSWER, type AnswerFlow } from '../answers';
import { answerWindow, type AnswerChannel, type Decoded } from '../relay-core';
import type { Verdict } from '../window';
import { relayStreamInspected as relayPipelined } from './relay/stream';
import { answerRoad, type RelayContext } from './relay/context';

export type { RelayContext } from './relay/context';

const SHUTDOWN = () => proxyError('upstreamUnavailable', 'Proxy is shutting down');
const cardUnreadable = () => proxyError('upstreamUnavailable', 'Agent card unavailable: the answer cannot be read');

/** The binding's error answer for a call the agent does not answer (refused, denied, unreachable...). */
export function sendError(res: ServerResponse, codec: Codec, err: ProxyError, id: JsonRpcId | null, shape?: ErrorShape): void {
  const { status, headers: answerHeaders, body } = codec.errorAnswer(err, id, shape);
  const headers: OutgoingHttpHeaders = { ...answerHeaders, 'content-length': Buffer.byteLength(body) };
  // 413 / 408 / overloaded, or refused before its body was read (admission): the rest of the body was not
  // read, so this connection cannot carry another request.
  const unread = err.httpStatus === 413 || err.httpStatus === 408 || err.kind === 'overloaded' || err.kind === 'limited' || res.req?.complete === false;
  const httpStatus = unread ? (err.httpStatus ?? status) : status;
  if (unread) headers.connection = 'close';
  // RFC 9110 11.6.1: a 401 names how to authenticate.
  if (httpStatus === 401) headers['www-authenticate'] = 'Bearer realm="a2a-guard"';
  const retryAfter = err.metadata['retryAfterSeconds'];
  if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
  res.writeHead(httpStatus, headers);
  res.end(body);
}

export function isEventStream(upRes: UpstreamAnswer): boolean {
  return String(upRes.headers['content-type'] ?? '')
    .toLowerCase()
    .startsWith('text/event-stream');
}

/** An event stream answering an operation that streams (or traffic that is not A2A, judged by its label alone). */
function streamsEvents(ctx: RelayContext): boolean {
  return isEventStream(ctx.upRes) && (ctx.ex === undefined || ctx.ex.call.op.streaming);
}

// ---- plain relay ----

/** Pass the answer on untouched. SSE is flushed per chunk; nothing is buffered or compressed. */
export function relayPlain(ctx: RelayContext): void {
  const { res, upRes, codec, id } = ctx;
  const sse = streamsEvents(ctx);
  // Hop-by-hop headers were left out when the answer arrived; node only reads this object. A stream
  // may end with the proxy's own error event, so it never carries the agent's length.
  res.writeHead(upRes.statusCode, sse ? headersForOwnBody(upRes.headers) : upRes.headers);
  if (sse) res.flushHeaders();
  // Remember whether the bytes so far end on an event boundary, so an error frame never glues onto half an event.
  let tail = '\n\n';
  let waiting = false;
  const onDrain = () => {
    waiting = false;
    upRes.resume();
  };
  // A cut stream looks like success to A2A clients: every proxy-side end says it failed.
  const fail = (err: ProxyError) => {
    if (res.writableEnded || res.destroyed) return;
    const boundary = tail.replace(/\r\n?/g, '\n').endsWith('\n\n') ? '' : '\n\n';
    res.end(Buffer.concat([Buffer.from(boundary), codec.streamError(err, id).frame]));
    ctx.upReq.abort();
  };
  upRes.read({
    data: (c) => {
      if (res.writableEnded || res.destroyed) return;
      if (sse) tail = (tail + c.toString('latin1', Math.max(0, c.length - 4))).slice(-4);
      // Backpressure: a slow caller pauses the agent.
      if (!res.write(c) && !waiting) {
        waiting = true;
        upRes.pause();
        res.once('drain', onDrain);
      }
    },
    end: (complete) => {
      if (res.writableEnded || res.destroyed) return;
      if (complete) return void res.end();
      ctx.onUpstreamFailure(sse ? 'upstream closed mid-stream' : 'upstream closed mid-response');
      if (sse) fail(proxyError('upstreamUnavailable', 'Upstream agent failed mid-stream'));
      else res.destroy();
    },
  });
  if (sse) {
    const untrack = ctx.trackStream(() => fail(SHUTDOWN()));
    res.once('close', untrack);
  }
}

// ---- unary with hooks / card rewrite ----

export function relayUnaryInspected(ctx: RelayContext): void {
  const { res, upRes, codec, id } = ctx;
  if (isEventStream(upRes)) return unaryLabelledStream(ctx);
  const kept = new BoundedBytes(ctx.maxBodyBytes);
  let overloaded = false;
  let ended = false;
  // A large answer is read in its caller's turns, as its request was (core/turns.ts readInTurns).
  const ex = ctx.ex;
  const paced =
    ex === undefined
      ? undefined
      : readInTurns(
          upRes,
          () => largeTurn(ctx.turns?.fair, ex.call.key, ex.call.caller),
          () => ended || overloaded || kept.overflowed,
        );
  upRes.read({
    data: (c) => {
      if (kept.overflowed || overloaded) return;
      paced?.chunk(c.length);
      // Answers held for inspection count against the in-flight budget: many reads of one large answer cannot grow memory without bound.
      if (!ctx.lease.take(c.length)) {
        overloaded = true;
        ctx.upReq.abort();
        return sendError(res, codec, proxyError('overloaded'), id);
      }
      if (!kept.push(c)) ctx.upReq.abort();
    },
    end: (complete) => {
      ended = true;
      if (res.destroyed || res.writableEnded || overloaded) return;
      if (kept.overflowed)
        return sendError(res, codec, proxyError('upstreamUnavailable', 'Agent answer too large to inspect', { limit: String(ctx.maxBodyBytes) }), id);
      if (!complete) {
        ctx.onUpstreamFailure('upstream closed mid-response');
        return sendError(res, codec, proxyError('upstreamUnavailable', 'Upstream agent failed before answering'), id);
      }
      judgeUnary(ctx, kept.buffer());
    },
  });
}

/**
 * A unary operation answered with a body labelled text/event-stream. Read as events, a JSON body has
 * none to judge, yet an SDK caller ignores the label and acts on that JSON; read as JSON, a caller
 * that honours the label reads something else. No reading is the caller's for sure, so the answer is
 * refused before its body is read (passed as it is only under FAIL_MODE=open, counted), and a card
 * result always (its URLs would lead around the proxy).
 */
function unaryLabelledStream(ctx: RelayContext): void {
  const ok = ctx.upRes.statusCode >= 200 && ctx.upRes.statusCode < 300;
  if (ctx.rewriteCard !== undefined && ok) {
    ctx.upReq.abort();
    ctx.onUpstreamFailure('agent card result cannot be read');
    return sendError(ctx.res, ctx.codec, cardUnreadable(), ctx.id);
  }
  // Nothing here reads this answer (card rewrite and task ownership read 2xx ones only): it goes as it is.
  if (ctx.inspect === undefined && !(ok && ctx.answerHook?.unary !== undefined)) return relayPlain(ctx);
  const err = ctx.onUninspectable('agent answered a unary operation with an event stream');
  if (err === undefined) return relayPlain(ctx);
  ctx.upReq.abort();
  sendError(ctx.res, ctx.codec, err, ctx.id);
}

/** How a unary answer ends instead: the binding's error answer, or the connection destroyed (an internal failure). */
type UnaryStop = { readonly error: ProxyError } | 'destroy';

/** The one message of a unary answer, as the agent sent it, and the status and headers the caller gets with it. */
interface UnaryAnswer {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: OutgoingHttpHeaders;
  readonly original: Buffer;
  /** The bytes the stages read (decoded from the agent's content-encoding). */
  raw: Buffer;
}

/** A unary answer read in full: one message through the relay core (a window of size 1), written as it left it. */
function judgeUnary(ctx: RelayContext, original: Buffer): void {
  const { res, upRes, codec, id } = ctx;
  const status = upRes.statusCode;
  const a: UnaryAnswer = { status, ok: status >= 200 && status < 300, headers: { ...upRes.headers }, original, raw: original };
  const window = answerWindow(
    unaryChannel(ctx, a),
    ctx.turns,
    ctx.ex,
    {
      bytes: (raw) => raw.length,
      write: (body) => {
        send(res, status, a.headers, body);
        return true;
      },
      end: (stop) => {
        if (stop === 'destroy') res.destroy();
        else if (stop !== undefined) sendError(res, codec, stop.error, id);
      },
      // Read in full already; the upstream request is the call's to end.
      flow: () => undefined,
      abort: () => undefined,
      failure: (): UnaryStop => 'destroy',
    },
    { size: 1 },
  );
  res.once('close', () => {
    if (!res.writableFinished) window.close();
  });
  window.push([original]);
  window.upstreamEnded();
}

/** The HTTP unary answer channel: the body decoded (content-encoding, then JSON), judged, and the bytes the caller gets. */
function unaryChannel(ctx: RelayContext, a: UnaryAnswer): AnswerChannel<Buffer, UnaryStop> {
  return {
    stages: UNARY_ANSWER,
    decode: () => (isEncoded(ctx.upRes.headers['content-encoding']) ? decodeEncoded(ctx, a) : decodeUnary(ctx, a)),
    encode: ({ flow }) => encodeUnary(ctx, a, flow),
    refused: (error) => ({ error }),
  };
}

/** Asked for identity, got a compressed answer anyway: read it before judging it, never pass it unread. */
async function decodeEncoded(ctx: RelayContext, a: UnaryAnswer): Promise<Decoded | Verdict<UnaryStop>> {
  const encoding = headerText(ctx.upRes.headers['content-encoding']) as string;
  const decoded = await decodeBody(a.raw, encoding, ctx.maxBodyBytes);
  if (!decoded.ok && ctx.rewriteCard !== undefined && a.ok) {
    ctx.onUpstreamFailure('agent card result cannot be read');
    return { stop: { error: cardUnreadable() } };
  }
  if (!decoded.ok) {
    // Fail closed (the error), or open (the agent's bytes as they came).
    const err = ctx.onUninspectable('agent answer has an encoding the proxy cannot read');
    return err === undefined ? { pass: a.original } : { stop: { error: err } };
  }
  a.raw = decoded.body;
  delete a.headers['content-encoding'];
  return decodeUnary(ctx, a);
}

function decodeUnary(ctx: RelayContext, a: UnaryAnswer): Decoded {
  let body: unknown;
  let unread: string | undefined;
  try {
    body = ctx.codec.decodeAnswer(a.raw);
  } catch {
    // Not JSON (an HTML error page, say): no A2A answer the hooks could judge.
    unread = 'agent answer is not JSON';
  }
  return { flow: answerFlow(answerRoad(ctx, 'agent answer is not a JSON object'), ctx.ex, ctx.codec, ctx.id, a.ok, body, unread) };
}

/** What leaves once the stages ran: the error, or the bytes (and their headers). */
function encodeUnary(ctx: RelayContext, a: UnaryAnswer, flow: AnswerFlow): Verdict<UnaryStop> {
  const { raw, original, headers } = a;
  // The caller left: nothing is written, nothing counted.
  if (ctx.res.destroyed) return { stop: 'destroy' };
  const end = flow.end;
  if (end?.type === 'refuse') {
    if (end.agentFailed === true) ctx.onUpstreamFailure(end.why);
    return { stop: { error: end.error } };
  }
  // Passed unjudged as it came (FAIL_MODE=open, or nothing reads it).
  if (end !== undefined && flow.unread !== undefined) {
    if (raw === original) return { pass: original };
    // Decoded above (its content-encoding is gone): the decoded bytes, without the agent's digests of the encoded ones.
    dropAgentBytes(headers);
    return { pass: raw };
  }
  // The extended card is the caller's own: no cache may hand it to another caller.
  if (ctx.rewriteCard !== undefined && a.ok) headers['cache-control'] = 'private, no-store';
  const out = unaryBytes(flow, ctx.codec, raw, end === undefined && ctx.inspect === undefined && ctx.answerHook?.unary !== undefined && a.ok);
  if (out !== raw) {
    // Bytes the proxy wrote: none of the agent's digests or validators (send sets the length), no encoding.
    dropAgentBytes(headers);
    delete headers['content-encoding'];
  }
  return { pass: out };
}

/**
 * What the caller gets of a unary answer: what the guardian judged, re-serialized (a modify's
 * replacement as written); else what the stages changed; else, when task ownership read it, what it
 * read (the agent's text could give a member twice, and a first-match reader would take the one
 * ownership did not bind or filter). The agent's own bytes when they already are that text, so ETags
 * survive the common case.
 */
function unaryBytes(flow: AnswerFlow, codec: SseCodec, raw: Buffer, ownershipRead: boolean): Buffer {
  const { judged, body } = flow;
  const out = flow.changed ? codec.encodeAnswer(body) : raw;
  if (judged !== undefined) {
    if (judged.modified) return Buffer.from(codec.fromPayload(judged.payload, body), 'utf8');
    if (out === raw && raw.length === 0 && body === null) return raw;
    return sameText(out, codec.fromPayload(judged.payload, body, judged.payloadJson));
  }
  if (out === raw && ownershipRead && body !== null) return sameText(raw, JSON.stringify(body));
  return out;
}

/**
 * `bytes` when they already are `text` (so the agent's ETag survives the common case), else `text`'s bytes.
 * Valid UTF-8 first: a cut sequence (F0 9F 98) decodes to a U+FFFD of its own length, and other readers drop it or read another charset.
 */
function sameText(bytes: Buffer, text: string): Buffer {
  return bytes.length === Buffer.byteLength(text) && isUtf8(bytes) && bytes.toString('utf8') === text ? bytes : Buffer.from(text, 'utf8');
}

function send(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: Buffer): void {
  headers['content-length'] = body.length;
  delete headers['transfer-encoding'];
  res.writeHead(status, headers);
  res.end(body);
}

// ---- SSE with hooks: pipelined, in order (relay/stream.ts) ----

export function relayStreamInspected(ctx: RelayContext): void {
  const inspect = ctx.inspect;
  const ownEvent = ctx.answerHook?.event;
  if (inspect === undefined && ownEvent === undefined) return relayPlain(ctx);
  if (isEncoded(ctx.upRes.headers['content-encoding'])) {
    // A compressed event stream cannot be judged event by event.
    const err = ctx.onUninspectable('agent event stream is compressed');
    if (err !== undefined) {
      ctx.upReq.abort();
      return sendError(ctx.res, ctx.codec, err, ctx.id);
    }
    return relayPlain(ctx);
  }
  relayPipelined(ctx, inspect);
}
