/**
 * No caller can hurt another through what every caller shares: the in-flight body budget, calls in
 * flight, the call rate and the guardian's connections. An attacker (caller A, or an unverified
 * address) works against a real SDK agent through a2a-guard while a victim (caller B, a real SDK
 * client with its own verified identity) makes ordinary calls. Oracle: every victim call succeeds and
 * reaches the agent's handler; the attacker alone is answered 429 / -31429 with Retry-After.
 */
import { makeClient, rawRpc, sendReq, textOf, type Client } from '../../helpers/agent';
import { announce, sleep, waitFor } from '../../helpers/net';
import { startRedis, type TestRedis } from '../../helpers/redis';
import { counted, useStack, type TestProxy } from '../../helpers/proxy-harness';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';

const stack = useStack({ name: 'Shared Agent', version: '1.0.0' });
let ids: TestIdentities;

beforeAll(async () => {
  ids = await startIdentities();
});
afterAll(async () => {
  await ids?.close();
});

const clientAs = (proxy: TestProxy, who: Caller): Promise<Client> => makeClient(proxy.url, 'JSONRPC', '1.0', { fetchImpl: ids.fetchAs(who) });

/** A v1.0 JSON-RPC SendMessage as `who`, raw: status, headers and body as the caller gets them. */
const sendAs = (proxy: TestProxy, who: Caller | undefined, text: string, id: number | string = 1) =>
  rawRpc(
    `${proxy.url}/a2a/jsonrpc`,
    { jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `m-${id}-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] } } },
    { 'a2a-version': '1.0', ...(who === undefined ? {} : ids.headersAs(who)) },
  );

describe('the in-flight body budget', () => {
  test('connections that announce large bodies and send nothing hold none of it: a verified caller is served', async () => {
    // Six announced bodies would fill the budget exactly if announcing held bytes; the attacker's share is
    // the whole budget here, so only the rule under test stands between it and the victim.
    const budget = String(6 * 9 * 1024 * 1024);
    const proxy = await stack.proxy({
      ...ids.env,
      MAX_INFLIGHT_BODY_BYTES: budget,
      MAX_INFLIGHT_BODY_BYTES_PER_CALLER: budget,
      MAX_BODY_BYTES: String(9 * 1024 * 1024),
    });
    // With credentials (a verified caller holding sockets open), and without (refused unread).
    const sockets = await Promise.all(Array.from({ length: 12 }, (_v, i) => announce(proxy.url, 9 * 1024 * 1024, i % 2 === 0 ? ids.headersAs('A') : {})));
    try {
      await sleep(100);
      expect(proxy.metrics.bodyBytesInFlight()).toBe(0);
      const victim = await clientAs(proxy, 'B');
      for (let i = 0; i < 3; i++) expect(textOf(await victim.sendMessage(sendReq(`hello ${i}`)))).toContain(`hello ${i}`);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });

  test('an unverified caller with IDENTITY_POLICY=required is refused before a byte of its body is read (-31401, connection closed)', async () => {
    const proxy = await stack.proxy({ ...ids.env });
    const s = await announce(proxy.url, 5 * 1024 * 1024);
    const answer = await new Promise<string>((resolve) => {
      let got = '';
      s.on('data', (c: Buffer) => (got += c.toString('latin1')));
      s.on('close', () => resolve(got));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer).toContain('"id":null');
    expect(answer).toContain('-31401');
  });

  test("a caller past its own share of in-flight bytes is answered 429 with Retry-After; another caller's large body is read", async () => {
    // A share of two 1 MiB requests, each held three times while judged.
    const proxy = await stack.proxy({ ...ids.env, MAX_BODY_BYTES: String(1024 * 1024), MAX_INFLIGHT_BODY_BYTES_PER_CALLER: String(6 * 1024 * 1024) });
    // A sends two bodies of 1 MiB, slowly enough to be held, fast enough for the rate rule.
    const held = await Promise.all([0, 1].map(() => announce(proxy.url, 1024 * 1024, ids.headersAs('A'))));
    const part = Buffer.alloc(700 * 1024, 0x20);
    for (const s of held) s.write(part);
    await waitFor(() => proxy.metrics.bodyBytesInFlight() >= 2 * 3 * part.length, 10_000, 'the attacker holds its share');
    try {
      const over = await sendAs(proxy, 'A', 'x'.repeat(800 * 1024));
      expect(over.status).toBe(429);
      expect(over.headers['retry-after']).toBe('1');
      expect(over.text).toContain('-31429');
      expect(await counted(proxy, 'a2a_guard_caller_limited_total', 'bytes')).toBe(1);
      const victim = await sendAs(proxy, 'B', `big ${'y'.repeat(90 * 1024)}`); // the SDK agent reads at most 100 KB
      expect(victim.status).toBe(200);
      expect(victim.json?.result).toBeDefined();
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

describe('calls in flight and the call rate, per caller', () => {
  test('MAX_CALLS_PER_CALLER: a caller with its calls in flight is refused the next one (429; CALL_WAIT_MS=0: at once); another caller is not', async () => {
    const proxy = await stack.proxy({ ...ids.env, MAX_CALLS_PER_CALLER: '2', CALL_WAIT_MS: '0' });
    const a = await clientAs(proxy, 'A');
    const running = [a.sendMessage(sendReq('slow')), a.sendMessage(sendReq('slow'))];
    await waitFor(() => stack.agent.received.filter((r) => r.method === 'POST').length >= 2, 10_000, 'two calls at the agent');
    const third = await sendAs(proxy, 'A', 'third');
    expect(third.status).toBe(429);
    expect(third.headers['retry-after']).toBe('1');
    expect(third.json?.error?.code).toBe(-31429);
    const b = await clientAs(proxy, 'B');
    expect(textOf(await b.sendMessage(sendReq('victim')))).toContain('victim');
    void Promise.allSettled(running);
  }, 40_000);

  test('RATE_LIMIT_PER_SECOND: past its burst a caller gets 429 with Retry-After; another caller keeps its own bucket', async () => {
    const proxy = await stack.proxy({ ...ids.env, RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '3' });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await sendAs(proxy, 'A', `a ${i}`, i)).status);
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses.slice(3)).toEqual([429, 429]);
    const limited = await sendAs(proxy, 'A', 'again');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 3; i++) expect((await sendAs(proxy, 'B', `b ${i}`, i)).status).toBe(200);
  });

  describe('shared by replicas through Redis', () => {
    let redis: TestRedis;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(async () => {
      await redis?.close();
    });

    test("one bucket per caller across replicas: what A spent at one replica counts at the other; B's bucket is its own", async () => {
      const env = { ...ids.env, RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '3', TASK_STORE_URL: redis.url };
      const [one, two] = [await stack.proxy(env), await stack.proxy(env)];
      try {
        const statuses = [];
        for (let i = 0; i < 3; i++) statuses.push((await sendAs(i % 2 === 0 ? one : two, 'A', `a ${i}`, i)).status);
        statuses.push((await sendAs(two, 'A', 'a 3', 3)).status);
        expect(statuses).toEqual([200, 200, 200, 429]);
        expect((await sendAs(one, 'B', 'b', 9)).status).toBe(200);
      } finally {
        // Closed while their Redis is still up (this block's afterAll stops it before the stack's closes them).
        await one.close();
        await two.close();
      }
    });
  });
});

describe("the guardian's connections", () => {
  test('GUARDIAN_CALLS_PER_CALLER: slow-to-judge calls of one caller wait in its own line; another caller is judged at once', async () => {
    const proxy = await stack.proxy({ ...ids.env, GUARDIAN_CALL_CONNECTIONS: '4', GUARDIAN_CALLS_PER_CALLER: '2', GUARDIAN_TIMEOUT_MS: '20000' });
    stack.guardian.script((env) =>
      JSON.stringify(env.params?.payload ?? '').includes('judge me slowly') ? { decision: 'allow', delayMs: 3000 } : { decision: 'allow' },
    );
    const order: string[] = [];
    const attacker = Array.from({ length: 6 }, (_v, i) => sendAs(proxy, 'A', 'judge me slowly', i).then(() => order.push('attacker')));
    await waitFor(() => stack.guardian.load.inFlight >= 2, 10_000, 'the attacker at the guardian');
    const victim = await sendAs(proxy, 'B', 'quick question');
    order.push('victim');
    expect(victim.json?.result).toBeDefined();
    // Judged while every one of the attacker's calls was still waiting for the guardian.
    expect(order[0]).toBe('victim');
    expect(stack.guardian.load.maxInFlight).toBeLessThanOrEqual(3);
    await Promise.all(attacker);
  }, 60_000);
});
