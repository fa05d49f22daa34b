/**
 * The task owner store cannot be filled by one caller for the others (README "Task ownership",
 * "Store"): ids are bounded in length, a context is bound only once the guardian allowed the call
 * and the agent answered it, each caller holds at most TASK_STORE_MAX_PER_CALLER bindings, and a
 * Redis that would evict bindings when full is refused at start.
 *
 * Real SDK agent (JSON-RPC, REST and gRPC on one request handler, recorded), real guardian, OIDC
 * callers A and B, ROLE=server a2a-guard in-process, in-memory store and a real redis-server.
 */
import { textOf } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { startRedis, type TestRedis } from '../../helpers/redis';
import { useIdentityProxy, type Caller } from '../../helpers/identities';
import { startTestProxy, useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';
import { StartupError } from '../../../src/credentials/files';

jest.setTimeout(60_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap });
const fx = useIdentityProxy(s, { GRPC_PORT: '0' });
let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});
beforeEach(() => rec.clear());

const V1 = { 'a2a-version': '1.0' };
let n = 0;

interface Answer {
  readonly status: number;
  readonly body: {
    result?: { task?: { id: string; contextId: string } };
    error?: { code: number; message: string; data?: { metadata?: Record<string, string> }[] };
  };
}

async function post(proxy: TestProxy, who: Caller, path: string, body: unknown): Promise<Answer> {
  const r = await fetch(`${proxy.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...V1, ...fx.ids.headersAs(who) },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Answer['body'] };
}

const message = (text: string, extra: Record<string, unknown> = {}) => ({ message: { messageId: `m-${++n}`, role: 'ROLE_USER', parts: [{ text }], ...extra } });

/** A v1.0 JSON-RPC SendMessage through `proxy` as `who`. */
const send = (proxy: TestProxy, who: Caller, text: string, extra: Record<string, unknown> = {}): Promise<Answer> =>
  post(proxy, who, '/a2a/jsonrpc', { jsonrpc: '2.0', id: ++n, method: 'SendMessage', params: message(text, extra) });

/** The texts of the messages the agent's request handler acted on. */
const acted = (): string[] => rec.calls.filter((c) => c.method === 'sendMessage').map((c) => textOf(c.params));

describe('task and context ids are bounded in length', () => {
  const LONG = 'c'.repeat(1025);

  test('longer than 1024 bytes: refused as invalid params in each binding, before the guardian and the agent', async () => {
    const jsonRpc = await send(fx.proxy, 'A', 'long context', { contextId: LONG });
    expect({ status: jsonRpc.status, code: jsonRpc.body.error?.code, message: jsonRpc.body.error?.message }).toEqual({
      status: 200,
      code: -32602,
      message: 'Task or context id longer than 1024 bytes',
    });
    const rest = await post(fx.proxy, 'A', '/a2a/rest/message:send', message('long context', { contextId: LONG }));
    expect({ status: rest.status, code: rest.body.error?.code }).toEqual({ status: 400, code: 400 });
    const get = await fetch(`${fx.proxy.url}/a2a/rest/tasks/${'t'.repeat(1100)}`, { headers: { ...V1, ...fx.ids.headersAs('A') } });
    expect(get.status).toBe(400);
    // Two-byte characters count as two: 600 of them are 1200 bytes.
    const wide = await send(fx.proxy, 'A', 'wide context', { contextId: 'é'.repeat(600) });
    expect(wide.body.error?.code).toBe(-32602);

    const m = grpcMethodForPath('/lf.a2a.v1.A2AService/SendMessage');
    if (m === undefined) throw new Error('SendMessage');
    const c = codecFor(m).request;
    const frame = grpcFrame(c.encode(c.fromJson(message('long context over gRPC', { contextId: LONG }))));
    const grpc = await rawGrpc(fx.proxy.grpcAddress as string, m.path, frame, { ...V1, ...fx.ids.headersAs('A') });
    expect(grpc.grpcStatus).toBe(3); // INVALID_ARGUMENT

    expect(s.guardian.calls()).toEqual([]);
    expect(rec.calls).toEqual([]);
  });

  test('1024 bytes is still an id: the call is judged and served', async () => {
    const r = await send(fx.proxy, 'A', 'at the limit', { contextId: 'c'.repeat(1024) });
    expect(r.body.result?.task?.contextId).toBe('c'.repeat(1024));
    expect(acted()).toEqual(['at the limit']);
  });
});

describe('a context is bound only once the guardian allowed the call and the agent answered it', () => {
  test('a denied call binds nothing: another caller may then start a conversation under that context id', async () => {
    const context = `ctx-denied-${Math.random()}`;
    s.guardian.script(() => ({ decision: 'deny', reasonCode: ['NO'] }));
    for (let i = 0; i < 3; i++) expect((await send(fx.proxy, 'A', 'denied', { contextId: context })).body.error?.code).toBe(-31403);
    s.guardian.reset();
    const b = await send(fx.proxy, 'B', 'mine now', { contextId: context });
    expect(b.body.error).toBeUndefined();
    expect(b.body.result?.task?.contextId).toBe(context);
    expect(acted()).toEqual(['mine now']);
    // B's answer bound it: now A is the one told "not found".
    expect((await send(fx.proxy, 'A', 'join', { contextId: context })).body.error).toMatchObject({ code: -32001 });
  });

  test('with Redis: denied calls leave no binding behind (the 7-day TTL is for answered calls only)', async () => {
    const proxy = await s.proxy({ ...fx.ids.env, ROLE: 'server', TASK_STORE_URL: redis.url, TASK_STORE_PREFIX: 'denied:' });
    const context = `ctx-redis-${Math.random()}`;
    s.guardian.script(() => ({ decision: 'deny' }));
    for (let i = 0; i < 3; i++) expect((await send(proxy, 'A', 'denied', { contextId: context })).body.error?.code).toBe(-31403);
    expect(await redis.command('EXISTS', `denied:c:${context}`)).toBe('0');
    s.guardian.reset();
    const allowed = await send(proxy, 'A', 'allowed', { contextId: context });
    expect(allowed.body.result?.task?.contextId).toBe(context);
    expect(await redis.command('GET', `denied:c:${context}`)).toBe(fx.ids.ownerOf('A'));
    expect(Number(await redis.command('TTL', `denied:c:${context}`))).toBeGreaterThan(6 * 24 * 3600);
  });
});

describe('each caller holds at most TASK_STORE_MAX_PER_CALLER bindings', () => {
  async function fillsItsShare(proxy: TestProxy): Promise<void> {
    // Each new task binds two keys (the task and its context): five fill a share of ten.
    const tasks: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await send(proxy, 'A', `task ${i}`);
      expect(r.body.error).toBeUndefined();
      tasks.push(r.body.result?.task?.id as string);
    }
    rec.clear();
    s.guardian.clear();
    const refused = await send(proxy, 'A', 'one more');
    expect({ status: refused.status, code: refused.body.error?.code, resource: refused.body.error?.data?.[0]?.metadata?.resource }).toEqual({
      status: 429,
      code: -31429,
      resource: 'task bindings held',
    });
    expect(s.guardian.calls()).toEqual([]);
    // Another caller is not affected, and A keeps what it has.
    expect((await send(proxy, 'B', 'B is served')).body.error).toBeUndefined();
    const own = await post(proxy, 'A', '/a2a/jsonrpc', { jsonrpc: '2.0', id: ++n, method: 'GetTask', params: { id: tasks[0] } });
    expect(own.body.error).toBeUndefined();
    expect(acted()).toEqual(['B is served']);
  }

  test('in memory', async () => {
    await fillsItsShare(await s.proxy({ ...fx.ids.env, ROLE: 'server', TASK_STORE_MAX_PER_CALLER: '10' }));
  });

  test('in Redis', async () => {
    await fillsItsShare(
      await s.proxy({
        ...fx.ids.env,
        ROLE: 'server',
        TASK_STORE_URL: redis.url,
        TASK_STORE_PREFIX: `quota-${Math.random()}:`,
        TASK_STORE_MAX_PER_CALLER: '10',
      }),
    );
  });
});

describe('a Redis that evicts keys when full would drop bindings silently', () => {
  afterEach(async () => {
    await redis.command('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
  });

  test('maxmemory-policy allkeys-lru: the proxy does not start; with TASK_STORE_ALLOW_EVICTION=true it does', async () => {
    await redis.command('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    const env = { UPSTREAM_URL: s.agent.origin, GUARDIAN_URL: s.guardian.url, ROLE: 'server', ...fx.ids.env, TASK_STORE_URL: redis.url };
    const err = await startTestProxy(env).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect(String(err)).toMatch(/maxmemory-policy is allkeys-lru/);
    const accepted = await startTestProxy({ ...env, TASK_STORE_ALLOW_EVICTION: 'true' });
    try {
      expect((await send(accepted, 'A', 'accepted')).body.error).toBeUndefined();
    } finally {
      await accepted.close();
    }
  });
});
