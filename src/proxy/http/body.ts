/**
 * Request bodies: bounded in size and time, decoded from Content-Encoding before inspection
 * (a compressed body is never forwarded unread).
 */
import type { IncomingMessage } from 'node:http';
import { BoundedBytes } from '../../core/bounded';
import { proxyError, type ProxyError } from '../../core/errors';
import type { BodyLease } from '../budget';
import { monotonicMs } from '../../core/clock';
import { LARGE_BODY, readInTurns } from '../../core/turns';
import { contentCodings } from '../../core/http';
import { BUDGET_SPENT, zlibDecoders, type DecodeOptions } from '../../core/decoders';

export type BodyResult =
  | { readonly ok: true; readonly body: Buffer }
  /** `partial`: the bytes read before a body was cut (too large, too slow), for the caller's id. */
  | { readonly ok: false; readonly error: ProxyError; readonly partial?: Buffer };

/** Does the request carry a body at all (RFC 9112 section 6.3)? */
export function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const len = req.headers['content-length'];
  return len !== undefined && len !== '0';
}

/** How a body must arrive: whole within `timeoutMs`, and past the first `graceMs` at `minBytesPerSecond` on average. */
export interface BodyPace {
  readonly timeoutMs: number;
  /** 0 = no rate rule. */
  readonly minBytesPerSecond: number;
  readonly graceMs?: number;
}

/** The first seconds of a body are never judged by its rate: a connection's slow start, a caller's pause before writing. */
const RATE_GRACE_MS = 5000;

/** Bytes of a body read between two of its caller's turns (core/turns.ts readInTurns). */
export const READ_SLICE = LARGE_BODY;

/**
 * Read a request body. The lease grows with the bytes that arrived (`perByte` for each: the copies the
 * call will hold of them), never with the declared length:
 * a caller that announces a large body and sends nothing holds nothing of the shared budget. A body
 * that stalls or trickles below the minimum rate is cut (408), so a slow sender cannot keep its
 * bytes and its socket for the whole timeout. With `turn` (its caller's turns), reading stops after each READ_SLICE
 * bytes until the caller's next turn; the time it waits there is not the caller's and does not count against its rate.
 */
export function readBody(
  req: IncomingMessage,
  maxBytes: number,
  pace: BodyPace,
  lease?: BodyLease,
  perByte = 1,
  turn?: () => Promise<void>,
): Promise<BodyResult> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > maxBytes) {
      req.resume();
      return resolve({ ok: false, error: proxyError('rejected', `Request body larger than ${maxBytes} bytes`, { limit: String(maxBytes) }, 413) });
    }
    const body = new BoundedBytes(maxBytes, Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined);
    const started = monotonicMs();
    let done = false;
    const finish = (r: BodyResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onError);
      if (!r.ok) req.resume();
      resolve(r);
    };
    const paced = turn === undefined ? undefined : readInTurns(req, turn, () => done, READ_SLICE);
    const onData = (c: Buffer) => {
      paced?.chunk(c.length);
      if (lease !== undefined && !lease.take(c.length * perByte)) {
        // Kept for the caller's id only (the chunk is here already): the call ends with this answer.
        body.push(c);
        return finish({ ok: false, error: lease.refusal(), partial: body.buffer() });
      }
      if (!body.push(c))
        return finish({
          ok: false,
          error: proxyError('rejected', `Request body larger than ${maxBytes} bytes`, { limit: String(maxBytes) }, 413),
          partial: body.buffer(),
        });
    };
    const onEnd = () => finish({ ok: true, body: body.buffer() });
    const onError = (e: Error) => finish({ ok: false, error: proxyError('rejected', `Request body could not be read: ${e.message}`) });
    // Slow-loris: a body that trickles in forever holds a socket and memory; give it a deadline.
    // One timer per body: it fires at the deadline, or first at the end of the grace period and then each
    // second to check the rate (a body that arrives at once never sees it fire).
    const deadline = started + pace.timeoutMs;
    const grace = pace.graceMs ?? RATE_GRACE_MS;
    const pacing = pace.minBytesPerSecond > 0 && pace.timeoutMs > grace;
    const check = (): void => {
      const now = monotonicMs();
      if (now >= deadline)
        return finish({ ok: false, error: proxyError('rejected', `Request body not received within ${pace.timeoutMs} ms`, {}, 408), partial: body.buffer() });
      if (pacing && body.length < ((now - started - (paced?.waitedMs ?? 0) - grace) / 1000) * pace.minBytesPerSecond) {
        return finish({
          ok: false,
          error: proxyError(
            'rejected',
            `Request body arrived slower than ${pace.minBytesPerSecond} bytes per second`,
            { minBytesPerSecond: String(pace.minBytesPerSecond) },
            408,
          ),
          partial: body.buffer(),
        });
      }
      timer = setTimeout(check, pacing ? Math.min(1000, deadline - now) : deadline - now);
    };
    let timer = setTimeout(check, pacing ? grace : pace.timeoutMs);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * Undo Content-Encoding (gzip, deflate, br): at most one coding, decompressed on the thread pool
 * (never on the event loop, its output gathered as it comes: core/decoders.ts) with one output bound. A stack of codings is refused: each layer costs
 * a pass, and 600 stored gzip layers held the event loop for seconds.
 */
export async function decodeBody(body: Buffer, contentEncoding: string | undefined, maxBytes: number, lease?: BodyLease): Promise<BodyResult> {
  const codings = contentCodings(contentEncoding);
  if (contentEncoding === undefined || codings.length === 0) return { ok: true, body };
  if (codings.length > 1)
    return { ok: false, error: proxyError('rejected', 'At most one Content-Encoding is accepted', { contentEncoding: contentEncoding.slice(0, 64) }) };
  const coding = codings[0] as string;
  // The output is held in the lease as it comes: a few hundred gzip bytes decode to MAX_BODY_BYTES, and many such
  // decodes at once must not hold more memory than the budget.
  const opts = { maxOutputLength: maxBytes, take: lease === undefined ? undefined : (n: number) => lease.take(n) };
  try {
    if (coding === 'gzip' || coding === 'x-gzip') return { ok: true, body: await zlibDecoders().gunzip(body, opts) };
    if (coding === 'deflate') return { ok: true, body: await inflateEither(body, opts) };
    if (coding === 'br') return { ok: true, body: await zlibDecoders().brotli(body, opts) };
  } catch (e) {
    if (lease !== undefined && (e as NodeJS.ErrnoException).code === BUDGET_SPENT) return { ok: false, error: lease.refusal() };
    return isTooLarge(e)
      ? { ok: false, error: proxyError('rejected', `Decoded request body larger than ${maxBytes} bytes`, { limit: String(maxBytes) }, 413) }
      : { ok: false, error: proxyError('rejected', `Request body could not be decoded (${coding})`) };
  }
  return { ok: false, error: proxyError('rejected', `Unsupported Content-Encoding: ${coding.slice(0, 32)}`, { contentEncoding: coding.slice(0, 32) }) };
}

/** "deflate" in the wild is zlib-wrapped or raw; accept both. */
async function inflateEither(b: Buffer, opts: DecodeOptions): Promise<Buffer> {
  try {
    return await zlibDecoders().inflate(b, opts);
  } catch (e) {
    if (isTooLarge(e) || (e as NodeJS.ErrnoException).code === BUDGET_SPENT) throw e;
    return zlibDecoders().inflateRaw(b, opts);
  }
}

function isTooLarge(e: unknown): boolean {
  return (e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || /larger than|too large|maxOutputLength/i.test((e as Error).message);
}
