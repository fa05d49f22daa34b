/** Sealed page tokens (src/ownership/page-token.ts) and how task ownership uses them on both sides of a paged call. */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { jsonRpcCodec, restCodec } from '../../../src/a2a/bindings';
import { Metrics } from '../../../src/admin/metrics';
import { operationForMethod, type Operation } from '../../../src/a2a/operations';
import { PageTokens } from '../../../src/ownership/page-token';
import { MemoryOwnerStore, type OwnerStore } from '../../../src/ownership/store';
import { TaskOwnership, type AnswerCheck } from '../../../src/proxy/ownership';

const secret = randomBytes(32);
const AGENT_TOKEN = Buffer.from('2026-11-23T10:00:00.000Z|task-of-A').toString('base64');

function tokens(opts: { secret?: (refresh: boolean) => Promise<Buffer>; now?: () => number; lifetimeSeconds?: number } = {}): PageTokens {
  return new PageTokens({
    secret: opts.secret ?? (() => Promise.resolve(secret)),
    lifetimeSeconds: opts.lifetimeSeconds ?? 3600,
    ...(opts.now === undefined ? {} : { now: opts.now }),
  });
}

describe('PageTokens', () => {
  test("opens for the owner and the operation it was sealed for; hides the agent's token; never the same twice", async () => {
    const t = tokens();
    const sealed = await t.seal(AGENT_TOKEN, 'oidc:idp:A', 'tasks/list');
    expect(sealed).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(await t.open(sealed, 'oidc:idp:A', 'tasks/list')).toEqual({ ok: true, token: AGENT_TOKEN });
    for (const view of [sealed, Buffer.from(sealed, 'base64url').toString('latin1')]) {
      expect(view).not.toContain('task-of-A');
      expect(view).not.toContain(AGENT_TOKEN);
    }
    expect(await t.seal(AGENT_TOKEN, 'oidc:idp:A', 'tasks/list')).not.toBe(sealed);
  });

  test('another owner, another operation, another secret: unauthentic (one answer for all)', async () => {
    const t = tokens();
    const sealed = await t.seal(AGENT_TOKEN, 'oidc:idp:A', 'tasks/list');
    expect(await t.open(sealed, 'oidc:idp:B', 'tasks/list')).toEqual({ ok: false, why: 'unauthentic' });
    expect(await t.open(sealed, 'oidc:idp:A', 'tasks/pushNotificationConfig/list')).toEqual({ ok: false, why: 'unauthentic' });
    expect(await tokens({ secret: () => Promise.resolve(randomBytes(32)) }).open(sealed, 'oidc:idp:A', 'tasks/list')).toEqual({
      ok: false,
      why: 'unauthentic',
    });
  });

  test('any changed byte is refused', async () => {
    const t = tokens();
    const raw = Buffer.from(await t.seal(AGENT_TOKEN, 'A', 'tasks/list'), 'base64url');
    for (let i = 0; i < raw.length; i++) {
      const bad = Buffer.from(raw);
      bad[i] = (bad[i] as number) ^ 0x01;
      const r = await t.open(bad.toString('base64url'), 'A', 'tasks/list');
      expect(r.ok).toBe(false);
    }
    // Cut short or grown.
    expect((await t.open(raw.subarray(0, raw.length - 1).toString('base64url'), 'A', 'tasks/list')).ok).toBe(false);
    expect((await t.open(Buffer.concat([raw, Buffer.from([0])]).toString('base64url'), 'A', 'tasks/list')).ok).toBe(false);
  });

  test('not a sealed token at all: malformed, without asking for the secret', async () => {
    let asked = 0;
    const t = tokens({ secret: () => (asked++, Promise.resolve(secret)) });
    for (const s of ['', 'abc', AGENT_TOKEN, 'a b', 'x'.repeat(9000), Buffer.alloc(40, 2).toString('base64url')]) {
      expect(await t.open(s, 'A', 'tasks/list')).toEqual({ ok: false, why: 'malformed' });
    }
    expect(asked).toBe(0);
  });

  test('expires after its lifetime; a token from a clock far ahead is refused too', async () => {
    let now = 1_800_000_000_000;
    const t = tokens({ now: () => now, lifetimeSeconds: 600 });
    const sealed = await t.seal(AGENT_TOKEN, 'A', 'tasks/list');
    now += 600_000;
    expect(await t.open(sealed, 'A', 'tasks/list')).toEqual({ ok: true, token: AGENT_TOKEN });
    now += 1_000;
    expect(await t.open(sealed, 'A', 'tasks/list')).toEqual({ ok: false, why: 'expired' });
    const ahead = await tokens({ now: () => now + 120_000 }).seal(AGENT_TOKEN, 'A', 'tasks/list');
    expect(await t.open(ahead, 'A', 'tasks/list')).toEqual({ ok: false, why: 'expired' });
    const slightlyAhead = await tokens({ now: () => now + 30_000 }).seal(AGENT_TOKEN, 'A', 'tasks/list');
    expect((await t.open(slightlyAhead, 'A', 'tasks/list')).ok).toBe(true);
  });

  test('a token sealed under a secret this replica has not seen yet opens after one more look', async () => {
    const old = randomBytes(32);
    const fresh = randomBytes(32);
    const looks: boolean[] = [];
    const stale = tokens({ secret: (refresh) => (looks.push(refresh), Promise.resolve(refresh ? fresh : old)) });
    const sealed = await tokens({ secret: () => Promise.resolve(fresh) }).seal(AGENT_TOKEN, 'A', 'tasks/list');
    expect(await stale.open(sealed, 'A', 'tasks/list')).toEqual({ ok: true, token: AGENT_TOKEN });
    expect(looks).toEqual([false, true]);
  });
});

const op = (m: string): Operation => operationForMethod(m) as Operation;
const silent = pino({ level: 'silent' });
const listCall = (params: object, method = 'ListTasks') => ({ jsonrpc: '2.0', id: 1, method, params });

function setup(failMode: 'closed' | 'open' = 'closed', store: OwnerStore = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 1000 })) {
  const metrics = new Metrics();
  return { own: new TaskOwnership({ store, failMode, logger: silent, metrics }), metrics, store };
}

async function ownTask(own: TaskOwnership, owner: string, id: string): Promise<void> {
  await own.answerHook(owner, op('message/send'), jsonRpcCodec)?.unary?.({ jsonrpc: '2.0', id: 1, result: { task: { id, contextId: `ctx-${id}` } } }, true);
}

const replaced = (c: AnswerCheck): any => {
  if (c.type !== 'replace') throw new Error(`expected a replacement, got ${c.type}`);
  return c.body;
};

describe('task ownership and page tokens', () => {
  test("list answers carry the token sealed (JSON-RPC and REST, both spellings); the next call gets the agent's own back", async () => {
    const { own } = setup();
    await ownTask(own, 'A', 't-1');
    const rpc = own.answerHook('A', op('ListTasks'), jsonRpcCodec);
    const answer = replaced(
      (await rpc?.unary?.(
        { jsonrpc: '2.0', id: 1, result: { tasks: [{ id: 't-1' }], nextPageToken: AGENT_TOKEN, pageSize: 1, totalSize: 1 } },
        true,
      )) as AnswerCheck,
    );
    const sealed = answer.result.nextPageToken as string;
    expect(sealed).not.toBe(AGENT_TOKEN);
    expect(answer.result).toMatchObject({ tasks: [{ id: 't-1' }], pageSize: 1, totalSize: 1 });
    const next = await own.checkRequest('A', op('ListTasks'), listCall({ pageSize: 1, pageToken: sealed }));
    expect(next).toMatchObject({ type: 'pass', state: 'none', request: { method: 'ListTasks', params: { pageSize: 1, pageToken: AGENT_TOKEN } } });

    const rest = own.answerHook('A', op('ListTasks'), restCodec);
    const restAnswer = replaced((await rest?.unary?.({ tasks: [], next_page_token: AGENT_TOKEN }, true)) as AnswerCheck);
    expect(restAnswer.next_page_token).not.toBe(AGENT_TOKEN);
    expect(await own.checkRequest('A', op('ListTasks'), listCall({ page_token: restAnswer.next_page_token }))).toMatchObject({
      type: 'pass',
      request: { params: { page_token: AGENT_TOKEN } },
    });
  });

  test("the last page (no token, or an empty one) is left as it is; a call without a token is the caller's own object", async () => {
    const { own } = setup();
    await ownTask(own, 'A', 't-1');
    const rpc = own.answerHook('A', op('ListTasks'), jsonRpcCodec);
    expect(await rpc?.unary?.({ jsonrpc: '2.0', id: 1, result: { tasks: [{ id: 't-1' }], nextPageToken: '', totalSize: 1 } }, true)).toEqual({ type: 'pass' });
    const call = listCall({ pageSize: 5, pageToken: '' });
    const r = await own.checkRequest('A', op('ListTasks'), call);
    expect(r.type === 'pass' && r.request).toBe(call);
  });

  test("refused as invalid params: another owner's token, the agent's raw token, a token in another type; counted", async () => {
    const { own, metrics } = setup();
    const sealed = replaced((await own.answerHook('A', op('ListTasks'), restCodec)?.unary?.({ tasks: [], nextPageToken: AGENT_TOKEN }, true)) as AnswerCheck)
      .nextPageToken as string;
    for (const [who, token] of [
      ['B', sealed],
      ['A', AGENT_TOKEN],
      ['A', 12345],
      ['A', [sealed, sealed]],
      ['A', { t: sealed }],
    ] as const) {
      expect(await own.checkRequest(who, op('ListTasks'), listCall({ pageToken: token }))).toMatchObject({
        type: 'refuse',
        error: { kind: 'invalidParams', message: 'Invalid page token' },
      });
    }
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/a2a_guard_task_ownership_total\{[^}]*outcome="refused_page_token"[^}]*\} 5/);
  });

  test("a guardian's modify is checked for tasks only: the agent's token it saw stays", async () => {
    const { own } = setup();
    const call = listCall({ pageToken: AGENT_TOKEN });
    const r = await own.checkRequest('A', op('ListTasks'), call, 'guardian');
    expect(r).toMatchObject({ type: 'pass', request: call });
  });

  test('push-config lists: the token is sealed and opened the same way, bound to that operation', async () => {
    const { own } = setup();
    await ownTask(own, 'A', 't-1');
    const hook = own.answerHook('A', op('ListTaskPushNotificationConfigs'), jsonRpcCodec);
    const sealed = replaced((await hook?.unary?.({ jsonrpc: '2.0', id: 1, result: { configs: [], nextPageToken: 'cfg-cursor' } }, true)) as AnswerCheck).result
      .nextPageToken as string;
    expect(sealed).not.toBe('cfg-cursor');
    expect(
      await own.checkRequest('A', op('ListTaskPushNotificationConfigs'), listCall({ taskId: 't-1', pageToken: sealed }, 'ListTaskPushNotificationConfigs')),
    ).toMatchObject({ type: 'pass', state: 'owned', request: { params: { taskId: 't-1', pageToken: 'cfg-cursor' } } });
    // Not a task list token.
    expect(await own.checkRequest('A', op('ListTasks'), listCall({ pageToken: sealed }))).toMatchObject({ type: 'refuse', error: { kind: 'invalidParams' } });
  });

  test('ListTasks filtered to a context names it: another caller\'s is "task not found", an unknown one passes', async () => {
    const { own } = setup();
    await ownTask(own, 'A', 't-1');
    expect(await own.checkRequest('B', op('ListTasks'), listCall({ contextId: 'ctx-t-1' }))).toMatchObject({
      type: 'refuse',
      error: { kind: 'taskNotFound', message: 'Task not found: ctx-t-1' },
    });
    expect(await own.checkRequest('A', op('ListTasks'), listCall({ contextId: 'ctx-t-1' }))).toMatchObject({ type: 'pass', state: 'owned' });
    expect(await own.checkRequest('B', op('ListTasks'), listCall({ context_id: 'ctx-new' }))).toMatchObject({ type: 'pass', state: 'owned' });
  });

  test('the secret unavailable: FAIL_MODE=closed refuses both sides (-31504), open passes them as they came', async () => {
    const memory = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 1000 });
    const noSecret: OwnerStore = {
      kind: 'redis',
      owners: (k) => memory.owners(k),
      claim: (k, o) => memory.claim(k, o),
      close: () => memory.close(),
      provisional: (k, o, t) => memory.provisional(k, o, t),
      renew: (k, o, t) => memory.renew(k, o, t),
      release: (k, o) => memory.release(k, o),
      held: (o) => memory.held(o),
      sharedSecret: () => Promise.reject(new Error('Connection is closed.')),
    };
    // Looks like a sealed token (version byte first): opening it needs the secret.
    const sealedLike = Buffer.concat([Buffer.from([1]), randomBytes(60)]).toString('base64url');
    const closed = setup('closed', noSecret).own;
    expect(await closed.checkRequest('A', op('ListTasks'), listCall({ pageToken: sealedLike }))).toMatchObject({
      type: 'refuse',
      error: { kind: 'taskStoreUnavailable' },
    });
    expect(await closed.answerHook('A', op('ListTasks'), restCodec)?.unary?.({ tasks: [], nextPageToken: AGENT_TOKEN }, true)).toMatchObject({
      type: 'refuse',
      error: { kind: 'taskStoreUnavailable' },
    });
    const open = setup('open', noSecret).own;
    const call = listCall({ pageToken: sealedLike });
    expect(await open.checkRequest('A', op('ListTasks'), call)).toMatchObject({ type: 'pass', request: call });
    expect(await open.answerHook('A', op('ListTasks'), restCodec)?.unary?.({ tasks: [], nextPageToken: AGENT_TOKEN }, true)).toEqual({ type: 'pass' });
  });
});
