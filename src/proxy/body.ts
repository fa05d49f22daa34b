/**
 * Request bodies: bounded in size and time, decoded from Content-Encoding before inspection
 * (a compressed body is never forwarded unread).
 */
import type { IncomingMessage } from 'node:http';
import zlib from 'node:zlib';
import { proxyError, type ProxyError } from './errors';

export type BodyResult = { readonly ok: true; readonly body: Buffer } | { readonly ok: false; readonly error: ProxyError };

/** Does the request carry a body at all (RFC 9112 section 6.3)? */
export function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const len = req.headers['content-length'];
  return len !== undefined && len !== '0';
}

export function readBody(req: IncomingMessage, maxBytes: number, timeoutMs: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > maxBytes) {
      req.resume();
      return resolve({ ok: false, error: proxyError('rejected', `Request body larger than ${maxBytes} bytes`, { limit: String(maxBytes) }, 413) });
    }
    const chunks: Buffer[] = [];
    let size = 0;
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
      size += c.length;
      if (size > maxBytes) return finish({ ok: false, error: proxyError('rejected', `Request body larger than ${maxBytes} bytes`, { limit: String(maxBytes) }, 413) });
      chunks.push(c);
    };
    const onEnd = () => finish({ ok: true, body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size) });
    const onError = (e: Error) => finish({ ok: false, error: proxyError('rejected', `Request body could not be read: ${e.message}`) });
    // Slow-loris: a body that trickles in forever holds a socket and memory; give it a deadline.
    const timer = setTimeout(() => finish({ ok: false, error: proxyError('rejected', `Request body not received within ${timeoutMs} ms`, {}, 408) }), timeoutMs);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** Undo Content-Encoding (gzip, deflate, br; stacked codings in reverse order) with the same size bound. */
export function decodeBody(body: Buffer, contentEncoding: string | undefined, maxBytes: number): BodyResult {
  if (contentEncoding === undefined) return { ok: true, body };
  const codings = contentEncoding.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity');
  let out = body;
  try {
    for (const coding of codings.reverse()) {
      const opts = { maxOutputLength: maxBytes };
      if (coding === 'gzip' || coding === 'x-gzip') out = zlib.gunzipSync(out, opts);
      else if (coding === 'deflate') out = inflateEither(out, opts);
      else if (coding === 'br') out = zlib.brotliDecompressSync(out, opts);
      else return { ok: false, error: proxyError('rejected', `Unsupported Content-Encoding: ${coding}`, { contentEncoding: coding }) };
    }
  } catch (e) {
    const tooBig = isTooLarge(e);
    return tooBig
      ? { ok: false, error: proxyError('rejected', `Decoded request body larger than ${maxBytes} bytes`, { limit: String(maxBytes) }, 413) }
      : { ok: false, error: proxyError('rejected', `Request body could not be decoded (${contentEncoding})`) };
  }
  return { ok: true, body: out };
}

/** "deflate" in the wild is zlib-wrapped or raw; accept both. */
function inflateEither(b: Buffer, opts: zlib.ZlibOptions): Buffer {
  try {
    return zlib.inflateSync(b, opts);
  } catch (e) {
    if (isTooLarge(e)) throw e;
    return zlib.inflateRawSync(b, opts);
  }
}

function isTooLarge(e: unknown): boolean {
  return (e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || /larger than|too large|maxOutputLength/i.test((e as Error).message);
}
