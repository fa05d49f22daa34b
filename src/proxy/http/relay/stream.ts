/**
 * An SSE answer through the response hooks, pipelined: the agent's stream is parsed event by event,
 * up to STREAM_INSPECT_WINDOW events are judged by the guardian at once, and each leaves for the
 * caller in stream order once its own decision is known. The order and the judging are the relay
 * core's (relay-core.ts, window.ts); this module is the framing: parse events, write them, end with an error event.
 */
import type { SseEvent } from '../../../a2a/sse';
import { SseParser, formatSseEvent } from '../../../a2a/sse';
import { proxyError, type ProxyError } from '../../../core/errors';
import { headersForOwnBody } from '../forward';
import { answerRoad, type RelayContext } from './context';
import { isObject } from '../../../core/json';
import { answerFlow, STREAM_ANSWER, type AnswerFlow, type AnswerRoad } from '../../answers';
import { STREAM_WINDOW_MAX_BYTES, type Verdict } from '../../window';
import { answerWindow, type AnswerChannel, type Decoded } from '../../relay-core';

/** Default number of events judged at once per stream (STREAM_INSPECT_WINDOW). */
export const DEFAULT_STREAM_WINDOW = 16;

const SHUTDOWN = () => proxyError('upstreamUnavailable', 'Proxy is shutting down');

type Inspect = NonNullable<RelayContext['inspect']>;

/** What a block without data becomes: a bare comment, which keeps an idle connection alive and nothing else. */
const KEEP_ALIVE = Buffer.from(':\n\n', 'latin1');
/** What a block of blank lines alone becomes: nothing (as a keep-alive each stray line end would be three bytes). */
const NOTHING = Buffer.alloc(0);

function onlyLineEnds(raw: Buffer): boolean {
  for (let i = 0; i < raw.length; i++) if (raw[i] !== 0x0a && raw[i] !== 0x0d) return false;
  return true;
}

/**
 * The SSE answer channel (relay-core.ts): a data event goes through the answer stages (answers.ts:
 * task ownership when the call has it, the response hooks when inspection is on). The caller gets only
 * bytes the proxy wrote: a block without data (comments, `retry:`, `id:` or `event:` alone, lines the
 * WHATWG rules ignore) leaves as a bare keep-alive, never as the agent's text. A laxer parser (one that
 * splits lines at U+2028 or reads `DATA:` or `data :`) could find an event in that text that the proxy never read.
 */
function eventChannel(ctx: RelayContext, road: AnswerRoad): AnswerChannel<SseEvent, Buffer> {
  return {
    stages: STREAM_ANSWER,
    decode: (ev) => decodeEvent(ctx, road, ev),
    encode: ({ flow }, ev) => verdict(ctx, flow, ev),
    refused: (err) => ctx.codec.streamError(err, ctx.id).frame,
  };
}

function decodeEvent(ctx: RelayContext, road: AnswerRoad, ev: SseEvent): Decoded | Verdict {
  if (ev.commentOnly || !ev.hasData) return { pass: onlyLineEnds(ev.raw) ? NOTHING : KEEP_ALIVE };
  // `data:` with nothing after it: WHATWG clients dispatch no event, the SDK's parser neither.
  if (ev.data === '') return { pass: KEEP_ALIVE };
  let data: unknown;
  let unread: string | undefined;
  try {
    // The event's data is already text (the SSE parser decoded it): parsed as a caller's JSON.parse reads it.
    data = JSON.parse(ev.data);
  } catch {
    // Neither task ownership nor the hooks can read it; a laxer JSON reader (NaN, comments) might.
    unread = 'SSE event data is not JSON';
  }
  // Task ownership binds the tasks an event names whatever its name (JSON-RPC clients read an
  // `event: error` event's data as any other's); the hooks are told it is an error.
  const errorEvent = ev.event === 'error';
  const failed = errorEvent || (isObject(data) && 'error' in data && !('result' in data));
  return { flow: answerFlow(road, ctx.ex, ctx.codec, ctx.id, !failed, data, unread, errorEvent) };
}

/**
 * What leaves for a data event: the error that ends the stream, the event as parsed (passed
 * unjudged), or the proxy's serialization of what task ownership read and the guardian judged (a
 * modify replaces this event's data only; an error event stays one). Never the agent's text, which
 * could mean one thing to a last-wins reader and another to a first-match one.
 */
function verdict(ctx: RelayContext, flow: AnswerFlow, ev: SseEvent): Verdict {
  const { end, judged } = flow;
  if (end?.type === 'refuse') return { stop: ctx.codec.streamError(end.error, ctx.id).frame };
  if (end !== undefined) return { pass: asParsed(ev) };
  const out =
    judged === undefined
      ? JSON.stringify(flow.body)
      : judged.modified
        ? ctx.codec.fromPayload(judged.payload, flow.body)
        : ctx.codec.fromPayload(judged.payload, flow.body, judged.payloadJson);
  return { pass: formatSseEvent({ data: noLineSeparators(out), ...fieldsOf(ev) }) };
}

/**
 * A data event as the proxy parsed it, written by the proxy (what passes unjudged is still what the
 * proxy read), line separators escaped as in judged data: a splitlines reader finds no event inside.
 */
function asParsed(ev: SseEvent): Buffer {
  return formatSseEvent({ data: noLineSeparators(ev.data), ...fieldsOf(ev) });
}

const SEPARATORS = /[\u0085\u2028\u2029]/g;

/**
 * JSON text with NEL, U+2028 and U+2029 escaped (`\u2028`: the same JSON value; in data passed unread
 * under FAIL_MODE=open, six characters). JSON.stringify leaves them raw in strings, and a reader that
 * splits lines as Python's str.splitlines does would cut the event there. Only text with one is copied.
 */
function noLineSeparators(json: string): string {
  SEPARATORS.lastIndex = 0;
  return SEPARATORS.test(json) ? json.replace(SEPARATORS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : json;
}

const ERROR_EVENT = { event: 'error' } as const;
const MESSAGE_EVENT = {} as const;

/**
 * The fields an event leaves with besides its data: `event: error` when it is an error event (SDK
 * clients read its data as an error, and the guardian was told so), nothing else. Other names and
 * `id:` values are the agent's text that the guardian never judged; A2A gives them no meaning.
 */
function fieldsOf(ev: SseEvent): { readonly event?: 'error' } {
  return ev.event === 'error' ? ERROR_EVENT : MESSAGE_EVENT;
}

export function relayStreamInspected(ctx: RelayContext, inspect: Inspect | undefined): void {
  const { res, upRes, codec, id, ex } = ctx;
  // Stream events use their own guardian connections: a call's checks never wait behind them.
  const road = answerRoad(ctx, 'SSE event data is not a JSON object', 'stream', ex === undefined ? undefined : () => ex.log.events++);
  const errorEvent = (err: ProxyError): Buffer => codec.streamError(err, id).frame;
  // Every event leaves as the proxy wrote it: the agent's length would frame the caller's connection wrongly.
  res.writeHead(upRes.statusCode, headersForOwnBody(upRes.headers));
  res.flushHeaders();

  let waitingForDrain = false;
  const onDrain = () => {
    waitingForDrain = false;
    window.drained();
  };
  // Events released together (a burst whose decisions came back in one turn) leave in one socket
  // write at the end of this turn, not one each: nothing waits for a later turn.
  // Always uncorked before the response ends: Node 24's end() writes the chunked terminator ahead of
  // what cork() still holds, and the caller would lose the turn's last events (or the error frame).
  let corked = false;
  const uncork = () => {
    if (!corked) return;
    corked = false;
    res.uncork();
  };
  // Guardian places (streamLine) are shared only by events that go to the guardian.
  const window = answerWindow(
    eventChannel(ctx, road),
    ctx.turns,
    ctx.ex,
    {
      bytes: (ev) => ev.raw.length,
      write: (bytes) => {
        if (res.destroyed || res.writableEnded) return true;
        if (!corked) {
          corked = true;
          res.cork();
          process.nextTick(uncork);
        }
        const ok = res.write(bytes);
        // One 'drain' listener at a time, however many events wait behind it.
        if (!ok && !waitingForDrain) {
          waitingForDrain = true;
          res.once('drain', onDrain);
        }
        return ok;
      },
      end: (frame) => {
        uncork();
        if (res.destroyed || res.writableEnded) return;
        if (frame === undefined) res.end();
        else res.end(frame);
      },
      flow: (reading) => (reading ? upRes.resume() : upRes.pause()),
      abort: () => {
        ctx.upReq.abort();
        // The exchange is over: guardian calls still in flight for later events are cancelled.
        ctx.ex?.call.caller.cancel();
      },
      failure: () => errorEvent(proxyError('guardianUnavailable', 'Stream inspection failed')),
    },
    {
      size: ctx.streamWindow ?? DEFAULT_STREAM_WINDOW,
      maxBytes: STREAM_WINDOW_MAX_BYTES,
      line: inspect === undefined ? undefined : ctx.streamLine,
      // Events held for judging count against the in-flight budget: many streams cannot grow memory without bound.
      budget: { take: (n) => ctx.lease.take(n), give: (n) => ctx.lease.give(n), refused: () => errorEvent(proxyError('overloaded')) },
    },
  );

  const parser = new SseParser();
  upRes.read({
    data: (chunk) => {
      try {
        window.push(parser.push(chunk));
      } catch (err) {
        // An event too large to inspect is never passed unread: the events before it go out, then the stream ends in an error.
        window.push((err as { events?: SseEvent[] }).events ?? []);
        window.upstreamEnded(() => errorEvent(proxyError('upstreamUnavailable', 'Agent sent an SSE event too large to inspect')));
        ctx.upReq.abort();
      }
    },
    end: (complete) => {
      // A caller that left is not an agent failure.
      if (res.destroyed) return;
      if (!complete) {
        return window.upstreamEnded(() => {
          ctx.onUpstreamFailure('upstream closed mid-stream');
          return errorEvent(proxyError('upstreamUnavailable', 'Upstream agent failed mid-stream'));
        });
      }
      try {
        window.push(parser.end());
      } catch {
        /* a malformed tail is dropped, as a WHATWG client would */
      }
      window.upstreamEnded();
    },
  });
  const untrack = ctx.trackStream(() => window.stop(errorEvent(SHUTDOWN())));
  res.once('close', () => {
    untrack();
    res.removeListener('drain', onDrain);
    if (!res.writableFinished) window.close();
  });
}
