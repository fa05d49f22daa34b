/**
 * Small networking helpers shared by the test harness.
 * Everything binds to 127.0.0.1 on an ephemeral port.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';

/** Listen on 127.0.0.1:0 and resolve with the origin, e.g. `http://127.0.0.1:41234`. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', onError);
      resolve();
    });
  });
  return originOf(server);
}

/** The `http://127.0.0.1:<port>` origin of a listening server. */
export function originOf(server: Server): string {
  const addr = server.address() as AddressInfo | string | null;
  if (addr === null || typeof addr === 'string') throw new Error('server is not listening on a TCP port');
  return `http://127.0.0.1:${addr.port}`;
}

/**
 * Stop a server for good: stop accepting, destroy every open socket (idle keep-alive and
 * in-flight requests, including open SSE streams), and resolve once the server is closed.
 * Safe to call twice or on a server that never listened.
 */
export async function closeServer(server: Server): Promise<void> {
  if (!server.listening) {
    server.closeAllConnections();
    return;
  }
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Poll `predicate` every 10 ms until it returns true (or a truthy promise); reject after `timeoutMs`. */
export async function waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`waitFor: ${what} not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}

/** Promise-based sleep. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A sleep that does not keep the process alive: for the losing side of a race (a hang guard). */
export const unrefSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

const handedOut = new Set<number>();

/**
 * A port that was free a moment ago (bind 0, read, close): for processes that must be told their port. The kernel may give a
 * port just closed back at once, so a port this process handed out before is never handed out again (two calls in a row
 * once gave one proxy the same PORT and ADMIN_PORT). Another process can still take it: see startProxyProcess's retry.
 */
export async function freePort(): Promise<number> {
  const held: Server[] = [];
  try {
    for (;;) {
      const s = createServer();
      held.push(s);
      const port = Number(new URL(await listen(s)).port);
      if (!handedOut.has(port)) {
        handedOut.add(port);
        return port;
      }
    }
  } finally {
    await Promise.all(held.map(closeServer));
  }
}

/** Open a socket that announces a large body and sends none of it; resolves once the headers are sent. */
export function announce(url: string, bytes: number, headers: Record<string, string> = {}): Promise<net.Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname, () => {
      const extra = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      s.write(
        `POST /a2a/jsonrpc HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: ${bytes}\r\n${extra}\r\n`,
        () => resolve(s),
      );
    });
    s.on('error', () => undefined);
    s.once('error', reject);
  });
}

/** What a recording upstream received: each request's method, headers, body, and when it had it whole. */
export interface Recorded {
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly atMs: number;
}

/**
 * A plain HTTP upstream that keeps every request it receives and answers each with a small JSON-RPC message result
 * (where a ROLE=server sidecar or an agent would stand, to see the bytes and headers the proxy sends).
 */
export async function recordingUpstream(): Promise<{ url: string; received: Recorded[]; posts(): Recorded[]; close(): Promise<void> }> {
  const received: Recorded[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), atMs: Date.now() });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"jsonrpc":"2.0","id":1,"result":{"kind":"message","role":"agent","messageId":"x","parts":[]}}');
    });
  });
  const url = await listen(server);
  // posts(): the calls (the proxy also fetches the agent card with a GET).
  return { url, received, posts: () => received.filter((r) => r.method === 'POST'), close: () => closeServer(server) };
}
