/**
 * `npm run bench:ownership`: what task ownership costs on this machine.
 *
 *   1. Added latency per call: three a2a-guard proxies in this process (ownership off, in-memory
 *      store, Redis store on a local redis-server), the same fast stub agent (stub-agent.ts) and an
 *      instant in-process guardian, so the differences are the ownership work. One keep-alive
 *      connection, sequential calls: `message/send` (creates a task: one store write before the
 *      answer is relayed) and `tasks/get` of those tasks (one store read before the guardian).
 *      Interleaved rounds, the order rotating; medians over rounds of each round's p50. Callers are
 *      unverified (one shared owner): the store work is the same for every owner, and the identity
 *      check's own cost is left out.
 *   2. Memory per stored task: a new task in a new context is two bindings (task and context).
 *      In memory: V8 heap after a full GC, before and after 200,000 tasks. Redis: `INFO memory`
 *      used_memory before and after 100,000 tasks.
 *
 * Needs `redis-server` on PATH for the Redis rows (skipped with a note otherwise). Options (env):
 * BENCH_ROUNDS (default 8), BENCH_SEQ (calls per round and proxy, default 300), BENCH_TASKS
 * (memory phase, default 200000).
 */
import http from 'node:http';
import net from 'node:net';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { configFrom } from '../src/config/config';
import { createLogger } from '../src/runtime/log';
import { startProxy, type ProxyInstance } from '../src/server';
import type { Guardian } from '../src/aos/guardian';
import { MemoryOwnerStore } from '../src/ownership/store';
import { createRedisStore } from '../src/ownership/redis';
import { ownerKey } from '../src/ownership/principal';
import { startStubAgent } from './stub-agent';

const num = (name: string, def: number): number => (process.env[name] ? Number(process.env[name]) : def);
const ROUNDS = num('BENCH_ROUNDS', 8);
const SEQ = num('BENCH_SEQ', 300);
const TASKS = num('BENCH_TASKS', 200_000);
const OWNER = ownerKey({ source: 'assertion', issuer: 'sidecar-2026-01', subject: 'cooking-assistant' });

/** An instant guardian: every call allowed, no network. */
const allowAll: Guardian = {
  describe: 'bench allow-all',
  decide: () => Promise.resolve({ ok: true, result: { decision: 'allow', message: 'ok' } }),
  ping: () => Promise.resolve(true),
  close: () => undefined,
};

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function startRedis(): Promise<{ url: string; port: number; child: ChildProcess } | undefined> {
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined;
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    if ((await redisCommand(port, 'PING').catch(() => '')) === '+PONG') return { url: `redis://127.0.0.1:${port}`, port, child };
    await new Promise((r) => setTimeout(r, 25));
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

/** One inline command; the raw reply. */
function redisCommand(port: number, cmd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let buf = '';
    s.on('error', reject);
    s.on('data', (d) => {
      buf += d.toString();
      // A status/integer line, or a complete bulk reply.
      const bulk = /^\$(\d+)\r\n/.exec(buf);
      if ((bulk === null && buf.includes('\r\n')) || (bulk !== null && buf.length >= bulk[0].length + Number(bulk[1]) + 2)) {
        s.end();
        resolve(buf.trim());
      }
    });
    s.write(`${cmd}\r\n`);
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function rpc(base: string, body: object): Promise<{ ms: number; json: Record<string, unknown> }> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      `${base}/a2a/jsonrpc`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ ms: performance.now() - t0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const send = (i: number) => ({
  jsonrpc: '2.0',
  id: i,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'hello' }] } },
});
const get = (i: number, id: string) => ({ jsonrpc: '2.0', id: i, method: 'tasks/get', params: { id } });

/** A task id as JSON.parse hands it over: one flat string. */
const parsedId = (): string => JSON.parse(`"${randomUUID()}"`) as string;

const p50 = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};
const median = p50;
const fmt = (ms: number): string => `${ms >= 0 ? '+' : ''}${ms.toFixed(3)}`;

async function latencyPhase(proxies: Array<{ name: string; proxy: ProxyInstance }>): Promise<void> {
  const rounds: Record<string, { send: number[]; get: number[] }> = {};
  for (const { name } of proxies) rounds[name] = { send: [], get: [] };
  // Warm-up: JIT, connections, card.
  for (const { proxy } of proxies) for (let i = 0; i < 200; i++) await rpc(proxy.url, send(i));
  for (let r = 0; r < ROUNDS; r++) {
    const order = proxies.map((_, i) => proxies[(i + r) % proxies.length] as (typeof proxies)[number]);
    for (const { name, proxy } of order) {
      const sendMs: number[] = [];
      const getMs: number[] = [];
      const ids: string[] = [];
      for (let i = 0; i < SEQ; i++) {
        const a = await rpc(proxy.url, send(i));
        sendMs.push(a.ms);
        ids.push(String((a.json.result as { id?: unknown } | undefined)?.id));
      }
      for (let i = 0; i < SEQ; i++) {
        const a = await rpc(proxy.url, get(i, ids[i] as string));
        if (!('result' in a.json)) throw new Error(`${name}: tasks/get refused: ${JSON.stringify(a.json)}`);
        getMs.push(a.ms);
      }
      (rounds[name] as { send: number[] }).send.push(p50(sendMs));
      (rounds[name] as { get: number[] }).get.push(p50(getMs));
    }
  }
  const off = rounds.off as { send: number[]; get: number[] };
  console.log(`\n1. latency per call (p50 of ${SEQ} sequential calls per round, median of ${ROUNDS} rounds; one connection)`);
  console.log('| proxy | message/send p50 ms | added | tasks/get p50 ms | added |');
  console.log('|---|--:|--:|--:|--:|');
  for (const { name } of proxies) {
    const x = rounds[name] as { send: number[]; get: number[] };
    const s = median(x.send);
    const g = median(x.get);
    console.log(
      `| ${name} | ${s.toFixed(3)} | ${name === 'off' ? '—' : fmt(s - median(off.send))} | ${g.toFixed(3)} | ${name === 'off' ? '—' : fmt(g - median(off.get))} |`,
    );
  }
}

async function memoryPhase(redisUrl: string | undefined, redisPort: number | undefined): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  console.log(`\n2. memory per stored task (a task in a new context: 2 bindings; owner key ${OWNER.length} characters)`);
  if (gc === undefined) {
    console.log('   (in-memory row needs node --expose-gc)');
  } else {
    const store = new MemoryOwnerStore({ ttlSeconds: 3600, maxEntries: TASKS * 2 + 10 });
    gc();
    const before = process.memoryUsage().heapUsed;
    // Ids as the pipeline holds them (parsed from the agent's JSON answer; randomUUID() itself returns a
    // string of ~20 concatenated pieces, ~490 bytes), and the owner key built anew per call, as the pipeline does.
    for (let i = 0; i < TASKS; i++)
      await store.claim([`t:${parsedId()}`, `c:${parsedId()}`], ownerKey({ source: 'assertion', issuer: 'sidecar-2026-01', subject: 'cooking-assistant' }));
    gc();
    const after = process.memoryUsage().heapUsed;
    console.log(`   in memory: ${((after - before) / TASKS).toFixed(0)} bytes per task (${TASKS} tasks, ${((after - before) / 1048576).toFixed(1)} MiB heap)`);
    await store.close();
  }
  if (redisUrl === undefined || redisPort === undefined) return;
  const n = Math.min(TASKS, 100_000);
  const store = await createRedisStore({ url: redisUrl, prefix: 'a2a-guard:tasks:', ttlSeconds: 3600, timeoutMs: 5000, logger: createLogger('silent') });
  const used = async () => Number(/used_memory:(\d+)/.exec(await redisCommand(redisPort, 'INFO memory'))?.[1]);
  await redisCommand(redisPort, 'FLUSHALL');
  const before = await used();
  const batch: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) {
    batch.push(store.claim([`t:${parsedId()}`, `c:${parsedId()}`], OWNER));
    if (batch.length >= 200) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
  const after = await used();
  console.log(
    `   Redis:     ${((after - before) / n).toFixed(0)} bytes per task (${n} tasks, used_memory +${((after - before) / 1048576).toFixed(1)} MiB; key prefix a2a-guard:tasks:, TTL set)`,
  );
  await store.close();
}

async function main(): Promise<void> {
  const stub = await startStubAgent();
  const redis = await startRedis();
  const logger = createLogger('silent');
  const base = { PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', LOG_LEVEL: 'silent', UPSTREAM_URL: stub.origin, ROLE: 'server' };
  const proxies: Array<{ name: string; proxy: ProxyInstance }> = [];
  const start = async (name: string, env: Record<string, string>) => {
    proxies.push({ name, proxy: await startProxy({ config: configFrom({ ...base, ...env }), logger, guardian: allowAll }) });
  };
  try {
    console.log(
      `a2a-guard task ownership bench: node ${process.version}, ${ROUNDS} rounds x ${SEQ} calls; redis-server ${redis === undefined ? 'not found (Redis rows skipped)' : 'on 127.0.0.1'}`,
    );
    await start('off', {});
    await start('memory', { TASK_OWNERSHIP: 'true' });
    if (redis !== undefined) await start('redis', { TASK_OWNERSHIP: 'true', TASK_STORE_URL: redis.url });
    if (redis !== undefined) {
      const t: number[] = [];
      for (let i = 0; i < 200; i++) {
        const t0 = performance.now();
        await redisCommand(redis.port, 'PING');
        t.push(performance.now() - t0);
      }
      console.log(`redis round trip (new connection + PING) p50 ${p50(t).toFixed(3)} ms`);
    }
    await latencyPhase(proxies);
    for (const { proxy } of proxies) await proxy.close();
    proxies.length = 0;
    await memoryPhase(redis?.url, redis?.port);
  } finally {
    for (const { proxy } of proxies) await proxy.close();
    agent.destroy();
    await stub.close();
    redis?.child.kill('SIGKILL');
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
