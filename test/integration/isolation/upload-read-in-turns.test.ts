/**
 * A large upload is read in its caller's turns (proxy/http/body.ts READ_SLICE): past each slice its socket is not read
 * until the caller's next turn, so one caller's uploads never fill a loop iteration with socket reads and copies. The
 * time it waits there is the proxy's, not the caller's: it does not count against the minimum body rate.
 * Real sockets on 127.0.0.1: a node:http server reading with readBody, a client writing the whole body at once.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { readBody, READ_SLICE, type BodyResult } from '../../../src/proxy/http/body';
import { sleep, waitFor } from '../../helpers/net';

const BODY = Buffer.alloc(3 * 1024 * 1024, 0x61);
/** One read of a socket by libuv. */
const SOCKET_READ = 64 * 1024;
/** Read past a slice before reading stops: the read that crossed it, and one more Node buffers before it stops. */
const OVERSHOOT = 2 * SOCKET_READ;

interface Turns {
  /** The socket's bytesRead when each turn was asked for. */
  readonly asked: number[];
  /** Grant the oldest pending turn. */
  grant(): void;
  readonly pending: number;
  turn(): Promise<void>;
}

async function serve(
  onRequest: (req: http.IncomingMessage) => Promise<BodyResult>,
): Promise<{ url: URL; result: Promise<BodyResult>; close(): Promise<void> }> {
  let resolve!: (r: BodyResult) => void;
  const result = new Promise<BodyResult>((r) => (resolve = r));
  const server = http.createServer((req, res) => {
    void onRequest(req).then((r) => {
      resolve(r);
      res.end(r.ok ? 'ok' : r.error.message);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/`),
    result,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function upload(url: URL, body: Buffer): net.Socket {
  const s = net.connect(Number(url.port), url.hostname, () => {
    s.write(`POST / HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    s.write(body);
  });
  s.on('error', () => undefined);
  s.on('data', () => undefined);
  return s;
}

const rounds = (n: number) => new Promise<void>((r) => (n <= 0 ? r() : setImmediate(() => void rounds(n - 1).then(r))));

function turnsFor(req: () => http.IncomingMessage | undefined): Turns {
  const asked: number[] = [];
  const waiting: (() => void)[] = [];
  return {
    asked,
    get pending() {
      return waiting.length;
    },
    grant: () => waiting.shift()?.(),
    turn() {
      asked.push(req()?.socket.bytesRead ?? -1);
      return new Promise<void>((r) => waiting.push(r));
    },
  };
}

test("past each slice an upload's socket is not read until its caller's next turn, and the body arrives whole", async () => {
  let request: http.IncomingMessage | undefined;
  const turns = turnsFor(() => request);
  const server = await serve((req) => {
    request = req;
    return readBody(req, 16 * 1024 * 1024, { timeoutMs: 30_000, minBytesPerSecond: 0 }, undefined, 1, () => turns.turn());
  });
  const client = upload(server.url, BODY);
  try {
    let done = false;
    let checked = 0;
    void server.result.then(() => (done = true));
    while (!done) {
      await waitFor(() => done || turns.pending > 0, 20_000, 'a turn asked for, or the body read');
      if (done) break;
      // Waiting for a turn: the socket is not read on, however many loop iterations pass.
      const at = request?.socket.bytesRead ?? 0;
      await rounds(20);
      await sleep(20);
      const read = request?.socket.bytesRead ?? 0;
      expect(read - at).toBeLessThanOrEqual(SOCKET_READ);
      // Never more than a slice (and the reads past it) per turn asked for.
      expect(read).toBeLessThanOrEqual(turns.asked.length * (READ_SLICE + OVERSHOOT) + 1024);
      turns.grant();
      checked++;
    }
    const r = await server.result;
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.body.equals(BODY)).toBe(true);
    // A turn per slice, each waited for.
    expect(checked).toBeGreaterThanOrEqual(Math.floor(BODY.length / (READ_SLICE + OVERSHOOT)) - 1);
    for (let i = 1; i < turns.asked.length; i++)
      expect((turns.asked[i] as number) - (turns.asked[i - 1] as number)).toBeLessThanOrEqual(READ_SLICE + OVERSHOOT);
  } finally {
    client.destroy();
    await server.close();
  }
});

test('the time an upload waits for its turns does not count against the minimum rate', async () => {
  let request: http.IncomingMessage | undefined;
  const turns = turnsFor(() => request);
  const server = await serve((req) => {
    request = req;
    // 1 MB/s after 50 ms: a body held 2 s by the proxy's turns would be cut (408) were its wait counted.
    return readBody(req, 16 * 1024 * 1024, { timeoutMs: 30_000, minBytesPerSecond: 1_000_000, graceMs: 50 }, undefined, 1, () => turns.turn());
  });
  const body = BODY.subarray(0, 1024 * 1024);
  const client = upload(server.url, body);
  const granting = setInterval(() => turns.grant(), 600);
  try {
    const r = await server.result;
    expect(r.ok ? 'read' : r.error.message).toBe('read');
    expect(turns.asked.length).toBeGreaterThanOrEqual(3);
  } finally {
    clearInterval(granting);
    client.destroy();
    await server.close();
  }
});

test('a turn still waited for when the rate is checked does not count against the minimum rate', async () => {
  let request: http.IncomingMessage | undefined;
  const turns = turnsFor(() => request);
  const server = await serve((req) => {
    request = req;
    // 1 MB/s after 50 ms: the first slice waits 2.5 s for its turn, across two checks of the rate.
    return readBody(req, 16 * 1024 * 1024, { timeoutMs: 30_000, minBytesPerSecond: 1_000_000, graceMs: 50 }, undefined, 1, () => turns.turn());
  });
  const body = BODY.subarray(0, 1024 * 1024);
  const client = upload(server.url, body);
  let granting: NodeJS.Timeout | undefined;
  const held = setTimeout(() => (granting = setInterval(() => turns.grant(), 10)), 2500);
  try {
    const r = await server.result;
    expect(r.ok ? 'read' : r.error.message).toBe('read');
  } finally {
    clearTimeout(held);
    clearInterval(granting);
    client.destroy();
    await server.close();
  }
});
