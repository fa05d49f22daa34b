/** A real push-notification webhook on 127.0.0.1: records every POST it receives (path, headers, JSON body). */
import http from 'node:http';
import type { Socket } from 'node:net';
import { closeServer, listen } from './net';

export interface Received {
  readonly path: string;
  /** Lower-cased names. */
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
  readonly body: unknown;
}

export interface Webhook {
  /** http://127.0.0.1:<port> */
  readonly origin: string;
  readonly port: number;
  readonly received: Received[];
  /** TCP connections accepted so far (kept-alive deliveries share one). */
  readonly connections: number;
  /** TCP connections open at once, the most so far. */
  readonly mostOpen: number;
  /** Answer the next deliveries with these statuses (then 200). */
  failNext(...statuses: number[]): void;
  close(): Promise<void>;
}

/** `holdMs`: each delivery is answered this long after it arrived. */
export async function startWebhook(opts: { holdMs?: number } = {}): Promise<Webhook> {
  const received: Received[] = [];
  const failing: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const status = failing.shift() ?? 200;
      if (status < 300) received.push({ path: req.url ?? '/', headers: req.headers, text, body });
      if (opts.holdMs === undefined) res.writeHead(status).end();
      else setTimeout(() => res.writeHead(status).end(), opts.holdMs);
    });
  });
  let connections = 0;
  let open = 0;
  let mostOpen = 0;
  server.on('connection', (socket: Socket) => {
    connections++;
    mostOpen = Math.max(mostOpen, ++open);
    socket.once('close', () => open--);
  });
  const origin = await listen(server);
  return {
    origin,
    get connections() {
      return connections;
    },
    get mostOpen() {
      return mostOpen;
    },
    port: Number(new URL(origin).port),
    received,
    failNext: (...statuses) => failing.push(...statuses),
    close: () => closeServer(server),
  };
}
