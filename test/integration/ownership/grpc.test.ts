/**
 * Task ownership over gRPC, where answers now reach the
 * answer hook as the protobuf JSON of the message (grpcCodec) instead of the canonical payload.
 * Real SDK gRPC agent (handler recorded), real guardian, ROLE=server with OIDC callers A and B.
 */
import { collect, sendReq, TaskState } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFailure, makeGrpcClient } from '../../helpers/grpc';
import { useIdentityProxy } from '../../helpers/identities';
import { useStack } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap });
const fx = useIdentityProxy(s, { GRPC_PORT: '0' });
beforeEach(() => rec.clear());

const as = (who: 'A' | 'B') => ({ serviceParameters: fx.ids.headersAs(who) });
const listAll = {
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageSize: 100,
  pageToken: '',
  historyLength: undefined,
  statusTimestampAfter: undefined,
  includeArtifacts: undefined,
};

test("SendMessage and SendStreamingMessage bind their tasks to the caller; B cannot read them, and B's ListTasks names none of them nor counts them", async () => {
  const { client } = await makeGrpcClient(fx.proxy.url);
  const unary = (await client.sendMessage(sendReq('A unary'), as('A'))) as { id: string };
  const events = await collect(client.sendMessageStream(sendReq('A stream'), as('A')));
  // SDK stream events: { payload: { $case, value } }; a task has `id`, an update names `taskId`.
  const values = events.map((e) => (e as { payload?: { value?: { id?: string; taskId?: string } } }).payload?.value);
  const streamTask = values.map((v) => v?.taskId ?? v?.id).find((id) => id !== undefined && id !== '');
  expect(unary.id).toBeTruthy();
  expect(streamTask).toBeTruthy();
  const mine = (await client.sendMessage(sendReq('B own'), as('B'))) as { id: string };

  rec.clear();
  for (const id of [unary.id, streamTask as string]) {
    // The SDK reads NOT_FOUND as its TaskNotFoundError (no code kept).
    const f = await grpcFailure(client.getTask({ tenant: '', id, historyLength: undefined }, as('B')));
    expect(f.name).toMatch(/TaskNotFoundError$/);
  }
  expect(rec.calls).toHaveLength(0);

  const list = (await client.listTasks(listAll, as('B'))) as { tasks: Array<{ id: string }>; totalSize?: number };
  const listed = list.tasks.map((t) => t.id);
  expect(listed).toContain(mine.id);
  expect(listed).not.toContain(unary.id);
  expect(listed).not.toContain(streamTask);
  expect(Number(list.totalSize ?? 0)).toBeLessThanOrEqual(list.tasks.length);

  const listA = (await client.listTasks(listAll, as('A'))) as { tasks: Array<{ id: string }> };
  expect(listA.tasks.map((t) => t.id)).toEqual(expect.arrayContaining([unary.id, streamTask]));
  expect(listA.tasks.map((t) => t.id)).not.toContain(mine.id);
});

test('a call about an existing task shows the guardian the ownership state (as over HTTP)', async () => {
  const { client } = await makeGrpcClient(fx.proxy.url);
  const t = (await client.sendMessage(sendReq('A owns this'), as('A'))) as { id: string };
  s.guardian.clear();
  await client.getTask({ tenant: '', id: t.id, historyLength: undefined }, as('A'));
  const env = s.guardian.calls().find((e) => e.params?.payload?.method === 'GetTask');
  expect(env?.params.context.a2aContext?.client ?? env?.params.context).toBeDefined();
  expect(JSON.stringify(env?.params.context)).toContain('taskOwnership');
});

test("a guardian modify that re-targets B's call at A's task is refused as not found; the agent never acts (the ownership stage after the request hooks)", async () => {
  const { client } = await makeGrpcClient(fx.proxy.url);
  const a = (await client.sendMessage(sendReq('A secret'), as('A'))) as { id: string };
  const b = (await client.sendMessage(sendReq('B own'), as('B'))) as { id: string };
  s.guardian.script((env) =>
    env.params?.payload?.method === 'GetTask'
      ? { decision: 'modify', modifiedPayload: { ...env.params.payload, params: { ...env.params.payload.params, id: a.id } } }
      : { decision: 'allow' },
  );
  rec.clear();
  const f = await grpcFailure(client.getTask({ tenant: '', id: b.id, historyLength: undefined }, as('B')));
  expect(f.name).toMatch(/TaskNotFoundError$/);
  expect(rec.calls).toEqual([]);
});
