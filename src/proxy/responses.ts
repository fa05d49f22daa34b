/**
 * The agent's answer on its way back: plain relay (pipe, chunk by chunk), or, with response
 * inspection (and for agent-card results, which are always rewritten), unary bodies through the
 * response hooks, and SSE events through them pipelined and in order (relay/stream.ts).
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { JsonObject, JsonRpcId } from '../aos/schemas';
import { cardToServe, type CardJson, type RewriteOptions } from '../a2a/card';
import type { Codec, ErrorShape } from '../a2a/binding';
import { isObject } from '../core/json';
import { BoundedBytes } from '../core/bounded';
import { isEncoded } from '../core/http';
import { proxyError, type ProxyError } from '../core/errors';
import { dropAgentBytes, headerText, headersForOwnBody, type UpstreamAnswer } from './forward';
import { decodeBody } from './body';
import { misspelledAnswer } from '../a2a/fields';
import type { AnswerCheck } from './ownership';
import { relayStreamInspected as relayPipelined } from './relay/stream';
import type { RelayContext } from './relay/context';

export type { RelayContext } from './relay/context';


const SHUTDOWN = () => proxyError('upstreamUnavailable', 'Proxy is shutting down');

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
  return String(upRes.headers['content-type'] ?? '').toLowerCase().startsWith('text/event-stream');
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
  upRes.read({
    data: (c) => {
      if (kept.overflowed || overloaded) return;
      // Answers held for inspection count against the in-flight budget: many reads of one large answer cannot grow memory without bound.
      if (!ctx.lease.take(c.length)) {
        overloaded = true;
        ctx.upReq.abort();
        return sendError(res, codec, proxyError('overloaded'), id);
      }
      if (!kept.push(c)) ctx.upReq.abort();
    },
    end: (complete) => {
      if (res.destroyed || res.writableEnded || overloaded) return;
      if (kept.overflowed) return sendError(res, codec, proxyError('upstreamUnavailable', 'Agent answer too large to inspect', { limit: String(ctx.maxBodyBytes) }), id);
      if (!complete) {
        ctx.onUpstreamFailure('upstream closed mid-response');
        return sendError(res, codec, proxyError('upstreamUnavailable', 'Upstream agent failed before answering'), id);
      }
      void finishUnary(ctx, kept.buffer()).catch(() => res.destroy());
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
    return sendError(ctx.res, ctx.codec, proxyError('upstreamUnavailable', 'Agent card unavailable: the answer cannot be read'), ctx.id);
  }
  // Nothing here reads this answer (card rewrite and task ownership read 2xx ones only): it goes as it is.
  if (ctx.inspect === undefined && !(ok && ctx.answerHook?.unary !== undefined)) return relayPlain(ctx);
  const err = ctx.onUninspectable('agent answered a unary operation with an event stream');
  if (err === undefined) return relayPlain(ctx);
  ctx.upReq.abort();
  sendError(ctx.res, ctx.codec, err, ctx.id);
}

/** Fail closed (send the error) or open (run `pass`) on an answer the hooks cannot read. */
function uninspectable(ctx: RelayContext, why: string, pass: () => void): void {
  const err = ctx.onUninspectable(why);
  if (err === undefined) return pass();
  sendError(ctx.res, ctx.codec, err, ctx.id);
}

async function finishUnary(ctx: RelayContext, raw: Buffer): Promise<void> {
  const { res, upRes, codec, id } = ctx;
  const status = upRes.statusCode;
  const ok = status >= 200 && status < 300;
  // Task ownership reads 2xx answers (binds what they name, filters lists).
  const ownershipRead = ctx.answerHook?.unary !== undefined && ok;
  const headers: OutgoingHttpHeaders = { ...upRes.headers };
  const original = raw;
  // An agent-card result that cannot be read and rewritten is never relayed, whatever FAIL_MODE says:
  // its URLs would lead around the proxy (the card route refuses the same way).
  const cardAnswer = ctx.rewriteCard !== undefined && ok;
  const refuseCard = () => {
    ctx.onUpstreamFailure('agent card result cannot be read');
    sendError(res, codec, proxyError('upstreamUnavailable', 'Agent card unavailable: the answer cannot be read'), id);
  };
  if (isEncoded(upRes.headers['content-encoding'])) {
    const encoding = headerText(upRes.headers['content-encoding']) as string;
    // Asked for identity, got a compressed answer anyway: read it before judging it, never pass it unread.
    const decoded = await decodeBody(raw, encoding, ctx.maxBodyBytes);
    if (!decoded.ok && cardAnswer) return refuseCard();
    if (!decoded.ok) return uninspectable(ctx, 'agent answer has an encoding the proxy cannot read', () => send(res, status, headers, original));
    raw = decoded.body;
    delete headers['content-encoding'];
  }
  let body: unknown;
  try {
    body = raw.length === 0 ? null : parseJsonBody(raw);
  } catch {
    if (cardAnswer) return refuseCard();
    const owned = await checkAnswer(ctx, undefined, status);
    if (res.destroyed) return;
    if (owned.type === 'refuse') return sendError(res, codec, owned.error, id);
    // Not JSON (an HTML error page, say): no A2A answer the hooks could judge. A 2xx one that task ownership
    // should have read is not passed unread either: a laxer reader (NaN, comments) could find a task in it.
    if (ctx.inspect === undefined && !ownershipRead) return send(res, status, headers, original);
    return uninspectable(ctx, 'agent answer is not JSON', () => send(res, status, headers, original));
  }
  let out = raw;
  if (cardAnswer && ctx.rewriteCard !== undefined) {
    const rewritten = rewriteCardResult(codec, body, ctx.rewriteCard);
    // An error answer (JSON-RPC: 200 with an error) carries no card; anything else that is not a card object is refused.
    if (rewritten === undefined && !isErrorAnswer(codec, id, body)) return refuseCard();
    if (rewritten !== undefined) {
      body = rewritten;
      out = Buffer.from(JSON.stringify(body), 'utf8');
      // The extended card is the caller's own: no cache may hand it to another caller.
      headers['cache-control'] = 'private, no-store';
    }
  }
  const owned = await checkAnswer(ctx, body, status);
  if (res.destroyed) return;
  if (owned.type === 'refuse') return sendError(res, codec, owned.error, id);
  if (owned.type === 'replace') {
    body = owned.body;
    out = Buffer.from(JSON.stringify(body), 'utf8');
  }
  if (ctx.inspect !== undefined) {
    const payload = codec.toPayload(id, body, ok);
    // An A2A member spelled another way (`Tasks`): what the guardian reads past, a case-insensitive caller acts on.
    // (Task ownership already refused such a result, whatever FAIL_MODE says: walked once.)
    const unread = payload === undefined ? 'agent answer is not a JSON object' : ok && !ownershipRead ? misspelledAnswer(body) : undefined;
    if (unread !== undefined || payload === undefined) {
      const err = ctx.onUninspectable(unread ?? 'agent answer is not a JSON object');
      if (err !== undefined) return sendError(res, codec, err, id);
    } else {
      // The guardian reads the proxy's serialization of the answer, never the agent's text: that text could
      // mean one thing to a last-wins reader and another to a first-match one (a member given twice).
      const payloadJson = JSON.stringify(payload);
      const run = await ctx.inspect(payload, payloadJson);
      if (res.destroyed) return;
      if (run.type === 'block') return sendError(res, codec, run.error, id);
      if (run.modified) out = Buffer.from(codec.fromPayload(run.payload, body), 'utf8');
      else out = approvedBytes(codec, payload, payloadJson, body, out, raw);
    }
  }
  if (out === raw && ownershipRead && ctx.inspect === undefined && body !== null) {
    // The caller gets what task ownership read: the agent's text could give a member twice, and a
    // first-match reader would take the one ownership did not bind or filter.
    out = sameText(raw, JSON.stringify(body));
  }
  if (out === raw) return send(res, status, headers, out);
  // Bytes the proxy wrote: none of the agent's digests or validators (send sets the length), no encoding.
  dropAgentBytes(headers);
  delete headers['content-encoding'];
  send(res, status, headers, out);
}

/** `bytes` when they already are `text` (so the agent's ETag survives the common case), else `text`'s bytes. */
function sameText(bytes: Buffer, text: string): Buffer {
  return bytes.length === Buffer.byteLength(text) && bytes.toString('utf8') === text ? bytes : Buffer.from(text, 'utf8');
}

/**
 * What the caller gets of an approved answer: exactly what the guardian judged, re-serialized (the agent's own
 * bytes when they already are that text, so ETags survive the common case).
 */
function approvedBytes(codec: Codec, payload: JsonObject, payloadJson: string, body: unknown, out: Buffer, raw: Buffer): Buffer {
  if (out === raw && raw.length === 0 && body === null) return raw;
  return sameText(out, codec.fromPayload(payload, body, payloadJson));
}

const PASS: AnswerCheck = { type: 'pass' };

/** Task ownership's check of a unary answer (PASS when the call has none). */
function checkAnswer(ctx: RelayContext, body: unknown, status: number): AnswerCheck | Promise<AnswerCheck> {
  const unary = ctx.answerHook?.unary;
  return unary === undefined ? PASS : unary(body, status >= 200 && status < 300);
}

function rewriteCardResult(codec: Codec, body: unknown, opts: RewriteOptions): unknown {
  const card = codec.resultOf(body);
  const served = isObject(card) ? cardToServe(card as CardJson, opts) : undefined;
  return served === undefined ? undefined : codec.withResult(body, served);
}

/** A 2xx answer that is an error in the binding's terms (JSON-RPC's error member). */
function isErrorAnswer(codec: Codec, id: JsonRpcId | null, body: unknown): boolean {
  const payload = codec.toPayload(id, body, true);
  return payload !== undefined && 'error' in payload && !('result' in payload);
}

/**
 * The agent's answer body as JSON, read as an SDK caller's `response.json()` reads it: UTF-8 with one
 * leading byte order mark dropped (WHATWG "UTF-8 decode"). JSON.parse alone refuses the mark, and an
 * answer the proxy could not read but the caller can would pass unjudged.
 */
function parseJsonBody(raw: Buffer): unknown {
  const bom = raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf;
  return JSON.parse(raw.toString('utf8', bom ? 3 : 0));
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
