import { operationForMethod, type Operation } from '../../../src/a2a/operations';
import { jsonRpcCodec, restCodec } from '../../../src/a2a/bindings';
import { matchRest, restToJsonRpc, type RestMatch } from '../../../src/a2a/rest';
import { createdByAnswer, filterListed, listedTasks, namedByRequest, NO_REFS } from '../../../src/ownership/tasks';
import { ANONYMOUS, ownerKey } from '../../../src/ownership/principal';

const op = (m: string): Operation => {
  const o = operationForMethod(m);
  if (o === undefined) throw new Error(m);
  return o;
};
const named = (method: string, params: unknown) => namedByRequest(op(method), { jsonrpc: '2.0', id: 1, method, params });

/** The JSON-RPC equivalent of a REST call, as classification hands it on. */
function rest(verb: string, path: string, version: string | undefined, body?: object, query: [string, string][] = []) {
  const m = matchRest(
    verb,
    path.split('/').filter((s) => s !== ''),
    version,
  ) as RestMatch;
  expect(m).toBeDefined();
  expect('ambiguous' in m).toBe(false);
  const req = restToJsonRpc(m, query, body as never, 'minted');
  if (typeof req === 'string') throw new Error(req);
  return namedByRequest(m.op, req);
}

describe('namedByRequest: calls that name a task', () => {
  test.each([
    ['tasks/get', { id: 't-1', historyLength: 2 }],
    ['GetTask', { id: 't-1' }],
    ['tasks/cancel', { id: 't-1', metadata: {} }],
    ['CancelTask', { id: 't-1', tenant: 'x' }],
    ['tasks/resubscribe', { id: 't-1' }],
    ['SubscribeToTask', { id: 't-1' }],
  ])('%s names params.id', (method, params) => {
    expect(named(method, params)).toEqual({ tasks: ['t-1'], contexts: [] });
  });

  test('push configs, v0.3 shapes: set {taskId, pushNotificationConfig}; get/list/delete {id = task, pushNotificationConfigId}', () => {
    expect(named('tasks/pushNotificationConfig/set', { taskId: 't-1', pushNotificationConfig: { id: 'cfg', url: 'https://x' } })).toEqual({
      tasks: ['t-1'],
      contexts: [],
    });
    expect(named('tasks/pushNotificationConfig/get', { id: 't-1', pushNotificationConfigId: 'cfg' })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(named('tasks/pushNotificationConfig/get', { id: 't-1' })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(named('tasks/pushNotificationConfig/list', { id: 't-1' })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(named('tasks/pushNotificationConfig/delete', { id: 't-1', pushNotificationConfigId: 'cfg' })).toEqual({ tasks: ['t-1'], contexts: [] });
  });

  test('push configs, v1.0 shapes {taskId, id = config id}: the config id is not a task', () => {
    expect(named('CreateTaskPushNotificationConfig', { taskId: 't-1', id: 'cfg', url: 'https://x' })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(named('GetTaskPushNotificationConfig', { taskId: 't-1', id: 'cfg' })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(named('ListTaskPushNotificationConfigs', { taskId: 't-1', pageSize: 5 })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(named('DeleteTaskPushNotificationConfig', { taskId: 't-1', id: 'cfg' })).toEqual({ tasks: ['t-1'], contexts: [] });
  });

  test('every spelling the SDK parser reads, and values it turns into text', () => {
    expect(named('GetTaskPushNotificationConfig', { task_id: 't-1', id: 'cfg' })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(named('tasks/get', { id: ['t-1'] })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(named('tasks/get', { id: 42 })).toEqual({ tasks: ['42'], contexts: [] });
    expect(named('SendMessage', { message: { task_id: 't-1', context_id: 'c-1' } })).toEqual({ tasks: ['t-1'], contexts: ['c-1'] });
  });

  test('a v0.3 push-config resource name names its task', () => {
    expect(named('tasks/pushNotificationConfig/set', { taskId: 't-1', name: 'tasks/t-2/pushNotificationConfigs/c' })).toEqual({
      tasks: ['t-1', 't-2'],
      contexts: [],
    });
  });

  test('unset and empty ids name nothing', () => {
    expect(named('tasks/get', {})).toBe(NO_REFS);
    expect(named('tasks/get', { id: '' })).toBe(NO_REFS);
    expect(named('tasks/get', { id: null })).toBe(NO_REFS);
    expect(namedByRequest(op('tasks/get'), { jsonrpc: '2.0', id: 1, method: 'tasks/get' })).toBe(NO_REFS);
  });

  test('calls that name no task: list, extended card, a new message', () => {
    expect(named('ListTasks', { pageSize: 10, pageToken: 'x' })).toBe(NO_REFS);
    // A list filtered to a context names it (another caller's would page through that caller's tasks).
    expect(named('ListTasks', { contextId: 'c-1', pageSize: 10 })).toEqual({ tasks: [], contexts: ['c-1'] });
    expect(named('GetExtendedAgentCard', {})).toBe(NO_REFS);
    expect(named('agent/getAuthenticatedExtendedCard', {})).toBe(NO_REFS);
    expect(named('message/send', { message: { kind: 'message', role: 'user', messageId: 'm', parts: [] } })).toBe(NO_REFS);
  });
});

describe('namedByRequest: messages that continue a task or a context', () => {
  test.each(['message/send', 'message/stream', 'SendMessage', 'SendStreamingMessage'])('%s: message.taskId, message.contextId, referenceTaskIds', (method) => {
    expect(named(method, { message: { messageId: 'm', taskId: 't-1', contextId: 'c-1', referenceTaskIds: ['t-2', 't-1'], parts: [] } })).toEqual({
      tasks: ['t-1', 't-2'],
      contexts: ['c-1'],
    });
    expect(named(method, { message: { messageId: 'm', contextId: 'c-1', parts: [] } })).toEqual({ tasks: [], contexts: ['c-1'] });
  });

  test('the v0.3 proto spelling `request` of the message, and a push config inside the configuration', () => {
    expect(named('message/send', { request: { taskId: 't-1' } })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(named('SendMessage', { message: { messageId: 'm' }, configuration: { taskPushNotificationConfig: { taskId: 't-9', url: 'https://x' } } })).toEqual({
      tasks: ['t-9'],
      contexts: [],
    });
  });
});

describe('namedByRequest on REST calls mapped by a2a/rest.ts', () => {
  test('v1.0 routes, with and without a tenant', () => {
    expect(rest('GET', '/tasks/t-1', '1.0')).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('GET', '/acme/tasks/t-1', '1.0')).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('POST', '/tasks/t-1:cancel', '1.0')).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('POST', '/tasks/t-1:subscribe', '1.0')).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('GET', '/tasks/t-1:subscribe', '1.0')).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('POST', '/tasks/t-1/pushNotificationConfigs', '1.0', { url: 'https://x' })).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('GET', '/tasks/t-1/pushNotificationConfigs', '1.0')).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('GET', '/tasks/t-1/pushNotificationConfigs/cfg', '1.0')).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('DELETE', '/tasks/t-1/pushNotificationConfigs/cfg', '1.0')).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('POST', '/message:send', '1.0', { message: { messageId: 'm', taskId: 't-1', contextId: 'c-1', parts: [] } })).toEqual({
      tasks: ['t-1'],
      contexts: ['c-1'],
    });
    expect(rest('POST', '/message:stream', '1.0', { message: { messageId: 'm', contextId: 'c-1', parts: [] } })).toEqual({ tasks: [], contexts: ['c-1'] });
    expect(rest('GET', '/tasks', '1.0')).toBe(NO_REFS);
  });

  test('v0.3 routes (/v1/...): the path task, never the config id', () => {
    expect(rest('GET', '/v1/tasks/t-1', undefined)).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('POST', '/v1/tasks/t-1:cancel', undefined)).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('GET', '/v1/tasks/t-1:subscribe', undefined)).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(
      rest('POST', '/v1/tasks/t-1/pushNotificationConfigs', undefined, {
        name: 'tasks/t-1/pushNotificationConfigs/cfg',
        pushNotificationConfig: { url: 'https://x' },
      }),
    ).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('GET', '/v1/tasks/t-1/pushNotificationConfigs', undefined)).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('GET', '/v1/tasks/t-1/pushNotificationConfigs/cfg', undefined)).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('DELETE', '/v1/tasks/t-1/pushNotificationConfigs/cfg', undefined)).toEqual({ tasks: ['t-1'], contexts: [] });
    expect(rest('POST', '/v1/message:send', undefined, { message: { messageId: 'm', taskId: 't-1', contextId: 'c-1', content: [] } })).toEqual({
      tasks: ['t-1'],
      contexts: ['c-1'],
    });
  });
});

describe('createdByAnswer: what an answer creates', () => {
  const task = { id: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_SUBMITTED' } };
  const both = { tasks: ['t-1'], contexts: ['c-1'] };

  test('message/send results: v1.0 {task} and {message}, v0.3 kind task and message', () => {
    expect(createdByAnswer({ jsonrpc: '2.0', id: 1, result: { task } }, jsonRpcCodec)).toEqual(both);
    expect(
      createdByAnswer({ jsonrpc: '2.0', id: 1, result: { message: { messageId: 'm', taskId: 't-1', contextId: 'c-1', parts: [] } } }, jsonRpcCodec),
    ).toEqual(both);
    expect(createdByAnswer({ jsonrpc: '2.0', id: 1, result: { kind: 'task', ...task } }, jsonRpcCodec)).toEqual(both);
    expect(createdByAnswer({ jsonrpc: '2.0', id: 1, result: { kind: 'message', messageId: 'm', taskId: 't-1', contextId: 'c-1' } }, jsonRpcCodec)).toEqual(
      both,
    );
    expect(createdByAnswer({ jsonrpc: '2.0', id: 1, result: { kind: 'message', messageId: 'm', contextId: 'c-1' } }, jsonRpcCodec)).toEqual({
      tasks: [],
      contexts: ['c-1'],
    });
  });

  test('REST bodies: v1.0 and v0.3 ({task}, {message}, {msg})', () => {
    expect(createdByAnswer({ task }, restCodec)).toEqual(both);
    expect(createdByAnswer({ message: { taskId: 't-1', contextId: 'c-1' } }, restCodec)).toEqual(both);
    expect(createdByAnswer({ msg: { taskId: 't-1', contextId: 'c-1' } }, restCodec)).toEqual(both);
  });

  test('stream events, JSON-RPC v1.0: task, statusUpdate, artifactUpdate, message', () => {
    for (const result of [
      { task },
      { statusUpdate: { taskId: 't-1', contextId: 'c-1', status: { state: 'TASK_STATE_WORKING' } } },
      { artifactUpdate: { taskId: 't-1', contextId: 'c-1', artifact: { artifactId: 'a', parts: [] }, lastChunk: true } },
      { message: { taskId: 't-1', contextId: 'c-1' } },
    ])
      expect(createdByAnswer({ jsonrpc: '2.0', id: 2, result }, jsonRpcCodec)).toEqual(both);
  });

  test('stream events, JSON-RPC v0.3: kind task, status-update, artifact-update', () => {
    expect(createdByAnswer({ jsonrpc: '2.0', id: 2, result: { kind: 'task', ...task } }, jsonRpcCodec)).toEqual(both);
    expect(createdByAnswer({ jsonrpc: '2.0', id: 2, result: { kind: 'status-update', taskId: 't-1', contextId: 'c-1', final: false } }, jsonRpcCodec)).toEqual(
      both,
    );
    expect(createdByAnswer({ jsonrpc: '2.0', id: 2, result: { kind: 'artifact-update', taskId: 't-1', contextId: 'c-1' } }, jsonRpcCodec)).toEqual(both);
  });

  test('stream events, REST StreamResponse (v1.0 and v0.3 proto-JSON, snake_case too)', () => {
    expect(createdByAnswer({ task }, restCodec)).toEqual(both);
    expect(createdByAnswer({ statusUpdate: { taskId: 't-1', contextId: 'c-1', final: true } }, restCodec)).toEqual(both);
    expect(createdByAnswer({ artifactUpdate: { taskId: 't-1', contextId: 'c-1' } }, restCodec)).toEqual(both);
    expect(createdByAnswer({ status_update: { task_id: 't-1', context_id: 'c-1' } }, restCodec)).toEqual(both);
  });

  test('errors and other answers create nothing', () => {
    expect(createdByAnswer({ jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'Task not found' } }, jsonRpcCodec)).toBe(NO_REFS);
    expect(createdByAnswer({ error: { code: 404 } }, restCodec)).toBe(NO_REFS);
    expect(createdByAnswer(null, restCodec)).toBe(NO_REFS);
    expect(createdByAnswer('text', jsonRpcCodec)).toBe(NO_REFS);
    // A JSON-RPC answer's own `id` is the request id, never a task.
    expect(createdByAnswer({ jsonrpc: '2.0', id: 't-1', result: null }, jsonRpcCodec)).toBe(NO_REFS);
  });
});

describe('tasks/list answers', () => {
  const list = { tasks: [{ id: 'a-1', contextId: 'c' }, { id: 'b-1' }, { contextId: 'no id' }, { id: 'a-2' }], nextPageToken: '', pageSize: 50, totalSize: 4 };

  test('listedTasks reads the ids (JSON-RPC result and REST body)', () => {
    expect(listedTasks({ jsonrpc: '2.0', id: 1, result: list }, jsonRpcCodec)).toEqual(['a-1', 'b-1', undefined, 'a-2']);
    expect(listedTasks(list, restCodec)).toEqual(['a-1', 'b-1', undefined, 'a-2']);
    expect(listedTasks({ jsonrpc: '2.0', id: 1, result: { nextPageToken: '' } }, jsonRpcCodec)).toEqual([]);
    expect(listedTasks({ jsonrpc: '2.0', id: 1, result: { tasks: 'x' } }, jsonRpcCodec)).toBeUndefined();
    expect(listedTasks({ jsonrpc: '2.0', id: 1, error: { code: 1 } }, jsonRpcCodec)).toBeUndefined();
  });

  test('filterListed keeps the chosen tasks and counts only those', () => {
    const keep = [true, false, false, true];
    expect(filterListed({ jsonrpc: '2.0', id: 1, result: list }, jsonRpcCodec, keep)).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { tasks: [{ id: 'a-1', contextId: 'c' }, { id: 'a-2' }], nextPageToken: '', pageSize: 50, totalSize: 2 },
    });
    expect(filterListed(list, restCodec, keep)).toEqual({
      tasks: [{ id: 'a-1', contextId: 'c' }, { id: 'a-2' }],
      nextPageToken: '',
      pageSize: 50,
      totalSize: 2,
    });
    expect(filterListed(list, restCodec, [])).toEqual({ tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 });
  });
});

describe('ownerKey', () => {
  test('source:issuer:subject, anonymous without a verified identity', () => {
    expect(ownerKey({ source: 'oidc', issuer: 'https://idp.example', subject: 'agent-a' })).toBe('oidc:https%3A//idp.example:agent-a');
    expect(ownerKey({ source: 'mtls', subject: 'spiffe://x/a' })).toBe('mtls::spiffe%3A//x/a');
    expect(ownerKey(undefined)).toBe(ANONYMOUS);
  });

  test('no two identities share a key', () => {
    const a = ownerKey({ source: 'assertion', issuer: 'k:1', subject: 'x' });
    const b = ownerKey({ source: 'assertion', issuer: 'k', subject: '1:x' });
    expect(a).not.toBe(b);
    expect(ownerKey({ source: 'oidc', issuer: '%3A', subject: 's' })).not.toBe(ownerKey({ source: 'oidc', issuer: ':', subject: 's' }));
    expect(ownerKey({ source: 'oidc', subject: 'anonymous' })).not.toBe(ANONYMOUS);
  });
});
