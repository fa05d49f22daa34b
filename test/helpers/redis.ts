/**
 * A real redis-server (Debian's package; .ci/run installs it) on a free 127.0.0.1 port, without
 * persistence. `stop()` kills it (an outage), `start()` brings it back on the same port (empty),
 * `close()` stops it for good and reaps the process. During an outage the port stays taken by a
 * listener that resets every connection: otherwise another test's server could get the freed port
 * and the store under test would "reconnect" to it (seen once on a busy CI machine).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { freePort, sleep } from './net';
import { reap } from './process';

export interface TestRedis {
  readonly port: number;
  readonly url: string;
  /** Running now. */
  readonly running: boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
  /** One command over a raw connection (RESP), e.g. ['DBSIZE']; the reply as text. */
  command(...args: string[]): Promise<string>;
}

export const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server';

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;

  let blocker: net.Server | undefined;
  const unblock = async (): Promise<void> => {
    const b = blocker;
    blocker = undefined;
    if (b !== undefined) await new Promise<void>((resolve) => b.close(() => resolve()));
  };

  const start = async (): Promise<void> => {
    await unblock();
    const c = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = c;
    let out = '';
    c.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    c.stderr?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    const failed = new Promise<never>((_, reject) => {
      c.once('error', (err) => reject(new Error(`cannot start ${REDIS_SERVER} (install Debian's redis-server): ${err.message}`)));
      c.once('exit', (code) => reject(new Error(`redis-server exited (${code}) at start: ${out}`)));
    });
    failed.catch(() => undefined);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const ok = await Promise.race([ping(port), failed]);
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`redis-server did not answer on ${port}: ${out}`);
      await sleep(20);
    }
  };

  const kill = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (c !== undefined) await reap(c);
  };
  const stop = async (): Promise<void> => {
    await kill();
    const b = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      b.once('error', reject);
      b.listen(port, '127.0.0.1', () => resolve());
    });
    blocker = b;
  };
  const close = async (): Promise<void> => {
    await kill();
    await unblock();
  };

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get running() {
      return child !== undefined;
    },
    start,
    stop,
    close,
    command: (...args) => command(port, args),
  };
}

async function ping(port: number): Promise<boolean> {
  try {
    return (await command(port, ['PING'])) === 'PONG';
  } catch {
    return false;
  }
}

/** One RESP command; simple replies only (status, integer, bulk string, nil). */
function command(port: number, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let buf = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error('redis command timed out'));
    }, 2000);
    s.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    s.on('data', (d) => {
      buf += d.toString();
      const m = /^([+:-])(.*)\r\n/.exec(buf) ?? /^\$(-1)\r\n/.exec(buf) ?? /^\$\d+\r\n(.*)\r\n/.exec(buf);
      if (m === null) return;
      clearTimeout(timer);
      s.end();
      if (m[1] === '-') reject(new Error(m[2]));
      else if (m[1] === '-1') resolve('(nil)');
      else resolve((m[2] ?? m[1]) as string);
    });
    s.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}
