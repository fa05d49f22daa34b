/**
 * Task ownership end to end with real parts: a real SDK agent, a recording guardian, a ROLE=server
 * a2a-guard with IDENTITY_POLICY=required (which turns ownership on), and SDK clients of two
 * verified callers A and B (test/helpers/identities.ts), over both bindings and both protocol versions.
 *
 *   - A creates a task; B's get, cancel, resubscribe, push-config set/get/list/delete and messages
 *     continuing A's task or context are answered as the SDK's own "task not found" and reach
 *     neither the guardian nor the agent; the refusals are counted;
 *   - A's own calls succeed;
 *   - tasks created by streaming are owned too;
 *   - tasks/list shows each caller only its own tasks;
 *   - the guardian sees the ownership outcome in the caller's metadata, schema-valid.
 */
import { BINDING_VERSIONS, collect, makeClient, rawRpc, sendReq, TaskState, type Client, type TestAgent } from '../../helpers/agent';
import type { Envelope, TestGuardian } from '../../helpers/guardian';
import { validateAosRequest } from '../../helpers/schema';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';

const stack = useStack();
let agent: TestAgent;
let guardian: TestGuardian;
let ids: TestIdentities;
let proxy: TestProxy;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  ids = await startIdentities();
  proxy = await stack.proxy({ ROLE: 'server', OBSERVED_AGENT_INSTRUCTIONS: 'Echo.', ...ids.env });
});
afterAll(async () => {
  await ids?.close();
});

const PUSH_URL = 'https://hooks.example/ownership';
const client = (who: Caller, binding: (typeof BINDING_VERSIONS)[number][0], version: (typeof BINDING_VERSIONS)[number][1]): Promise<Client> =>
  makeClient(proxy.url, binding, version, { fetchImpl: ids.fetchAs(who) });

/** The error a promise (or the first step of a stream) fails with, or undefined. */
async function failure(p: Promise<unknown> | AsyncIterable<unknown>): Promise<Error | undefined> {
  try {
    if (Symbol.asyncIterator in Object(p)) {
      for await (const _ of p as AsyncIterable<unknown>) break;
    } else await p;
    return undefined;
  } catch (err) {
    return err as Error;
  }
}

/** The first event of a stream, then the stream is closed. */
async function firstEvent<T>(it: AsyncGenerator<T>): Promise<T | undefined> {
  const r = await it.next();
  await it.return(undefined);
  return r.value as T | undefined;
}

const serverHooks = (): Envelope[] => guardian.calls();
const refusals = async (outcome: string): Promise<number> => {
  const text = await proxy.metrics.registry.metrics();
  let n = 0;
  for (const m of text.matchAll(new RegExp(`^a2a_guard_task_ownership_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`, 'gm'))) n += Number(m[1]);
  return n;
};

describe.each(BINDING_VERSIONS)('%s %s', (binding, version) => {
  test("B cannot get, cancel, resubscribe to, configure or continue A's task; A can; nothing of B's reaches the guardian or the agent", async () => {
    const a = await client('A', binding, version);
    const b = await client('B', binding, version);
    // The agent's own answer to a task id it does not know, over the same binding (no proxy).
    const direct = await makeClient(agent.origin, binding, version);
    const agentsOwn = await failure(direct.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined }));
    expect(agentsOwn?.message).toBe('Task not found: no-such-task');

    const task = (await a.sendMessage(sendReq('wait-for-cancel', true))) as { id: string; contextId: string };
    expect(task.id).toMatch(/^[0-9a-f-]{36}$/);
    await a.createTaskPushNotificationConfig({ tenant: '', id: 'cfg-a', taskId: task.id, url: PUSH_URL, token: '', authentication: undefined });

    // Each of B's attempts, and the same call made directly to the agent about a task that does not exist.
    type Attempt = (c: Client, taskId: string, contextId: string) => Promise<unknown> | AsyncIterable<unknown>;
    const attempts: Array<[string, Attempt]> = [
      ['get', (c, id) => c.getTask({ tenant: '', id, historyLength: undefined })],
      ['cancel', (c, id) => c.cancelTask({ tenant: '', id, metadata: undefined })],
      ['resubscribe', (c, id) => c.resubscribeTask({ tenant: '', id })],
      ['push set', (c, id) => c.createTaskPushNotificationConfig({ tenant: '', id: 'cfg-b', taskId: id, url: PUSH_URL, token: '', authentication: undefined })],
      ['push get', (c, id) => c.getTaskPushNotificationConfig({ tenant: '', taskId: id, id: 'cfg-a' })],
      ['push list', (c, id) => c.listTaskPushNotificationConfig({ tenant: '', taskId: id, pageSize: 0, pageToken: '' })],
      ['push delete', (c, id) => c.deleteTaskPushNotificationConfig({ tenant: '', taskId: id, id: 'cfg-a' })],
      ['continue the task', (c, id, ctx) => c.sendMessage(sendReq('let me in', false, { taskId: id, contextId: ctx }))],
      ['stream into the task', (c, id, ctx) => collect(c.sendMessageStream(sendReq('stream 2', false, { taskId: id, contextId: ctx })))],
    ];
    const missing = 'no-such-task';
    const agentsAnswers = [];
    for (const [, attempt] of attempts) agentsAnswers.push(await failure(attempt(direct, missing, '')));

    guardian.clear();
    agent.clear();
    const before = (await refusals('refused_foreign_task')) + (await refusals('refused_foreign_context'));
    for (const [i, [what, attempt]] of attempts.entries()) {
      const err = await failure(attempt(b, task.id, task.contextId));
      const own = agentsAnswers[i];
      // Exactly what the SDK client makes of the agent's own answer about a task that does not exist.
      expect(own).toBeDefined();
      expect({ what, name: err?.constructor.name, message: err?.message }).toEqual({
        what,
        name: own?.constructor.name,
        message: own?.message.split(missing).join(task.id),
      });
    }
    // A new message in A's context: the context is A's, so it is refused too (the agent would have started a task in it).
    const ctxErr = await failure(b.sendMessage(sendReq('me too', false, { contextId: task.contextId })));
    expect({ name: ctxErr?.constructor.name, message: ctxErr?.message }).toEqual({
      name: agentsOwn?.constructor.name,
      message: `Task not found: ${task.contextId}`,
    });
    expect(serverHooks()).toEqual([]);
    expect(agent.received.filter((r) => r.method !== 'GET' || !r.path.includes('agent-card'))).toEqual([]);
    expect(agent.cancelled.has(task.id)).toBe(false);
    expect((await refusals('refused_foreign_task')) + (await refusals('refused_foreign_context')) - before).toBe(attempts.length + 1);

    // A's own calls go through.
    expect(await a.getTask({ tenant: '', id: task.id, historyLength: undefined })).toMatchObject({ id: task.id });
    expect(await a.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-a' })).toMatchObject({ id: 'cfg-a', url: PUSH_URL });
    expect((await a.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.map((c) => c.id)).toEqual(['cfg-a']);
    await a.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-a' });
    const first = (await firstEvent(a.resubscribeTask({ tenant: '', id: task.id }))) as { payload?: { $case?: string; value?: { id?: string } } };
    expect(first?.payload).toMatchObject({ $case: 'task', value: { id: task.id } });
    const cancelled = (await a.cancelTask({ tenant: '', id: task.id, metadata: undefined })) as { status?: { state?: number } };
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(agent.cancelled.has(task.id)).toBe(true);
    // A continues its own (now finished) context with a new task: owned by A too.
    const next = (await a.sendMessage(sendReq('again', false, { contextId: task.contextId }))) as { id: string; contextId: string };
    expect(next.contextId).toBe(task.contextId);
    expect(await failure(b.getTask({ tenant: '', id: next.id, historyLength: undefined }))).toBeDefined();
  });

  test('a task created by streaming is owned from its first event on', async () => {
    const a = await client('A', binding, version);
    const b = await client('B', binding, version);
    const events = await collect(a.sendMessageStream(sendReq('stream 3')));
    const id = (events[0] as { payload?: { value?: { id?: string } } }).payload?.value?.id as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(events.at(-1)?.payload?.$case).toBe('statusUpdate');
    expect(await a.getTask({ tenant: '', id, historyLength: undefined })).toMatchObject({ id });
    agent.clear();
    expect((await failure(b.getTask({ tenant: '', id, historyLength: undefined })))?.message).toBe(`Task not found: ${id}`);
    expect(agent.received.filter((r) => r.method === 'POST')).toEqual([]);
  });
});

describe.each(['JSONRPC', 'HTTP+JSON'] as const)('tasks/list over %s 1.0', (binding) => {
  test("each caller sees only its own tasks (the agent lists everyone's)", async () => {
    const a = await client('A', binding, '1.0');
    const b = await client('B', binding, '1.0');
    const aTasks = [(await a.sendMessage(sendReq('a one'))) as { id: string }, (await a.sendMessage(sendReq('a two'))) as { id: string }].map((t) => t.id);
    const bTask = ((await b.sendMessage(sendReq('b one'))) as { id: string }).id;
    // A task created around the proxy has no owner: nobody sees it through the proxy.
    const direct = await makeClient(agent.origin, binding, '1.0');
    const orphan = ((await direct.sendMessage(sendReq('orphan'))) as { id: string }).id;
    const list = {
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 100,
      pageToken: '',
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: undefined,
    };
    const everyone = (await direct.listTasks(list)).tasks.map((t) => t.id);
    expect(everyone).toEqual(expect.arrayContaining([...aTasks, bTask, orphan]));

    const seenByA = await a.listTasks(list);
    const seenByB = await b.listTasks(list);
    expect(seenByA.tasks.map((t) => t.id)).toEqual(expect.arrayContaining(aTasks));
    for (const t of seenByA.tasks) expect([bTask, orphan]).not.toContain(t.id);
    expect(seenByB.tasks.map((t) => t.id)).toContain(bTask);
    for (const t of seenByB.tasks) expect([...aTasks, orphan]).not.toContain(t.id);
    // The total counts only what the caller sees.
    expect(seenByA.totalSize).toBe(seenByA.tasks.length);
    expect(seenByB.totalSize).toBe(seenByB.tasks.length);
    // And A cannot read the orphan either.
    expect((await failure(a.getTask({ tenant: '', id: orphan, historyLength: undefined })))?.message).toBe(`Task not found: ${orphan}`);
  });
});

test("the guardian sees the ownership outcome in the caller's metadata, valid against the AOS schema", async () => {
  const a = await client('A', 'JSONRPC', '1.0');
  guardian.clear();
  const task = (await a.sendMessage(sendReq('first'))) as { id: string };
  await a.getTask({ tenant: '', id: task.id, historyLength: undefined });
  const [send, get] = serverHooks();
  // A call that names no task carries the caller's identity only.
  expect(send?.params.context.from.agent.metadata).toEqual({ identity: expect.objectContaining({ verified: true, source: 'oidc' }) });
  expect(get?.params.context.from.agent.metadata.taskOwnership).toEqual({ owner: ids.ownerOf('A'), state: 'owned' });
  for (const e of [send, get]) expect(validateAosRequest(e, e.method, { fullSide: 'to' })).toEqual([]);
});

test('a task id nobody owns and a caller without identity: refused before anything else', async () => {
  agent.clear();
  guardian.clear();
  // No credential under IDENTITY_POLICY=required: the identity refusal comes first.
  const anon = await rawRpc(`${proxy.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } });
  expect(anon.json.error.code).toBe(-31401);
  // A verified caller naming an unknown task: the agent's own words and error data, nothing else.
  const r = await rawRpc(
    `${proxy.url}/a2a/jsonrpc`,
    { jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'never-created' } },
    { ...ids.headersAs('A'), 'a2a-version': '1.0' },
  );
  expect(r.json).toEqual({
    jsonrpc: '2.0',
    id: 2,
    error: {
      code: -32001,
      message: 'Task not found: never-created',
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }],
    },
  });
  const rest = await fetch(`${proxy.url}/a2a/rest/tasks/never-created`, { headers: { ...ids.headersAs('A'), 'a2a-version': '1.0' } });
  expect(rest.status).toBe(404);
  expect(await rest.json()).toEqual({
    error: {
      code: 404,
      status: 'NOT_FOUND',
      message: 'Task not found: never-created',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }],
    },
  });
  expect(guardian.calls()).toEqual([]);
  expect(agent.received).toEqual([]);
});
