/**
 * A minimal real WebSocket (RFC 6455) for tests: an echo endpoint on an http.Server and a raw client
 * (handshake, one masked text frame out, one text frame back). Text frames up to 125 bytes only.
 */
import { createHash, randomBytes } from 'node:crypto';
import type http from 'node:http';
import net from 'node:net';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const accept = (key: string): string =>
  createHash('sha1')
    .update(key + GUID)
    .digest('base64');

function frame(text: string, masked: boolean): Buffer {
  const payload = Buffer.from(text, 'utf8');
  if (payload.length > 125) throw new Error('test frames are at most 125 bytes');
  if (!masked) return Buffer.concat([Buffer.from([0x81, payload.length]), payload]);
  const mask = randomBytes(4);
  const body = Buffer.from(payload.map((b, i) => b ^ (mask[i % 4] as number)));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, body]);
}

/** The text of the first complete text frame in `buf`, or undefined while it is incomplete. */
function readFrame(buf: Buffer): string | undefined {
  if (buf.length < 2) return undefined;
  const masked = ((buf[1] as number) & 0x80) !== 0;
  const len = (buf[1] as number) & 0x7f;
  const start = 2 + (masked ? 4 : 0);
  if (buf.length < start + len) return undefined;
  const body = buf.subarray(start, start + len);
  if (!masked) return body.toString('utf8');
  const mask = buf.subarray(2, 6);
  return Buffer.from(body.map((b, i) => b ^ (mask[i % 4] as number))).toString('utf8');
}

/** Answer upgrades below `prefix` on `server` with a WebSocket that echoes each text frame; counts handshakes. */
export function echoWebSocket(server: http.Server, prefix: string): { readonly handshakes: string[]; readonly headers: http.IncomingHttpHeaders[] } {
  const handshakes: string[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
    // Other protocols are another listener's (a test may add one on the same server).
    if (!/^\s*websocket\s*$/i.test(String(req.headers.upgrade))) return;
    const key = req.headers['sec-websocket-key'];
    if (!(req.url ?? '').startsWith(prefix) || typeof key !== 'string') return void socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
    handshakes.push(req.url ?? '');
    headers.push(req.headers);
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept(key)}\r\n\r\n`);
    let buf = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const text = readFrame(buf);
      if (text !== undefined) {
        buf = Buffer.alloc(0);
        socket.write(frame(`echo: ${text}`, false));
      }
    });
    socket.on('error', () => undefined);
    // The proxy leaving ends the socket: close it, so the server can close.
    socket.on('end', () => socket.destroy());
  });
  return { handshakes, headers };
}

export interface WsExchange {
  /** Everything the caller received as text (status line, headers, and any frame bytes). */
  readonly head: string;
  /** The echo of `send`, when the handshake succeeded. */
  readonly echo: string | undefined;
}

/** Handshake at `path` (with extra header lines), send one text frame if switched, read its answer, close. */
export function wsExchange(port: number, path: string, send: string, extraHeaders: string[] = [], timeoutMs = 5_000): Promise<WsExchange> {
  const key = randomBytes(16).toString('base64');
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(
        [
          `GET ${path} HTTP/1.1`,
          'Host: 127.0.0.1',
          'Connection: Upgrade',
          'Upgrade: websocket',
          'Sec-WebSocket-Version: 13',
          `Sec-WebSocket-Key: ${key}`,
          ...extraHeaders,
        ].join('\r\n') + '\r\n\r\n',
      );
    });
    let raw = Buffer.alloc(0);
    let sent = false;
    const finish = (echo: string | undefined) => {
      clearTimeout(timer);
      s.destroy();
      const end = raw.indexOf('\r\n\r\n');
      resolve({ head: (end < 0 ? raw : raw.subarray(0, end)).toString('latin1'), echo });
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    s.on('data', (c: Buffer) => {
      raw = Buffer.concat([raw, c]);
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = raw.subarray(0, end).toString('latin1');
      if (!/^HTTP\/1\.1 101 /.test(head)) return;
      if (!/sec-websocket-accept: (\S+)/i.test(head) || (/sec-websocket-accept: (\S+)/i.exec(head) as RegExpExecArray)[1] !== accept(key))
        return finish(undefined);
      if (!sent) {
        sent = true;
        s.write(frame(send, true));
      }
      const text = readFrame(raw.subarray(end + 4));
      if (text !== undefined) finish(text);
    });
    s.on('close', () => finish(undefined));
    s.on('error', () => finish(undefined));
  });
}
