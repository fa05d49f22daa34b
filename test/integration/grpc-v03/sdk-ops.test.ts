/**
 * A2A v0.3 over gRPC (`a2a.v1.A2AService`) with real parts: an @a2a-js/sdk agent serving only the v0.3
 * service (its legacyGrpcService on the recorded request handler), the SDK's v0.3 gRPC client created
 * from the card through the proxy, a scriptable HTTP guardian. Every operation the v0.3 client has is
 * called directly and through the proxy (allow-all) with the same result; the guardian sees v0.3
 * JSON-RPC requests under their AOS names.
 */
import { collect, sendReq, textOf, type Client } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFailure, legacyGrpcTransport, makeGrpcClient } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, grpcVersions: ['0.3'], extendedAgentCard: true, wrapRequestHandler: rec.wrap, slowMs: 3000, stepMs: 20 });

let proxy: TestProxy;
let viaProxy: Client;
let direct: Client;
let grpcUrl: string | undefined;

beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true', INSPECT_CARDS: 'false' });
  ({ client: viaProxy, grpcUrl } = await makeGrpcClient(proxy.url, { legacy: true }));
  ({ client: direct } = await makeGrpcClient(s.agent.url, { legacy: true }));
});
beforeEach(() => rec.clear());

const requestEnvelopes = () => s.guardian.calls().filter((e) => e.params?.payload?.method !== undefined);
const responseEnvelopes = () => s.guardian.calls().filter((e) => e.params?.payload?.result !== undefined || e.params?.payload?.method === undefined);

/** Task fields that differ between two runs of the same call (ids, times). */
function shape(x: unknown): unknown {
  return JSON.parse(JSON.stringify(x, (k, v: unknown) => (['id', 'taskId', 'contextId', 'messageId', 'timestamp', 'artifactId'].includes(k) ? '*' : v)));
}

test("the SDK's v0.3 client, created from the proxy's card, calls the proxy's gRPC listener", async () => {
  expect(grpcUrl).toBe(proxy.grpcAddress);
  await viaProxy.sendMessage(sendReq('hello v0.3'));
  expect(requestEnvelopes().map((e) => [e.method, e.params.payload.method])).toEqual([['message/send', 'message/send']]);
  expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
});

test('message/send: the guardian sees the v0.3 JSON-RPC params; the same task comes back as directly', async () => {
  const a = await direct.sendMessage(sendReq('same answer'));
  s.guardian.clear();
  const b = await viaProxy.sendMessage(sendReq('same answer'));
  expect(shape(b)).toEqual(shape(a));
  const env = requestEnvelopes()[0];
  expect(env.params.payload).toMatchObject({
    jsonrpc: '2.0',
    method: 'message/send',
    params: { message: { kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'same answer' }] }, configuration: { blocking: true } },
  });
  const answer = responseEnvelopes()[0];
  expect(answer.params.payload.result).toMatchObject({ kind: 'task', id: (b as { id: string }).id, status: { state: 'completed' } });
});

test('message/stream: every event judged, in v0.3 JSON-RPC form; the same events as directly', async () => {
  const a = await collect(direct.sendMessageStream(sendReq('stream 3')));
  s.guardian.clear();
  const b = await collect(viaProxy.sendMessageStream(sendReq('stream 3')));
  expect(shape(b)).toEqual(shape(a));
  expect(requestEnvelopes().map((e) => e.params.payload.method)).toEqual(['message/stream']);
  const kinds = responseEnvelopes().map((e) => e.params.payload.result.kind);
  expect(kinds).toHaveLength(b.length);
  expect(kinds[0]).toBe('task');
  expect(kinds).toContain('artifact-update');
  expect(kinds.at(-1)).toBe('status-update');
});

test('tasks/get, tasks/cancel, tasks/resubscribe: ids from resource names; the same answers as directly', async () => {
  const done = (await viaProxy.sendMessage(sendReq('to be read'))) as { id: string };
  s.guardian.clear();
  rec.clear();
  const got = await viaProxy.getTask({ tenant: '', id: done.id, historyLength: 1 });
  expect(shape(got)).toEqual(shape(await direct.getTask({ tenant: '', id: done.id, historyLength: 1 })));
  expect(requestEnvelopes()[0]?.params.payload).toMatchObject({ method: 'tasks/get', params: { id: done.id, historyLength: 1 } });
  expect(rec.calls[0]).toMatchObject({ method: 'getTask', params: { id: done.id, historyLength: 1 } });

  const running = (await viaProxy.sendMessage(sendReq('wait-for-cancel', true))) as { id: string };
  s.guardian.clear();
  rec.clear();
  const sub = viaProxy.resubscribeTask({ tenant: '', id: running.id })[Symbol.asyncIterator]();
  const first = await sub.next();
  expect(textOf(first.value)).toBe('');
  expect(requestEnvelopes()[0]?.params.payload).toMatchObject({ method: 'tasks/resubscribe', params: { id: running.id } });
  const cancelled = await viaProxy.cancelTask({ tenant: '', id: running.id, metadata: undefined });
  expect(cancelled.id).toBe(running.id);
  expect(requestEnvelopes()[1]?.params.payload).toEqual({ jsonrpc: '2.0', id: expect.any(String), method: 'tasks/cancel', params: { id: running.id } });
  expect(rec.calls.map((c) => c.method)).toEqual(['resubscribe', 'cancelTask']);
  for (let r = await sub.next(); r.done !== true; r = await sub.next()) void r;
});

test('push notification configs: set, get, list, delete under their v0.3 JSON-RPC names and params', async () => {
  const task = (await viaProxy.sendMessage(sendReq('with push'))) as { id: string };
  s.guardian.clear();
  rec.clear();
  const config = { tenant: '', taskId: task.id, id: 'cfg-1', url: 'https://hooks.example/a2a', token: 'tok', authentication: undefined };
  const set = await viaProxy.createTaskPushNotificationConfig(config);
  expect(set).toMatchObject({ taskId: task.id, id: 'cfg-1', url: 'https://hooks.example/a2a' });
  const got = await viaProxy.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-1' });
  expect(got).toEqual(set);
  const listed = await viaProxy.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
  expect(listed.configs).toEqual([set]);
  await viaProxy.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-1' });
  const after = await viaProxy.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
  expect(after.configs).toEqual([]);
  expect(requestEnvelopes().map((e) => [e.method, e.params.payload.params])).toEqual([
    ['tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { id: 'cfg-1', url: 'https://hooks.example/a2a', token: 'tok' } }],
    ['tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'cfg-1' }],
    ['tasks/pushNotificationConfig/list', { id: task.id }],
    ['tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'cfg-1' }],
    ['tasks/pushNotificationConfig/list', { id: task.id }],
  ]);
  const results = responseEnvelopes().map((e) => e.params.payload.result);
  expect(results[2]).toEqual([{ taskId: task.id, pushNotificationConfig: { id: 'cfg-1', url: 'https://hooks.example/a2a', token: 'tok' } }]);
  expect(results[3]).toBeNull();
  expect(rec.calls.map((c) => c.method)).toEqual([
    'createTaskPushNotificationConfig',
    'getTaskPushNotificationConfig',
    'listTaskPushNotificationConfigs',
    'deleteTaskPushNotificationConfig',
    'listTaskPushNotificationConfigs',
  ]);
});

test('GetAgentCard: agent/getAuthenticatedExtendedCard; the card comes back with every endpoint the proxy', async () => {
  const card = await legacyGrpcTransport(proxy.grpcAddress as string).getExtendedAgentCard({ tenant: '' });
  expect(requestEnvelopes()[0]?.params.payload).toMatchObject({ method: 'agent/getAuthenticatedExtendedCard', params: {} });
  const judged = responseEnvelopes()[0]?.params.payload.result;
  expect(judged).toMatchObject({ name: 'Echo Agent', url: expect.any(String), protocolVersion: expect.any(String) });
  // The guardian judges the card the caller gets: its gRPC interface already the proxy's.
  expect(judged.additionalInterfaces).toContainEqual({ url: proxy.grpcAddress, transport: 'GRPC' });
  const json = JSON.stringify(card);
  expect(json).not.toContain(s.agent.origin.replace('http://', ''));
  expect(json).not.toContain(s.agent.grpcAddress as string);
  expect(card.supportedInterfaces.find((i) => i.protocolBinding === 'GRPC')?.url).toBe(proxy.grpcAddress);
});

test('an unknown task: the same gRPC status as directly, and the agent was asked', async () => {
  const a = await grpcFailure(direct.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined }));
  const b = await grpcFailure(viaProxy.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined }));
  expect(b).toEqual(a);
});

test("the proxy's card: the v0.3 gRPC interface, in supportedInterfaces and in the v0.3 additionalInterfaces, is the proxy's listener; without GRPC_PORT there is none", async () => {
  type Card = { supportedInterfaces: Array<{ url: string; protocolBinding: string }>; additionalInterfaces?: Array<{ url: string; transport: string }> };
  const grpcUrls = (c: Card) => [
    ...c.supportedInterfaces.filter((i) => i.protocolBinding === 'GRPC').map((i) => i.url),
    ...(c.additionalInterfaces ?? []).filter((i) => i.transport === 'GRPC').map((i) => i.url),
  ];
  const agentCard = (await (await fetch(`${s.agent.url}/.well-known/agent-card.json`)).json()) as Card;
  expect(grpcUrls(agentCard)).toEqual([s.agent.grpcAddress, s.agent.grpcAddress]);
  const card = (await (await fetch(`${proxy.url}/.well-known/agent-card.json`)).json()) as Card;
  expect(grpcUrls(card)).toEqual([proxy.grpcAddress, proxy.grpcAddress]);
  const plain = await s.proxy({});
  expect(grpcUrls((await (await fetch(`${plain.url}/.well-known/agent-card.json`)).json()) as Card)).toEqual([]);
});
