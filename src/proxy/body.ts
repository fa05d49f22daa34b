/**
 * Request bodies: bounded in size and time, decoded from Content-Encoding before inspection
 * (a compressed body is never forwarded unread).
 */
import type { IncomingMessage } from 'node:http';
import type zlib from 'node:zlib';
import { BoundedBytes } from '../core/bounded';
import { proxyError, type ProxyError } from '../core/errors';
import { contentCodings } from '../core/http';
import { zlibDecoders } from '../core/decoders';

export type BodyResult =
  | { readonly ok: true; readonly body: Buffer }
  /** `partial`: the bytes read before a body was cut (too large, too slow), for the caller's id. */
  | { readonly ok: false; readonly error: ProxyError; readonly partial?: Buffer };

const overloaded = (): ProxyError => proxyError('overloaded', 'Too many request bytes in flight; retry later', {}, 503);

/** Does the request carry a body at all (RFC 9112 section 6.3)? */
export function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const len = req.headers['content-length'];
  return len !== undefined && len !== '0';
}

export function readBody(req: IncomingMessage, maxBytes: number, timeoutMs: number, lease?: BodyLease): Promise<BodyResult> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > maxBytes) {
      req.resume();
      return resolve({ ok: false, error: proxyError('rejected', `Request body larger than ${maxBytes} bytes`, { limit: String(maxBytes) }, 413) });
    }
    if (lease !== undefined && Number.isFinite(declared) && !lease.take(declared)) {
      req.resume();
      return resolve({ ok: false, error: overloaded() });
    }
    let reserved = Number.isFinite(declared) ? declared : 0;
    const body = new BoundedBytes(maxBytes);
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
    const onData = (c: Buffer) => {
      if (!body.push(c)) return finish({ ok: false, error: proxyError('rejected', `Request body larger than ${maxBytes} bytes`, { limit: String(maxBytes) }, 413), partial: body.buffer() });
      if (lease !== undefined && body.length > reserved) {
        if (!lease.take(body.length - reserved)) return finish({ ok: false, error: overloaded(), partial: body.buffer() });
        reserved = body.length;
      }
    };
    const onEnd = () => finish({ ok: true, body: body.buffer() });
    const onError = (e: Error) => finish({ ok: false, error: proxyError('rejected', `Request body could not be read: ${e.message}`) });
    // Slow-loris: a body that trickles in forever holds a socket and memory; give it a deadline.
    const timer = setTimeout(() => finish({ ok: false, error: proxyError('rejected', `Request body not received within ${timeoutMs} ms`, {}, 408), partial: body.buffer() }), timeoutMs);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * Undo Content-Encoding (gzip, deflate, br): at most one coding, decompressed on the thread pool
 * (never on the event loop) with one output bound. A stack of codings is refused: each layer costs
 * a pass, and 600 stored gzip layers held the event loop for seconds.
 */
export async function decodeBody(body: Buffer, contentEncoding: string | undefined, maxBytes: number): Promise<BodyResult> {
  const codings = contentCodings(contentEncoding);
  if (contentEncoding === undefined || codings.length === 0) return { ok: true, body };
  if (codings.length > 1) return { ok: false, error: proxyError('rejected', 'At most one Content-Encoding is accepted', { contentEncoding: contentEncoding.slice(0, 64) }) };
  const coding = codings[0] as string;
  const opts = { maxOutputLength: maxBytes };
  try {
    if (coding === 'gzip' || coding === 'x-gzip') return { ok: true, body: await zlibDecoders().gunzip(body, opts) };
    if (coding === 'deflate') return { ok: true, body: await inflateEither(body, opts) };
    if (coding === 'br') return { ok: true, body: await zlibDecoders().brotli(body, opts) };
  } catch (e) {
    return isTooLarge(e)
      ? { ok: false, error: proxyError('rejected', `Decoded request body larger than ${maxBytes} bytes`, { limit: String(maxBytes) }, 413) }
      : { ok: false, error: proxyError('rejected', `Request body could not be decoded (${coding})`) };
  }
  return { ok: false, error: proxyError('rejected', `Unsupported Content-Encoding: ${coding.slice(0, 32)}`, { contentEncoding: coding.slice(0, 32) }) };
}

/** "deflate" in the wild is zlib-wrapped or raw; accept both. */
async function inflateEither(b: Buffer, opts: zlib.ZlibOptions): Promise<Buffer> {
  try {
    return await zlibDecoders().inflate(b, opts);
  } catch (e) {
    if (isTooLarge(e)) throw e;
    return zlibDecoders().inflateRaw(b, opts);
  }
}

function isTooLarge(e: unknown): boolean {
  return (e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || /larger than|too large|maxOutputLength/i.test((e as Error).message);
}

/**
 * Hold a decoded body's size in the budget (`held`: the bytes read, already taken). A compressed
 * body weighs what it decodes to: a few hundred gzip bytes can decode to MAX_BODY_BYTES, so
 * counting only the wire bytes let a handful of small calls hold many times the budget.
 * Returns the "overloaded" error when the growth does not fit.
 */
export function holdDecoded(lease: BodyLease, held: number, decoded: number): ProxyError | undefined {
  if (decoded > held && !lease.take(decoded - held)) return overloaded();
  lease.resize(decoded);
  return undefined;
}

/**
 * One budget of the bytes held across all calls (MAX_INFLIGHT_BODY_BYTES): request bodies, and the
 * agent's answers held for inspection. A call that would go over it is answered "overloaded" at once
 * instead of growing the process without bound.
 */
export class BodyBudget {
  private used = 0;
  constructor(readonly limit: number) {}

  get inFlight(): number {
    return this.used;
  }

  /** A lease for one call; `take` grows it (false: over budget, nothing taken), `release` ends it. */
  lease(): BodyLease {
    let held = 0;
    return {
      take: (n: number) => {
        if (this.used + n > this.limit) return false;
        this.used += n;
        held += n;
        return true;
      },
      resize: (n: number) => {
        this.used += n - held;
        held = n;
      },
      give: (n: number) => {
        const k = Math.min(n, held);
        this.used -= k;
        held -= k;
      },
      release: () => {
        this.used -= held;
        held = 0;
      },
    };
  }
}

export interface BodyLease {
  take(n: number): boolean;
  /** Hold exactly n bytes now (what is retained after parsing); never refused. */
  resize(n: number): void;
  /** Return n of the bytes held (never more than are held). */
  give(n: number): void;
  release(): void;
}
