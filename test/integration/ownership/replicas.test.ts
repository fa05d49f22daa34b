/**
 * Task ownership across replicas: two ROLE=server a2a-guard replicas in front of one real SDK agent
 * share a real redis-server (TASK_STORE_URL). A creates a task through replica 1; B is refused
 * through replica 2; A succeeds through replica 2. Then Redis stops mid-run: the FAIL_MODE=closed
 * replica refuses calls that need the store (-31504), the FAIL_MODE=open replica passes them and
 * counts them; once Redis is back, ownership is enforced again. A page token sealed by one replica
 * opens on the other (the sealing secret is shared through Redis).
 */
import { makeClient, sendReq, type Client, type TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { startRedis, type TestRedis } from '../../helpers/redis';
import { waitFor } from '../../helpers/net';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';

const stack = useStack();
let agent: TestAgent;
let guardian: TestGuardian;
let ids: TestIdentities;
let redis: TestRedis;
let r1: TestProxy;
let r2: TestProxy;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  ids = await startIdentities();
  redis = await startRedis();
  const env = { ROLE: 'server', ...ids.env, TASK_STORE_URL: redis.url, TASK_STORE_PREFIX: 'echo-agent:', TASK_STORE_TIMEOUT_MS: '300' };
  r1 = await stack.proxy({ ...env, FAIL_MODE: 'closed' });
  r2 = await stack.proxy({ ...env, FAIL_MODE: 'open' });
});
afterAll(async () => {
  await ids?.close();
  await redis?.close();
});

const via = (replica: TestProxy, who: Caller): Promise<Client> => makeClient(replica.url, 'JSONRPC', '1.0', { fetchImpl: ids.fetchAs(who) });
const get = (c: Client, id: string) => c.getTask({ tenant: '', id, historyLength: undefined });

async function failure(p: Promise<unknown>): Promise<(Error & { code?: number }) | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return err as Error & { code?: number };
  }
}

async function counter(p: TestProxy, name: string, outcome?: string): Promise<number> {
  const text = await p.metrics.registry.metrics();
  let n = 0;
  const re = new RegExp(`^${name}(\\{[^}]*\\})? (\\d+)`, 'gm');
  for (const m of text.matchAll(re)) if (outcome === undefined || (m[1] ?? '').includes(`outcome="${outcome}"`)) n += Number(m[2]);
  return n;
}

test('A creates through replica 1; B is refused through replica 2; A succeeds through replica 2', async () => {
  const a1 = await via(r1, 'A');
  const a2 = await via(r2, 'A');
  const b2 = await via(r2, 'B');
  const task = (await a1.sendMessage(sendReq('shared'))) as { id: string; contextId: string };
  expect(await redis.command('GET', `echo-agent:t:${task.id}`)).toBe(ids.ownerOf('A'));
  expect(await redis.command('GET', `echo-agent:c:${task.contextId}`)).toBe(ids.ownerOf('A'));

  agent.clear();
  guardian.clear();
  expect((await failure(get(b2, task.id)))?.message).toBe(`Task not found: ${task.id}`);
  expect((await failure(b2.sendMessage(sendReq('in', false, { contextId: task.contextId }))))?.message).toBe(`Task not found: ${task.contextId}`);
  expect(agent.received.filter((r) => r.method === 'POST')).toEqual([]);
  expect(guardian.calls()).toEqual([]);
  expect(await get(a2, task.id)).toMatchObject({ id: task.id });
  // B's own task, created on replica 2, is B's on replica 1 too.
  const bTask = (await b2.sendMessage(sendReq('mine'))) as { id: string };
  expect((await failure(get(a1, bTask.id)))?.message).toBe(`Task not found: ${bTask.id}`);
});

test('a page token sealed by one replica opens on the other, for its owner only (the secret is shared through Redis)', async () => {
  const a1 = await via(r1, 'A');
  for (const n of [1, 2, 3]) await a1.sendMessage(sendReq(`page ${n}`));
  const list = (c: Client, pageToken: string) =>
    c.listTasks({
      tenant: '',
      contextId: '',
      status: 0,
      pageSize: 1,
      pageToken,
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: undefined,
    });
  const first = await list(a1, '');
  expect(first.nextPageToken).toBeTruthy();
  expect(await redis.command('EXISTS', 'echo-agent:s:page-token-secret')).toBe('1');
  const second = await list(await via(r2, 'A'), first.nextPageToken);
  expect(second.tasks).toHaveLength(1);
  expect(second.tasks[0]?.id).not.toBe(first.tasks[0]?.id);
  expect((await failure(list(await via(r2, 'B'), first.nextPageToken)))?.message).toMatch(/Invalid page token/);
});

test('Redis stopped mid-run: FAIL_MODE=closed refuses calls that need the store, FAIL_MODE=open passes and counts them; back up, ownership holds again', async () => {
  const a1 = await via(r1, 'A');
  const b1 = await via(r1, 'B');
  const b2 = await via(r2, 'B');
  const task = (await a1.sendMessage(sendReq('before the outage'))) as { id: string };
  const openBefore = await counter(r2, 'a2a_guard_task_ownership_total', 'store_unavailable_passed');
  const failOpenBefore = await counter(r2, 'a2a_guard_fail_open_passes_total');

  await redis.stop();
  try {
    // closed: a clear error, nothing reaches the guardian or the agent.
    agent.clear();
    guardian.clear();
    const refused = await failure(get(a1, task.id));
    expect(refused?.message).toMatch(/Task owner store unavailable/);
    expect(refused?.code ?? (refused as { envelopeCode?: number } | undefined)?.envelopeCode).toBe(-31504);
    expect((await failure(get(b1, task.id)))?.message).toMatch(/Task owner store unavailable/);
    expect(guardian.calls()).toEqual([]);
    expect(agent.received.filter((r) => r.method === 'POST')).toEqual([]);
    // A call that names no task never waits on the store; the answer cannot be bound under closed.
    expect((await failure(a1.sendMessage(sendReq('new during the outage'))))?.message).toMatch(/Task owner store unavailable/);

    // open: passed unchecked (even B's lookup of A's task), logged and counted.
    expect(await get(b2, task.id)).toMatchObject({ id: task.id });
    expect((await counter(r2, 'a2a_guard_task_ownership_total', 'store_unavailable_passed')) - openBefore).toBeGreaterThanOrEqual(1);
    expect((await counter(r2, 'a2a_guard_fail_open_passes_total')) - failOpenBefore).toBeGreaterThanOrEqual(1);
  } finally {
    await redis.start();
  }

  // Back up (an empty Redis: bindings made before the outage are gone, so that task is refused to everyone).
  await waitFor(async () => (await failure(get(a1, task.id)))?.message === `Task not found: ${task.id}`, 40_000, 'replica 1 to reach Redis again');
  // Replica 2 runs FAIL_MODE=open: until it has reconnected too, it would pass B's call unchecked.
  await waitFor(async () => (await failure(get(b2, task.id)))?.message === `Task not found: ${task.id}`, 40_000, 'replica 2 to reach Redis again');
  const after = (await a1.sendMessage(sendReq('after the outage'))) as { id: string };
  expect(await get(a1, after.id)).toMatchObject({ id: after.id });
  expect((await failure(get(b2, after.id)))?.message).toBe(`Task not found: ${after.id}`);
}, 120_000);
