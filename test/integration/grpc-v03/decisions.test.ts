/**
 * Guardian decisions on A2A v0.3 gRPC calls (`a2a.v1.A2AService`), with the SDK's v0.3 gRPC client
 * and a v0.3 gRPC SDK agent (handler recorded): deny-all reaches nothing, a modify reaches the agent as
 * the guardian wrote it (in v0.3 JSON-RPC form), a replacement that is not a v0.3 form is refused, and
 * judged answers and stream events are relayed as approved.
 */
import { collect, sendReq, textOf, type Client } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFailure, legacyGrpcTransport, makeGrpcClient } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, grpcVersions: ['0.3'], extendedAgentCard: true, wrapRequestHandler: rec.wrap, slowMs: 3000, stepMs: 20 });

let proxy: TestProxy;
let client: Client;

beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true' });
  ({ client } = await makeGrpcClient(proxy.url, { legacy: true }));
});
beforeEach(() => rec.clear());

const isRequest = (e: { params?: { payload?: { method?: string } } }) => e.params?.payload?.method !== undefined;

test('deny-all: every v0.3 operation is PERMISSION_DENIED and the handler acts on none', async () => {
  const task = (await client.sendMessage(sendReq('made before the deny'))) as { id: string };
  rec.clear();
  s.guardian.clear();
  s.guardian.script(() => ({ decision: 'deny', message: 'nothing today' }));
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['message/send', () => client.sendMessage(sendReq('denied'))],
    ['message/stream', () => collect(client.sendMessageStream(sendReq('stream 2')))],
    ['tasks/get', () => client.getTask({ tenant: '', id: task.id, historyLength: undefined })],
    ['tasks/cancel', () => client.cancelTask({ tenant: '', id: task.id, metadata: undefined })],
    ['tasks/resubscribe', () => collect(client.resubscribeTask({ tenant: '', id: task.id }))],
    [
      'tasks/pushNotificationConfig/set',
      () => client.createTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'c', url: 'https://h.example/', token: '', authentication: undefined }),
    ],
    ['tasks/pushNotificationConfig/get', () => client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'c' })],
    ['tasks/pushNotificationConfig/list', () => client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })],
    ['tasks/pushNotificationConfig/delete', () => client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'c' })],
    ['agent/getAuthenticatedExtendedCard', () => legacyGrpcTransport(proxy.grpcAddress as string).getExtendedAgentCard({ tenant: '' })],
  ];
  for (const [aos, call] of calls) {
    const f = await grpcFailure(call());
    expect([aos, f.message]).toEqual([aos, expect.stringContaining('nothing today')]);
  }
  expect(rec.calls).toEqual([]);
  expect(
    s.guardian
      .calls()
      .filter(isRequest)
      .map((e) => e.method),
  ).toEqual(calls.map(([aos]) => aos));
});

test('modify: the handler acts on the replacement, and the original text reaches nothing', async () => {
  s.guardian.script((env) => {
    const p = env.params.payload;
    if (p.method !== 'message/send') return { decision: 'allow' };
    const modified = structuredClone(p);
    modified.params.message.parts = [{ kind: 'text', text: 'masked by guardian' }];
    modified.params.metadata = { reviewed: true };
    return { decision: 'modify', modifiedPayload: modified };
  });
  const answer = await client.sendMessage(sendReq('card 4111 1111 1111 1111'));
  expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
  expect(textOf(rec.calls[0]?.params)).toBe('masked by guardian');
  expect(rec.calls[0]?.params).toMatchObject({ metadata: { reviewed: true } });
  expect(JSON.stringify(rec.calls[0]?.params)).not.toContain('4111');
  expect(JSON.stringify(answer)).not.toContain('4111');
});

test.each([
  [
    'a member v0.3 protobuf does not hold (part metadata)',
    (m: { parts: Array<Record<string, unknown>> }) => {
      (m.parts[0] as Record<string, unknown>).metadata = { x: 1 };
    },
  ],
  [
    'a kind that is not the message',
    (m: Record<string, unknown>) => {
      m.kind = 'task';
    },
  ],
  [
    'a role v0.3 does not have',
    (m: Record<string, unknown>) => {
      m.role = 'ROLE_USER';
    },
  ],
  [
    'referenceTaskIds (v0.3 JSON only)',
    (m: Record<string, unknown>) => {
      m.referenceTaskIds = ['t-other'];
    },
  ],
  [
    'file bytes in non-canonical base64',
    (m: { parts: unknown[] }) => {
      m.parts = [{ kind: 'file', file: { bytes: 'aGk' } }];
    },
  ],
])('a modify with %s is refused; the agent never acts', async (_name, bend) => {
  s.guardian.script((env) => {
    const p = env.params.payload;
    if (p.method !== 'message/send') return { decision: 'allow' };
    const modified = structuredClone(p);
    bend(modified.params.message);
    return { decision: 'modify', modifiedPayload: modified };
  });
  const f = await grpcFailure(client.sendMessage(sendReq('to be bent')));
  expect(f.code ?? f.name).toBeDefined();
  expect(rec.calls).toEqual([]);
});

test("modify of a judged answer: the caller gets the guardian's task", async () => {
  s.guardian.script((env) => {
    const p = env.params.payload;
    if (p.result?.kind !== 'task') return { decision: 'allow' };
    const modified = structuredClone(p);
    modified.result.metadata = { redacted: true };
    delete modified.result.artifacts;
    return { decision: 'modify', modifiedPayload: modified };
  });
  const task = (await client.sendMessage(sendReq('answer to be replaced'))) as { metadata?: Record<string, unknown>; artifacts: unknown[] };
  expect(task.metadata).toEqual({ redacted: true });
  expect(task.artifacts).toEqual([]);
});

test('streams: each event judged in order; a modify replaces that event only; a deny at event k ends the stream after k-1', async () => {
  s.guardian.script((env) => {
    const r = env.params.payload.result;
    if (r?.kind !== 'artifact-update') return { decision: 'allow' };
    const modified = structuredClone(env.params.payload);
    modified.result.artifact.parts = [{ kind: 'text', text: 'REPLACED' }];
    return { decision: 'modify', modifiedPayload: modified };
  });
  const events = await collect(client.sendMessageStream(sendReq('stream 2')));
  const updates = events.filter((e) => (e as { payload?: { $case: string } }).payload?.$case === 'artifactUpdate');
  expect(updates.map((e) => textOf(e))).toEqual(['REPLACED', 'REPLACED']);

  s.guardian.script((env) => (textOf(env.params.payload.result) === 'chunk 1' ? { decision: 'deny', message: 'second chunk' } : { decision: 'allow' }));
  const seen: unknown[] = [];
  const f = await grpcFailure(
    (async () => {
      for await (const ev of client.sendMessageStream(sendReq('stream 4'))) seen.push(ev);
    })(),
  );
  expect(f.message).toContain('second chunk');
  // The task, then chunk 0.
  expect(seen).toHaveLength(2);
});
