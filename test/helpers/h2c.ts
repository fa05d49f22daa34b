/**
 * HTTP/2 over cleartext by upgrade (h2c, RFC 7540 3.2) for tests. `h2cFront` makes an agent's server
 * accept `Upgrade: h2c` on every path, as a Go server wrapped in h2c.NewHandler does (one port for gRPC
 * and HTTP), and serves each HTTP/2 stream by relaying it to the agent's own HTTP/1 origin.
 * `h2cUpgrade` is the caller: it upgrades at `path`, then sends one HTTP/2 request on the connection.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';

/** Answer `Upgrade: h2c` on `server` with 101 and HTTP/2, relaying every stream to `origin`. */
export function h2cFront(server: http.Server, origin: string): { readonly upgrades: string[]; close(): void } {
  const upgrades: string[] = [];
  const sessions = new Set<http2.Http2Session>();
  const h2 = http2.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (!k.startsWith(':') && typeof v === 'string') headers[k] = v;
    const body = chunks.length === 0 ? undefined : Buffer.concat(chunks);
    const r = await fetch(`${origin}${req.url}`, { method: req.method, headers, body });
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'text/plain' });
    res.end(Buffer.from(await r.arrayBuffer()));
  });
  h2.on('session', (s) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
    if (String(req.headers.upgrade).toLowerCase() !== 'h2c') return;
    upgrades.push(req.url ?? '');
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n');
    h2.emit('connection', socket);
  });
  return { upgrades, close: () => sessions.forEach((s) => s.destroy()) };
}

export interface H2cResult {
  /** The status line and headers the caller got for the upgrade. */
  readonly head: string;
  /** The HTTP/2 answer to `request`, when the connection switched. */
  readonly answer?: { readonly status: number; readonly body: string };
}

/** Upgrade to h2c at `path` on 127.0.0.1:`port`; when switched, send `request` over HTTP/2 on that connection. */
export function h2cUpgrade(
  port: number,
  path: string,
  request: { path: string; body: string; headers?: Record<string, string> },
  timeoutMs = 5_000,
): Promise<H2cResult> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      // An empty SETTINGS payload, base64url: the HTTP2-Settings header is required.
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: \r\n\r\n`);
    });
    let raw = Buffer.alloc(0);
    let done = false;
    const finish = (r: H2cResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ head: raw.toString('latin1') }), timeoutMs);
    const onData = (c: Buffer) => {
      raw = Buffer.concat([raw, c]);
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = raw.subarray(0, end).toString('latin1');
      // Paused, so that bytes after the 101 (the agent's SETTINGS) stay buffered for the HTTP/2 session.
      socket.pause();
      socket.off('data', onData);
      if (!/^HTTP\/1\.1 101 /.test(head)) return finish({ head });
      const rest = raw.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      const session = http2.connect('http://127.0.0.1', { createConnection: () => socket });
      session.on('error', () => finish({ head }));
      const stream = session.request({ ':method': 'POST', ':path': request.path, 'content-type': 'application/json', ...request.headers });
      let body = '';
      let status = 0;
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', (c: Buffer) => (body += c.toString('utf8')));
      stream.on('end', () => {
        session.destroy();
        finish({ head, answer: { status, body } });
      });
      stream.on('error', () => finish({ head }));
      stream.end(request.body);
    };
    socket.on('data', onData);
    socket.on('close', () => finish({ head: raw.toString('latin1') }));
    socket.on('error', () => finish({ head: raw.toString('latin1') }));
  });
}
