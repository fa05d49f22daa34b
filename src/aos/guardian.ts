/**
 * Guardian clients. `HttpGuardian` speaks AOS JSON-RPC over HTTP POST with keep-alive connections
 * (undici's dispatcher: a fraction of node:http's per-call CPU), a bounded time budget per call,
 * one retry on connection failure inside that budget, and a circuit breaker so a dead guardian
 * costs a fast "unavailable" rather than a timeout per request.
 *
 * The breaker measures the guardian, not what callers send it: connection failures, 5xx and answers
 * that are not valid AOS count against it; a call that times out does not by itself (a large or
 * slow-to-judge payload takes long on a healthy guardian, and any caller can send one). A timeout
 * sends an AOS ping on a connection of its own; only when that ping gets no answer either does the
 * breaker open.
 *
 * An answer of LARGE_BODY (256 KiB) or more (a 9 MiB modify) is read a piece per turn of the event loop
 * (interpretInTurns), and a large envelope is sent a slice per turn: no task holds the loop for the whole of it.
 *
 * Two connection budgets: the checks of each call (request hooks, unary answers) and the checks of
 * stream events. A stream can ask for thousands of decisions; a call never waits for a connection
 * behind them, whatever the streams do. (The stream relay lets at most as many stream events go to
 * the guardian at once as the stream budget has connections: see proxy/window.ts.)
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Dispatcher, Pool } from 'undici';
import type { GuardianOutcome, GuardianFailureKind } from './outcome';
import type { Cancellation } from '../core/cancel';
import { BoundedBytes } from '../core/bounded';
import type { Envelope, JsonRpcId } from './schemas';
import { lazySlices, type EnvelopeBytes } from './envelope';
import { guardianSuccess, pingAnswer } from './answer';
import { duplicateKey, duplicateKeyInPieces } from './duplicate-keys';
import { TOO_COMPLEX } from './outcome';
import { createPool, dispatchRaw } from '../net/undici-pool';
import { monotonicMs } from '../core/clock';
import type { Leaving } from '../core/fair-queue';
import { LARGE_BODY, inTurns, nextTurn, readInTurns, sliceInTurns } from '../core/turns';
import { parseJsonInPieces, type LongString, type PieceSizes } from '../core/json-pieces';
import { stringifyInPieces } from '../core/json-canonical';
import { isUtf8 } from 'node:buffer';

/** Whose connections a guardian call uses: a call's own checks, or a stream's events. */
export type GuardianBudget = 'call' | 'stream';

/** W3C trace context sent with a guardian call, so its decision joins the caller's trace. */
export interface TraceContext {
  readonly traceparent: string;
  readonly tracestate?: string | undefined;
}

export interface Guardian {
  /**
   * Ask for a decision. `body` is what goes on the wire: the envelope's JSON text, or its bytes in
   * order (envelopeBytes: a large payload is sent from its own buffer, never copied once more). `callerKey` names
   * the proxy's caller (proxy/callers.ts), for a guardian that shares its own work between callers.
   */
  decide(
    envelope: Envelope,
    body: string | EnvelopeBytes,
    caller?: Cancellation,
    trace?: TraceContext,
    budget?: GuardianBudget,
    callerKey?: string,
  ): Promise<GuardianOutcome>;
  /** AOS ping (spec 4.7). */
  ping(timeoutMs?: number): Promise<boolean>;
  /** Calls waiting for a connection now, per budget (none for an in-process guardian). */
  queued?(): Record<GuardianBudget, number>;
  close(): void;
  /** Human-readable description for logs (never includes the token). */
  readonly describe: string;
  /** The circuit breaker's state (guardians without one are always 'closed'). */
  breakerState?(): 'closed' | 'open' | 'half_open';
  /**
   * The proxy's turns per caller (core/turns.ts largeTurn), for a guardian that reads large answers on the proxy's
   * thread: each piece then waits for its caller's turn, so one caller's large answers take one piece per round.
   */
  shareTurns?(turn: CallerTurn): void;
}

/** A turn of the event loop in `callerKey`'s round-robin order; resolves early when `caller` leaves. */
export type CallerTurn = (callerKey: string, caller: Leaving) => Promise<void>;

export interface HttpGuardianOptions {
  readonly url: URL;
  readonly token?: string | undefined;
  readonly timeoutMs: number;
  /** Consecutive transport failures that open the breaker. */
  readonly breakerThreshold?: number;
  /** How long the breaker stays open before one trial call. */
  readonly breakerCooldownMs?: number;
  /** TLS towards the guardian (GUARDIAN_CA_FILE, ...; see src/credentials/tls.ts); undici's default when unset. */
  readonly connect?: Pool.Options['connect'];
  /** Connections for the checks of calls: request hooks, unary answers; default 256. */
  readonly callConnections?: number;
  /** Connections for stream-event checks; default 256. */
  readonly streamConnections?: number;
  /** Where connection failures are reported with their cause (a certificate problem, say), once per cause and interval. */
  readonly logger?: Logger;
  /** Explains a connection failure (src/credentials/tls.ts describeConnectError). */
  readonly describeFailure?: (err: unknown) => { code: string; cause: string; hint?: string };
  /** Called by close() (file watchers of the token and TLS files). */
  readonly onClose?: () => void;
}

interface RawReply {
  readonly status: number;
  readonly body: string;
}

/** An answer as it came: its bytes (decoded at once when small, read in turns when large). */
export interface ReplyBytes {
  readonly status: number;
  readonly bytes: Buffer;
}

/** Connections of the pings (readiness and the breaker's probes): never queued behind calls. */
const PING_CONNECTIONS = 2;

class TransportError extends Error {
  constructor(
    readonly kind: GuardianFailureKind,
    message: string,
    readonly socketError?: unknown,
    /** Raised while a large answer was read in turns (after the guardian had answered). */
    readonly reading = false,
  ) {
    super(message);
  }
}

/**
 * The turn between two pieces of a large answer's reading: the call's time budget (GUARDIAN_TIMEOUT_MS) covers the
 * reading too, and a call answered meanwhile (out of time, caller gone) stops reading here.
 */
export function readingTurn(deadline: number, timeoutMs: number, caller: Cancellation | undefined, wait: () => Promise<void> = nextTurn): () => Promise<void> {
  const check = (): void => {
    if (caller?.cancelled === true) throw new TransportError('cancelled', 'caller went away', undefined, true);
    if (monotonicMs() >= deadline) throw new TransportError('timeout', `guardian answer not read within ${timeoutMs} ms`, undefined, true);
  };
  return async () => {
    check();
    await wait();
    check();
  };
}

// UND_ERR_SOCKET: a kept-alive connection the guardian had closed (only retried before any answer began).
const RETRYABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

export class HttpGuardian implements Guardian {
  private readonly pools: Record<GuardianBudget, Pool>;
  private readonly pingPool: Pool;
  private readonly origin: string;
  private readonly path: string;
  private headers: string[];
  private lastFailureLog: { code: string; at: number } | undefined;
  private consecutiveFailures = 0;
  private openUntil = 0;
  /** Half-open: after the cooldown exactly one trial call is let through; the rest fail fast until it ends. */
  private trialInFlight = false;
  /** The ping a timed-out call sent, while it runs (timeouts meanwhile wait for the same one). */
  private probing: Promise<boolean> | undefined;
  readonly describe: string;

  private callerTurn: CallerTurn | undefined;

  constructor(private readonly opts: HttpGuardianOptions) {
    this.origin = opts.url.origin;
    this.path = `${opts.url.pathname}${opts.url.search}`;
    // Keep-alive connections; our own deadline bounds each call, so undici's timeouts are off.
    const pool = (connections: number) =>
      createPool(this.origin, {
        connections,
        pipelining: 1,
        keepAliveTimeout: 4000,
        headersTimeout: 0,
        bodyTimeout: 0,
        ...(opts.connect === undefined ? {} : { connect: opts.connect }),
      });
    this.pools = { call: pool(opts.callConnections ?? 256), stream: pool(opts.streamConnections ?? 256) };
    this.pingPool = pool(PING_CONNECTIONS);
    this.headers = HttpGuardian.headersFor(opts.token);
    this.describe = `${opts.url.origin}${opts.url.pathname}`;
  }

  private static headersFor(token: string | undefined): string[] {
    const h = ['content-type', 'application/json', 'accept', 'application/json'];
    if (token !== undefined) h.push('authorization', `Bearer ${token}`);
    return h;
  }

  /** A new bearer token (GUARDIAN_TOKEN_FILE changed): used from the next call on. */
  shareTurns(turn: CallerTurn): void {
    this.callerTurn = turn;
  }

  /** The wait between two pieces of a large answer: its caller's fair turn when the proxy shares them, else the next turn. */
  private turnOf(callerKey: string | undefined, caller: Cancellation | undefined): () => Promise<void> {
    const turn = this.callerTurn;
    if (turn === undefined || callerKey === undefined || caller === undefined) return nextTurn;
    return () => turn(callerKey, caller);
  }

  setToken(token: string | undefined): void {
    this.headers = HttpGuardian.headersFor(token);
  }

  /** Connection failures are logged with their cause; the same cause at most every 30 s. */
  private reportFailure(err: unknown): void {
    const { logger, describeFailure } = this.opts;
    if (logger === undefined) return;
    const d = describeFailure?.(err) ?? { code: (err as NodeJS.ErrnoException).code ?? 'error', cause: (err as Error).message };
    const now = monotonicMs();
    if (this.lastFailureLog !== undefined && this.lastFailureLog.code === d.code && now - this.lastFailureLog.at < 30_000) return;
    this.lastFailureLog = { code: d.code, at: now };
    logger.warn({ guardian: this.describe, ...d }, 'guardian connection failed');
  }

  breakerState(): 'closed' | 'open' | 'half_open' {
    if (this.openUntil === 0) return 'closed';
    return monotonicMs() < this.openUntil ? 'open' : 'half_open';
  }

  async decide(
    envelope: Envelope,
    body: string | EnvelopeBytes,
    caller?: Cancellation,
    trace?: TraceContext,
    budget: GuardianBudget = 'call',
    callerKey?: string,
  ): Promise<GuardianOutcome> {
    const now = monotonicMs();
    const halfOpen = this.openUntil !== 0;
    if (now < this.openUntil || (halfOpen && this.trialInFlight)) return { ok: false, kind: 'breakerOpen', detail: 'guardian circuit breaker is open' };
    if (halfOpen) this.trialInFlight = true;
    const deadline = now + this.opts.timeoutMs;
    let reply: ReplyBytes;
    let outcome: GuardianOutcome;
    try {
      reply = await this.post(
        this.pools[budget],
        body,
        deadline,
        caller,
        trace === undefined ? this.headers : this.withTrace(trace),
        1,
        this.turnOf(callerKey, caller),
      );
      outcome =
        reply.bytes.length < LARGE_BODY
          ? interpret({ status: reply.status, body: reply.bytes.toString('utf8') }, envelope.id)
          : await interpretInTurns(reply, envelope.id, readingTurn(deadline, this.opts.timeoutMs, caller, this.turnOf(callerKey, caller))).catch(
              (err: unknown) => {
                if (err instanceof TransportError) throw err;
                throw new TransportError('internal', `guardian answer could not be read: ${(err as Error).message}`, undefined, true);
              },
            );
    } catch (err) {
      const e = err instanceof TransportError ? err : new TransportError('connect', (err as Error).message, err);
      if (e.reading) {
        // The guardian answered; the time went to reading its answer here: neither for nor against its health.
        if (halfOpen) this.trialInFlight = false;
        // An answer that came in time and could not be read in time is denied, never "no answer": FAIL_MODE=open
        // would pass the original of a modify or a deny a caller made slow to read (as the embedded guardian does).
        return e.kind === 'timeout' ? TOO_COMPLEX(e.message) : { ok: false, kind: e.kind, detail: e.message };
      }
      if (e.kind === 'connect') this.reportFailure(e.socketError ?? e);
      if (e.kind === 'timeout') {
        // The payload may be what took long: a ping decides (a trial stays in flight until it has).
        this.probe(halfOpen);
        return { ok: false, kind: e.kind, detail: e.message };
      }
      if (halfOpen) this.trialInFlight = false;
      // A caller that went away says nothing about the guardian's health.
      if (e.kind === 'cancelled') return { ok: false, kind: 'cancelled', detail: e.message };
      this.noteFailure(e.kind);
      return { ok: false, kind: e.kind, detail: e.message };
    }
    if (unhealthy(reply, outcome)) {
      if (halfOpen) this.trialInFlight = false;
      this.noteFailure(outcome.ok ? 'http' : outcome.kind);
    } else {
      this.noteHealthy();
    }
    return outcome;
  }

  async ping(timeoutMs = this.opts.timeoutMs): Promise<boolean> {
    const id = randomUUID();
    try {
      const reply = await this.post(this.pingPool, HttpGuardian.pingBody(id, timeoutMs), monotonicMs() + timeoutMs, undefined);
      if (reply.status < 200 || reply.status >= 300) return false;
      const answer = pingAnswer(JSON.parse(reply.bytes.toString('utf8')));
      return answer !== undefined && answer.id === id && answer.status === 'connected';
    } catch (err) {
      if (err instanceof TransportError && err.kind === 'connect') this.reportFailure(err.socketError ?? err);
      return false;
    }
  }

  private static pingBody(id: string, timeoutMs: number): string {
    return JSON.stringify({ jsonrpc: '2.0', id, method: 'ping', params: { timestamp: new Date().toISOString(), timeout: timeoutMs } });
  }

  /**
   * After a timed-out call: does the guardian answer a ping within the time budget? Any answer below
   * 500 counts (a guardian without `ping` answers it with an error, quickly): the question is whether
   * it responds, not what it says. A failed ping opens the breaker; a trial call's ping closes it.
   */
  private probe(trial: boolean): void {
    const running = (this.probing ??= this.post(
      this.pingPool,
      HttpGuardian.pingBody(randomUUID(), this.opts.timeoutMs),
      monotonicMs() + this.opts.timeoutMs,
      undefined,
    )
      .then(
        (reply) => reply.status < 500,
        () => false,
      )
      .finally(() => {
        this.probing = undefined;
      }));
    void running.then((up) => {
      if (up) {
        if (trial) this.noteHealthy();
        return;
      }
      this.open('a call timed out and a ping got no answer either');
    });
  }

  queued(): Record<GuardianBudget, number> {
    return { call: this.pools.call.stats.queued, stream: this.pools.stream.stats.queued };
  }

  close(): void {
    for (const p of [this.pools.call, this.pools.stream, this.pingPool]) p.destroy().catch(() => undefined);
    this.opts.onClose?.();
  }

  private withTrace(trace: TraceContext): string[] {
    const h = [...this.headers, 'traceparent', trace.traceparent];
    if (trace.tracestate !== undefined && trace.tracestate !== '') h.push('tracestate', trace.tracestate);
    return h;
  }

  private noteHealthy(): void {
    this.consecutiveFailures = 0;
    this.openUntil = 0;
    this.trialInFlight = false;
  }

  private noteFailure(kind: string): void {
    this.consecutiveFailures++;
    if (this.consecutiveFailures >= (this.opts.breakerThreshold ?? 5)) this.open(`${this.consecutiveFailures} failed calls in a row (last: ${kind})`);
  }

  private open(why: string): void {
    // Said once per outage: a failed half-open trial re-opens it quietly.
    if (this.openUntil === 0)
      this.opts.logger?.warn(
        { guardian: this.describe, why, cooldownMs: this.opts.breakerCooldownMs ?? 2000 },
        'guardian circuit breaker open: calls fail fast until a trial call succeeds',
      );
    this.openUntil = monotonicMs() + (this.opts.breakerCooldownMs ?? 2000);
    this.trialInFlight = false;
    // Half-open: after the cooldown one call goes through; its failure re-opens the breaker at once.
    this.consecutiveFailures = (this.opts.breakerThreshold ?? 5) - 1;
  }

  /**
   * Text or one small buffer as is; several buffers, or a large one, go out one after the other under their total
   * content-length, in slices of at most LARGE_BODY (views of a buffer, no copy; a payload made as it is written, as
   * made) a turn of the event loop apart: one write of 9 MiB copied megabytes into the kernel in one task (and so did
   * slices written back to back while the socket took them). Each attempt iterates afresh.
   */
  private static wire(headers: string[], body: string | EnvelopeBytes): { headers: string[]; body: Dispatcher.DispatchOptions['body'] } {
    if (typeof body === 'string') return { headers, body };
    if (body.length < LARGE_BODY && body.chunks.length === 1) return { headers, body: body.chunks[0] as Buffer };
    const slices = {
      async *[Symbol.asyncIterator]() {
        // A turn between two slices of a large part, none between the small parts around it (its head and tail).
        const lazy = lazySlices(body);
        if (lazy !== undefined) yield* inTurns(lazy);
        else for (const chunk of body.chunks) yield* sliceInTurns(chunk);
      },
    };
    // undici sends any (async) iterable body (docs/api/Dispatcher.md, "body"); its DispatchOptions type does not list it.
    return { headers: [...headers, 'content-length', String(body.length)], body: slices as unknown as Dispatcher.DispatchOptions['body'] };
  }

  /**
   * One guardian call: a single promise however many attempts it takes. `retries` more attempts go out
   * after a failure where the guardian cannot have started to answer (a stale keep-alive socket, a
   * guardian restarting), while the time budget and the caller allow.
   */
  private post(
    pool: Pool,
    body: string | EnvelopeBytes,
    deadline: number,
    caller: Cancellation | undefined,
    headers: string[] = this.headers,
    retries = 0,
    turn: () => Promise<void> = nextTurn,
  ): Promise<ReplyBytes> {
    return new Promise<ReplyBytes>((resolve, reject) => {
      const remaining = deadline - monotonicMs();
      if (remaining <= 0) return reject(new TransportError('timeout', 'guardian time budget exhausted'));
      let settled = false;
      let abort: ((err: Error) => void) | undefined;
      let offCancel: (() => void) | undefined;
      let attemptsLeft = retries;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        offCancel?.();
        fn();
      };
      /** End the call from this side (timeout, caller gone, answer too large) and drop the request. */
      const stop = (e: TransportError) => {
        finish(() => reject(e));
        abort?.(e);
      };
      /** The answer waited for its caller's turns while it was read: a budget that ends after it is the reading's, not the guardian's. */
      let waitedForTurns = false;
      // Timers run before the loop polls for I/O: after a task that held the loop past the deadline (other callers'
      // work), an answer that came in time still waits in the socket. It is read (the poll comes before setImmediate)
      // before the call is said to have none: FAIL_MODE=open would pass what the guardian denied in time.
      const timer = setTimeout(
        () =>
          setImmediate(() => {
            if (!settled) stop(new TransportError('timeout', `no guardian answer within ${this.opts.timeoutMs} ms`, undefined, waitedForTurns));
          }),
        remaining,
      );
      if (caller !== undefined) offCancel = caller.onCancel(() => stop(new TransportError('cancelled', 'caller went away')));
      const wire = HttpGuardian.wire(headers, body);
      const send = (): void => {
        if (settled) return;
        let answered = false;
        let status = 0;
        // A guardian answer is small; an endless body is a fault, not something to buffer.
        const answer = new BoundedBytes(MAX_ANSWER_BYTES);
        // A large answer (a modify of a large payload) is read in its caller's turns (core/turns.ts readInTurns).
        let paused = false;
        let resumeAnswer = (): void => undefined;
        const resume = (): void => {
          paused = false;
          resumeAnswer();
        };
        const pause = (): void => {
          paused = true;
          waitedForTurns = true;
        };
        const paced = readInTurns({ pause, resume }, turn, () => settled);
        abort = undefined;
        try {
          // undici's own handler interface: the guardian's response headers are never parsed (undici-pool.ts).
          dispatchRaw(
            pool,
            { origin: this.origin, path: this.path, method: 'POST', headers: wire.headers, body: wire.body, headersTimeout: 0, bodyTimeout: 0 },
            {
              onConnect: (a) => {
                abort = a;
                // Stopped while queued for a connection: never send it.
                if (settled) a(new TransportError('cancelled', 'call already ended'));
              },
              onHeaders: (statusCode, _headers, resumeBody) => {
                answered = true;
                status = statusCode;
                resumeAnswer = resumeBody;
                return true;
              },
              onData: (chunk) => {
                if (!answer.push(chunk)) stop(new TransportError('http', 'guardian answer too large'));
                paced.chunk(chunk.length);
                return !paused;
              },
              onComplete: () => finish(() => resolve({ status, bytes: answer.buffer() })),
              onError: (err: NodeJS.ErrnoException) => {
                if (err instanceof TransportError) return finish(() => reject(err));
                // Retry only failures where the guardian cannot have started to answer.
                const retryable = !answered && RETRYABLE_CODES.has(err.code ?? 'error');
                if (retryable && attemptsLeft > 0 && !settled && monotonicMs() < deadline - 1 && caller?.cancelled !== true) {
                  attemptsLeft--;
                  // After undici has finished with the failed connection (this callback runs inside its cleanup).
                  return queueMicrotask(send);
                }
                finish(() => reject(new TransportError('connect', describeError(err), err)));
              },
            },
          );
        } catch (err) {
          // A request undici refuses outright (it throws before any callback).
          finish(() => reject(err));
        }
      };
      send();
    });
  }
}

/**
 * An error as one line an operator can act on: its code and message, and the causes behind it
 * (a TLS handshake failure arrives as a socket error whose cause names the certificate problem).
 */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 4; depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    const text = code !== undefined && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
    if (!parts.includes(text)) parts.push(text);
    e = (e as Error & { cause?: unknown }).cause;
  }
  return parts.length === 0 ? String(err) : parts.join(' <- ');
}

/**
 * The AOS zod schemas, for answers the hand-written checks of answer.ts reject: loaded (with zod) at
 * the first such answer, not at start (zod and the schemas: ~10 ms of CPU and ~0.5 MB allocated
 * before the first served call, in-process marks on the bench machine).
 */
function schemas(): typeof import('./schemas') {
  return require('./schemas') as typeof import('./schemas');
}

/**
 * An answer that speaks against the guardian's health: a 5xx, or a body that is not a valid AOS
 * answer (not JSON, fails the schema, another id). A 4xx or a JSON-RPC error is the guardian
 * declining this one envelope (too large, input it cannot walk): it answered, so it is up.
 */
function unhealthy(reply: { readonly status: number }, outcome: GuardianOutcome): boolean {
  if (reply.status >= 500) return true;
  return !outcome.ok && (outcome.kind === 'json' || outcome.kind === 'schema' || outcome.kind === 'id');
}

const NOT_JSON: GuardianOutcome = { ok: false, kind: 'json', detail: 'guardian answer is not JSON' };
const named = (twice: string): GuardianOutcome => ({
  ok: false,
  kind: 'json',
  detail: `guardian answer names the member "${twice.slice(0, 64)}" twice in one object`,
});

/** Turn a raw guardian reply into an outcome: the "no valid answer" kinds of design section 5. */
export function interpret(reply: RawReply, envelopeId: JsonRpcId): GuardianOutcome {
  if (reply.status < 200 || reply.status >= 300) return { ok: false, kind: 'http', detail: `HTTP ${reply.status}` };
  let json: unknown;
  try {
    json = JSON.parse(reply.body);
  } catch {
    return NOT_JSON;
  }
  const twice = duplicateKey(reply.body);
  if (twice !== undefined) return named(twice);
  return judged(json, envelopeId);
}

/**
 * interpret() of a large answer, read a piece per `turn`: parsed by parseJsonInPieces, scanned for duplicate members
 * in pieces, and a modify's payload serialized in pieces (`payloadBytes`: never stringified whole downstream). The
 * same outcome as interpret() of its text. Bytes that are not UTF-8, and texts the piecewise parser leaves to a
 * whole parse (a number or literal of 256 KiB, a BOM), take interpret()'s way in one task, as before.
 */
export async function interpretInTurns(reply: ReplyBytes, envelopeId: JsonRpcId, turn: () => Promise<void>, sizes?: PieceSizes): Promise<GuardianOutcome> {
  const { status, bytes } = reply;
  if (status < 200 || status >= 300) return interpret({ status, body: '' }, envelopeId);
  const parsed = isUtf8(bytes) ? await parseJsonInPieces(bytes, turn, sizes) : undefined;
  if (parsed === 'not json') return NOT_JSON;
  if (parsed === undefined) {
    const outcome = interpret({ status, body: bytes.toString('utf8') }, envelopeId);
    return outcome.ok ? withPayloadBytes(outcome, turn, []) : outcome;
  }
  await turn();
  const twice = await duplicateKeyInPieces(bytes, turn, parsed.longStrings, sizes?.piece);
  if (twice !== undefined) return named(twice);
  const outcome = judged(parsed.value, envelopeId);
  return outcome.ok ? withPayloadBytes(outcome, turn, parsed.longStrings) : outcome;
}

/** A modify's payload as UTF-8 JSON, made a piece per turn (JSON.stringify's bytes, as the embedded guardian hands them on). */
async function withPayloadBytes(
  outcome: GuardianOutcome & { ok: true },
  turn: () => Promise<void>,
  longStrings: readonly LongString[],
): Promise<GuardianOutcome> {
  const payload = outcome.result.decision === 'modify' ? outcome.result.modifiedRequest?.params.payload : undefined;
  if (payload === undefined) return outcome;
  await turn();
  const payloadBytes = await stringifyInPieces(payload, turn, longStrings);
  return payloadBytes === undefined ? outcome : { ...outcome, payloadBytes };
}

/** A parsed answer (JSON, no duplicate member) as an outcome: an error, a schema failure, another id, or the result. */
function judged(json: unknown, envelopeId: JsonRpcId): GuardianOutcome {
  if (typeof json === 'object' && json !== null && 'error' in json) {
    const rpcError = schemas().GuardianError.safeParse(json);
    if (rpcError.success) {
      const e = rpcError.data.error;
      return { ok: false, kind: 'rpcError', detail: `guardian JSON-RPC error ${e.code}: ${e.message}` };
    }
    return { ok: false, kind: 'schema', detail: 'guardian answer has a malformed error member' };
  }
  const answer = guardianSuccess(json);
  if (answer === undefined) {
    // The same acceptance as the zod schema (answer.ts); zod names what is wrong.
    const parsed = schemas().GuardianSuccess.safeParse(json);
    const issue = parsed.success ? undefined : parsed.error.issues[0];
    return { ok: false, kind: 'schema', detail: `guardian answer fails the AOS schema${issue ? ` at ${issue.path.join('.')}: ${issue.message}` : ''}` };
  }
  if (answer.id !== envelopeId) return { ok: false, kind: 'id', detail: 'guardian answered a different id' };
  return { ok: true, result: answer.result };
}
