/**
 * Every A2A operation, through real @a2a-js/sdk clients created from the PROXY's URL (card resolver),
 * in all four combinations JSON-RPC / HTTP+JSON (REST) x v1.0 / v0.3 (legacy compat), against a real
 * SDK agent (design sections 2, 3, 5, 7):
 *
 *   allow   -> the card rewrite keeps every call inside the proxy: the guardian recorded every call the
 *              client made (AOS method = v0.3-style name, payload = the JSON-RPC request or its REST
 *              equivalent), the agent received exactly those calls, and every request the agent got
 *              carries the proxy's marks (x-forwarded-for / x-forwarded-host = the proxy, host = agent);
 *   deny    -> nothing reaches the agent; JSON-RPC: the SDK raises -31403 with the ErrorInfo;
 *              REST v1: an A2AError with statusCode 403; REST v0.3 (compat client): an HTTP 403 error
 *              carrying the google.rpc.Status body;
 *   modify  -> (operations whose hook accepts it) the agent receives the guardian's replacement
 *              (REST: the modified params minus path params, as body or query); for tasks/cancel,
 *              tasks/resubscribe and tasks/pushNotificationConfig/get a modify is no valid answer
 *              (-31503 / HTTP 503), as is a REST modify that changes a path parameter.
 *
 * tasks/list exists in v1 only (ListTasks): the v0.3 SDK clients refuse it locally (JSON-RPC -32601,
 * REST UnsupportedOperationError) and send nothing; raw v0.3 traffic for it is covered in ops-rest.
 * agent/getAuthenticatedExtendedCard: the SDK client only calls it when the card announces an extended
 * card (see card-extended.test.ts); with this agent it answers from the card it has, without a call.
 */
import { collect, makeClient, sendReq, textOf, TaskState, type Client, type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { BINDING_VERSIONS } from '../../helpers/agent';
import { type Envelope, type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;
type Binding = 'JSONRPC' | 'HTTP+JSON';
type Version = '1.0' | '0.3';
type Combo = readonly [Binding, Version];

const COMBOS: readonly Combo[] = BINDING_VERSIONS;

const stack = useStack({ pushNotifications: true, stepMs: 20 });
let agent: TestAgent;
let guardian: TestGuardian;
let proxy: Proxy;
/** A client straight to the agent, for fixtures only (never used while the agent's record is checked). */
let direct: Client;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  proxy = await stack.proxy({ ROLE: 'server' });
  direct = await makeClient(agent.origin, 'JSONRPC', '1.0');
  // The proxy's own identity fetch of the agent card is done; from here on every request the agent gets is checked.
  await proxy.upstreamCard.ready();
});

/* ---------------------------------------------------------------------------------------------- */
/* Operation table (the test's own oracle; deliberately not imported from src/)                   */
/* ---------------------------------------------------------------------------------------------- */

type OpKey = 'send' | 'stream' | 'get' | 'list' | 'cancel' | 'resubscribe' | 'pushSet' | 'pushGet' | 'pushList' | 'pushDelete';

interface Fixture {
  /** A completed task. */
  done: string;
  /** A task waiting for cancel, with push configs cfg-a and cfg-b. */
  running: string;
  /** Another waiting task with push config cfg-o. */
  other: string;
}

interface OpCase {
  readonly aos: string;
  readonly v1: string;
  /** v0.3 JSON-RPC name (null: none in v0.3). */
  readonly v03: string | null;
  /** The hook accepts modify. */
  readonly modifiable: boolean;
  /** REST path parameters (they are part of the guardian's params, but never of the body or query). */
  /** REST path parameters of the JSON-RPC equivalent (v1.0 names; see pathParamsOf for v0.3). */
  readonly pathParams: readonly string[];
  /** Verb and path (below /a2a/rest, v0.3 adds /v1) the agent receives for REST. */
  readonly rest: (v: Version, f: Fixture) => { verb: string; path: string };
  readonly call: (c: Client, f: Fixture) => Promise<unknown>;
}

const PUSH_URL = 'https://hooks.example/original';

async function firstEventThenClose(it: AsyncGenerator<unknown, void, undefined>): Promise<unknown> {
  const first = await it.next();
  await it.return(undefined);
  return first.value;
}

/** v0.3 push-config get/list/delete name the task `id` and the config `pushNotificationConfigId`, as its JSON-RPC shape does. */
function pathParamsOf(k: OpKey, version: string): readonly string[] {
  if (version === '0.3' && (k === 'pushGet' || k === 'pushDelete')) return ['id', 'pushNotificationConfigId'];
  if (version === '0.3' && k === 'pushList') return ['id'];
  return OPS[k].pathParams;
}

const OPS: Record<OpKey, OpCase> = {
  send: {
    aos: 'message/send',
    v1: 'SendMessage',
    v03: 'message/send',
    modifiable: true,
    pathParams: [],
    rest: () => ({ verb: 'POST', path: '/message:send' }),
    call: (c) => c.sendMessage(sendReq('hello original')),
  },
  stream: {
    aos: 'message/stream',
    v1: 'SendStreamingMessage',
    v03: 'message/stream',
    modifiable: true,
    pathParams: [],
    rest: () => ({ verb: 'POST', path: '/message:stream' }),
    call: (c) => collect(c.sendMessageStream(sendReq('streamed original'))),
  },
  get: {
    aos: 'tasks/get',
    v1: 'GetTask',
    v03: 'tasks/get',
    modifiable: true,
    pathParams: ['id'],
    rest: (_v, f) => ({ verb: 'GET', path: `/tasks/${f.done}` }),
    call: (c, f) => c.getTask({ tenant: '', id: f.done, historyLength: undefined }),
  },
  list: {
    aos: 'tasks/list',
    v1: 'ListTasks',
    v03: null,
    modifiable: true,
    pathParams: [],
    rest: () => ({ verb: 'GET', path: '/tasks?pageSize=5' }),
    call: (c) =>
      c.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageSize: 5,
        pageToken: '',
        historyLength: undefined,
        statusTimestampAfter: undefined,
        includeArtifacts: undefined,
      }),
  },
  cancel: {
    aos: 'tasks/cancel',
    v1: 'CancelTask',
    v03: 'tasks/cancel',
    modifiable: false,
    pathParams: ['id'],
    rest: (_v, f) => ({ verb: 'POST', path: `/tasks/${f.running}:cancel` }),
    call: (c, f) => c.cancelTask({ tenant: '', id: f.running, metadata: undefined }),
  },
  resubscribe: {
    aos: 'tasks/resubscribe',
    v1: 'SubscribeToTask',
    v03: 'tasks/resubscribe',
    modifiable: false,
    pathParams: ['id'],
    // The v1 SDK client subscribes with POST, the v0.3 compat client with GET.
    rest: (v, f) => ({ verb: v === '1.0' ? 'POST' : 'GET', path: `/tasks/${f.running}:subscribe` }),
    call: (c, f) => firstEventThenClose(c.resubscribeTask({ tenant: '', id: f.running })),
  },
  pushSet: {
    aos: 'tasks/pushNotificationConfig/set',
    v1: 'CreateTaskPushNotificationConfig',
    v03: 'tasks/pushNotificationConfig/set',
    modifiable: true,
    pathParams: ['taskId'],
    rest: (_v, f) => ({ verb: 'POST', path: `/tasks/${f.running}/pushNotificationConfigs` }),
    call: (c, f) =>
      c.createTaskPushNotificationConfig({ tenant: '', id: 'cfg-new', taskId: f.running, url: PUSH_URL, token: 'tok', authentication: undefined }),
  },
  pushGet: {
    aos: 'tasks/pushNotificationConfig/get',
    v1: 'GetTaskPushNotificationConfig',
    v03: 'tasks/pushNotificationConfig/get',
    modifiable: false,
    pathParams: ['taskId', 'id'],
    rest: (_v, f) => ({ verb: 'GET', path: `/tasks/${f.running}/pushNotificationConfigs/cfg-a` }),
    call: (c, f) => c.getTaskPushNotificationConfig({ tenant: '', taskId: f.running, id: 'cfg-a' }),
  },
  pushList: {
    aos: 'tasks/pushNotificationConfig/list',
    v1: 'ListTaskPushNotificationConfigs',
    v03: 'tasks/pushNotificationConfig/list',
    modifiable: true,
    pathParams: ['taskId'],
    rest: (_v, f) => ({ verb: 'GET', path: `/tasks/${f.running}/pushNotificationConfigs` }),
    call: (c, f) => c.listTaskPushNotificationConfig({ tenant: '', taskId: f.running, pageSize: 0, pageToken: '' }),
  },
  pushDelete: {
    aos: 'tasks/pushNotificationConfig/delete',
    v1: 'DeleteTaskPushNotificationConfig',
    v03: 'tasks/pushNotificationConfig/delete',
    modifiable: true,
    pathParams: ['taskId', 'id'],
    rest: (_v, f) => ({ verb: 'DELETE', path: `/tasks/${f.running}/pushNotificationConfigs/cfg-a` }),
    call: (c, f) => c.deleteTaskPushNotificationConfig({ tenant: '', taskId: f.running, id: 'cfg-a' }),
  },
};

const ALL_OPS = Object.keys(OPS) as OpKey[];
/** Operations a client of this combination can send (v0.3 has no tasks/list). */
const opsFor = (v: Version): OpKey[] => ALL_OPS.filter((k) => v === '1.0' || OPS[k].v03 !== null);
const wireName = (op: OpCase, v: Version): string => (v === '1.0' ? op.v1 : (op.v03 as string));
const restPrefix = (v: Version): string => (v === '1.0' ? '/a2a/rest' : '/a2a/rest/v1');

/* ---------------------------------------------------------------------------------------------- */
/* Helpers                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

async function makeFixture(): Promise<Fixture> {
  const done = (await direct.sendMessage(sendReq('setup task'))) as { id: string };
  const running = (await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string };
  const other = (await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string };
  for (const [taskId, id] of [
    [running.id, 'cfg-a'],
    [running.id, 'cfg-b'],
    [other.id, 'cfg-o'],
  ] as const) {
    await direct.createTaskPushNotificationConfig({ tenant: '', id, taskId, url: `https://hooks.example/${id}`, token: '', authentication: undefined });
  }
  agent.clear();
  guardian.clear();
  return { done: done.id, running: running.id, other: other.id };
}

async function dropFixture(f: Fixture): Promise<void> {
  for (const id of [f.running, f.other]) {
    if (!agent.cancelled.has(id)) await direct.cancelTask({ tenant: '', id, metadata: undefined }).catch(() => undefined);
  }
}

async function configIds(taskId: string): Promise<string[]> {
  const r = await direct.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 0, pageToken: '' });
  return r.configs.map((c) => c.id).sort();
}

async function failure(p: Promise<unknown>): Promise<any> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  if (err === undefined) throw new Error('the SDK call succeeded but was expected to fail');
  return err;
}

function prototypeNames(x: unknown): string[] {
  const out: string[] = [];
  for (let p = Object.getPrototypeOf(x); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) out.push(p.constructor?.name ?? '?');
  return out;
}

/** The proxy's error as the SDK client surfaced it: JSON-RPC code or HTTP status, plus the ErrorInfo. */
interface SurfacedError {
  code?: number;
  status?: number;
  message: string;
  info?: { reason?: string; domain?: string; metadata?: Record<string, string> };
}

function surfaced(binding: Binding, version: Version, err: any): SurfacedError {
  const message = String(err?.message ?? '');
  if (binding === 'JSONRPC') {
    expect(err?.name ?? err?.constructor?.name).toMatch(/JsonRpc/);
    return { code: err?.envelopeCode, message, info: err?.errorResponse?.error?.data?.[0] };
  }
  if (version === '1.0') {
    // The v1 REST transport raises an A2AError carrying the HTTP status and the message. (It keeps an
    // ErrorInfo only for A2A's own reasons, so the proxy's GUARDIAN_DENIED details are checked on the wire in ops-rest.)
    expect(err?.name).toBe('A2AError');
    expect(prototypeNames(err).some((n) => /^_*A2AError$/.test(n))).toBe(true);
    return { status: err?.statusCode, message };
  }
  // The v0.3 REST compat transport raises a plain Error: "HTTP error for <path>! Status: 403 Forbidden. Response: <body>".
  const m = /Status: (\d{3})[^]*?Response: (\{[^]*\})\s*$/.exec(message);
  expect(m).not.toBeNull();
  const body = JSON.parse((m as RegExpExecArray)[2] as string);
  return { status: Number((m as RegExpExecArray)[1]), message: String(body?.error?.message ?? ''), info: body?.error?.details?.[0] };
}

function expectDenied(binding: Binding, version: Version, err: unknown, env: Envelope): void {
  const s = surfaced(binding, version, err);
  if (binding === 'JSONRPC') expect(s.code).toBe(-31403);
  else expect(s.status).toBe(403);
  expect(s.message).toContain('not on my watch');
  if (binding === 'HTTP+JSON' && version === '1.0') return;
  expect(s.info).toMatchObject({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'GUARDIAN_DENIED', domain: 'a2a-guard' });
  expect(s.info?.metadata?.envelopeId).toBe(env.id);
  expect(s.info?.metadata?.reasonCode).toBe('OPS_TEST');
}

function expectUnavailable(binding: Binding, version: Version, err: unknown): void {
  const s = surfaced(binding, version, err);
  if (binding === 'JSONRPC') expect(s.code).toBe(-31503);
  else expect(s.status).toBe(503);
  if (binding === 'HTTP+JSON' && version === '1.0') return;
  expect(s.info).toMatchObject({ reason: 'GUARDIAN_UNAVAILABLE', domain: 'a2a-guard' });
}

/** Every request that reached the agent came through this proxy. */
function expectAllThroughProxy(received: readonly ReceivedRequest[]): void {
  const proxyHost = new URL(proxy.url).host;
  const agentHost = new URL(agent.origin).host;
  expect(received.length).toBeGreaterThan(0);
  for (const r of received) {
    const where = `${r.method} ${r.path}`;
    expect({ where, xff: r.headers['x-forwarded-for'] }).toEqual({ where, xff: expect.stringMatching(/127\.0\.0\.1/) });
    expect({ where, xfh: r.headers['x-forwarded-host'] }).toEqual({ where, xfh: proxyHost });
    expect({ where, proto: r.headers['x-forwarded-proto'] }).toEqual({ where, proto: 'http' });
    expect({ where, host: r.headers.host }).toEqual({ where, host: agentHost });
  }
}

/** Deep copy of `x` with `from` replaced by `to` in every string. */
function replaceAll<T>(x: T, from: string, to: string): T {
  return JSON.parse(JSON.stringify(x), (_k, v) => (typeof v === 'string' ? v.split(from).join(to) : v)) as T;
}

const DENY: GuardianReply = { decision: 'deny', message: 'not on my watch', reasonCode: ['OPS_TEST'] };
const isCardFetch = (r: ReceivedRequest): boolean => r.path.includes('/.well-known/');
const a2aRequests = (): ReceivedRequest[] => agent.received.filter((r) => !isCardFetch(r));

/* ---------------------------------------------------------------------------------------------- */
/* allow: the whole session stays inside the proxy                                                */
/* ---------------------------------------------------------------------------------------------- */

describe.each(COMBOS)('%s %s', (binding, version) => {
  test('allow: every call of an SDK client built from the proxy URL is seen by the guardian and forwarded once', async () => {
    const client = await makeClient(proxy.url, binding, version);
    // The client found the proxy (not the agent) in the card.
    const card = await client.getAgentCard();
    for (const i of card.supportedInterfaces) expect(new URL(i.url).origin).toBe(proxy.url);

    const calls: OpKey[] = [];
    const run = async (k: OpKey, f: Fixture): Promise<unknown> => {
      calls.push(k);
      return OPS[k].call(client, f);
    };
    const f: Fixture = { done: '', running: '', other: '' };
    const sent = (await run('send', f)) as { id: string };
    expect(textOf(sent)).toBe('echo: hello original');
    f.done = sent.id;
    expect(textOf(await run('stream', f))).toContain('echo: streamed original');
    expect((await run('get', f)) as { id: string }).toMatchObject({ id: f.done });
    if (version === '1.0') {
      const list = (await run('list', f)) as { tasks: { id: string }[] };
      expect(list.tasks.map((t) => t.id)).toContain(f.done);
    } else {
      // v0.3 has no tasks/list: the SDK client refuses it without sending anything.
      const before = agent.received.length;
      const err = await failure(OPS.list.call(client, f));
      expect(String(err?.message)).toMatch(/tasks\/list/);
      expect(agent.received.length).toBe(before);
    }
    calls.push('send');
    const started = (await client.sendMessage(sendReq('wait-for-cancel', true))) as { id: string };
    f.running = started.id;
    const first = (await run('resubscribe', f)) as { payload?: { $case?: string; value?: { id?: string } } };
    expect(first?.payload?.$case).toBe('task');
    expect(first?.payload?.value?.id).toBe(f.running);
    expect(await run('pushSet', f)).toMatchObject({ taskId: f.running, url: PUSH_URL });
    calls.push('pushSet');
    await client.createTaskPushNotificationConfig({
      tenant: '',
      id: 'cfg-a',
      taskId: f.running,
      url: 'https://hooks.example/a',
      token: '',
      authentication: undefined,
    });
    expect(await run('pushGet', f)).toMatchObject({ id: 'cfg-a', url: 'https://hooks.example/a' });
    const listed = (await run('pushList', f)) as { configs: { id: string }[] };
    expect(listed.configs.map((c) => c.id).sort()).toEqual(['cfg-a', 'cfg-new']);
    await run('pushDelete', f);
    const cancelled = (await run('cancel', f)) as { status?: { state?: number } };
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);

    // The guardian saw every call, in order, under its AOS name, with the wire name inside.
    const envs = guardian.calls();
    expect(envs.map((e) => e.method)).toEqual(calls.map((k) => OPS[k].aos));
    expect(envs.map((e) => e.params.payload.method)).toEqual(calls.map((k) => wireName(OPS[k], version)));
    for (const e of envs) {
      expect(e.jsonrpc).toBe('2.0');
      expect(e.id).toMatch(UUID_V4);
      expect(e.params.payload.jsonrpc).toBe('2.0');
    }

    // The agent received exactly those calls (plus the card fetches the client made through the proxy) ...
    const reqs = a2aRequests();
    expect(reqs).toHaveLength(calls.length);
    // The client's A2A-Version reached the agent unchanged on every call.
    expect(reqs.map((r) => r.headers['a2a-version'])).toEqual(calls.map(() => version));
    if (binding === 'JSONRPC') {
      // ... each one the very JSON the guardian approved.
      expect(reqs.map((r) => `${r.method} ${r.path}`)).toEqual(calls.map(() => 'POST /a2a/jsonrpc'));
      expect(reqs.map((r) => r.body)).toEqual(envs.map((e) => e.params.payload));
    } else {
      reqs.forEach((r, i) => {
        const k = calls[i] as OpKey;
        const want = OPS[k].rest(version, f);
        expect(`${r.method} ${r.path.split('?')[0]}`).toBe(`${want.verb} ${restPrefix(version)}${want.path.split('?')[0]}`);
        // The guardian's payload is the JSON-RPC equivalent: path parameters plus body / query.
        const params = envs[i].params.payload.params;
        if (r.body !== undefined) expect(params).toMatchObject(r.body as object);
        for (const [name, value] of new URL(r.path, 'http://x').searchParams) expect(String(params[name])).toBe(value);
      });
      // path parameters show up as params
      const byAos = (aos: string) => envs.filter((e) => e.method === aos);
      expect(byAos('tasks/get')[0].params.payload.params).toEqual({ id: f.done });
      expect(byAos('tasks/cancel')[0].params.payload.params).toEqual({ id: f.running });
      expect(byAos('tasks/resubscribe')[0].params.payload.params).toEqual({ id: f.running });
      // v0.3 names the task `id` and the config `pushNotificationConfigId` (its JSON-RPC shape); v1.0 `taskId` and `id`.
      const cfg = version === '0.3' ? { id: f.running, pushNotificationConfigId: 'cfg-a' } : { taskId: f.running, id: 'cfg-a' };
      expect(byAos('tasks/pushNotificationConfig/get')[0].params.payload.params).toEqual(cfg);
      expect(byAos('tasks/pushNotificationConfig/list')[0].params.payload.params).toEqual(version === '0.3' ? { id: f.running } : { taskId: f.running });
      expect(byAos('tasks/pushNotificationConfig/delete')[0].params.payload.params).toEqual(cfg);
      if (version === '1.0') expect(byAos('tasks/list')[0].params.payload.params).toEqual({ pageSize: 5 });
    }
    // Nothing reached the agent except through the proxy.
    expectAllThroughProxy(agent.received);
    expect(agent.received.filter(isCardFetch).length).toBeGreaterThanOrEqual(1);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* deny: per operation and binding                                                                */
/* ---------------------------------------------------------------------------------------------- */

describe.each(COMBOS)('deny %s %s', (binding, version) => {
  let client: Client;
  let f: Fixture;
  beforeAll(async () => {
    client = await makeClient(proxy.url, binding, version);
  });
  beforeEach(async () => {
    f = await makeFixture();
  });
  afterEach(async () => {
    await dropFixture(f);
  });

  test.each(opsFor(version))("%s: the SDK client gets the guardian's refusal, the agent gets nothing", async (k) => {
    guardian.script(() => DENY);
    const err = await failure(OPS[k].call(client, f));
    const envs = guardian.calls();
    expect(envs).toHaveLength(1);
    expect(envs[0].method).toBe(OPS[k].aos);
    expect(envs[0].params.payload.method).toBe(wireName(OPS[k], version));
    expectDenied(binding, version, err, envs[0]);
    expect(agent.received).toEqual([]);
    // and the operation had no effect
    if (k === 'cancel') expect(agent.cancelled.has(f.running)).toBe(false);
    if (k === 'pushSet') expect(await configIds(f.running)).toEqual(['cfg-a', 'cfg-b']);
    if (k === 'pushDelete') expect(await configIds(f.running)).toEqual(['cfg-a', 'cfg-b']);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* modify: per operation and binding                                                              */
/* ---------------------------------------------------------------------------------------------- */

type PayloadEdit = (payload: any, binding: Binding, version: Version, f: Fixture) => any;

/** How the guardian rewrites each modifiable operation, and what must then be true. */
const MODIFY: Partial<Record<OpKey, { edit: PayloadEdit; check: (result: unknown, binding: Binding, version: Version, f: Fixture) => Promise<void> }>> = {
  send: {
    edit: (p) => replaceAll(p, 'original', 'rewritten'),
    check: async (result) => expect(textOf(result)).toBe('echo: hello rewritten'),
  },
  stream: {
    edit: (p) => replaceAll(p, 'original', 'rewritten'),
    check: async (result) => {
      expect(textOf(result)).toContain('echo: streamed rewritten');
      expect(textOf(result)).not.toContain('original');
    },
  },
  get: {
    edit: (p) => ({ ...p, params: { ...p.params, historyLength: 1 } }),
    check: async (result, _b, _v, f) => expect(result).toMatchObject({ id: f.done }),
  },
  list: {
    edit: (p) => ({ ...p, params: { ...p.params, pageSize: 1 } }),
    check: async (result) => expect((result as { tasks: unknown[] }).tasks).toHaveLength(1),
  },
  pushSet: {
    edit: (p) => replaceAll(p, 'original', 'rewritten'),
    check: async (result, _b, _v, f) => {
      expect(result).toMatchObject({ url: 'https://hooks.example/rewritten' });
      const stored = await direct.getTaskPushNotificationConfig({ tenant: '', taskId: f.running, id: 'cfg-new' });
      expect(stored.url).toBe('https://hooks.example/rewritten');
    },
  },
  pushList: {
    // JSON-RPC: the guardian re-targets the listing to another task. REST: the task id is a path
    // parameter (changing it is refused, see below), so the guardian adds a page size instead.
    edit: (p, binding, version, f) =>
      binding === 'JSONRPC'
        ? { ...p, params: version === '1.0' ? { ...p.params, taskId: f.other } : { ...p.params, id: f.other } }
        : { ...p, params: { ...p.params, pageSize: 1 } },
    check: async (result, binding) => {
      const ids = (result as { configs: { id: string }[] }).configs.map((c) => c.id);
      // (REST: the SDK agent does not page push configs; the query the agent received is checked above.)
      if (binding === 'JSONRPC') expect(ids).toEqual(['cfg-o']);
      else expect(ids.sort()).toEqual(['cfg-a', 'cfg-b']);
    },
  },
  pushDelete: {
    // JSON-RPC: the guardian deletes cfg-b instead of cfg-a. REST: it may only add parameters.
    edit: (p, binding, version) =>
      binding === 'JSONRPC'
        ? { ...p, params: version === '1.0' ? { ...p.params, id: 'cfg-b' } : { ...p.params, pushNotificationConfigId: 'cfg-b' } }
        : { ...p, params: { ...p.params, reason: 'guardian' } },
    check: async (_result, binding, _v, f) => {
      expect(await configIds(f.running)).toEqual(binding === 'JSONRPC' ? ['cfg-a'] : ['cfg-b']);
    },
  },
};

describe.each(COMBOS)('modify %s %s', (binding, version) => {
  let client: Client;
  let f: Fixture;
  beforeAll(async () => {
    client = await makeClient(proxy.url, binding, version);
  });
  beforeEach(async () => {
    f = await makeFixture();
  });
  afterEach(async () => {
    await dropFixture(f);
  });

  const modifiable = opsFor(version).filter((k) => OPS[k].modifiable);
  const notModifiable = opsFor(version).filter((k) => !OPS[k].modifiable);

  test.each(modifiable)("%s: the agent receives the guardian's replacement", async (k) => {
    const spec = MODIFY[k];
    if (spec === undefined) throw new Error(`no modify spec for ${k}`);
    const modified: any[] = [];
    guardian.script((env) => {
      const m = spec.edit(env.params.payload, binding, version, f);
      modified.push(m);
      return { decision: 'modify', message: 'rewritten by guardian', modifiedPayload: m };
    });
    const result = await OPS[k].call(client, f);
    const seen = [...agent.received];
    const envs = guardian.calls();
    expect(envs).toHaveLength(1);
    expect(envs[0].method).toBe(OPS[k].aos);
    const m = modified[0];
    expect(m).not.toEqual(envs[0].params.payload); // the edit changed something
    const reqs = seen.filter((x) => !isCardFetch(x));
    expect(reqs).toHaveLength(1);
    const r = reqs[0] as ReceivedRequest;
    if (binding === 'JSONRPC') {
      expect(r.body).toEqual(m);
    } else {
      // REST: the modified params minus the path parameters, as the body (POST) or the query (GET/DELETE).
      const want = OPS[k].rest(version, f);
      expect(r.method).toBe(want.verb);
      expect(r.path.split('?')[0]).toBe(`${restPrefix(version)}${want.path}`.split('?')[0]);
      const rest = Object.fromEntries(Object.entries(m.params as Record<string, unknown>).filter(([key]) => !pathParamsOf(k, version).includes(key)));
      if (want.verb === 'POST') {
        expect(r.body).toEqual(rest);
      } else {
        const q = Object.fromEntries(new URL(r.path, 'http://x').searchParams);
        expect(q).toEqual(Object.fromEntries(Object.entries(rest).map(([key, v]) => [key, typeof v === 'string' ? v : JSON.stringify(v)])));
      }
    }
    if (['send', 'stream', 'pushSet'].includes(k)) {
      expect(r.bodyText).toContain('rewritten');
      expect(r.bodyText).not.toContain('original');
    }
    expectAllThroughProxy(seen);
    await spec.check(result, binding, version, f);
  });

  test.each(notModifiable)('%s: a modify is no valid answer (fail closed), nothing reaches the agent', async (k) => {
    guardian.script((env) => ({ decision: 'modify', modifiedPayload: env.params.payload }));
    const err = await failure(OPS[k].call(client, f));
    expect(guardian.calls().map((e) => e.method)).toEqual([OPS[k].aos]);
    expectUnavailable(binding, version, err);
    expect(agent.received).toEqual([]);
    if (k === 'cancel') expect(agent.cancelled.has(f.running)).toBe(false);
  });

  if (binding === 'HTTP+JSON') {
    const pathOps: OpKey[] = ['get', 'pushSet', 'pushList', 'pushDelete'];
    test.each(pathOps)('%s: a modify that changes a REST path parameter is refused with 503', async (k) => {
      guardian.script((env) => {
        const p = env.params.payload;
        const key = pathParamsOf(k, version)[0] as string;
        return { decision: 'modify', modifiedPayload: { ...p, params: { ...p.params, [key]: f.other } } };
      });
      const err = await failure(OPS[k].call(client, f));
      expect(guardian.calls()).toHaveLength(1);
      expectUnavailable(binding, version, err);
      expect(agent.received).toEqual([]);
      expect(await configIds(f.running)).toEqual(['cfg-a', 'cfg-b']);
      expect(await configIds(f.other)).toEqual(['cfg-o']);
    });
  }
});
