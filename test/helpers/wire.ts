/**
 * Raw HTTP/1.1 over a TCP socket, with every byte under the test's control: header names, case,
 * order and duplicates as given, framing (Content-Length, chunked, both, none) as given, and the
 * answer parsed by hand (status, raw header lines, de-chunked body). One request per connection.
 */
import net from 'node:net';

export interface WireRequest {
  readonly verb: string;
  /** The request-target exactly as sent (path, query, any encoding). */
  readonly target: string;
  /** Header lines in order, duplicates allowed, names and values sent verbatim. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** The body bytes as they go on the wire (already chunk-framed when the headers say so). */
  readonly body: Buffer;
}

export type WireOutcome =
  | { readonly kind: 'answer'; readonly status: number; readonly headers: ReadonlyArray<readonly [string, string]>; readonly body: Buffer; readonly ms: number }
  /** The connection closed before a complete answer (`partial` holds what arrived). */
  | { readonly kind: 'closed'; readonly partial: string; readonly ms: number }
  /** No complete answer within the time limit. */
  | { readonly kind: 'timeout'; readonly partial: string; readonly ms: number };

export function serialize(req: WireRequest): Buffer {
  const head = `${req.verb} ${req.target} HTTP/1.1\r\n${req.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), req.body]);
}

/** First value of a header in a raw list (case-insensitive), or undefined. */
export function header(headers: ReadonlyArray<readonly [string, string]>, name: string): string | undefined {
  const n = name.toLowerCase();
  return headers.find(([k]) => k.toLowerCase() === n)?.[1];
}

type Parsed = { done: false } | { done: true; status: number; headers: Array<[string, string]>; body: Buffer };

/** Parse one complete answer from `buf` (skipping 1xx interim answers), or report that more bytes are needed. */
function parseAnswer(buf: Buffer, verb: string, ended: boolean): Parsed {
  let at = 0;
  for (;;) {
    const headEnd = buf.indexOf('\r\n\r\n', at, 'latin1');
    if (headEnd < 0) return { done: false };
    const lines = buf.subarray(at, headEnd).toString('latin1').split('\r\n');
    const m = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0] ?? '');
    if (m === null) throw new Error(`not an HTTP answer: ${JSON.stringify((lines[0] ?? '').slice(0, 80))}`);
    const status = Number(m[1]);
    const headers = lines.slice(1).map((l): [string, string] => {
      const i = l.indexOf(':');
      return i < 0 ? [l, ''] : [l.slice(0, i).trim(), l.slice(i + 1).trim()];
    });
    const bodyStart = headEnd + 4;
    if (status >= 100 && status < 200 && status !== 101) {
      at = bodyStart; // interim answer (100 Continue): the real one follows
      continue;
    }
    if (verb === 'HEAD' || status === 204 || status === 304 || status === 101) return { done: true, status, headers, body: Buffer.alloc(0) };
    const te = header(headers, 'transfer-encoding');
    if (te !== undefined && /chunked\s*$/i.test(te)) {
      const chunks: Buffer[] = [];
      let p = bodyStart;
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', p, 'latin1');
        if (lineEnd < 0) return { done: false };
        const size = parseInt(buf.subarray(p, lineEnd).toString('latin1').split(';')[0] ?? '', 16);
        if (Number.isNaN(size)) throw new Error('bad chunk size in answer');
        if (size === 0) {
          // Trailers end with an empty line.
          const end = buf.indexOf('\r\n\r\n', lineEnd, 'latin1');
          if (end < 0 && buf.indexOf('\r\n', lineEnd + 2, 'latin1') !== lineEnd + 2) return { done: false };
          return { done: true, status, headers, body: Buffer.concat(chunks) };
        }
        if (buf.length < lineEnd + 2 + size + 2) return { done: false };
        chunks.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        p = lineEnd + 2 + size + 2;
      }
    }
    const cl = header(headers, 'content-length');
    if (cl !== undefined) {
      const n = Number(cl);
      if (buf.length < bodyStart + n) return { done: false };
      return { done: true, status, headers, body: buf.subarray(bodyStart, bodyStart + n) };
    }
    // No framing: the body runs until the server closes the connection.
    return ended ? { done: true, status, headers, body: buf.subarray(bodyStart) } : { done: false };
  }
}

/** Send one request on a fresh connection to 127.0.0.1:port and read one answer. Never throws. */
export function exchange(port: number, req: WireRequest, timeoutMs: number): Promise<WireOutcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const socket = net.connect({ host: '127.0.0.1', port });
    const finish = (o: WireOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(o);
    };
    const ms = (): number => Math.round(performance.now() - started);
    const partial = (): string => Buffer.concat(chunks).toString('latin1').slice(0, 400);
    const check = (ended: boolean): void => {
      let parsed: Parsed;
      try {
        parsed = parseAnswer(Buffer.concat(chunks), req.verb, ended);
      } catch (err) {
        finish({ kind: 'closed', partial: `${(err as Error).message}: ${partial()}`, ms: ms() });
        return;
      }
      if (parsed.done) finish({ kind: 'answer', status: parsed.status, headers: parsed.headers, body: parsed.body, ms: ms() });
      else if (ended) finish({ kind: 'closed', partial: partial(), ms: ms() });
    };
    const timer = setTimeout(() => finish({ kind: 'timeout', partial: partial(), ms: ms() }), timeoutMs);
    // Write without half-closing: Node servers abort a request whose client sent FIN.
    socket.on('connect', () => socket.write(serialize(req)));
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      check(false);
    });
    socket.on('end', () => check(true));
    socket.on('close', () => check(true));
    // A server may answer and close before it read the whole body (EPIPE / ECONNRESET): the answer counts.
    socket.on('error', () => undefined);
  });
}

/**
 * Raw bytes to a server on 127.0.0.1; resolves with everything it sent back (latin1) once it closes, or
 * after `ms` with `<<TIMEOUT>>` appended (a hang is a result, never a stuck test).
 */
export function rawRoundTrip(port: number, data: Buffer | string, ms = 15_000): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(data));
    const out: Buffer[] = [];
    const t = setTimeout(() => {
      s.destroy();
      resolve(`${Buffer.concat(out).toString('latin1')}<<TIMEOUT>>`);
    }, ms);
    s.on('data', (c: Buffer) => out.push(c));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(t);
      resolve(Buffer.concat(out).toString('latin1'));
    });
  });
}
