/**
 * Task ownership on A2A v0.3 gRPC (`a2a.v1.A2AService`): two verified callers (OIDC bearer tokens in
 * metadata), the SDK's v0.3 gRPC client, a v0.3 gRPC SDK agent (handler recorded). A task is its
 * creator's: another caller naming it, by id or inside a resource name, is answered NOT_FOUND before
 * the guardian or the agent sees the call.
 */
import { collect, sendReq } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFailure, grpcFrame, makeGrpcClient, rawGrpc } from '../../helpers/grpc';
import { useIdentityProxy } from '../../helpers/identities';
import { useStack } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(30_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, grpcVersions: ['0.3'], wrapRequestHandler: rec.wrap, stepMs: 20 });
const fx = useIdentityProxy(s, { GRPC_PORT: '0' });
beforeEach(() => rec.clear());

const as = (who: 'A' | 'B') => ({ serviceParameters: fx.ids.headersAs(who) });

test("message/send and message/stream bind their tasks to the caller; B's calls on them are NOT_FOUND and reach nothing", async () => {
  const { client, grpcUrl } = await makeGrpcClient(fx.proxy.url, { legacy: true });
  // The client's calls go to the proxy's gRPC listener (not a JSON-RPC interface of the card).
  expect(grpcUrl).toBe(fx.proxy.grpcAddress);
  const unary = (await client.sendMessage(sendReq('A unary'), as('A'))) as { id: string; contextId: string };
  const events = await collect(client.sendMessageStream(sendReq('A stream'), as('A')));
  const values = events.map((e) => (e as { payload?: { value?: { id?: string; taskId?: string } } }).payload?.value);
  const streamed = values.map((v) => v?.taskId ?? v?.id).find((id) => id !== undefined && id !== '') as string;
  expect(streamed).toBeTruthy();
  await client.createTaskPushNotificationConfig(
    { tenant: '', taskId: unary.id, id: 'a-cfg', url: 'https://a.example/hook', token: '', authentication: undefined },
    as('A'),
  );

  rec.clear();
  s.guardian.clear();
  for (const id of [unary.id, streamed]) {
    const tries: Array<() => Promise<unknown>> = [
      () => client.getTask({ tenant: '', id, historyLength: undefined }, as('B')),
      () => client.cancelTask({ tenant: '', id, metadata: undefined }, as('B')),
      () => collect(client.resubscribeTask({ tenant: '', id }, as('B'))),
      () => client.getTaskPushNotificationConfig({ tenant: '', taskId: id, id: 'a-cfg' }, as('B')),
      () => client.listTaskPushNotificationConfig({ tenant: '', taskId: id, pageSize: 0, pageToken: '' }, as('B')),
      () => client.deleteTaskPushNotificationConfig({ tenant: '', taskId: id, id: 'a-cfg' }, as('B')),
      () =>
        client.createTaskPushNotificationConfig(
          { tenant: '', taskId: id, id: 'b-cfg', url: 'https://b.example/steal', token: '', authentication: undefined },
          as('B'),
        ),
      () => client.sendMessage(sendReq('B joins', false, { taskId: id }), as('B')),
    ];
    for (const call of tries) expect((await grpcFailure(call())).name).toMatch(/TaskNotFoundError$/);
  }
  expect((await grpcFailure(client.sendMessage(sendReq('B joins the context', false, { contextId: unary.contextId }), as('B')))).name).toMatch(
    /TaskNotFoundError$/,
  );
  expect(rec.calls).toEqual([]);
  expect(s.guardian.calls()).toEqual([]);

  // The owner still can.
  const got = await client.getTask({ tenant: '', id: unary.id, historyLength: undefined }, as('A'));
  expect(got.id).toBe(unary.id);
  expect(rec.calls.map((c) => c.method)).toEqual(['getTask']);
});

test("a push config whose own resource name is A's task, under B's task as parent, is NOT_FOUND for B (the guardian is shown the name)", async () => {
  const { client } = await makeGrpcClient(fx.proxy.url, { legacy: true });
  const a = (await client.sendMessage(sendReq('A task'), as('A'))) as { id: string };
  const b = (await client.sendMessage(sendReq('B task'), as('B'))) as { id: string };
  const m = grpcMethodForPath('/a2a.v1.A2AService/CreateTaskPushNotificationConfig');
  if (m === undefined) throw new Error('no v0.3 CreateTaskPushNotificationConfig');
  const codec = codecFor(m).request;
  const bent = (config: string) =>
    codec.encode({
      parent: `tasks/${b.id}`,
      configId: 'x',
      config: {
        name: `tasks/${config}/pushNotificationConfigs/x`,
        pushNotificationConfig: { id: 'x', url: 'https://b.example/hook', token: '', authentication: undefined },
      },
    });
  rec.clear();
  s.guardian.clear();
  const refused = await rawGrpc(fx.proxy.grpcAddress as string, m.path, grpcFrame(bent(a.id)), fx.ids.headersAs('B'));
  expect(refused.grpcStatus).toBe(5);
  expect(rec.calls).toEqual([]);
  // The same shape naming B's own task twice passes, and the guardian saw the name (it is not the one parent and id make).
  const own = await rawGrpc(
    fx.proxy.grpcAddress as string,
    m.path,
    grpcFrame(
      codec.encode({
        parent: `tasks/${b.id}`,
        configId: 'x',
        config: {
          name: `tasks/${b.id}/pushNotificationConfigs/other`,
          pushNotificationConfig: { id: 'x', url: 'https://b.example/hook', token: '', authentication: undefined },
        },
      }),
    ),
    fx.ids.headersAs('B'),
  );
  expect(own.grpcStatus).toBe(0);
  expect(s.guardian.calls().find((e) => e.method === 'tasks/pushNotificationConfig/set')?.params.payload.params).toEqual({
    taskId: b.id,
    name: `tasks/${b.id}/pushNotificationConfigs/other`,
    pushNotificationConfig: { id: 'x', url: 'https://b.example/hook' },
  });
  expect(rec.calls.map((c) => c.method)).toEqual(['createTaskPushNotificationConfig']);
});

test("a guardian modify that re-targets B's call at A's task is NOT_FOUND; a page token the proxy did not seal is INVALID_ARGUMENT; the agent never acts", async () => {
  const { client } = await makeGrpcClient(fx.proxy.url, { legacy: true });
  const a = (await client.sendMessage(sendReq('A secret'), as('A'))) as { id: string };
  const b = (await client.sendMessage(sendReq('B own'), as('B'))) as { id: string };
  s.guardian.script((env) =>
    env.params?.payload?.method === 'tasks/get'
      ? { decision: 'modify', modifiedPayload: { ...env.params.payload, params: { ...env.params.payload.params, id: a.id } } }
      : { decision: 'allow' },
  );
  rec.clear();
  expect((await grpcFailure(client.getTask({ tenant: '', id: b.id, historyLength: undefined }, as('B')))).name).toMatch(/TaskNotFoundError$/);
  s.guardian.reset();
  const m = grpcMethodForPath('/a2a.v1.A2AService/ListTaskPushNotificationConfig');
  if (m === undefined) throw new Error('no v0.3 ListTaskPushNotificationConfig');
  const list = codecFor(m).request;
  const forged = await rawGrpc(
    fx.proxy.grpcAddress as string,
    m.path,
    grpcFrame(list.encode(list.fromJson({ id: b.id, pageToken: 'not-sealed-here' }))),
    fx.ids.headersAs('B'),
  );
  expect(forged.grpcStatus).toBe(3);
  expect(rec.calls).toEqual([]);
});
