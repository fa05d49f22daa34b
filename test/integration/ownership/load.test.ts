/**
 * Task ownership under load: 10,000 tasks created and looked up through two ROLE=server replicas
 * sharing a real redis-server, by two callers verified by their client certificates (mutual TLS), with a fast stub agent (bench/stub-agent.ts:
 * the SDK agent would dominate the run) and an instant in-process guardian. Every decision is
 * checked: each owner reads its task through the other replica, each other caller is told "not
 * found" and never reaches the agent. Memory stays bounded: Redis holds exactly two keys per task,
 * each with a TTL, and the in-memory store of a third proxy never holds more than
 * TASK_STORE_MAX_ENTRIES (the oldest make room, counted).
 */
import { request } from 'undici';
import type { Guardian } from '../../../src/aos/guardian';
import { startStubAgent, type StubAgent } from '../../../bench/stub-agent';
import { startRedis, type TestRedis } from '../../helpers/redis';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { startTlsIdentities, type Caller, type TlsIdentities } from '../../helpers/identities';

// A volume test: its bound is generous because the machine running it may be shared with other work.
jest.setTimeout(600_000);

const TASKS = 10_000;
const CONCURRENCY = 32;

const allowAll: Guardian = {
  describe: 'allow-all',
  decide: () => Promise.resolve({ ok: true, result: { decision: 'allow', message: 'ok' } }),
  ping: () => Promise.resolve(true),
  close: () => undefined,
};

let stub: StubAgent;
let ids: TlsIdentities;
let redis: TestRedis;
let r1: TestProxy;
let r2: TestProxy;

beforeAll(async () => {
  stub = await startStubAgent();
  // Client certificates: verified once per connection, so the run measures ownership, not signature checks.
  ids = await startTlsIdentities(CONCURRENCY);
  redis = await startRedis();
  const env = { ROLE: 'server', UPSTREAM_URL: stub.origin, ...ids.env, TASK_STORE_URL: redis.url, TASK_STORE_TIMEOUT_MS: '2000' };
  r1 = await startTestProxy(env, allowAll);
  r2 = await startTestProxy(env, allowAll);
});
afterAll(async () => {
  await r1?.close();
  await r2?.close();
  await redis?.close();
  await ids?.close();
  await stub?.close();
});

async function rpc(
  replica: TestProxy,
  who: Caller,
  body: object,
): Promise<{ result?: { id?: string; contextId?: string }; error?: { code: number; message: string } }> {
  const r = await request(`${replica.url}/a2a/jsonrpc`, {
    method: 'POST',
    dispatcher: ids.dispatcherAs(who),
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return (await r.body.json()) as never;
}

/** Run `fn` for 0..n-1 with at most CONCURRENCY in flight. */
async function pool(n: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

const send = (i: number) => ({
  jsonrpc: '2.0',
  id: i,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${i}`, role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
});
const get = (i: number, id: string) => ({ jsonrpc: '2.0', id: i, method: 'tasks/get', params: { id } });

test(`${TASKS} tasks created and looked up through two replicas: no wrong decision, two Redis keys per task`, async () => {
  const owner: Caller[] = [];
  const task: string[] = [];
  const replicas = [r1, r2] as const;
  const wrong: string[] = [];

  // Created alternately by A through replica 1 and B through replica 2.
  await pool(TASKS, async (i) => {
    const who: Caller = i % 2 === 0 ? 'A' : 'B';
    const a = await rpc(replicas[i % 2] as TestProxy, who, send(i));
    if (a.result?.id === undefined) wrong.push(`create ${i}: ${JSON.stringify(a)}`);
    owner[i] = who;
    task[i] = a.result?.id as string;
  });
  expect(wrong).toEqual([]);
  stub.reached.clear();

  // Each task looked up by its owner through the other replica, and by the other caller through either.
  await pool(TASKS, async (i) => {
    const who = owner[i] as Caller;
    const other: Caller = who === 'A' ? 'B' : 'A';
    const id = task[i] as string;
    const mine = await rpc(replicas[(i + 1) % 2] as TestProxy, who, get(i, id));
    if (mine.result?.id !== id) wrong.push(`owner ${who} ${id}: ${JSON.stringify(mine)}`);
    const theirs = await rpc(replicas[(i >> 1) % 2] as TestProxy, other, get(i, id));
    if (theirs.error?.code !== -32001 || theirs.error.message !== `Task not found: ${id}`) wrong.push(`other ${other} ${id}: ${JSON.stringify(theirs)}`);
  });
  expect(wrong.slice(0, 5)).toEqual([]);
  expect(wrong.length).toBe(0);
  // Only the owners' lookups reached the agent: once per task.
  expect(stub.reached.size).toBe(TASKS);
  expect([...stub.reached.values()].every((n) => n === 1)).toBe(true);
  expect(stub.calls.get('tasks/get')).toBe(TASKS);

  // A task and its (new) context per task, each key with a TTL; and the one page-token secret the replicas share.
  expect(await redis.command('EXISTS', 'a2a-guard:tasks:s:page-token-secret')).toBe('1');
  // Plus each caller's count of its bindings (one counter per slice of the TTL: one here).
  expect(Number(await redis.command('DBSIZE'))).toBe(2 * TASKS + 1 + 2);
  for (const i of [0, 1, TASKS - 1]) {
    const ttl = Number(await redis.command('TTL', `a2a-guard:tasks:t:${task[i] as string}`));
    expect(ttl).toBeGreaterThan(0);
  }
});

test('the in-memory store stays within TASK_STORE_MAX_ENTRIES: the oldest bindings make room, counted; recent tasks stay owned', async () => {
  const p = await startTestProxy({ ROLE: 'server', UPSTREAM_URL: stub.origin, ...ids.env, TASK_STORE_MAX_ENTRIES: '1000' }, allowAll);
  try {
    const created: string[] = [];
    await pool(2000, async (i) => {
      const a = await rpc(p, 'A', send(i));
      created[i] = a.result?.id as string;
    });
    // 2 bindings per task, 4,000 made, 1,000 kept.
    const text = await p.metrics.registry.metrics();
    expect(Number(/^a2a_guard_task_store_evictions_total (\d+)/m.exec(text)?.[1])).toBe(3000);
    const recent = created.slice(-100);
    for (const id of recent) expect((await rpc(p, 'A', get(1, id))).result?.id).toBe(id);
    // Evicted: refused as not found (ownership cannot be shown), also to the owner.
    expect((await rpc(p, 'A', get(1, created[0] as string))).error?.code).toBe(-32001);
  } finally {
    await p.close();
  }
});
