/**
 * Every RPC of the A2A gRPC service through the proxy with the real SDK gRPC client and server:
 * allow (the agent's handler acts, the guardian saw the v1.0 JSON-RPC request) and deny (the
 * agent's handler never acts, the caller gets PERMISSION_DENIED with the proxy's ErrorInfo);
 * the extended card's interfaces name the proxy; a caller cancel reaches the agent.
 */
import { TaskState, sendReq, collect, type Client } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFailure, makeGrpcClient } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap, extendedAgentCard: true, stepMs: 20 });
const PUSH_URL = 'https://hooks.example/original';
/** The Client adds A2A-Version itself; a direct transport call must say it. */
const V1 = { serviceParameters: { 'A2A-Version': '1.0' } };

interface Fixture {
  readonly done: string;
  readonly running: string;
}

interface OpCase {
  readonly rpc: string;
  readonly aos: string;
  /** The request handler method the agent acts through. */
  readonly handler: string;
  readonly call: (c: Client, f: Fixture) => Promise<unknown>;
  /** What the guardian must see in params. */
  readonly params: (f: Fixture) => Record<string, unknown>;
}

async function firstEventThenClose(it: AsyncGenerator<unknown, void, undefined>): Promise<unknown> {
  const first = await it.next();
  await it.return(undefined);
  return first.value;
}

const OPS: readonly OpCase[] = [
  {
    rpc: 'SendMessage',
    aos: 'message/send',
    handler: 'sendMessage',
    call: (c) => c.sendMessage(sendReq('hello original')),
    params: () => ({ message: { parts: [{ text: 'hello original' }] } }),
  },
  {
    rpc: 'SendStreamingMessage',
    aos: 'message/stream',
    handler: 'sendMessageStream',
    call: (c) => collect(c.sendMessageStream(sendReq('streamed original'))),
    params: () => ({ message: { parts: [{ text: 'streamed original' }] } }),
  },
  {
    rpc: 'GetTask',
    aos: 'tasks/get',
    handler: 'getTask',
    call: (c, f) => c.getTask({ tenant: '', id: f.done, historyLength: undefined }),
    params: (f) => ({ id: f.done }),
  },
  {
    rpc: 'ListTasks',
    aos: 'tasks/list',
    handler: 'listTasks',
    params: () => ({ pageSize: 5 }),
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
  {
    rpc: 'CancelTask',
    aos: 'tasks/cancel',
    handler: 'cancelTask',
    call: (c, f) => c.cancelTask({ tenant: '', id: f.running, metadata: undefined }),
    params: (f) => ({ id: f.running }),
  },
  {
    rpc: 'SubscribeToTask',
    aos: 'tasks/resubscribe',
    handler: 'resubscribe',
    call: (c, f) => firstEventThenClose(c.resubscribeTask({ tenant: '', id: f.running })),
    params: (f) => ({ id: f.running }),
  },
  {
    rpc: 'CreateTaskPushNotificationConfig',
    aos: 'tasks/pushNotificationConfig/set',
    handler: 'createTaskPushNotificationConfig',
    params: (f) => ({ taskId: f.running, url: PUSH_URL }),
    call: (c, f) =>
      c.createTaskPushNotificationConfig({ tenant: '', id: 'cfg-new', taskId: f.running, url: PUSH_URL, token: 'tok', authentication: undefined }),
  },
  {
    rpc: 'GetTaskPushNotificationConfig',
    aos: 'tasks/pushNotificationConfig/get',
    handler: 'getTaskPushNotificationConfig',
    call: (c, f) => c.getTaskPushNotificationConfig({ tenant: '', taskId: f.running, id: 'cfg-a' }),
    params: (f) => ({ taskId: f.running, id: 'cfg-a' }),
  },
  {
    rpc: 'ListTaskPushNotificationConfigs',
    aos: 'tasks/pushNotificationConfig/list',
    handler: 'listTaskPushNotificationConfigs',
    call: (c, f) => c.listTaskPushNotificationConfig({ tenant: '', taskId: f.running, pageSize: 0, pageToken: '' }),
    params: (f) => ({ taskId: f.running }),
  },
  {
    rpc: 'DeleteTaskPushNotificationConfig',
    aos: 'tasks/pushNotificationConfig/delete',
    handler: 'deleteTaskPushNotificationConfig',
    call: (c, f) => c.deleteTaskPushNotificationConfig({ tenant: '', taskId: f.running, id: 'cfg-a' }),
    params: (f) => ({ taskId: f.running, id: 'cfg-a' }),
  },
  {
    rpc: 'GetExtendedAgentCard',
    aos: 'agent/getAuthenticatedExtendedCard',
    handler: 'getAuthenticatedExtendedAgentCard',
    call: (c) => c.transport.getExtendedAgentCard({ tenant: '' }, V1),
    params: () => ({}),
  },
];

let proxy: TestProxy;
let client: Client;
let direct: Client;

beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0' });
  client = (await makeGrpcClient(proxy.url)).client;
  direct = (await makeGrpcClient(s.agent.url)).client;
});

async function makeFixture(): Promise<Fixture> {
  const done = (await direct.sendMessage(sendReq('setup task'))) as { id: string };
  const running = (await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string };
  await direct.createTaskPushNotificationConfig({
    tenant: '',
    id: 'cfg-a',
    taskId: running.id,
    url: 'https://hooks.example/cfg-a',
    token: '',
    authentication: undefined,
  });
  rec.clear();
  s.guardian.clear();
  return { done: done.id, running: running.id };
}

describe.each(OPS.map((o) => [o.rpc, o] as const))('%s', (_name, op) => {
  test('allow: the guardian sees the v1.0 JSON-RPC request; the agent acts on it', async () => {
    const f = await makeFixture();
    await op.call(client, f);
    const env = s.guardian.calls().find((e) => e.params?.payload?.method !== undefined);
    expect(env?.method).toBe(op.aos);
    expect(env?.params.payload).toMatchObject({ jsonrpc: '2.0', method: op.rpc, params: op.params(f) });
    expect(rec.calls.map((c) => c.method)).toContain(op.handler);
    await direct.cancelTask({ tenant: '', id: f.running, metadata: undefined }).catch(() => undefined);
  });

  test('deny: PERMISSION_DENIED; the agent never acts', async () => {
    const f = await makeFixture();
    s.guardian.script(() => ({ decision: 'deny', message: `no ${op.rpc}`, reasonCode: ['TEST'] }));
    const err = await grpcFailure(op.call(client, f));
    expect(err.code).toBe(7);
    expect(err.message).toContain(`no ${op.rpc}`);
    expect(rec.calls).toHaveLength(0);
    s.guardian.reset();
    await direct.cancelTask({ tenant: '', id: f.running, metadata: undefined }).catch(() => undefined);
  });
});

test("the agent's own error statuses come through unchanged (the SDK client reads the same error)", async () => {
  rec.clear();
  const viaProxy = await grpcFailure(client.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined }));
  const viaAgent = await grpcFailure(direct.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined }));
  expect(viaProxy).toEqual(viaAgent);
  expect(rec.calls.map((c) => c.method)).toEqual(['getTask', 'getTask']);
});

test("GetExtendedAgentCard: the answer's gRPC interface names the proxy, never the agent", async () => {
  const card = await client.transport.getExtendedAgentCard({ tenant: '' }, V1);
  const grpc = card.supportedInterfaces.filter((i) => i.protocolBinding === 'GRPC');
  expect(grpc.map((i) => i.url)).toEqual([proxy.grpcAddress]);
  for (const i of card.supportedInterfaces) expect(i.url).not.toContain(s.agent.origin.replace('http://', ''));
  expect(JSON.stringify(card)).not.toContain(s.agent.grpcAddress as string);
});

test("a caller that cancels a stream cancels the agent's call (and the proxy's stream ends)", async () => {
  const f = await makeFixture();
  s.agent.clear();
  const ac = new AbortController();
  const it = client.resubscribeTask({ tenant: '', id: f.running }, { signal: ac.signal })[Symbol.asyncIterator]();
  const first = await it.next();
  expect(first.done).toBe(false);
  const openBefore = await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_open_streams');
  expect(openBefore).toMatch(/a2a_guard_open_streams 1/);
  ac.abort();
  await it.next().catch(() => undefined);
  // The proxy's stream ends: the gauge goes back to 0.
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && /a2a_guard_open_streams 1/.test(await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_open_streams'))) {
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_open_streams')).toMatch(/a2a_guard_open_streams 0/);
  // The agent's call was cancelled too (RST_STREAM CANCEL relayed), not left running.
  while (Date.now() < deadline && s.agent.grpcCancelled.length === 0) await new Promise((r) => setTimeout(r, 20));
  expect(s.agent.grpcCancelled).toEqual(['subscribeToTask']);
  await direct.cancelTask({ tenant: '', id: f.running, metadata: undefined }).catch(() => undefined);
});
