/** The pipeline's task ownership decisions (src/proxy/ownership.ts) over a real in-memory store and a failing one. */
import pino from 'pino';
import { Metrics } from '../../src/admin/metrics';
import { operationForMethod, type Operation } from '../../src/a2a/operations';
import { MemoryOwnerStore, type OwnerStore } from '../../src/ownership/store';
import { TaskOwnership, taskNotFound, taskNotFoundAnswer, type AnswerCheck } from '../../src/proxy/ownership';

const op = (m: string): Operation => operationForMethod(m) as Operation;
const silent = pino({ level: 'silent' });
const call = (method: string, params: object) => ({ jsonrpc: '2.0', id: 1, method, params });

const down: OwnerStore = {
  kind: 'redis',
  owners: () => Promise.reject(new Error('Connection is closed.')),
  claim: () => Promise.reject(new Error('Connection is closed.')),
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
  const hook = own.answerHook(owner, op('message/send'), 'jsonrpc');
  return (await hook?.unary?.({ jsonrpc: '2.0', id: 1, result: { kind: 'task', id: 't-1', contextId: 'c-1' } }, true)) as AnswerCheck;
}

describe('checkRequest', () => {
  test('the owner passes; another caller, an unknown task and another\'s context are "task not found"', async () => {
    const { own, metrics } = setup();
    expect(await created(own)).toEqual({ type: 'pass' });
    expect(await own.checkRequest('A', op('tasks/get'), call('tasks/get', { id: 't-1' }))).toMatchObject({ type: 'pass', state: 'owned' });
    expect(await own.checkRequest('B', op('tasks/get'), call('tasks/get', { id: 't-1' }))).toEqual({ type: 'refuse', error: taskNotFound('t-1') });
    expect(await own.checkRequest('A', op('tasks/get'), call('tasks/get', { id: 't-2' }))).toEqual({ type: 'refuse', error: taskNotFound('t-2') });
    expect(await own.checkRequest('B', op('SendMessage'), call('SendMessage', { message: { contextId: 'c-1' } }))).toEqual({ type: 'refuse', error: taskNotFound('c-1') });
    // A new context is anyone's to start; a message naming nothing never asks the store.
    expect(await own.checkRequest('B', op('SendMessage'), call('SendMessage', { message: { contextId: 'c-new' } }))).toMatchObject({ type: 'pass', state: 'owned' });
    expect(await own.checkRequest('B', op('SendMessage'), call('SendMessage', { message: { messageId: 'm' } }))).toMatchObject({ type: 'pass', state: 'none' });
    // A referenced task of another caller is refused too, by its own id.
    expect(await own.checkRequest('B', op('SendMessage'), call('SendMessage', { message: { contextId: 'c-new', referenceTaskIds: ['t-1'] } })))
      .toEqual({ type: 'refuse', error: taskNotFound('t-1') });
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

describe('answer hooks', () => {
  test('an answer naming another caller\'s task is not relayed', async () => {
    const { own, metrics } = setup();
    await created(own, 'A');
    const r = await created(own, 'B');
    expect(r).toMatchObject({ type: 'refuse', error: { kind: 'upstreamUnavailable' } });
    expect(await count(metrics, 'answer_conflict')).toBe(1);
  });

  test('error answers bind nothing; a stream claims each key once', async () => {
    const { own, store } = setup();
    const send = own.answerHook('A', op('message/send'), 'rest');
    expect(await send?.unary?.({ error: { code: 404 } }, false)).toEqual({ type: 'pass' });
    const claims: string[][] = [];
    const spy: OwnerStore = { ...store, kind: 'memory', owners: (k) => store.owners(k), claim: (k, o) => (claims.push([...k]), store.claim(k, o)), close: () => store.close() };
    const own2 = new TaskOwnership({ store: spy, failMode: 'closed', logger: silent, metrics: new Metrics() });
    const stream = own2.answerHook('A', op('SendStreamingMessage'), 'jsonrpc');
    for (const result of [{ task: { id: 't-9', contextId: 'c-9' } }, { statusUpdate: { taskId: 't-9', contextId: 'c-9' } }, { artifactUpdate: { taskId: 't-9', contextId: 'c-9' } }]) {
      expect(await stream?.event?.({ jsonrpc: '2.0', id: 1, result })).toEqual({ type: 'pass' });
    }
    expect(claims).toEqual([['t:t-9', 'c:c-9']]);
    expect(await store.owners(['t:t-9'])).toEqual(['A']);
  });

  test('store down while binding: closed refuses the answer, open passes it', async () => {
    const closed = setup('closed', down).own.answerHook('A', op('message/send'), 'jsonrpc');
    expect(await closed?.unary?.({ jsonrpc: '2.0', id: 1, result: { task: { id: 't', contextId: 'c' } } }, true)).toMatchObject({ type: 'refuse', error: { kind: 'taskStoreUnavailable' } });
    const open = setup('open', down).own.answerHook('A', op('message/send'), 'jsonrpc');
    expect(await open?.unary?.({ jsonrpc: '2.0', id: 1, result: { task: { id: 't', contextId: 'c' } } }, true)).toEqual({ type: 'pass' });
  });

  test('tasks/list keeps the caller\'s own tasks only (JSON-RPC and REST); unreadable lists follow FAIL_MODE', async () => {
    const { own } = setup();
    await created(own, 'A');
    const list = { tasks: [{ id: 't-1' }, { id: 'orphan' }, { noId: true }], nextPageToken: '', pageSize: 50, totalSize: 3 };
    const rpc = own.answerHook('A', op('ListTasks'), 'jsonrpc');
    expect(await rpc?.unary?.({ jsonrpc: '2.0', id: 1, result: list }, true)).toEqual({
      type: 'replace', body: { jsonrpc: '2.0', id: 1, result: { tasks: [{ id: 't-1' }], nextPageToken: '', pageSize: 50, totalSize: 1 } },
    });
    const rest = own.answerHook('B', op('ListTasks'), 'rest');
    expect(await rest?.unary?.(list, true)).toEqual({ type: 'replace', body: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } });
    expect(await rpc?.unary?.({ jsonrpc: '2.0', id: 1, result: { tasks: [{ id: 't-1' }] } }, true)).toEqual({ type: 'pass' });
    expect(await rpc?.unary?.({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'bad' } }, true)).toEqual({ type: 'pass' });
    expect(await rpc?.unary?.(undefined, true)).toMatchObject({ type: 'refuse' });
    expect(await setup('open').own.answerHook('A', op('ListTasks'), 'jsonrpc')?.unary?.(undefined, true)).toEqual({ type: 'pass' });
  });

  test('operations that neither create nor list have no answer hook', () => {
    const { own } = setup();
    for (const m of ['tasks/get', 'tasks/cancel', 'tasks/resubscribe', 'tasks/pushNotificationConfig/set', 'GetExtendedAgentCard']) expect(own.answerHook('A', op(m), 'jsonrpc')).toBeUndefined();
  });
});

describe('taskNotFoundAnswer: the SDK agent\'s own answer on each binding and version', () => {
  const err = taskNotFound('t-1');
  const info = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' };
  test('JSON-RPC v1.0: -32001 with A2A\'s ErrorInfo only', () => {
    const a = taskNotFoundAnswer({ binding: 'jsonrpc', id: 7, v03: false, op: op('GetTask') }, err);
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32001, message: 'Task not found: t-1', data: [info] } });
  });
  test('JSON-RPC v0.3: -32001 without data; tasks/resubscribe as an SSE error event', () => {
    expect(JSON.parse(taskNotFoundAnswer({ binding: 'jsonrpc', id: 'a', v03: true, op: op('tasks/get') }, err).body))
      .toEqual({ jsonrpc: '2.0', id: 'a', error: { code: -32001, message: 'Task not found: t-1' } });
    const sse = taskNotFoundAnswer({ binding: 'jsonrpc', id: 'a3', v03: true, op: op('tasks/resubscribe') }, err);
    expect(sse.status).toBe(200);
    expect(sse.headers['content-type']).toBe('text/event-stream');
    expect(sse.body).toBe('event: error\ndata: {"jsonrpc":"2.0","id":"a3","error":{"code":-32001,"message":"Task not found: t-1"}}\n\n');
  });
  test('REST v1.0: 404 NOT_FOUND Status; v0.3: 404 {code, message}', () => {
    const v1 = taskNotFoundAnswer({ binding: 'rest', id: 'minted', v03: false, op: op('GetTask') }, err);
    expect(v1.status).toBe(404);
    expect(JSON.parse(v1.body)).toEqual({ error: { code: 404, status: 'NOT_FOUND', message: 'Task not found: t-1', details: [info] } });
    const v03 = taskNotFoundAnswer({ binding: 'rest', id: 'minted', v03: true, op: op('tasks/get') }, err);
    expect(v03.status).toBe(404);
    expect(JSON.parse(v03.body)).toEqual({ code: -32001, message: 'Task not found: t-1' });
  });
});
