/**
 * `npm run bench:hostile`: what hostile request bodies cost the proxy (issue 10, bounded work).
 *
 *   1. memory held per in-flight byte: N concurrent large message/send calls while the guardian
 *      holds every call for a while; peak RSS growth over the bytes in flight, with and without
 *      the MAX_INFLIGHT_BODY_BYTES budget cutting in;
 *   2. the worst event-loop stall (perf_hooks' event-loop delay, max) while hostile bodies arrive:
 *      stacked codings, a single-layer decompression bomb, deep nesting, many keys, a long path.
 *
 * All on 127.0.0.1. The proxy runs in this process (startProxy); a minimal upstream that answers JSON-RPC
 * and a guardian that answers allow after GUARDIAN_DELAY_MS run in a child process (this file, `peers`),
 * and the clients of part 1 send from another (`client`), so only the proxy's copies of the bodies are counted.
 *
 * Options (environment): CALLS, BODY_MIB, BUDGETS_MIB (one run per budget), CALLERS (the calls come from that many
 * addresses, each a caller of its own), GUARDIAN_DELAY_MS, BENCH_GUARDIAN=embedded, PARTS=memory (part 1 only).
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { configFrom } from '../src/config/config';
import { createLogger } from '../src/runtime/log';
import { startProxy, type ProxyInstance } from '../src/server';
import { embeddedGuardian } from '../src/guardian/embedded';

const MiB = 1024 * 1024;

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function drain(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

function post(url: string, body: Buffer, headers: Record<string, string> = {}, localAddress?: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers },
        ...(localAddress === undefined ? {} : { localAddress }),
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

const call = (text: string) =>
  Buffer.from(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text }] } },
    }),
  );

/** `calls` concurrent posts of a `size`-byte call from a child process (its copies of the bodies are not in this process's RSS): their statuses. */
function clientProcess(url: string, calls: number, size: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [__filename, 'client', url, String(calls), String(size)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', () => resolve(JSON.parse(out) as number[]));
  });
}

async function client(url: string, calls: number, size: number): Promise<void> {
  const body = call('x'.repeat(size - 200));
  // CALLERS: the calls come from this many addresses (127.0.0.2, .3, ...), each a caller of its own to the proxy.
  const callers = Number(process.env.CALLERS ?? 1);
  const from = (i: number): string | undefined => (callers > 1 ? `127.0.0.${2 + (i % callers)}` : undefined);
  const statuses = await Promise.all(Array.from({ length: calls }, (_, i) => post(url, body, {}, from(i))));
  process.stdout.write(JSON.stringify(statuses));
}

/** The agent and the guardian, in a process of their own (their copies of the bodies are not in the proxy's RSS): their URLs on stdout. */
async function peers(): Promise<void> {
  const delayMs = Number(process.env.GUARDIAN_DELAY_MS ?? 3000);
  const upstream = await listen(async (req, res) => {
    await drain(req);
    const body = '{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"a","role":"agent","parts":[]}}';
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
  });
  const guardian = await listen(async (req, res) => {
    const env = JSON.parse((await drain(req)).toString('utf8')) as { id: string; method: string };
    const answer = JSON.stringify({ jsonrpc: '2.0', id: env.id, result: env.method === 'ping' ? { status: 'ok' } : { decision: 'allow', message: 'ok' } });
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(answer), env.method === 'ping' ? 0 : delayMs);
  });
  process.stdout.write(`${JSON.stringify({ upstream: upstream.url, guardian: guardian.url })}\n`);
  // Serves until the bench process ends or stops it.
  await new Promise((resolve) => process.once('disconnect', resolve));
}

function startPeers(): Promise<{ urls: { upstream: string; guardian: string }; stop: () => void }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [__filename, 'peers'], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve({ urls: JSON.parse(out) as { upstream: string; guardian: string }, stop: () => child.kill() });
    });
    child.on('error', reject);
  });
}

async function main(): Promise<void> {
  const peer = await startPeers();
  const upstream = { url: peer.urls.upstream };
  const guardian = { url: peer.urls.guardian };

  const start = async (env: Record<string, string>): Promise<ProxyInstance> => {
    const config = configFrom({
      UPSTREAM_URL: upstream.url,
      GUARDIAN_URL: guardian.url,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      GUARDIAN_TIMEOUT_MS: '60000',
      REST_BASE_PATHS: '/a2a/rest',
      ...env,
    });
    // BENCH_GUARDIAN=embedded: the embedded guardian (config/policy.json; its worker's copies are in this process), else the slow one.
    const embedded = process.env.BENCH_GUARDIAN === 'embedded' ? embeddedGuardian(path.resolve(__dirname, '..', '..', 'config', 'policy.json')) : undefined;
    return startProxy({ config, logger: createLogger('silent'), ...(embedded === undefined ? {} : { guardian: embedded }) });
  };

  // 1. memory per in-flight byte
  const calls = Number(process.env.CALLS ?? 20);
  const size = Number(process.env.BODY_MIB ?? 9) * MiB;
  const body = call('x'.repeat(size - 200));
  // BUDGETS_MIB: one budget per process run gives its own peak (RSS a run grew to is not given back to the next).
  for (const budget of (process.env.BUDGETS_MIB ?? '65536,256').split(',').map((m) => String(Number(m) * MiB))) {
    // One client address: its share is the whole budget here (the per-caller share is measured by bench:fairness).
    const proxy = await start({ MAX_BODY_BYTES: String(16 * MiB), MAX_INFLIGHT_BODY_BYTES: budget, MAX_INFLIGHT_BODY_BYTES_PER_CALLER: budget });
    global.gc?.();
    const before = process.memoryUsage().rss;
    const base = process.memoryUsage();
    let peak = before;
    let atPeak = base;
    let peakHeld = 0;
    const sampler = setInterval(() => {
      const m = process.memoryUsage();
      if (m.rss > peak) [peak, atPeak] = [m.rss, m];
      peakHeld = Math.max(peakHeld, proxy.metrics.bodyBytesInFlight());
    }, 20);
    const sent = performance.now();
    const cpu = process.cpuUsage();
    const statuses = await clientProcess(`${proxy.url}/a2a/jsonrpc`, calls, size);
    const tookS = (performance.now() - sent) / 1000;
    const used = process.cpuUsage(cpu);
    clearInterval(sampler);
    const admitted = statuses.filter((s) => s === 200).length;
    const inFlight = admitted * body.length;
    console.log(
      `in-flight memory, budget ${Number(budget) / MiB} MiB: ${calls} x ${(body.length / MiB).toFixed(1)} MiB calls, ${admitted} admitted, ${calls - admitted} told to retry (503); ` +
        `peak RSS +${((peak - before) / MiB).toFixed(0)} MiB for ${(inFlight / MiB).toFixed(0)} MiB admitted = ${((peak - before) / Math.max(1, inFlight)).toFixed(2)} bytes of RSS per in-flight byte ` +
        `(the proxy's process; the client sends from a process of its own); ` +
        `peak budget held ${(peakHeld / MiB).toFixed(0)} MiB = ${((peak - before) / Math.max(1, peakHeld)).toFixed(2)} bytes of RSS per budget byte`,
    );
    // What the peak was made of: the heap (parsed requests, strings) and the buffers (request bytes, socket chunks).
    const grew = (k: 'heapTotal' | 'heapUsed' | 'external' | 'arrayBuffers') => `${k} +${((atPeak[k] - base[k]) / MiB).toFixed(0)}`;
    console.log(
      `  at the peak (MiB): ${grew('heapTotal')}, ${grew('heapUsed')}, ${grew('external')}, ${grew('arrayBuffers')}; all answered in ${tookS.toFixed(1)} s; ` +
        `the proxy's process used ${((used.user + used.system) / 1000 / calls).toFixed(0)} ms of CPU per call`,
    );
    await proxy.close();
  }

  // 2. worst event-loop stall under hostile bodies (guardian answers at once); PARTS=memory: part 1 only.
  if (process.env.PARTS === 'memory') {
    peer.stop();
    return;
  }
  const fast = await start({});
  const plain = call('hello');
  let layered = plain;
  for (let i = 0; i < 600; i++) layered = zlib.gzipSync(layered, { level: 0 });
  const bomb = zlib.gzipSync(Buffer.alloc(9 * MiB, 0x20));
  const deep = Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":${'['.repeat(500_000)}${']'.repeat(500_000)}}`);
  const manyKeys = Buffer.from(
    JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: Object.fromEntries(Array.from({ length: 300_000 }, (_, i) => [`k${i}`, i])) }),
  );
  const cases: [string, Buffer, Record<string, string>, string][] = [
    ['600 stacked gzip layers', layered, { 'content-encoding': Array(600).fill('gzip').join(', ') }, '/a2a/jsonrpc'],
    ['9 MiB gzip bomb (one layer, 9 KiB on the wire)', bomb, { 'content-encoding': 'gzip' }, '/a2a/jsonrpc'],
    ['500,000-deep nesting', deep, {}, '/a2a/jsonrpc'],
    ['300,000 keys in params', manyKeys, {}, '/a2a/jsonrpc'],
    ['4,000-segment path', plain, {}, `/${'a/'.repeat(4000)}jsonrpc`],
  ];
  for (const [name, b, headers, path] of cases) {
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const statuses = await Promise.all(Array.from({ length: 4 }, () => post(`${fast.url}${path}`, b, headers)));
    h.disable();
    console.log(`event-loop stall, ${name}: max ${(h.max / 1e6).toFixed(1)} ms (answers ${[...new Set(statuses)].join(',')})`);
  }
  await fast.close();
  peer.stop();
}

const role = process.argv[2];
(role === 'client' ? client(process.argv[3] as string, Number(process.argv[4]), Number(process.argv[5])) : role === 'peers' ? peers() : main()).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
