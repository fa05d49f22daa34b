/**
 * Replay protection that cannot be turned against others (README "Identity"): a caller with a
 * trusted signing key cannot fill the assertion replay cache for the other keys' callers, neither
 * with requests that are not A2A (a 404 spends no assertion id) nor with calls that are (each key
 * has its share of ASSERTION_REPLAY_CACHE_SIZE). With TASK_STORE_URL the ids are kept in Redis, so
 * an assertion is used once across every replica.
 *
 * Real keys in files, a real SDK agent whose request handler is recorded, a real guardian, ROLE=server
 * a2a-guard replicas in-process (IDENTITY_POLICY=required), a real redis-server.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rawRpc, textOf, type RawResponse } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { makeKey, signAssertion, writeJwks, type TestKey } from '../../helpers/keys';
import { startRedis, type TestRedis } from '../../helpers/redis';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

/** The URL the replicas of one service are reached by: the audience every assertion names. */
const AUDIENCE = 'https://baker.example';
const AGENTS: Record<'flooder' | 'other', { id: string; name: string; url: string; version: string }> = {
  flooder: { id: 'flooder', name: 'Flooder', url: 'https://flooder.example', version: '1' },
  other: { id: 'cooking-assistant', name: 'Cooking assistant', url: 'https://kitchen.example', version: '1' },
};

const rec = handlerRecorder();
const s = useStack({ wrapRequestHandler: rec.wrap });
let dir: string;
let keys: Record<'flooder' | 'other', TestKey>;
let trust: string;
let redis: TestRedis;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'a2a-guard-replay-'));
  keys = { flooder: await makeKey('flooder-key'), other: await makeKey('other-key') };
  trust = await writeJwks(dir, [keys.flooder, keys.other]);
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => rec.clear());

const replica = (env: Record<string, string> = {}): Promise<TestProxy> =>
  s.proxy({
    ROLE: 'server',
    IDENTITY_POLICY: 'required',
    ASSERTION_TRUST_JWKS_FILE: trust,
    ASSERTION_AUDIENCE: AUDIENCE,
    ASSERTION_REPLAY_CACHE_SIZE: '100',
    ...env,
  });

const assertionOf = (who: 'flooder' | 'other'): Promise<string> => signAssertion(keys[who], AGENTS[who], AUDIENCE);

let n = 0;
function send(p: TestProxy, assertion: string, text: string): Promise<RawResponse> {
  const body = {
    jsonrpc: '2.0',
    id: ++n,
    method: 'message/send',
    params: { message: { kind: 'message', messageId: `m-${n}`, role: 'user', parts: [{ kind: 'text', text }] } },
  };
  return rawRpc(`${p.url}/a2a/jsonrpc`, body, { 'x-aos-agent-assertion': assertion });
}

/** A call that is an A2A operation but costs the agent nothing: a task nobody owns ("not found" once the caller is verified). */
function getTask(p: TestProxy, assertion: string): Promise<RawResponse> {
  return rawRpc(
    `${p.url}/a2a/jsonrpc`,
    { jsonrpc: '2.0', id: ++n, method: 'tasks/get', params: { id: 'no-such-task' } },
    { 'x-aos-agent-assertion': assertion },
  );
}

const acted = (): string[] => rec.calls.filter((c) => c.method === 'sendMessage').map((c) => textOf(c.params));

test("fresh assertions sent to a path that is not A2A (404) spend nothing: the same key's next call is still verified", async () => {
  const p = await replica();
  for (let i = 0; i < 150; i++) {
    const r = await fetch(`${p.url}/not-an-a2a-route`, { headers: { 'x-aos-agent-assertion': await assertionOf('flooder') } });
    expect(r.status).toBe(404);
  }
  const ok = await send(p, await assertionOf('flooder'), 'after the 404s');
  expect({ error: ok.json?.error, text: textOf(ok.json) }).toEqual({ error: undefined, text: 'echo: after the 404s' });
  expect(acted()).toEqual(['after the 404s']);
});

test("fresh assertions on requests with a body that route nowhere are checked but not spent: the same key's next call is still verified", async () => {
  const p = await replica();
  // Verified before the body is read (admission), then refused by route: a POST to no route, a JSON-RPC method A2A lacks.
  for (let i = 0; i < 60; i++) {
    const nowhere = await fetch(`${p.url}/not-an-a2a-route`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-aos-agent-assertion': await assertionOf('flooder') },
      body: '{}',
    });
    expect(nowhere.status).toBeGreaterThanOrEqual(200);
    const unknown = await rawRpc(
      `${p.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: i, method: 'no/such/method', params: {} },
      { 'x-aos-agent-assertion': await assertionOf('flooder') },
    );
    expect(unknown.json?.error?.code).toBe(-32601);
  }
  const ok = await send(p, await assertionOf('flooder'), 'after the refusals');
  expect({ error: ok.json?.error, text: textOf(ok.json) }).toEqual({ error: undefined, text: 'echo: after the refusals' });
  // A used assertion is refused on such a request too (checked, before its body is read).
  const used = await assertionOf('flooder');
  expect((await send(p, used, 'first use')).json?.error).toBeUndefined();
  const again = await fetch(`${p.url}/not-an-a2a-route`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-aos-agent-assertion': used },
    body: '{}',
  });
  expect(((await again.json()) as { error?: { code?: number } }).error?.code).toBe(-31401);
  expect(acted()).toEqual(['after the refusals', 'first use']);
});

test("one key filling its share of the cache with real calls never refuses another key's callers", async () => {
  const p = await replica();
  // Two trusted keys, 100 ids: 50 each. The flooder's calls past its share are refused as its own problem.
  let verified = 0;
  let refused = 0;
  for (let i = 0; i < 100; i++) {
    const r = await getTask(p, await assertionOf('flooder'));
    if (r.json?.error?.code === -31401) refused++;
    else verified++;
  }
  expect({ verified, refused }).toEqual({ verified: 50, refused: 50 });
  const other = await send(p, await assertionOf('other'), 'the other key is served');
  expect({ error: other.json?.error, text: textOf(other.json) }).toEqual({ error: undefined, text: 'echo: the other key is served' });
  expect(acted()).toEqual(['the other key is served']);
});

test('two replicas sharing one Redis (TASK_STORE_URL): an assertion used on one is refused on the other', async () => {
  const env = { TASK_STORE_URL: redis.url, TASK_STORE_PREFIX: `replay-${Math.random()}:` };
  const [r1, r2] = [await replica(env), await replica(env)];
  const assertion = await assertionOf('other');
  const first = await send(r1, assertion, 'first use');
  expect(first.json?.error).toBeUndefined();
  const again = await send(r2, assertion, 'replayed on the other replica');
  expect(again.json?.error).toMatchObject({ code: -31401, data: [{ metadata: { credential: 'assertion', problem: 'was already used (replayed)' } }] });
  expect((await send(r1, assertion, 'replayed on the same replica')).json?.error?.code).toBe(-31401);
  expect(acted()).toEqual(['first use']);
  // A fresh assertion goes through either replica.
  expect((await send(r2, await assertionOf('other'), 'fresh')).json?.error).toBeUndefined();
});
