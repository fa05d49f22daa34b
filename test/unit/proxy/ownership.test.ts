/** The pipeline's task ownership decisions (src/proxy/ownership.ts) over a real in-memory store and a failing one. */
import { jsonRpcCodec, restCodec } from '../../../src/a2a/bindings';
import pino from 'pino';
import { Metrics } from '../../../src/admin/metrics';
import { operationForMethod, type Operation } from '../../../src/a2a/operations';
import { MemoryOwnerStore, type OwnerStore } from '../../../src/ownership/store';
import { TaskOwnership, taskNotFound, type AnswerCheck } from '../../../src/proxy/ownership';

const op = (m: string): Operation => operationForMethod(m) as Operation;
const silent = pino({ level: 'silent' });
const call = (method: string, params: object) => ({ jsonrpc: '2.0', id: 1, method, params });

const down: OwnerStore = {
  kind: 'redis',
  owners: () => Promise.reject(new Error('Connection is closed.')),
  claim: () => Promise.reject(new Error('Connection is closed.')),
  provisional: () => Promise.reject(new Error('Connection is closed.')),
  renew: () => Promise.reject(new Error('Connection is closed.')),
  release: () => Promise.reject(new Error('Connection is closed.')),
  held: () => undefined,
  sharedSecret: () => Promise.reject(new Error('Connection is closed.')),
  close: () => Promise.resolve(),
};

function setup(failMode: 'closed' | 'open' = 'closed', store: OwnerStore = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 1000 })) {
  const metrics = new Metrics();
  return { own: new TaskOwnership({ store, failMode, logger: silent, metrics }), metrics, store };
}

async function count(metrics: Metrics, outcome: string): Promise<number> {
  const text = await metrics.registry.metrics();
  let n = 0;
  for (const m of text.matchAll(new RegExp(`^a2a_guard_task_ownership_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`, 'gm'))) n += Number(m[1]);
  return n;
}

/** A's message/send answer binds t-1 in c-1 to A. */
async function created(own: TaskOwnership, owner = 'A'): Promise<AnswerCheck> {
  const hook = own.answerHook(owner, op('message/send'), jsonRpcCodec);
  return (await hook?.unary?.({ jsonrpc: '2.0', id: 1, result: { kind: 'task', id: 't-1', contextId: 'c-1' } }, true)) as AnswerCheck;
}

describe('checkRequest', () => {
  test('the owner passes; another caller, an unknown task and another\'s context are "task not found"', async () => {
    const { own, metrics } = setup();
    expect(await created(own)).toEqual({ type: 'pass' });
    expect(await own.checkRequest('A', op('tasks/get'), call('tasks/get', { id: 't-1' }))).toMatchObject({ type: 'pass', state: 'owned' });
    expect(await own.checkRequest('B', op('tasks/get'), call('tasks/get', { id: 't-1' }))).toEqual({ type: 'refuse', error: taskNotFound('t-1') });
    expect(await own.checkRequest('A', op('tasks/get'), call('tasks/get', { id: 't-2' }))).toEqual({ type: 'refuse', error: taskNotFound('t-2') });
    expect(await own.checkRequest('B', op('SendMessage'), call('SendMessage', { message: { contextId: 'c-1' } }))).toEqual({
      type: 'refuse',
      error: taskNotFound('c-1'),
    });
    // A new context is anyone's to start; a message naming nothing never asks the store.
    expect(await own.checkRequest('B', op('SendMessage'), call('SendMessage', { message: { contextId: 'c-new' } }))).toMatchObject({
      type: 'pass',
      state: 'owned',
    });
    expect(await own.checkRequest('B', op('SendMessage'), call('SendMessage', { message: { messageId: 'm' } }))).toMatchObject({ type: 'pass', state: 'none' });
    // A referenced task of another caller is refused too, by its own id.
    expect(await own.checkRequest('B', op('SendMessage'), call('SendMessage', { message: { contextId: 'c-new', referenceTaskIds: ['t-1'] } }))).toEqual({
      type: 'refuse',
      error: taskNotFound('t-1'),
    });
    expect(await count(metrics, 'refused_foreign_task')).toBe(2);
    expect(await count(metrics, 'refused_unknown_task')).toBe(1);
    expect(await count(metrics, 'refused_foreign_context')).toBe(1);
  });

  test('store down: closed refuses with -31504, open passes unchecked and counts', async () => {
    const closed = setup('closed', down);
    const r = await closed.own.checkRequest('A', op('tasks/get'), call('tasks/get', { id: 't-1' }));
    expect(r).toMatchObject({ type: 'refuse', error: { kind: 'taskStoreUnavailable', metadata: { store: 'redis' } } });
    expect(await count(closed.metrics, 'store_unavailable_refused')).toBe(1);
    const open = setup('open', down);
    expect(await open.own.checkRequest('A', op('tasks/get'), call('tasks/get', { id: 't-1' }))).toMatchObject({ type: 'pass', state: 'unchecked' });
    expect(await count(open.metrics, 'store_unavailable_passed')).toBe(1);
    expect(await open.metrics.registry.getSingleMetricAsString('a2a_guard_fail_open_passes_total')).toMatch(/ 1$/m);
    // Calls that name no task never touch the store.
    expect(await closed.own.checkRequest('A', op('message/send'), call('message/send', { message: {} }))).toMatchObject({ type: 'pass', state: 'none' });
  });
});

describe('what a caller may put in the store', () => {
  const send = (message: object) => call('SendMessage', { message: { messageId: 'm', ...message } });

  test('a new context is held for the call (others are told "not found") and let go when it ends, unless the answer bound it', async () => {
    const { own } = setup();
    const holds = own.holdsFor('A');
    expect(await own.checkRequest('A', op('SendMessage'), send({ contextId: 'c-new' }), 'caller', () => holds)).toMatchObject({ type: 'pass', state: 'owned' });
    expect(await own.checkRequest('B', op('SendMessage'), send({ contextId: 'c-new' }))).toEqual({ type: 'refuse', error: taskNotFound('c-new') });
    holds.end();
    expect(await own.checkRequest('B', op('SendMessage'), send({ contextId: 'c-new' }))).toMatchObject({ type: 'pass' });

    const confirmed = own.holdsFor('A');
    await own.checkRequest('A', op('SendMessage'), send({ contextId: 'c-kept' }), 'caller', () => confirmed);
    await own
      .answerHook('A', op('message/send'), jsonRpcCodec)
      ?.unary?.({ jsonrpc: '2.0', id: 1, result: { kind: 'task', id: 't-kept', contextId: 'c-kept' } }, true);
    confirmed.end();
    expect(await own.checkRequest('B', op('SendMessage'), send({ contextId: 'c-kept' }))).toEqual({ type: 'refuse', error: taskNotFound('c-kept') });
  });

  test('a long call keeps its hold: renewed while it runs, however long the agent takes', async () => {
    jest.useFakeTimers();
    try {
      const store = new MemoryOwnerStore({ ttlSeconds: 3600, maxEntries: 100, now: () => Date.now() });
      const { own } = setup('closed', store);
      const holds = own.holdsFor('A');
      await own.checkRequest('A', op('SendMessage'), send({ contextId: 'c-long' }), 'caller', () => holds);
      for (let i = 0; i < 10; i++) await jest.advanceTimersByTimeAsync(30_000);
      expect(await store.owners(['c:c-long'])).toEqual(['A']);
      holds.end();
      expect(await store.owners(['c:c-long'])).toEqual([undefined]);
    } finally {
      jest.useRealTimers();
    }
  });

  test('ids over 1024 bytes are invalid params, before any store access', async () => {
    const { own, store, metrics } = setup();
    expect(await own.checkRequest('A', op('SendMessage'), send({ contextId: 'x'.repeat(1025) }))).toMatchObject({
      type: 'refuse',
      error: { kind: 'invalidParams', message: 'Task or context id longer than 1024 bytes' },
    });
    expect(await own.checkRequest('A', op('tasks/get'), call('tasks/get', { id: '€'.repeat(342) }))).toMatchObject({
      type: 'refuse',
      error: { kind: 'invalidParams' },
    });
    expect((store as MemoryOwnerStore).size).toBe(0);
    expect(await count(metrics, 'refused_long_id')).toBe(2);
  });

  test('a caller holding its share is refused new tasks (-31429); its own tasks and other callers are not', async () => {
    const store = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 1000 });
    const metrics = new Metrics();
    const own = new TaskOwnership({ store, failMode: 'closed', logger: silent, metrics, maxPerCaller: 2 });
    expect(await created(own)).toEqual({ type: 'pass' });
    expect(await own.checkRequest('A', op('SendMessage'), send({}))).toMatchObject({
      type: 'refuse',
      error: { kind: 'limited', metadata: { resource: 'task bindings held' } },
    });
    expect(await own.checkRequest('A', op('SendMessage'), send({ taskId: 't-1', contextId: 'c-1' }))).toMatchObject({ type: 'pass', state: 'owned' });
    expect(await own.checkRequest('A', op('tasks/get'), call('tasks/get', { id: 't-1' }))).toMatchObject({ type: 'pass' });
    expect(await own.checkRequest('B', op('SendMessage'), send({}))).toMatchObject({ type: 'pass' });
    expect(await count(metrics, 'refused_quota')).toBe(1);
  });
});

describe('answer hooks', () => {
  test("an answer naming another caller's task is not relayed", async () => {
    const { own, metrics } = setup();
    await created(own, 'A');
    const r = await created(own, 'B');
    expect(r).toMatchObject({ type: 'refuse', error: { kind: 'upstreamUnavailable' } });
    expect(await count(metrics, 'answer_conflict')).toBe(1);
  });

  test('error answers bind nothing; a stream claims each key once', async () => {
    const { own, store } = setup();
    const send = own.answerHook('A', op('message/send'), restCodec);
    expect(await send?.unary?.({ error: { code: 404 } }, false)).toEqual({ type: 'pass' });
    const claims: string[][] = [];
    const spy: OwnerStore = {
      ...store,
      kind: 'memory',
      owners: (k) => store.owners(k),
      claim: (k, o) => (claims.push([...k]), store.claim(k, o)),
      sharedSecret: (r) => store.sharedSecret(r),
      close: () => store.close(),
    };
    const own2 = new TaskOwnership({ store: spy, failMode: 'closed', logger: silent, metrics: new Metrics() });
    const stream = own2.answerHook('A', op('SendStreamingMessage'), jsonRpcCodec);
    for (const result of [
      { task: { id: 't-9', contextId: 'c-9' } },
      { statusUpdate: { taskId: 't-9', contextId: 'c-9' } },
      { artifactUpdate: { taskId: 't-9', contextId: 'c-9' } },
    ]) {
      expect(await stream?.event?.({ jsonrpc: '2.0', id: 1, result })).toEqual({ type: 'pass' });
    }
    expect(claims).toEqual([['t:t-9', 'c:c-9']]);
    expect(await store.owners(['t:t-9'])).toEqual(['A']);
  });

  test('store down while binding: closed refuses the answer, open passes it', async () => {
    const closed = setup('closed', down).own.answerHook('A', op('message/send'), jsonRpcCodec);
    expect(await closed?.unary?.({ jsonrpc: '2.0', id: 1, result: { task: { id: 't', contextId: 'c' } } }, true)).toMatchObject({
      type: 'refuse',
      error: { kind: 'taskStoreUnavailable' },
    });
    const open = setup('open', down).own.answerHook('A', op('message/send'), jsonRpcCodec);
    expect(await open?.unary?.({ jsonrpc: '2.0', id: 1, result: { task: { id: 't', contextId: 'c' } } }, true)).toEqual({ type: 'pass' });
  });

  test("tasks/list keeps the caller's own tasks only (JSON-RPC and REST); unreadable lists follow FAIL_MODE", async () => {
    const { own } = setup();
    await created(own, 'A');
    const list = { tasks: [{ id: 't-1' }, { id: 'orphan' }, { noId: true }], nextPageToken: '', pageSize: 50, totalSize: 3 };
    const rpc = own.answerHook('A', op('ListTasks'), jsonRpcCodec);
    expect(await rpc?.unary?.({ jsonrpc: '2.0', id: 1, result: list }, true)).toEqual({
      type: 'replace',
      body: { jsonrpc: '2.0', id: 1, result: { tasks: [{ id: 't-1' }], nextPageToken: '', pageSize: 50, totalSize: 1 } },
    });
    const rest = own.answerHook('B', op('ListTasks'), restCodec);
    expect(await rest?.unary?.(list, true)).toEqual({ type: 'replace', body: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } });
    expect(await rpc?.unary?.({ jsonrpc: '2.0', id: 1, result: { tasks: [{ id: 't-1' }] } }, true)).toEqual({ type: 'pass' });
    expect(await rpc?.unary?.({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'bad' } }, true)).toEqual({ type: 'pass' });
    expect(await rpc?.unary?.(undefined, true)).toMatchObject({ type: 'refuse' });
    expect(await setup('open').own.answerHook('A', op('ListTasks'), jsonRpcCodec)?.unary?.(undefined, true)).toEqual({ type: 'pass' });
  });

  test('operations whose answers name no task of their own have no answer hook', () => {
    const { own } = setup();
    for (const m of ['tasks/pushNotificationConfig/delete', 'GetExtendedAgentCard']) expect(own.answerHook('A', op(m), jsonRpcCodec)).toBeUndefined();
  });

  test("an answer about the caller's task binds the context it names: another caller's is refused, a new one becomes the caller's", async () => {
    const { own } = setup();
    await created(own, 'A');
    await own.answerHook('B', op('SendMessage'), jsonRpcCodec)?.unary?.({ jsonrpc: '2.0', id: 1, result: { task: { id: 't-b', contextId: 'c-b' } } }, true);
    for (const m of ['GetTask', 'CancelTask']) {
      const hook = own.answerHook('A', op(m), jsonRpcCodec);
      expect(await hook?.unary?.({ jsonrpc: '2.0', id: 1, result: { id: 't-1', contextId: 'c-b' } }, true)).toMatchObject({ type: 'refuse' });
      expect(await own.answerHook('A', op(m), restCodec)?.unary?.({ id: 't-1', contextId: `c-new-${m}` }, true)).toEqual({ type: 'pass' });
      expect(
        await own
          .answerHook('B', op('SendMessage'), jsonRpcCodec)
          ?.unary?.({ jsonrpc: '2.0', id: 1, result: { message: { messageId: 'm', contextId: `c-new-${m}` } } }, true),
      ).toMatchObject({ type: 'refuse' });
    }
    // The result is a Task whatever its `kind` says: the SDK's v1.0 client reads it without looking.
    for (const kind of ['Task', 'TASK', 1, 'task']) {
      expect(
        await own.answerHook('A', op('GetTask'), jsonRpcCodec)?.unary?.({ jsonrpc: '2.0', id: 1, result: { kind, id: 't-1', contextId: 'c-b' } }, true),
      ).toMatchObject({ type: 'refuse' });
    }
    const sub = own.answerHook('A', op('SubscribeToTask'), jsonRpcCodec);
    expect(await sub?.event?.({ jsonrpc: '2.0', id: 1, result: { statusUpdate: { taskId: 't-1', contextId: 'c-b' } } })).toMatchObject({ type: 'refuse' });
  });

  test("an answer with an A2A member spelled another way is refused; so is a guardian's modify with one", async () => {
    const { own } = setup();
    const hook = own.answerHook('A', op('ListTasks'), jsonRpcCodec);
    for (const result of [{ Tasks: [{ id: 't' }] }, { tasks: [{ ID: 't' }] }, { tasks: [], TOTAL_SIZE: 1 }, { tasks: [], 'next-page-token': 'x' }]) {
      expect(await hook?.unary?.({ jsonrpc: '2.0', id: 1, result }, true)).toMatchObject({ type: 'refuse' });
    }
    // Free-form members are the sender's data.
    expect(await hook?.unary?.({ jsonrpc: '2.0', id: 1, result: { tasks: [{ id: 't', metadata: { ID: 1, Tasks: [] } }] } }, true)).not.toMatchObject({
      type: 'refuse',
    });
    const send = own.answerHook('A', op('SendMessage'), jsonRpcCodec);
    expect(await send?.unary?.({ jsonrpc: '2.0', id: 1, result: { task: { id: 't-x', ContextId: 'c-x' } } }, true)).toMatchObject({ type: 'refuse' });
    // A guardian's modify (classification refused the caller's own, before ownership).
    const get = await own.checkRequest('A', op('GetTask'), { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { ID: 't-1' } }, 'guardian');
    expect(get).toMatchObject({ type: 'refuse', error: { kind: 'invalidParams' } });
    const msg = await own.checkRequest(
      'A',
      op('SendMessage'),
      { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm', TaskId: 't-1', parts: [{ data: { TaskId: 1 } }] } } },
      'guardian',
    );
    expect(msg).toMatchObject({ type: 'refuse' });
  });
});

describe('push-notification-config answers', () => {
  const configs = {
    v1: (taskId: string) => ({ jsonrpc: '2.0', id: 1, result: { tenant: '', id: 'cfg', taskId, url: 'https://hooks.example/x', token: '' } }),
    v03: (taskId: string) => ({ jsonrpc: '2.0', id: 1, result: { taskId, pushNotificationConfig: { id: 'cfg', url: 'https://hooks.example/x' } } }),
    v1List: (taskId: string) => ({
      jsonrpc: '2.0',
      id: 1,
      result: {
        configs: [
          { id: 'a', taskId: 't-b', url: 'https://h/a' },
          { id: 'b', taskId, url: 'https://h/b' },
        ],
        nextPageToken: '',
      },
    }),
    v03List: (taskId: string) => ({
      jsonrpc: '2.0',
      id: 1,
      result: [
        { taskId: 't-b', pushNotificationConfig: { id: 'a', url: 'https://h/a' } },
        { taskId, pushNotificationConfig: { id: 'b', url: 'https://h/b' } },
      ],
    }),
  };
  const rest = {
    v03Name: (taskId: string) => ({ name: `tasks/${taskId}/pushNotificationConfigs/cfg`, pushNotificationConfig: { id: 'cfg', url: 'https://h/x' } }),
    v1List: (taskId: string) => ({ configs: [{ id: 'b', taskId, url: 'https://h/b' }], nextPageToken: '' }),
  };

  test("an answer naming another caller's task is refused; the caller's own task passes (set, get, list; v1.0, v0.3; JSON-RPC, REST)", async () => {
    const { own, metrics } = setup();
    expect(await created(own, 'A')).toEqual({ type: 'pass' });
    const hookB = own.answerHook('B', op('message/send'), jsonRpcCodec);
    expect(await hookB?.unary?.({ jsonrpc: '2.0', id: 1, result: { kind: 'task', id: 't-b', contextId: 'c-b' } }, true)).toEqual({ type: 'pass' });
    const cases: Array<[string, typeof jsonRpcCodec, (t: string) => unknown]> = [
      ['tasks/pushNotificationConfig/set', jsonRpcCodec, configs.v03],
      ['CreateTaskPushNotificationConfig', jsonRpcCodec, configs.v1],
      ['tasks/pushNotificationConfig/get', jsonRpcCodec, configs.v03],
      ['GetTaskPushNotificationConfig', jsonRpcCodec, configs.v1],
      ['tasks/pushNotificationConfig/list', jsonRpcCodec, configs.v03List],
      ['ListTaskPushNotificationConfigs', jsonRpcCodec, configs.v1List],
      ['tasks/pushNotificationConfig/get', restCodec, rest.v03Name],
      ['ListTaskPushNotificationConfigs', restCodec, rest.v1List],
    ];
    for (const [method, codec, make] of cases) {
      const hook = own.answerHook('B', op(method), codec);
      expect([method, await hook?.unary?.(make('t-b'), true)]).toEqual([method, { type: 'pass' }]);
      expect([method, await hook?.unary?.(make('t-1'), true)]).toMatchObject([method, { type: 'refuse', error: { kind: 'upstreamUnavailable' } }]);
    }
    expect(await count(metrics, 'answer_conflict')).toBe(cases.length);
    // gRPC answers reach the hook as protobuf JSON, which a snake_case name can spell too.
    const grpcGet = own.answerHook('B', op('GetTaskPushNotificationConfig'), restCodec);
    expect(await grpcGet?.unary?.({ id: 'cfg', task_id: 't-1', url: 'https://h/x' }, true)).toMatchObject({ type: 'refuse' });
    // Errors, and configs naming no task, name nothing to bind.
    const get = own.answerHook('B', op('tasks/pushNotificationConfig/get'), jsonRpcCodec);
    expect(await get?.unary?.({ jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'Task not found' } }, true)).toEqual({ type: 'pass' });
    expect(await get?.unary?.({ jsonrpc: '2.0', id: 1, result: { pushNotificationConfig: { url: 'https://h/x' } } }, true)).toEqual({ type: 'pass' });
    expect(await own.answerHook('B', op('ListTaskPushNotificationConfigs'), restCodec)?.unary?.({ code: 404, message: 'not found' }, false)).toEqual({
      type: 'pass',
    });
  });
});
