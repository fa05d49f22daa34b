/**
 * A hostile v0.3 gRPC agent (a raw HTTP/2 server answering `a2a.v1.A2AService` calls with bent
 * messages) behind the proxy with INSPECT_RESPONSES: the caller gets only an answer the guardian
 * judged, in full, or an error; never bytes the v0.3 JSON-RPC form did not show.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { startGuardian, isResponseEnvelope, type TestGuardian } from '../../helpers/guardian';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor, type MessageCodec } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(30_000);

const codecs = (name: string): { path: string; request: MessageCodec; response: MessageCodec } => {
  const m = grpcMethodForPath(`/a2a.v1.A2AService/${name}`);
  if (m === undefined) throw new Error(name);
  return { path: m.path, ...codecFor(m) };
};
const SEND = codecs('SendMessage');
const LIST = codecs('ListTaskPushNotificationConfig');
const task = (extra: Record<string, unknown> = {}) => ({
  id: 't-1',
  contextId: 'c-1',
  status: { state: 3, update: undefined, timestamp: undefined },
  artifacts: [],
  history: [],
  metadata: undefined,
  ...extra,
});

/** What the hostile agent answers next, as message bytes. */
let next: Buffer = Buffer.alloc(0);
let agent: http2.Http2Server;
const sessions = new Set<http2.ServerHttp2Session>();
let guardian: TestGuardian;
let proxy: TestProxy;

beforeAll(async () => {
  agent = http2.createServer();
  agent.on('session', (session) => sessions.add(session));
  agent.on('stream', (stream) => {
    stream.on('data', () => undefined);
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(grpcFrame(next));
    });
  });
  await new Promise<void>((r) => agent.listen(0, '127.0.0.1', r));
  guardian = await startGuardian();
  const port = (agent.address() as AddressInfo).port;
  proxy = await startTestProxy({
    UPSTREAM_URL: `http://127.0.0.1:${port}`,
    GRPC_UPSTREAM_URL: `http://127.0.0.1:${port}`,
    GUARDIAN_URL: guardian.url,
    GRPC_PORT: '0',
    INSPECT_RESPONSES: 'true',
  });
});
afterAll(async () => {
  await proxy?.close();
  await guardian?.close();
  for (const session of sessions) session.destroy();
  await new Promise<void>((r) => agent.close(() => r()));
});
beforeEach(() => {
  guardian.reset();
  guardian.clear();
});

const send = () =>
  rawGrpc(
    proxy.grpcAddress as string,
    SEND.path,
    grpcFrame(
      SEND.request.encode(SEND.request.fromJson({ message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } })),
    ),
  );
const judged = () =>
  guardian
    .calls()
    .filter(isResponseEnvelope)
    .map((e) => e.params.payload.result);

test('a plain answer: judged as the v0.3 result, and relayed as its encoding', async () => {
  next = SEND.response.encode({ payload: { $case: 'task', value: task({ metadata: { w: 'WORD' } }) } });
  const a = await send();
  expect(a.grpcStatus).toBe(0);
  expect(judged()).toEqual([{ kind: 'task', id: 't-1', contextId: 'c-1', status: { state: 'completed' }, metadata: { w: 'WORD' } }]);
  expect(a.body.subarray(5).equals(next)).toBe(true);
});

test('unknown fields in an answer are not relayed', async () => {
  const hidden = new BinaryWriter()
    .uint32((99 << 3) | 2)
    .string('HIDDEN')
    .finish();
  next = Buffer.concat([SEND.response.encode({ payload: { $case: 'task', value: task() } }), hidden]);
  const a = await send();
  expect(a.grpcStatus).toBe(0);
  expect(a.body.includes('HIDDEN')).toBe(false);
  expect(JSON.stringify(judged())).not.toContain('HIDDEN');
});

test.each([
  ['a NaN in the metadata', () => SEND.response.encode({ payload: { $case: 'task', value: task({ metadata: { n: NaN, w: 'WORD' } }) } })],
  [
    'a task state the enum does not define',
    () =>
      SEND.response.encode({
        payload: { $case: 'task', value: task({ status: { state: 42, update: undefined, timestamp: undefined }, metadata: { w: 'WORD' } }) },
      }),
  ],
  [
    'no task or message at all',
    () =>
      Buffer.from(
        new BinaryWriter()
          .uint32((99 << 3) | 2)
          .string('WORD')
          .finish(),
      ),
  ],
])('%s: INTERNAL, and no word of it reaches the caller', async (_why, make) => {
  next = make();
  const a = await send();
  expect(a.grpcStatus).toBe(13);
  expect(a.body.length).toBe(0);
  expect(`${a.grpcMessage ?? ''}${JSON.stringify(a.details)}`).not.toContain('WORD');
});

test("a push config list with a next-page token (no place in v0.3 JSON-RPC's bare list): INTERNAL", async () => {
  next = LIST.response.encode({ configs: [], nextPageToken: 'NEXT' });
  const a = await rawGrpc(proxy.grpcAddress as string, LIST.path, grpcFrame(LIST.request.encode(LIST.request.fromJson({ id: 't-1' }))));
  expect(a.grpcStatus).toBe(13);
  expect(a.body.includes('NEXT')).toBe(false);
});

test("deny of the answer: PERMISSION_DENIED, none of the agent's words", async () => {
  next = SEND.response.encode({ payload: { $case: 'task', value: task({ metadata: { w: 'WORD' } }) } });
  guardian.script((env) => (isResponseEnvelope(env) ? { decision: 'deny', message: 'answer withheld' } : { decision: 'allow' }));
  const a = await send();
  expect(a.grpcStatus).toBe(7);
  expect(a.body.includes('WORD')).toBe(false);
});
