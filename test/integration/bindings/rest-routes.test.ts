/**
 * The A2A HTTP+JSON (REST) binding, raw on the wire (design sections 2, 5; a2a-wire-reference 3):
 *   - every v1.0 route (with and without a /{tenant} prefix) and every v0.3 /v1/... route is
 *     classified as its operation: the guardian's envelope carries the AOS method and, as payload, the
 *     JSON-RPC equivalent {jsonrpc, id: <minted uuid>, method: <v1 / v0.3 name>, params: {path params,
 *     body or query}};
 *   - deny answers HTTP 403 with {error:{code:403, status:"PERMISSION_DENIED", message, details:[ErrorInfo
 *     GUARDIAN_DENIED]}} and forwards nothing; allow forwards the same verb and path;
 *   - routes in other letter case, with a trailing slash or an empty segment are still inspected;
 *   - a GET/DELETE route with a body, encoded slashes and dot segments are refused (400), unseen by
 *     guardian and agent;
 *   - requests that would let the agent run an operation other than the one the guardian judged
 *     (body fields shadowing path parameters, JSON-RPC-looking bodies on REST routes, HEAD on GET
 *     routes) must not get through without a matching guardian decision.
 */
import http from 'node:http';
import { makeClient, sendReq, type Client, type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { type Envelope, type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;

const stack = useStack({ pushNotifications: true, stepMs: 20 });
let agent: TestAgent;
let guardian: TestGuardian;
let proxy: Proxy;
let direct: Client;
/** A completed task and a task waiting for cancel (with push config "c1"). */
let done: string;
let running: string;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  proxy = await stack.proxy({ ROLE: 'server' });
  direct = await makeClient(agent.origin, 'JSONRPC', '1.0');
  done = ((await direct.sendMessage(sendReq('setup'))) as { id: string }).id;
  running = ((await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string }).id;
  await direct.createTaskPushNotificationConfig({
    tenant: '',
    id: 'c1',
    taskId: running,
    url: 'https://hooks.example/c1',
    token: '',
    authentication: undefined,
  });
  await proxy.upstreamCard.ready();
});

/* ---------------------------------------------------------------------------------------------- */
/* Raw HTTP (node:http: any verb, a body on GET, paths exactly as written)                        */
/* ---------------------------------------------------------------------------------------------- */

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

function raw(verb: string, path: string, opts: { headers?: Record<string, string>; body?: unknown } = {}): Promise<Raw> {
  const body = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  const u = new URL(proxy.url);
  const headers: Record<string, string | number> = { ...(opts.headers ?? {}) };
  if (body !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = Buffer.byteLength(body);
  }
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: verb, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text === '' ? undefined : JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const V1 = { 'a2a-version': '1.0' };
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const DENY: GuardianReply = { decision: 'deny', message: 'rest says no', reasonCode: ['REST_TEST'] };

/** The proxy's REST error body, checked in full; returns the ErrorInfo metadata. */
function expectRestError(res: Raw, httpStatus: number, status: string, reason: string): Record<string, string> {
  expect(res.status).toBe(httpStatus);
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text));
  expect(Object.keys(res.json)).toEqual(['error']);
  expect(res.json.error).toMatchObject({ code: httpStatus, status, message: expect.any(String) });
  expect(res.json.error.details).toHaveLength(1);
  expect(res.json.error.details[0]).toMatchObject({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-guard' });
  const md = res.json.error.details[0].metadata as Record<string, unknown>;
  for (const v of Object.values(md)) expect(typeof v).toBe('string');
  return md as Record<string, string>;
}

function expectDenied(res: Raw, env: Envelope): void {
  const md = expectRestError(res, 403, 'PERMISSION_DENIED', 'GUARDIAN_DENIED');
  expect(res.json.error.message).toContain('rest says no');
  expect(md.envelopeId).toBe(env.id);
  expect(md.reasonCode).toBe('REST_TEST');
}

const msgV1 = (text: string) => ({ message: { messageId: `m-${text.length}`, role: 'ROLE_USER', parts: [{ text }] }, configuration: {} });
const msgV03 = (text: string) => ({ message: { messageId: `m-${text.length}`, role: 'ROLE_USER', content: [{ text }] }, configuration: { blocking: true } });

/* ---------------------------------------------------------------------------------------------- */
/* Route table                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

interface Route {
  name: string;
  verb: string;
  /** Path below the proxy origin; `{T}` = the task id. */
  path: string;
  headers: Record<string, string>;
  body?: unknown;
  aos: string;
  wire: string;
  /** Expected params of the guardian's payload. */
  params: (t: string) => Record<string, unknown>;
}

const ROUTES: Route[] = [
  // v1.0
  {
    name: 'v1 SendMessage',
    verb: 'POST',
    path: '/a2a/rest/message:send',
    headers: V1,
    body: msgV1('hi v1'),
    aos: 'message/send',
    wire: 'SendMessage',
    params: () => msgV1('hi v1'),
  },
  {
    name: 'v1 SendStreamingMessage',
    verb: 'POST',
    path: '/a2a/rest/message:stream',
    headers: V1,
    body: msgV1('hi s'),
    aos: 'message/stream',
    wire: 'SendStreamingMessage',
    params: () => msgV1('hi s'),
  },
  {
    name: 'v1 GetTask',
    verb: 'GET',
    path: '/a2a/rest/tasks/{T}?historyLength=2',
    headers: V1,
    aos: 'tasks/get',
    wire: 'GetTask',
    params: (t) => ({ id: t, historyLength: 2 }),
  },
  {
    name: 'v1 ListTasks',
    verb: 'GET',
    path: '/a2a/rest/tasks?pageSize=3&contextId=ctx-1&status=TASK_STATE_WORKING&includeArtifacts=true',
    headers: V1,
    aos: 'tasks/list',
    wire: 'ListTasks',
    params: () => ({ pageSize: 3, contextId: 'ctx-1', status: 'TASK_STATE_WORKING', includeArtifacts: true }),
  },
  { name: 'v1 CancelTask', verb: 'POST', path: '/a2a/rest/tasks/{T}:cancel', headers: V1, aos: 'tasks/cancel', wire: 'CancelTask', params: (t) => ({ id: t }) },
  {
    name: 'v1 SubscribeToTask (POST)',
    verb: 'POST',
    path: '/a2a/rest/tasks/{T}:subscribe',
    headers: V1,
    aos: 'tasks/resubscribe',
    wire: 'SubscribeToTask',
    params: (t) => ({ id: t }),
  },
  {
    name: 'v1 SubscribeToTask (GET)',
    verb: 'GET',
    path: '/a2a/rest/tasks/{T}:subscribe',
    headers: V1,
    aos: 'tasks/resubscribe',
    wire: 'SubscribeToTask',
    params: (t) => ({ id: t }),
  },
  {
    name: 'v1 CreateTaskPushNotificationConfig',
    verb: 'POST',
    path: '/a2a/rest/tasks/{T}/pushNotificationConfigs',
    headers: V1,
    body: { id: 'c9', url: 'https://hooks.example/c9' },
    aos: 'tasks/pushNotificationConfig/set',
    wire: 'CreateTaskPushNotificationConfig',
    params: (t) => ({ taskId: t, id: 'c9', url: 'https://hooks.example/c9' }),
  },
  {
    name: 'v1 GetTaskPushNotificationConfig',
    verb: 'GET',
    path: '/a2a/rest/tasks/{T}/pushNotificationConfigs/c1',
    headers: V1,
    aos: 'tasks/pushNotificationConfig/get',
    wire: 'GetTaskPushNotificationConfig',
    params: (t) => ({ taskId: t, id: 'c1' }),
  },
  {
    name: 'v1 ListTaskPushNotificationConfigs',
    verb: 'GET',
    path: '/a2a/rest/tasks/{T}/pushNotificationConfigs',
    headers: V1,
    aos: 'tasks/pushNotificationConfig/list',
    wire: 'ListTaskPushNotificationConfigs',
    params: (t) => ({ taskId: t }),
  },
  {
    name: 'v1 DeleteTaskPushNotificationConfig',
    verb: 'DELETE',
    path: '/a2a/rest/tasks/{T}/pushNotificationConfigs/c1',
    headers: V1,
    aos: 'tasks/pushNotificationConfig/delete',
    wire: 'DeleteTaskPushNotificationConfig',
    params: (t) => ({ taskId: t, id: 'c1' }),
  },
  {
    name: 'v1 GetExtendedAgentCard',
    verb: 'GET',
    path: '/a2a/rest/extendedAgentCard',
    headers: V1,
    aos: 'agent/getAuthenticatedExtendedCard',
    wire: 'GetExtendedAgentCard',
    params: () => ({}),
  },
  // v1.0 with a tenant prefix
  {
    name: 'v1 tenant GetTask',
    verb: 'GET',
    path: '/a2a/rest/mytenant/tasks/{T}',
    headers: V1,
    aos: 'tasks/get',
    wire: 'GetTask',
    params: (t) => ({ id: t, tenant: 'mytenant' }),
  },
  {
    name: 'v1 tenant SendMessage',
    verb: 'POST',
    path: '/a2a/rest/mytenant/message:send',
    headers: V1,
    body: msgV1('tenant hi'),
    aos: 'message/send',
    wire: 'SendMessage',
    params: () => ({ ...msgV1('tenant hi'), tenant: 'mytenant' }),
  },
  {
    name: 'v1 tenant CancelTask',
    verb: 'POST',
    path: '/a2a/rest/mytenant/tasks/{T}:cancel',
    headers: V1,
    aos: 'tasks/cancel',
    wire: 'CancelTask',
    params: (t) => ({ id: t, tenant: 'mytenant' }),
  },
  {
    name: 'v1 tenant ListTaskPushNotificationConfigs',
    verb: 'GET',
    path: '/a2a/rest/mytenant/tasks/{T}/pushNotificationConfigs',
    headers: V1,
    aos: 'tasks/pushNotificationConfig/list',
    wire: 'ListTaskPushNotificationConfigs',
    params: (t) => ({ taskId: t, tenant: 'mytenant' }),
  },
  {
    name: 'v1 tenant GetExtendedAgentCard',
    verb: 'GET',
    path: '/a2a/rest/mytenant/extendedAgentCard',
    headers: V1,
    aos: 'agent/getAuthenticatedExtendedCard',
    wire: 'GetExtendedAgentCard',
    params: () => ({ tenant: 'mytenant' }),
  },
  // A tenant called "v1" under A2A-Version 1.0 is a v1 tenant route, not a v0.3 route.
  {
    name: 'v1 tenant "v1" GetTask',
    verb: 'GET',
    path: '/a2a/rest/v1/tasks/{T}',
    headers: V1,
    aos: 'tasks/get',
    wire: 'GetTask',
    params: (t) => ({ id: t, tenant: 'v1' }),
  },
  // v0.3 (no A2A-Version header)
  {
    name: 'v0.3 message/send',
    verb: 'POST',
    path: '/a2a/rest/v1/message:send',
    headers: {},
    body: msgV03('hi v03'),
    aos: 'message/send',
    wire: 'message/send',
    params: () => msgV03('hi v03'),
  },
  {
    name: 'v0.3 message/stream',
    verb: 'POST',
    path: '/a2a/rest/v1/message:stream',
    headers: {},
    body: msgV03('hi s03'),
    aos: 'message/stream',
    wire: 'message/stream',
    params: () => msgV03('hi s03'),
  },
  {
    name: 'v0.3 tasks/get',
    verb: 'GET',
    path: '/a2a/rest/v1/tasks/{T}?historyLength=1',
    headers: {},
    aos: 'tasks/get',
    wire: 'tasks/get',
    params: (t) => ({ id: t, historyLength: 1 }),
  },
  // The SDK's v0.3 router has no GET /v1/tasks: the path falls through to the v1.0 table, ListTasks for tenant "v1".
  {
    name: 'v0.3 GET /v1/tasks (ListTasks, tenant v1)',
    verb: 'GET',
    path: '/a2a/rest/v1/tasks',
    headers: {},
    aos: 'tasks/list',
    wire: 'ListTasks',
    params: () => ({ tenant: 'v1' }),
  },
  {
    name: 'v0.3 tasks/cancel',
    verb: 'POST',
    path: '/a2a/rest/v1/tasks/{T}:cancel',
    headers: {},
    aos: 'tasks/cancel',
    wire: 'tasks/cancel',
    params: (t) => ({ id: t }),
  },
  {
    name: 'v0.3 tasks/resubscribe (GET)',
    verb: 'GET',
    path: '/a2a/rest/v1/tasks/{T}:subscribe',
    headers: {},
    aos: 'tasks/resubscribe',
    wire: 'tasks/resubscribe',
    params: (t) => ({ id: t }),
  },
  {
    name: 'v0.3 tasks/resubscribe (POST)',
    verb: 'POST',
    path: '/a2a/rest/v1/tasks/{T}:subscribe',
    headers: {},
    aos: 'tasks/resubscribe',
    wire: 'tasks/resubscribe',
    params: (t) => ({ id: t }),
  },
  {
    name: 'v0.3 pushNotificationConfig/set',
    verb: 'POST',
    path: '/a2a/rest/v1/tasks/{T}/pushNotificationConfigs',
    headers: {},
    // (A body `name` naming another task than the path is refused: the SDK's v0.3 router would use the name's task.)
    body: { pushNotificationConfig: { id: 'c8', url: 'https://hooks.example/c8' } },
    aos: 'tasks/pushNotificationConfig/set',
    wire: 'tasks/pushNotificationConfig/set',
    params: (t) => ({ taskId: t, pushNotificationConfig: { id: 'c8', url: 'https://hooks.example/c8' } }),
  },
  {
    name: 'v0.3 pushNotificationConfig/get',
    verb: 'GET',
    path: '/a2a/rest/v1/tasks/{T}/pushNotificationConfigs/c1',
    headers: {},
    aos: 'tasks/pushNotificationConfig/get',
    wire: 'tasks/pushNotificationConfig/get',
    params: (t) => ({ id: t, pushNotificationConfigId: 'c1' }),
  },
  {
    name: 'v0.3 pushNotificationConfig/list',
    verb: 'GET',
    path: '/a2a/rest/v1/tasks/{T}/pushNotificationConfigs',
    headers: {},
    aos: 'tasks/pushNotificationConfig/list',
    wire: 'tasks/pushNotificationConfig/list',
    params: (t) => ({ id: t }),
  },
  {
    name: 'v0.3 pushNotificationConfig/delete',
    verb: 'DELETE',
    path: '/a2a/rest/v1/tasks/{T}/pushNotificationConfigs/c1',
    headers: {},
    aos: 'tasks/pushNotificationConfig/delete',
    wire: 'tasks/pushNotificationConfig/delete',
    params: (t) => ({ id: t, pushNotificationConfigId: 'c1' }),
  },
  {
    name: 'v0.3 getAuthenticatedExtendedCard (GET /v1/card)',
    verb: 'GET',
    path: '/a2a/rest/v1/card',
    headers: {},
    aos: 'agent/getAuthenticatedExtendedCard',
    wire: 'agent/getAuthenticatedExtendedCard',
    params: () => ({}),
  },
];

const at = (r: Route, t: string): string => r.path.replace('{T}', t);

describe('every REST route is classified as its operation', () => {
  test.each(ROUTES.map((r) => [r.name, r] as const))(
    '%s: deny -> HTTP 403 REST error, envelope with the JSON-RPC equivalent, nothing forwarded',
    async (_n, r) => {
      guardian.script(() => DENY);
      const res = await raw(r.verb, at(r, running), { headers: r.headers, ...(r.body === undefined ? {} : { body: r.body }) });
      const envs = guardian.calls();
      expect(envs).toHaveLength(1);
      const env = envs[0];
      expect(env.method).toBe(r.aos);
      expect(env.params.payload).toEqual({ jsonrpc: '2.0', id: expect.stringMatching(UUID_V4), method: r.wire, params: r.params(running) });
      expect(env.params.payload.id).not.toBe(env.id);
      expectDenied(res, env);
      expect(agent.received).toEqual([]);
    },
  );

  test.each(ROUTES.filter((r) => !/stream|subscribe/i.test(r.aos)).map((r) => [r.name, r] as const))(
    "%s: allow -> forwarded once with the same verb, path, body and A2A-Version; the agent's answer is relayed",
    async (_n, r) => {
      const res = await raw(r.verb, at(r, done), { headers: r.headers, ...(r.body === undefined ? {} : { body: r.body }) });
      expect(guardian.calls().map((e) => e.method)).toEqual([r.aos]);
      expect(agent.received).toHaveLength(1);
      const got = agent.received[0] as ReceivedRequest;
      expect(got.method).toBe(r.verb);
      expect(got.path).toBe(at(r, done));
      if (r.body !== undefined) expect(got.body).toEqual(r.body);
      else expect(got.bodyText).toBe('');
      expect(got.headers['a2a-version']).toBe(r.headers['a2a-version']);
      // Whatever the agent answered (the SDK 404s tenant routes and declines the extended card), it is its own answer.
      expect(res.json?.error?.details?.[0]?.domain).not.toBe('a2a-guard');
      expect(res.status).not.toBe(403);
    },
  );

  test('the extended card operations are relayed as the SDK agent declines them (no extended card): 400 from the agent', async () => {
    const v1 = await raw('GET', '/a2a/rest/extendedAgentCard', { headers: V1 });
    expect(v1.status).toBe(400);
    expect(v1.json.error).toMatchObject({ status: 'FAILED_PRECONDITION', details: [{ domain: 'a2a-protocol.org' }] });
    const v03 = await raw('GET', '/a2a/rest/v1/card');
    expect(v03.status).toBe(400);
    expect(v03.json).toMatchObject({ code: -32004 });
    expect(guardian.calls().map((e) => e.params.payload.method)).toEqual(['GetExtendedAgentCard', 'agent/getAuthenticatedExtendedCard']);
  });
});

describe('streaming routes, allowed: SSE from the agent for GET and POST subscribe, v1 and v0.3', () => {
  test.each([
    ['POST', '/a2a/rest/tasks/{T}:subscribe', V1],
    ['GET', '/a2a/rest/tasks/{T}:subscribe', V1],
    ['GET', '/a2a/rest/v1/tasks/{T}:subscribe', {}],
    ['POST', '/a2a/rest/v1/tasks/{T}:subscribe', {}],
  ] as const)('%s %s', async (verb, path, headers) => {
    const t = ((await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string }).id;
    agent.clear();
    const u = new URL(proxy.url);
    const firstChunk = await new Promise<{ status: number; type: string; data: string }>((resolve, reject) => {
      const req = http.request(
        { host: u.hostname, port: u.port, method: verb, path: path.replace('{T}', t), headers: { ...headers, accept: 'text/event-stream' }, agent: false },
        (res) => {
          res.once('data', (c: Buffer) => {
            resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), data: c.toString('utf8') });
            req.destroy();
          });
          res.on('error', () => undefined);
        },
      );
      req.on('error', (e) => (String(e).includes('socket hang up') ? undefined : reject(e)));
      req.end();
    });
    expect(firstChunk.status).toBe(200);
    expect(firstChunk.type).toMatch(/^text\/event-stream/);
    expect(firstChunk.data).toContain(t);
    expect(guardian.calls().map((e) => [e.method, e.params.payload.params])).toEqual([['tasks/resubscribe', { id: t }]]);
    expect(agent.received.map((x) => `${x.method} ${x.path}`)).toEqual([`${verb} ${path.replace('{T}', t)}`]);
    await direct.cancelTask({ tenant: '', id: t, metadata: undefined });
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Spelling variants are still inspected                                                          */
/* ---------------------------------------------------------------------------------------------- */

describe('routes in other letter case, with a trailing slash or an empty segment are inspected, never forwarded unchecked', () => {
  test.each([
    ['POST', '/A2A/REST/MESSAGE:SEND', V1, msgV1('upper'), 'message/send', 'SendMessage'],
    ['POST', '/a2a/rest/message:send/', V1, msgV1('slash'), 'message/send', 'SendMessage'],
    ['POST', '/a2a/rest/Message:Stream', V1, msgV1('mixed'), 'message/stream', 'SendStreamingMessage'],
    ['POST', '/a2a/rest/Tasks/{T}:CANCEL', V1, undefined, 'tasks/cancel', 'CancelTask'],
    ['GET', '/a2a/rest/TASKS/{T}/', V1, undefined, 'tasks/get', 'GetTask'],
    ['GET', '/a2a/rest/V1/Tasks/{T}:Subscribe/', {}, undefined, 'tasks/resubscribe', 'tasks/resubscribe'],
    ['POST', '/a2a/rest/V1/MESSAGE:SEND/', {}, msgV03('v03 upper'), 'message/send', 'message/send'],
    ['DELETE', '/a2a/rest/tasks/{T}/PushNotificationConfigs/c1/', V1, undefined, 'tasks/pushNotificationConfig/delete', 'DeleteTaskPushNotificationConfig'],
    ['GET', '/a2a/rest/ExtendedAgentCard', V1, undefined, 'agent/getAuthenticatedExtendedCard', 'GetExtendedAgentCard'],
  ] as const)('%s %s: deny -> 403, nothing forwarded', async (verb, path, headers, body, aos, wire) => {
    guardian.script(() => DENY);
    const res = await raw(verb, path.replace('{T}', running), { headers, ...(body === undefined ? {} : { body }) });
    expect(guardian.calls().map((e) => [e.method, e.params.payload.method])).toEqual([[aos, wire]]);
    expectDenied(res, guardian.calls()[0]);
    expect(agent.received).toEqual([]);
  });

  test('an empty segment ("//") is refused before anyone sees it', async () => {
    const res = await raw('POST', '/a2a/rest//message:send', { headers: V1, body: msgV1('empty seg') });
    expect(res.status).toBe(400);
    expect(guardian.calls()).toEqual([]);
    expect(agent.received).toEqual([]);
  });

  test('allowed, the upper-case route reaches the agent (which runs it) after the guardian saw it', async () => {
    const res = await raw('POST', '/A2A/REST/MESSAGE:SEND', { headers: V1, body: msgV1('shouting') });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.json)).toContain('echo: shouting');
    expect(guardian.calls().map((e) => e.method)).toEqual(['message/send']);
    // The agent gets the route the proxy rebuilt: the card's base and the canonical route.
    expect(agent.received.map((x) => `${x.method} ${x.path}`)).toEqual(['POST /a2a/rest/message:send']);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Refused: ambiguous requests                                                                    */
/* ---------------------------------------------------------------------------------------------- */

describe('ambiguous REST requests are refused with a 400 REST error, unseen by guardian and agent', () => {
  test.each([
    ['GET', '/a2a/rest/tasks/{T}', V1, { id: 'other' }],
    ['GET', '/a2a/rest/v1/tasks/{T}', {}, { historyLength: 1 }],
    ['GET', '/a2a/rest/tasks', V1, { pageSize: 1 }],
    ['GET', '/a2a/rest/tasks/{T}/pushNotificationConfigs/c1', V1, {}],
    ['DELETE', '/a2a/rest/tasks/{T}/pushNotificationConfigs/c1', V1, { id: 'c1' }],
    ['GET', '/a2a/rest/v1/card', {}, { tenant: 'x' }],
    ['GET', '/a2a/rest/tasks/{T}:subscribe', V1, { id: 'x' }],
  ] as const)('%s %s with a body', async (verb, path, headers, body) => {
    guardian.script(() => ({ decision: 'allow' }));
    const res = await raw(verb, path.replace('{T}', running), { headers, body });
    expectRestError(res, 400, 'INVALID_ARGUMENT', 'REQUEST_REJECTED');
    expect(guardian.calls()).toEqual([]);
    expect(agent.received).toEqual([]);
  });

  test.each([
    ['POST', '/a2a/rest/tasks/a%2Fb:cancel', V1, undefined],
    ['POST', '/a2a/rest/tasks/x%2F..%2F{T}:cancel', V1, undefined],
    ['GET', '/a2a/rest/tasks/..%2f{T}', V1, undefined],
    ['POST', '/a2a/rest/x/../message:send', V1, msgV1('dots')],
    ['POST', '/a2a/rest/%2e%2e/message:send', V1, msgV1('encoded dots')],
    ['POST', '/a2a/rest/./message:send', V1, msgV1('dot')],
    ['GET', '/a2a/rest/v1/tasks/%2E/{T}', {}, undefined],
    ['DELETE', '/a2a/rest/tasks/{T}/pushNotificationConfigs/c1%2F..%2Fc2', V1, undefined],
  ] as const)('%s %s (encoded slash / dot segment)', async (verb, path, headers, body) => {
    guardian.script(() => ({ decision: 'allow' }));
    const res = await raw(verb, path.replace('{T}', running), { headers, ...(body === undefined ? {} : { body }) });
    expectRestError(res, 400, 'INVALID_ARGUMENT', 'REQUEST_REJECTED');
    expect(guardian.calls()).toEqual([]);
    expect(agent.received).toEqual([]);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* modify on raw REST                                                                             */
/* ---------------------------------------------------------------------------------------------- */

describe('modify on REST', () => {
  test('v1 send: the agent receives the modified params (no path params) as the body', async () => {
    guardian.script((env) => ({ decision: 'modify', modifiedPayload: JSON.parse(JSON.stringify(env.params.payload).replace('draft', 'final')) }));
    const res = await raw('POST', '/a2a/rest/message:send', { headers: V1, body: msgV1('draft text') });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.json)).toContain('echo: final text');
    expect(agent.received[0]?.body).toEqual(msgV1('final text'));
  });

  test('v0.3 set: the body the agent receives is the modified params minus the task id path parameter', async () => {
    let modified: any;
    guardian.script((env) => {
      modified = JSON.parse(JSON.stringify(env.params.payload).replace('hooks.example/c7', 'hooks.example/vetted'));
      return { decision: 'modify', modifiedPayload: modified };
    });
    const body = { name: `tasks/${done}/pushNotificationConfigs/c7`, pushNotificationConfig: { id: 'c7', url: 'https://hooks.example/c7' } };
    const res = await raw('POST', `/a2a/rest/v1/tasks/${done}/pushNotificationConfigs`, { body });
    expect(res.status).toBeLessThan(300);
    const { taskId, ...rest } = modified.params;
    expect(taskId).toBe(done);
    expect(agent.received[0]?.body).toEqual(rest);
    expect(agent.received[0]?.bodyText).toContain('hooks.example/vetted');
    const stored = await direct.getTaskPushNotificationConfig({ tenant: '', taskId: done, id: 'c7' });
    expect(stored.url).toBe('https://hooks.example/vetted');
  });

  test('v1 list: modified params become the query', async () => {
    guardian.script((env) => ({ decision: 'modify', modifiedPayload: { ...env.params.payload, params: { pageSize: 1, includeArtifacts: false } } }));
    const res = await raw('GET', '/a2a/rest/tasks?pageSize=50', { headers: V1 });
    expect(res.status).toBe(200);
    expect(res.json.tasks).toHaveLength(1);
    expect(agent.received.map((x) => x.path)).toEqual(['/a2a/rest/tasks?pageSize=1&includeArtifacts=false']);
  });

  test.each([
    ['GET', `/a2a/rest/tasks/{T}`, 'id'],
    ['POST', `/a2a/rest/v1/tasks/{T}:cancel`, 'id'],
    ['DELETE', `/a2a/rest/tasks/{T}/pushNotificationConfigs/c1`, 'id'],
    ['GET', `/a2a/rest/mytenant/tasks/{T}/pushNotificationConfigs`, 'taskId'],
  ] as const)('%s %s: a modify that changes the path parameter %s -> 503 GUARDIAN_UNAVAILABLE, nothing forwarded', async (verb, path, key) => {
    guardian.script((env) => ({
      decision: 'modify',
      modifiedPayload: { ...env.params.payload, params: { ...env.params.payload.params, [key]: 'elsewhere' } },
    }));
    const res = await raw(verb, path.replace('{T}', running), { headers: path.includes('/v1/') ? {} : V1 });
    const md = expectRestError(res, 503, 'UNAVAILABLE', 'GUARDIAN_UNAVAILABLE');
    expect(md.envelopeId).toBe(guardian.calls()[0].id);
    expect(agent.received).toEqual([]);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* The agent must never run something other than what the guardian judged                        */
/* ---------------------------------------------------------------------------------------------- */

describe('no way around the guardian on REST routes', () => {
  /** The guardian protects one task: any operation on it is denied. */
  const protect = (taskId: string) =>
    guardian.script((env) => (JSON.stringify(env.params.payload.params ?? {}).includes(taskId) ? DENY : { decision: 'allow' }));

  test('a body field named like a path parameter does not hide the task the agent will act on (cancel)', async () => {
    const victim = ((await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string }).id;
    const decoy = ((await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string }).id;
    agent.clear();
    protect(victim);
    try {
      const res = await raw('POST', `/a2a/rest/tasks/${victim}:cancel`, { headers: V1, body: { id: decoy } });
      // The SDK agent cancels the task named in the path. Acceptable outcomes: refused by the proxy, or
      // denied by the guardian because the envelope named the victim.
      expect({ victimCancelled: agent.cancelled.has(victim), guardianSawIds: guardian.calls().map((e) => e.params.payload.params.id) }).toEqual({
        victimCancelled: false,
        guardianSawIds: guardian.calls().length === 0 ? [] : [victim],
      });
      expect([400, 403]).toContain(res.status);
    } finally {
      for (const id of [victim, decoy]) await direct.cancelTask({ tenant: '', id, metadata: undefined }).catch(() => undefined);
    }
  });

  test('a body field named like a path parameter does not hide the task the agent will act on (push config set)', async () => {
    const victim = ((await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string }).id;
    agent.clear();
    protect(victim);
    try {
      const res = await raw('POST', `/a2a/rest/tasks/${victim}/pushNotificationConfigs`, {
        headers: V1,
        body: { taskId: done, id: 'evil', url: 'https://attacker.example/hook' },
      });
      const ids = (await direct.listTaskPushNotificationConfig({ tenant: '', taskId: victim, pageSize: 0, pageToken: '' })).configs.map((c) => c.id);
      expect({ victimConfigs: ids, guardianSawTaskIds: guardian.calls().map((e) => e.params.payload.params.taskId) }).toEqual({
        victimConfigs: [],
        guardianSawTaskIds: guardian.calls().length === 0 ? [] : [victim],
      });
      expect([400, 403]).toContain(res.status);
    } finally {
      await direct.cancelTask({ tenant: '', id: victim, metadata: undefined }).catch(() => undefined);
    }
  });

  test('a JSON body with a non-A2A "method" on a REST route is not forwarded uninspected', async () => {
    guardian.script(() => DENY);
    const res = await raw('POST', '/a2a/rest/message:send', { headers: V1, body: { method: 'not/a2a', ...msgV1('smuggled via REST') } });
    // The SDK agent runs SendMessage on this body; the guardian must have judged it (and denied it), or the proxy refused it.
    expect({ agentGot: agent.received.map((x) => `${x.method} ${x.path}`), guardianSaw: guardian.calls().map((e) => e.method) }).toEqual({
      agentGot: [],
      guardianSaw: guardian.calls().length === 0 ? [] : ['message/send'],
    });
    expect(JSON.stringify(res.json ?? {})).not.toContain('echo: smuggled');
    expect([400, 403]).toContain(res.status);
  });

  test('a JSON-RPC-looking body on a REST send route is not judged as the JSON-RPC method it names', async () => {
    // Reads are allowed, sends are denied.
    guardian.script((env) => (env.method === 'tasks/get' ? { decision: 'allow' } : DENY));
    const res = await raw('POST', '/a2a/rest/message:send', {
      headers: V1,
      body: { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: done }, ...msgV1('smuggled as a read') },
    });
    // The agent runs SendMessage for this route: either the guardian judged a message/send (and denied it) or the proxy refused.
    expect({ agentGot: agent.received.map((x) => `${x.method} ${x.path}`), guardianSaw: guardian.calls().map((e) => e.method) }).toEqual({
      agentGot: [],
      guardianSaw: guardian.calls().length === 0 ? [] : ['message/send'],
    });
    expect(JSON.stringify(res.json ?? {})).not.toContain('echo: smuggled');
  });

  test("HEAD on a GET REST route (the SDK's Express server runs the GET handler for it) is not forwarded unchecked", async () => {
    guardian.script(() => DENY);
    const res = await raw('HEAD', `/a2a/rest/tasks/${done}`, { headers: V1 });
    // Either inspected (and denied here) or refused; never run by the agent without a decision.
    expect({
      agentGot: agent.received.map((x) => `${x.method} ${x.path}`),
      status: res.status === 200 ? 'task exists (agent answered)' : 'not answered by the agent',
    }).toEqual({
      agentGot: [],
      status: 'not answered by the agent',
    });
  });
});
