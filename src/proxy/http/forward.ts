/**
 * Upstream I/O: keep-alive connections to the agent, kept per caller (undici's dispatcher: no
 * ClientRequest/IncomingMessage streams per call, a fraction of node:http's CPU), the agent's
 * answer handed on chunk by chunk, never buffered here (request header rules: ../headers.ts).
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Pool, buildConnector } from 'undici';
import { createPool, dispatchRaw, headerNameOf, leanBuildConnector } from '../../net/undici-pool';
import { CallerPools } from '../../net/caller-pools';
import { LARGE_BODY, sliceInTurns, type WireBytes } from '../../core/turns';
import { HOP_BY_HOP, namedByConnection, type ForwardHeaders } from '../headers';

export interface Upstream {
  readonly url: URL;
  /** Path prefix of UPSTREAM_URL, prepended to every forwarded path ('' for none). */
  readonly basePath: string;
  /** Connections to the agent, kept per caller (net/caller-pools.ts). */
  readonly pools: CallerPools;
  close(): Promise<void>;
}

/** Callers with connections of their own to the agent at once; past that, the least recently used idle one gives its place up. */
const MAX_CALLER_POOLS = 1024;

/**
 * `connect`: the TLS connector for an https upstream (UPSTREAM_CA_FILE, ...; see src/credentials/tls.ts), else undici's
 * default. `maxConnections`: connections to the agent open at once, idle ones of every caller together (the proxy's
 * bound on its callers' connections, proxy/connections.ts: one to the agent for each).
 */
export function createUpstream(url: URL, connect?: buildConnector.connector, maxConnections = 8192, onGivenUp?: (n: number) => void): Upstream {
  // Agents close idle connections after ~5 s (Node's default); idle ones are dropped a little sooner.
  // Streams may be quiet for long: no undici timeouts, callers going away abort the call.
  const make = (counted: buildConnector.connector): Pool =>
    createPool(url.origin, { connections: null, pipelining: 1, keepAliveTimeout: 4000, headersTimeout: 0, bodyTimeout: 0, connect: counted });
  const pools = new CallerPools({
    make,
    connect: connect ?? leanBuildConnector({}),
    maxPools: MAX_CALLER_POOLS,
    maxConnections,
    sweepMs: 5000,
    ...(onGivenUp === undefined ? {} : { onGivenUp }),
  });
  return {
    url,
    basePath: url.pathname.replace(/\/+$/, ''),
    pools,
    close: () => pools.destroy(),
  };
}

/**
 * Headers that state the agent's exact bytes: its length (the caller's framing of the connection)
 * and digests or validators of them. Relayed over a body the proxy writes itself (rewritten events,
 * its own error frames), a length lets an agent place bytes past the caller's message boundary: an
 * answer the caller reads as the one to its next, maybe denied, call.
 */
const AGENT_BYTES = ['content-length', 'etag', 'content-md5', 'content-digest', 'repr-digest', 'digest'] as const;

/** The agent's headers for a body the proxy writes (or may end) itself: a copy without AGENT_BYTES; node frames it (chunked). */
export function headersForOwnBody(agent: Readonly<OutgoingHttpHeaders>): OutgoingHttpHeaders {
  return dropAgentBytes({ ...agent });
}

/** headersForOwnBody on a copy the caller already made (changed in place). */
export function dropAgentBytes(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  for (const name of AGENT_BYTES) delete headers[name];
  return headers;
}

/**
 * The agent's response headers as the caller gets them, parsed once from undici's raw pairs: names
 * in lower case, repeated ones as arrays (as undici's parseHeaders), hop-by-hop ones and those the
 * Connection header names left out (RFC 9110 7.6.1).
 */
export function endToEndHeaders(raw: readonly Buffer[]): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  let named: string[] | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = headerNameOf(raw[i] as Buffer);
    const value = (raw[i + 1] as Buffer).toString('latin1');
    if (HOP_BY_HOP.has(name)) {
      // Every Connection line counts (undici keeps repeated lines apart).
      const extra = name === 'connection' ? namedByConnection(value) : undefined;
      if (extra !== undefined) (named ??= []).push(...extra);
      continue;
    }
    // Own members only: a header called "constructor" or "__proto__" is a header, not the prototype's.
    const prior = Object.hasOwn(out, name) ? out[name] : undefined;
    if (prior === undefined) {
      if (name === '__proto__') Object.defineProperty(out, name, { value, enumerable: true, configurable: true, writable: true });
      else out[name] = value;
    } else if (typeof prior === 'string') out[name] = [prior, value];
    else prior.push(value);
  }
  // Rare (a Connection header naming an end-to-end-looking header): drop those too.
  if (named !== undefined) for (const n of named) delete out[n];
  return out;
}

export interface UpstreamCall {
  readonly verb: string;
  /** Path and query as received; the upstream base path is prepended. */
  readonly path: string;
  readonly headers: Readonly<ForwardHeaders>;
  readonly body: WireBytes | null;
  /** Whose connections carry it (the caller's key: proxy/callers.ts); undefined: the shared pool. */
  readonly caller?: string | undefined;
}

/** Where an answer's body goes: chunks in order, then one end (complete = the whole body arrived). */
export interface AnswerSink {
  data(chunk: Buffer): void;
  end(complete: boolean): void;
}

/**
 * The agent's answer: status and headers at once, the body to one sink. Chunks that arrive before
 * a sink is attached are kept until it is; `pause`/`resume` are the backpressure.
 */
export class UpstreamAnswer {
  private sink: AnswerSink | undefined;
  private early: Buffer[] | undefined;
  /** Read by the dispatcher after each chunk: true holds the agent's body until resume(). */
  paused = false;
  private ended: boolean | undefined;
  /** The whole body arrived. */
  complete = false;
  /** performance.now() when the answer ended (complete or not), for timing; a number, not a listener, so nothing is kept alive. */
  endedAt: number | undefined;

  constructor(
    readonly statusCode: number,
    /** End-to-end headers only (endToEndHeaders): relayed as they are; copy before changing them. */
    readonly headers: IncomingHttpHeaders,
    /** undici's resume of this response's body. */
    private readonly resumeBody: () => void,
  ) {}

  /** The whole answer arrived (undefined while it is still coming). */
  get endedComplete(): boolean | undefined {
    return this.ended;
  }

  read(sink: AnswerSink): void {
    this.sink = sink;
    const early = this.early;
    this.early = undefined;
    if (early !== undefined) for (const c of early) sink.data(c);
    if (this.ended !== undefined) sink.end(this.ended);
  }

  /** Read and drop the body (nothing will use it). */
  discard(): void {
    this.read({ data: () => undefined, end: () => undefined });
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.resumeBody();
  }

  /** @internal from the dispatcher */
  push(chunk: Buffer): void {
    if (this.sink !== undefined) this.sink.data(chunk);
    else (this.early ??= []).push(chunk);
  }

  /** @internal from the dispatcher */
  finish(complete: boolean): void {
    if (this.ended !== undefined) return;
    this.ended = complete;
    this.endedAt = performance.now();
    this.sink?.end(complete);
  }
}

/** A call in flight: `abort()` stops it before or during the answer (no-op once it is over). */
export interface UpstreamHandle {
  abort(): void;
}

class UpstreamAborted extends Error {
  readonly code = 'ABORTED';
}

const noBody = Buffer.alloc(0);
/** undici's rule for header values (lib/core/util.js). */
const INVALID_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * Send one request upstream. Exactly one of `onResponse` / `onError` fires, unless the call was
 * aborted first. After `onResponse`, failures end the answer's body with complete = false.
 */
export function callUpstream(up: Upstream, call: UpstreamCall, onResponse: (answer: UpstreamAnswer) => void, onError: (err: Error) => void): UpstreamHandle {
  let abort: ((err: Error) => void) | undefined;
  let answer: UpstreamAnswer | undefined;
  let over = false;
  // Checked in place: the object goes to undici as it is (no second copy per call).
  const headers = call.headers;
  let badHeader: string | undefined;
  for (const k in headers) {
    const v = headers[k] as string | string[];
    if (typeof v === 'string' ? INVALID_HEADER_VALUE.test(v) : v.some((x) => INVALID_HEADER_VALUE.test(x))) {
      badHeader = k;
      break;
    }
  }
  const handle: UpstreamHandle = {
    abort: () => {
      if (over) return;
      over = true;
      abort?.(new UpstreamAborted('caller went away'));
      answer?.finish(false);
    },
  };
  // What undici would refuse is refused here, before dispatch: a refusal inside the pool strands a
  // connection per call. It sends origin-form (or absolute-form) targets only (OPTIONS * has no A2A
  // meaning here) and header values without control characters or code points above 0xff.
  const refusal =
    call.path.charCodeAt(0) !== 47 /* / */ && !/^https?:\/\//i.test(call.path)
      ? `request target not forwarded: ${call.path.slice(0, 32)}`
      : badHeader === undefined
        ? undefined
        : `header value not forwardable: ${badHeader.slice(0, 64)}`;
  if (refusal !== undefined) {
    over = true;
    queueMicrotask(() => onError(Object.assign(new Error(refusal), { code: 'ERR_NOT_FORWARDABLE' })));
    return handle;
  }
  try {
    // undici's own handler interface (undici-pool.ts): no wrapper objects, no trailers parsed.
    dispatchRaw(
      up.pools.for(call.caller),
      {
        path: up.basePath + call.path,
        method: call.verb,
        headers,
        body:
          call.body === null
            ? call.verb === 'GET' || call.verb === 'HEAD'
              ? null
              : noBody
            : Buffer.isBuffer(call.body) && call.body.length < LARGE_BODY
              ? call.body
              : Readable.from(sliceInTurns(call.body), { objectMode: false }),
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      {
        onConnect: (a) => {
          abort = a;
          if (over) a(new UpstreamAborted('caller went away'));
        },
        onHeaders: (statusCode, rawHeaders, resume) => {
          if (over) return true;
          // Informational answers (102, 103) are not the answer, as with node:http; below 100 is no HTTP status.
          if (statusCode < 100) {
            abort?.(Object.assign(new Error(`invalid HTTP status ${statusCode} from the agent`), { code: 'ERR_STATUS' }));
            return true;
          }
          if (statusCode < 200) return true;
          const a = new UpstreamAnswer(statusCode, endToEndHeaders(rawHeaders), resume);
          answer = a;
          onResponse(a);
          return !a.paused;
        },
        onData: (chunk) => {
          if (answer === undefined) return true;
          answer.push(chunk);
          return !answer.paused;
        },
        onComplete: () => {
          over = true;
          answer?.finish(true);
        },
        onError: (err) => {
          if (answer !== undefined) return answer.finish(false);
          if (over) return;
          over = true;
          onError(err);
        },
      },
    );
  } catch (err) {
    // A request undici refuses to send (an invalid path or method): the same as an unreachable agent.
    over = true;
    queueMicrotask(() => onError(err as Error));
  }
  return handle;
}

/** When the caller goes away before the answer is complete, stop the upstream work too. */
export function abortOnClientClose(res: ServerResponse, call: UpstreamHandle): void {
  res.once('close', () => {
    if (!res.writableFinished) call.abort();
  });
}
