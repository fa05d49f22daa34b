/**
 * Hostile v0.3 gRPC frames (`a2a.v1.A2AService`), sent raw to the proxy in front of a v0.3 gRPC SDK
 * agent (handler recorded): what the guardian sees is what the agent acts on, and a message whose
 * v0.3 JSON-RPC form would say something else is refused before anything is asked or sent.
 */
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { textOf } from '../../helpers/agent';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor, type MessageCodec } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(30_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, grpcVersions: ['0.3'], wrapRequestHandler: rec.wrap });

let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0' });
});
beforeEach(() => rec.clear());

const request = (name: string): { path: string; c: MessageCodec } => {
  const m = grpcMethodForPath(`/a2a.v1.A2AService/${name}`);
  if (m === undefined) throw new Error(name);
  return { path: m.path, c: codecFor(m).request };
};
const message = (extra: Record<string, unknown> = {}) => ({
  messageId: 'wire-1',
  contextId: '',
  taskId: '',
  role: 1,
  content: [{ part: { $case: 'text', value: 'hello' } }],
  metadata: undefined,
  extensions: [],
  ...extra,
});
const send = (m: Record<string, unknown>) => {
  const { path, c } = request('SendMessage');
  return { path, bytes: c.encode({ request: m, configuration: undefined, metadata: undefined }) };
};

test.each([
  ['a role v0.3 JSON has no word for', () => send(message({ role: 7 }))],
  ['a NaN in metadata', () => send(message({ metadata: { n: NaN } }))],
  ['a part without content', () => send(message({ content: [{}] }))],
  [
    'a task name with a second segment (the SDK reads its first)',
    () => ({ path: request('GetTask').path, bytes: request('GetTask').c.encode({ name: 'tasks/abc/pushNotificationConfigs/x', historyLength: 0 }) }),
  ],
  [
    'a config name without its config id',
    () => ({
      path: request('GetTaskPushNotificationConfig').path,
      bytes: request('GetTaskPushNotificationConfig').c.encode({ name: 'tasks/abc/pushNotificationConfigs/' }),
    }),
  ],
])('%s: INVALID_ARGUMENT; neither the guardian nor the agent is asked', async (_why, make) => {
  const { path, bytes } = make();
  const a = await rawGrpc(proxy.grpcAddress as string, path, grpcFrame(bytes));
  expect(a.grpcStatus).toBe(3);
  expect(rec.calls).toEqual([]);
  expect(s.guardian.calls()).toEqual([]);
});

test('a oneof set twice and the request message given twice: the agent acts on exactly what the guardian saw', async () => {
  // A Part whose text is given twice (the last one counts), in a Message given twice (ts-proto keeps the last; other readers merge).
  const part = new BinaryWriter().uint32(10).string('EVIL').uint32(10).string('benign').finish();
  const msg = (id: string) => new BinaryWriter().uint32(10).string(id).uint32(32).int32(1).uint32(42).bytes(part).finish();
  const bytes = Buffer.concat([new BinaryWriter().uint32(10).bytes(msg('wire-evil')).finish(), new BinaryWriter().uint32(10).bytes(msg('wire-2')).finish()]);
  const a = await rawGrpc(proxy.grpcAddress as string, '/a2a.v1.A2AService/SendMessage', grpcFrame(bytes));
  expect(a.grpcStatus).toBe(0);
  const seen = s.guardian.calls()[0]?.params.payload.params;
  expect(seen).toEqual({ message: { kind: 'message', messageId: 'wire-2', role: 'user', parts: [{ kind: 'text', text: 'benign' }] } });
  expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
  expect(textOf(rec.calls[0]?.params)).toBe('benign');
  expect(JSON.stringify(rec.calls[0]?.live)).not.toMatch(/EVIL|wire-evil/);
});

test('a field the v0.3 decoder does not read, at the top or nested: INVALID_ARGUMENT naming it; nothing asked or sent', async () => {
  const msg = new BinaryWriter()
    .uint32(10)
    .string('wire-3')
    .uint32(32)
    .int32(1)
    .uint32((99 << 3) | 2)
    .string('SMUGGLE')
    .finish();
  for (const bytes of [
    Buffer.from(new BinaryWriter().uint32(10).bytes(msg).finish()),
    Buffer.concat([
      send(message()).bytes,
      new BinaryWriter()
        .uint32((98 << 3) | 2)
        .string('SMUGGLE')
        .finish(),
    ]),
  ]) {
    const a = await rawGrpc(proxy.grpcAddress as string, '/a2a.v1.A2AService/SendMessage', grpcFrame(bytes));
    expect(a.grpcStatus).toBe(3);
    expect(a.grpcMessage).toMatch(/field 9[89] \(wire type 2\)/);
  }
  expect(rec.calls).toEqual([]);
  expect(s.guardian.calls()).toEqual([]);
});

test('the v0.3 service on the HTTP port is still refused (gRPC-Web, Connect): only the gRPC port carries it', async () => {
  const res = await fetch(`${proxy.url}/a2a.v1.A2AService/SendMessage`, {
    method: 'POST',
    headers: { 'content-type': 'application/grpc-web+proto' },
    body: grpcFrame(send(message()).bytes),
  });
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(rec.calls).toEqual([]);
});
