import { OPERATIONS, acceptsDecision, operationForLooseMethod, operationForMethod, type Operation } from '../../../src/a2a/operations';

/** [v0.3 JSON-RPC name | null, v1.0 JSON-RPC name, AOS method, streaming, modify allowed] (a2a-wire-reference.md section 2.1). */
const TABLE: Array<[string | null, string, string, boolean, boolean]> = [
  ['message/send', 'SendMessage', 'message/send', false, true],
  ['message/stream', 'SendStreamingMessage', 'message/stream', true, true],
  ['tasks/get', 'GetTask', 'tasks/get', false, true],
  [null, 'ListTasks', 'tasks/list', false, true],
  ['tasks/cancel', 'CancelTask', 'tasks/cancel', false, false],
  ['tasks/resubscribe', 'SubscribeToTask', 'tasks/resubscribe', true, false],
  ['tasks/pushNotificationConfig/set', 'CreateTaskPushNotificationConfig', 'tasks/pushNotificationConfig/set', false, true],
  ['tasks/pushNotificationConfig/get', 'GetTaskPushNotificationConfig', 'tasks/pushNotificationConfig/get', false, false],
  ['tasks/pushNotificationConfig/list', 'ListTaskPushNotificationConfigs', 'tasks/pushNotificationConfig/list', false, true],
  ['tasks/pushNotificationConfig/delete', 'DeleteTaskPushNotificationConfig', 'tasks/pushNotificationConfig/delete', false, true],
  ['agent/getAuthenticatedExtendedCard', 'GetExtendedAgentCard', 'agent/getAuthenticatedExtendedCard', false, true],
];

describe('operation table', () => {
  test('has exactly the 11 A2A operations', () => {
    expect(OPERATIONS).toHaveLength(11);
    expect(OPERATIONS.map((o) => o.v1Method).sort()).toEqual(TABLE.map((t) => t[1]).sort());
    expect(OPERATIONS.filter((o) => o.v03Method !== null)).toHaveLength(10);
  });

  test.each(TABLE)('v0.3 %p / v1.0 %p -> aosMethod %p, streaming %p, modify %p', (v03, v1, aos, streaming, modify) => {
    const byV1 = operationForMethod(v1);
    expect(byV1).toBeDefined();
    const op = byV1 as Operation;
    expect(op.aosMethod).toBe(aos);
    expect(op.v1Method).toBe(v1);
    expect(op.v03Method).toBe(v03);
    expect(op.streaming).toBe(streaming);
    if (v03 !== null) expect(operationForMethod(v03)).toBe(op);
    expect(acceptsDecision(op, 'allow')).toBe(true);
    expect(acceptsDecision(op, 'deny')).toBe(true);
    expect(acceptsDecision(op, 'modify')).toBe(modify);
    expect([...op.decisions].sort()).toEqual(modify ? ['allow', 'deny', 'modify'] : ['allow', 'deny']);
  });

  test('only message/stream and tasks/resubscribe stream', () => {
    expect(
      OPERATIONS.filter((o) => o.streaming)
        .map((o) => o.aosMethod)
        .sort(),
    ).toEqual(['message/stream', 'tasks/resubscribe']);
  });

  test('only the extended-card operation returns a card', () => {
    expect(OPERATIONS.filter((o) => o.returnsCard).map((o) => o.v1Method)).toEqual(['GetExtendedAgentCard']);
  });

  test('every operation has v1.0 REST routes; every one but ListTasks has v0.3 routes, which live under /v1', () => {
    for (const op of OPERATIONS) {
      expect(op.restV1.length).toBeGreaterThan(0);
      if (op.v1Method !== 'ListTasks') expect(op.restV03.length).toBeGreaterThan(0);
      for (const r of op.restV03) expect(r.path.startsWith('/v1/')).toBe(true);
      for (const r of op.restV1) expect(r.path.startsWith('/v1/')).toBe(false);
    }
  });

  // v0.3 lists GET /v1/tasks in its spec table but not in its proto, and the SDK's v0.3 router has no such route:
  // there /v1/tasks falls through to the v1.0 table (ListTasks for tenant "v1"), so the proxy must not read it as v0.3.
  test('ListTasks has no v0.3 REST route and no v0.3 JSON-RPC method', () => {
    const list = operationForMethod('ListTasks') as Operation;
    expect(list.restV03).toEqual([]);
    expect(list.v03Method).toBeNull();
    expect(list.restV1).toEqual([{ verb: 'GET', path: '/tasks' }]);
  });

  test('no two routes of one version share verb and template', () => {
    for (const table of [OPERATIONS.flatMap((o) => o.restV1), OPERATIONS.flatMap((o) => o.restV03)]) {
      const keys = table.map((r) => `${r.verb} ${r.path.toLowerCase()}`);
      expect(new Set(keys).size).toBe(keys.length);
    }
  });

  test('REST subscribe accepts both GET and POST in both versions', () => {
    const sub = operationForMethod('SubscribeToTask') as Operation;
    expect(sub.restV1.map((r) => `${r.verb} ${r.path}`).sort()).toEqual(['GET /tasks/{id}:subscribe', 'POST /tasks/{id}:subscribe']);
    expect(sub.restV03.map((r) => `${r.verb} ${r.path}`).sort()).toEqual(['GET /v1/tasks/{id}:subscribe', 'POST /v1/tasks/{id}:subscribe']);
  });
});

describe('exact method lookup', () => {
  test.each([
    'Message/Send',
    ' message/send',
    'message/send ',
    'SENDMESSAGE',
    'sendmessage',
    'send_message',
    'message.send',
    'Tasks/Get',
    'gettask',
    'CANCELTASK',
    'tasks/Cancel',
    'tasks/pushnotificationconfig/set',
    'subscribe-to-task',
  ])('%p is not an exact A2A method', (m) => {
    expect(operationForMethod(m)).toBeUndefined();
  });

  test.each(['', 'message', 'message/sendx', 'tasks/list/all', 'ping', 'constructor', '__proto__', 'toString', 'hasOwnProperty'])(
    '%p is no operation at all',
    (m) => {
      expect(operationForMethod(m)).toBeUndefined();
      expect(operationForLooseMethod(m)).toBeUndefined();
    },
  );
});

describe('loose method lookup (refusal of near-misses)', () => {
  test.each([
    ['Message/Send', 'message/send'],
    [' message/send', 'message/send'],
    ['message/send\t', 'message/send'],
    ['SENDMESSAGE', 'message/send'],
    ['send_message', 'message/send'],
    ['Send-Streaming-Message', 'message/stream'],
    ['TASKS/GET', 'tasks/get'],
    ['cancel_task', 'tasks/cancel'],
    ['tasks.resubscribe', 'tasks/resubscribe'],
    ['Tasks/PushNotificationConfig/Set', 'tasks/pushNotificationConfig/set'],
    ['agent/getauthenticatedextendedcard', 'agent/getAuthenticatedExtendedCard'],
  ])('%p -> %p', (loose, aos) => {
    expect(operationForMethod(loose)).toBeUndefined();
    expect(operationForLooseMethod(loose)?.aosMethod).toBe(aos);
  });

  test('every exact name is also found by the loose lookup, on the same operation', () => {
    for (const op of OPERATIONS) {
      for (const name of [op.v1Method, op.aosMethod, op.v03Method]) {
        if (name === null) continue;
        expect(operationForLooseMethod(name)).toBe(op);
        expect(operationForLooseMethod(name.toUpperCase())).toBe(op);
      }
    }
  });
});
