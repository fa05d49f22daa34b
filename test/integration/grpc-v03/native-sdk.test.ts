/**
 * The native A2A v0.3 SDK (@a2a-js/sdk 0.3.14: its gRPC server and client, `a2a.v1.A2AService`)
 * behind and in front of the proxy. Its request handler acts on the v0.3 JSON-RPC objects its gRPC
 * server reads from the protobuf: what the guardian approved is what the handler acted on, call for
 * call, and the caller gets the same answers as directly. The agent's v0.3 card has gRPC as its main
 * endpoint: the proxy finds the agent there, and the client that resolves the card through the proxy
 * calls the proxy's gRPC listener.
 */
import type * as A2AServer from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcTransportV03, makeClientV03, startAgentV03, userMsgV03, type AgentV03, type ClientV03 } from '../../helpers/agent-v03';
import { collect, sendReq, startAgent } from '../../helpers/agent';
import { grpcFailure, makeGrpcClient } from '../../helpers/grpc';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { sameV03Json } from '../../../src/a2a/bindings/grpc/v03';

jest.setTimeout(30_000);

const rec = handlerRecorder();
let agent: AgentV03;
let guardian: TestGuardian;
let proxy: TestProxy;
let viaProxy: ClientV03;
let direct: ClientV03;
let grpcUrl: string;

beforeAll(async () => {
  agent = await startAgentV03({ wrapRequestHandler: (h) => rec.wrap(h as unknown as A2AServer.DefaultRequestHandler) });
  guardian = await startGuardian();
  // Webhooks go direct: the push relay rewrites their URLs after approval by design (test/integration/push/).
  proxy = await startTestProxy({
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    GRPC_PORT: '0',
    INSPECT_RESPONSES: 'true',
    PUSH_DELIVERIES: 'direct',
  });
  ({ client: viaProxy, grpcUrl } = await makeClientV03(proxy.url));
  ({ client: direct } = await makeClientV03(agent.origin));
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
});
beforeEach(() => {
  rec.clear();
  guardian.reset();
  guardian.clear();
});

const requests = () => guardian.calls().filter((e) => e.params?.payload?.method !== undefined);

/** Every call the handler acted on is a request the guardian approved (as it saw it, or its replacements), in the same v0.3 JSON-RPC form. */
function expectActedAsApproved(replacements: readonly unknown[] = []): void {
  const approved = [...requests().map((e) => e.params.payload.params), ...replacements];
  expect(rec.calls.length).toBeGreaterThan(0);
  for (const call of rec.calls) expect([call.method, approved.some((p) => sameV03Json(p, call.params))]).toEqual([call.method, true]);
}

/** Answer fields that differ between two runs of the same call. */
const shape = (x: unknown): unknown =>
  JSON.parse(JSON.stringify(x, (k, v: unknown) => (['id', 'taskId', 'contextId', 'messageId', 'timestamp'].includes(k) ? '*' : v)));

test("the client resolving the agent's v0.3 card through the proxy calls the proxy's gRPC listener", () => {
  expect(agent.card.preferredTransport).toBe('GRPC');
  expect(grpcUrl).toBe(proxy.grpcAddress);
});

test('message/send and message/stream: the handler acts on what the guardian approved; the same answers as directly', async () => {
  const msg = userMsgV03('hello native', { metadata: { trace: 'x' }, extensions: ['urn:ext:a'] });
  const a = await direct.sendMessage({ message: msg, configuration: { acceptedOutputModes: ['text'], blocking: true } });
  rec.clear();
  const b = await viaProxy.sendMessage({ message: msg, configuration: { acceptedOutputModes: ['text'], blocking: true } });
  expect(shape(b)).toEqual(shape(a));
  expect(requests()[0]?.params.payload).toMatchObject({
    method: 'message/send',
    params: { message: { ...msg }, configuration: { acceptedOutputModes: ['text'], blocking: true } },
  });
  expectActedAsApproved();

  const ea = await collect(direct.sendMessageStream({ message: userMsgV03('stream 3') }));
  guardian.clear();
  rec.clear();
  const eb = await collect(viaProxy.sendMessageStream({ message: userMsgV03('stream 3') }));
  expect(shape(eb)).toEqual(shape(ea));
  // The events the guardian judged are the ones the caller got.
  const judged = guardian
    .calls()
    .filter((e) => e.params?.payload?.result !== undefined)
    .map((e) => e.params.payload.result);
  expect(judged.map((r) => r.kind)).toEqual(eb.map((e) => (e as { kind: string }).kind));
  // (The 0.3.14 client reads an artifact update without its `append`: the rest is what the guardian judged.)
  const unappended = judged.map((r) => ({ ...r, append: undefined }));
  expect(unappended.every((r, i) => sameV03Json(r, eb[i]))).toBe(true);
  expect(judged.filter((r) => r.kind === 'artifact-update').map((r) => r.append)).toEqual([false, true, true]);
  expectActedAsApproved();
});

test('tasks/get, tasks/resubscribe, tasks/cancel and push configs: acted on as approved; the same answers as directly', async () => {
  const done = (await viaProxy.sendMessage({ message: userMsgV03('to be read') })) as { id: string };
  const running = (await viaProxy.sendMessage({ message: userMsgV03('wait-for-cancel'), configuration: { blocking: false } })) as { id: string };
  const directly = await direct.getTask({ id: done.id, historyLength: 1 });
  rec.clear();
  guardian.clear();
  expect(shape(await viaProxy.getTask({ id: done.id, historyLength: 1 }))).toEqual(shape(directly));
  const sub = viaProxy.resubscribeTask({ id: running.id })[Symbol.asyncIterator]();
  expect(((await sub.next()).value as { kind: string }).kind).toBe('task');
  const cancelled = await viaProxy.cancelTask({ id: running.id });
  expect(cancelled.status.state).toBe('canceled');
  for (let r = await sub.next(); r.done !== true; r = await sub.next()) void r;
  const config = { taskId: done.id, pushNotificationConfig: { id: 'cfg-1', url: 'https://hooks.example/a2a', token: 'tok' } };
  expect(await viaProxy.setTaskPushNotificationConfig(config)).toEqual(config);
  const ids = { id: done.id, pushNotificationConfigId: 'cfg-1' } as { id: string };
  expect(await viaProxy.getTaskPushNotificationConfig(ids)).toEqual(config);
  expect(await viaProxy.listTaskPushNotificationConfig({ id: done.id })).toEqual([config]);
  await viaProxy.deleteTaskPushNotificationConfig({ id: done.id, pushNotificationConfigId: 'cfg-1' });
  expect(await viaProxy.listTaskPushNotificationConfig({ id: done.id })).toEqual([]);
  expect(requests().map((e) => e.method)).toEqual([
    'tasks/get',
    'tasks/resubscribe',
    'tasks/cancel',
    'tasks/pushNotificationConfig/set',
    'tasks/pushNotificationConfig/get',
    'tasks/pushNotificationConfig/list',
    'tasks/pushNotificationConfig/delete',
    'tasks/pushNotificationConfig/list',
  ]);
  expect(rec.calls.map((c) => c.method)).toEqual([
    'getTask',
    'resubscribe',
    'cancelTask',
    'setTaskPushNotificationConfig',
    'getTaskPushNotificationConfig',
    'listTaskPushNotificationConfigs',
    'deleteTaskPushNotificationConfig',
    'listTaskPushNotificationConfigs',
  ]);
  expectActedAsApproved();
});

test('modify: the handler acts on the replacement; deny: it acts on nothing', async () => {
  const replacements: unknown[] = [];
  guardian.script((env) => {
    const p = env.params.payload;
    if (p.method !== 'message/send') return { decision: 'allow' };
    const modified = structuredClone(p);
    modified.params.message.parts = [{ kind: 'text', text: 'masked by guardian' }];
    modified.params.message.metadata = { masked: 1 };
    replacements.push(modified.params);
    return { decision: 'modify', modifiedPayload: modified };
  });
  await viaProxy.sendMessage({ message: userMsgV03('my card 4111 1111 1111 1111') });
  expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
  expect(rec.calls[0]?.params).toMatchObject({ message: { parts: [{ kind: 'text', text: 'masked by guardian' }], metadata: { masked: 1 } } });
  expect(JSON.stringify(rec.calls[0]?.params)).not.toContain('4111');
  expectActedAsApproved(replacements);

  rec.clear();
  guardian.script(() => ({ decision: 'deny', message: 'not today' }));
  expect((await grpcFailure(viaProxy.sendMessage({ message: userMsgV03('denied') }))).message).toContain('not today');
  expect((await grpcFailure(collect(viaProxy.sendMessageStream({ message: userMsgV03('stream 2') })))).message).toContain('not today');
  expect((await grpcFailure(viaProxy.getTask({ id: 'any' }))).message).toContain('not today');
  expect(rec.calls).toEqual([]);
});

test("GetAgentCard: the card the caller gets names the proxy's gRPC listener", async () => {
  const card = await grpcTransportV03(proxy.grpcAddress as string).getExtendedAgentCard();
  // The 0.3.14 gRPC server answers GetAgentCard with the agent's card.
  expect(card.name).toBe('Native v0.3 Agent');
  expect(card.url).toBe(proxy.grpcAddress);
  expect(card.additionalInterfaces).toEqual([{ url: proxy.grpcAddress, transport: 'GRPC' }]);
  expect(JSON.stringify(card)).not.toContain(agent.grpcAddress);
  expect(requests()[0]?.method).toBe('agent/getAuthenticatedExtendedCard');
});

test("an agent whose card names its v0.3 gRPC service at another endpoint than its v1.0 one: each version's calls go to its own", async () => {
  const recV1 = handlerRecorder();
  const v1 = await startAgent({
    grpc: true,
    grpcVersions: ['1.0'],
    wrapRequestHandler: recV1.wrap,
    extraInterfaces: [{ url: agent.grpcAddress, protocolBinding: 'GRPC', tenant: '', protocolVersion: '0.3' }],
  });
  try {
    const p = await startTestProxy({ UPSTREAM_URL: v1.origin, GUARDIAN_URL: guardian.url, GRPC_PORT: '0' });
    try {
      await grpcTransportV03(p.grpcAddress as string).sendMessage({ message: userMsgV03('to the v0.3 endpoint') });
      expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
      expect(recV1.calls).toEqual([]);
      const { client } = await makeGrpcClient(p.url);
      await client.sendMessage(sendReq('to the v1.0 endpoint'));
      expect(recV1.calls.map((c) => c.method)).toEqual(['sendMessage']);
      expect(rec.calls).toHaveLength(1);
    } finally {
      await p.close();
    }
  } finally {
    await v1.close();
  }
});
