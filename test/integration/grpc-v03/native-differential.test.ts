/**
 * The v0.3 gRPC differential, with the native v0.3 SDK (@a2a-js/sdk 0.3.14) as the agent: generated
 * SendMessage requests with odd values (roles, NaN and -0 in Structs, empty and missing ids, file
 * parts by uri and by bytes, unknown fields (refused), the request message given twice, which protobuf
 * readers merge and ts-proto replaces) go raw through a proxy with an allow-all guardian and one with a
 * deny-all guardian. Oracle at the agent's request handler, which acts on the v0.3 JSON-RPC objects
 * its gRPC server reads from the bytes it gets:
 *   allow-all: every call it acts on is exactly (absent = null = "" = []) a request the guardian approved;
 *              whatever the proxy refused reached nothing;
 *   deny-all:  it acts on nothing.
 * The agent drops a configuration's historyLength, so none is generated (it would be acted on as less
 * than was approved, not as more). V03_DIFF_CASES (default 60) sets the cases; V03_DIFF_SEED replays a run.
 */
import fc from 'fast-check';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import type * as A2AServer from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import { handlerRecorder } from '../../helpers/handler-recorder';
import { startAgentV03, type AgentV03 } from '../../helpers/agent-v03';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { isResponseEnvelope, startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';
import { sameV03Json } from '../../../src/a2a/bindings/grpc/v03';

jest.setTimeout(120_000);

const CASES = Number(process.env.V03_DIFF_CASES ?? 60);
const SEED = process.env.V03_DIFF_SEED === undefined ? undefined : Number(process.env.V03_DIFF_SEED);
const method = grpcMethodForPath('/a2a.v1.A2AService/SendMessage');
if (method === undefined) throw new Error('no v0.3 SendMessage');
const request = codecFor(method).request;

const rec = handlerRecorder();
let agent: AgentV03;
let guardian: TestGuardian;
let denyGuardian: TestGuardian;
let allow: TestProxy;
let deny: TestProxy;

beforeAll(async () => {
  agent = await startAgentV03({ wrapRequestHandler: (h) => rec.wrap(h as unknown as A2AServer.DefaultRequestHandler) });
  guardian = await startGuardian();
  denyGuardian = await startGuardian();
  denyGuardian.script(() => ({ decision: 'deny' }));
  allow = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, GRPC_PORT: '0' });
  deny = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: denyGuardian.url, GRPC_PORT: '0' });
});
afterAll(async () => {
  await allow?.close();
  await deny?.close();
  await agent?.close();
  await guardian?.close();
  await denyGuardian?.close();
});

const structValue = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(0, -0, 1.5, NaN, Infinity, true, null), fc.constant([]), fc.constant({}));
const part = fc.oneof(
  fc.record({ part: fc.record({ $case: fc.constant('text'), value: fc.string({ maxLength: 12 }) }) }),
  fc.record({
    part: fc.record({ $case: fc.constant('data'), value: fc.record({ data: fc.dictionary(fc.constantFrom('a', 'b'), structValue, { maxKeys: 2 }) }) }),
  }),
  fc.record({
    part: fc.record({
      $case: fc.constant('file'),
      value: fc.record({
        file: fc.oneof(
          fc.record({ $case: fc.constant('fileWithUri'), value: fc.constantFrom('https://f.example/a', '') }),
          fc.record({ $case: fc.constant('fileWithBytes'), value: fc.uint8Array({ maxLength: 4 }).map((b) => Buffer.from(b)) }),
        ),
        mimeType: fc.constantFrom('', 'text/plain'),
      }),
    }),
  }),
);
const message = fc.record({
  messageId: fc.constantFrom('m-1', ''),
  contextId: fc.constant(''),
  taskId: fc.constant(''),
  role: fc.constantFrom(1, 1, 1, 2, 0, 9),
  content: fc.array(part, { minLength: 1, maxLength: 3 }),
  metadata: fc.option(fc.dictionary(fc.constantFrom('k', 'trace'), structValue, { maxKeys: 2 }), { nil: undefined }),
  extensions: fc.constantFrom([], ['urn:x']),
});
const sendCase = fc.record({
  message,
  configuration: fc.option(
    fc.record({
      acceptedOutputModes: fc.constantFrom([], ['text']),
      pushNotification: fc.constant(undefined),
      historyLength: fc.constant(0),
      blocking: fc.boolean(),
    }),
    { nil: undefined },
  ),
  metadata: fc.option(fc.dictionary(fc.constant('m'), structValue, { maxKeys: 1 }), { nil: undefined }),
  unknownField: fc.constantFrom(false, false, false, true),
  second: fc.option(message, { nil: undefined }),
});
type SendCase = typeof sendCase extends fc.Arbitrary<infer T> ? T : never;

/** A plain call (must pass) and one with an unknown field (must be refused), run before the generated ones: neither oracle is vacuous. */
const plain = (text: string): SendCase['message'] => ({
  messageId: 'm-1',
  contextId: '',
  taskId: '',
  role: 1,
  content: [{ part: { $case: 'text', value: text } }],
  metadata: undefined,
  extensions: [],
});
const VALID: readonly SendCase[] = [
  { message: plain('valid 1'), configuration: undefined, metadata: undefined, unknownField: false, second: undefined },
  {
    message: plain('valid 2'),
    configuration: { acceptedOutputModes: ['text'], pushNotification: undefined, historyLength: 0, blocking: true },
    metadata: undefined,
    unknownField: false,
    second: undefined,
  },
];
const REFUSED: SendCase = { message: plain('refused'), configuration: undefined, metadata: undefined, unknownField: true, second: undefined };

function bytesOf(c: SendCase): Buffer {
  let out = request.encode({ request: c.message, configuration: c.configuration, metadata: c.metadata });
  if (c.unknownField)
    out = Buffer.concat([
      out,
      new BinaryWriter()
        .uint32((99 << 3) | 2)
        .string('SMUGGLE')
        .finish(),
    ]);
  if (c.second !== undefined) out = Buffer.concat([out, request.encode({ request: c.second, configuration: undefined, metadata: undefined })]);
  return out;
}

test('allow-all: the native agent acts on exactly what the guardian approved; deny-all: on nothing', async () => {
  let passed = 0;
  let refused = 0;
  let n = 0;
  await fc.assert(
    fc.asyncProperty(sendCase, async (c) => {
      const i = ++n;
      const body = grpcFrame(bytesOf(c));
      rec.clear();
      guardian.clear();
      const a = await rawGrpc(allow.grpcAddress as string, method.path, body);
      const approved = guardian
        .calls()
        .filter((e) => !isResponseEnvelope(e))
        .map((e) => e.params.payload.params);
      if (rec.calls.length === 0 && i > VALID.length && i <= VALID.length + 1) refused++;
      if (rec.calls.length > 0 && i <= VALID.length) passed++;
      expect(a.grpcStatus).toBeDefined();
      for (const call of rec.calls) {
        expect(JSON.stringify(call.live)).not.toContain('SMUGGLE');
        expect(approved.some((p) => sameV03Json(p, call.params))).toBe(true);
      }
      rec.clear();
      expect((await rawGrpc(deny.grpcAddress as string, method.path, body)).grpcStatus).toBeDefined();
      expect(rec.calls).toEqual([]);
    }),
    { numRuns: CASES, examples: [...VALID, REFUSED].map((c) => [c] as [SendCase]), ...(SEED === undefined ? {} : { seed: SEED }) },
  );
  // Not vacuous: the plain calls went through and the smuggling one was refused.
  expect(passed).toBe(VALID.length);
  expect(refused).toBe(1);
});

test('a null in a Struct, which this agent reads as 0, is refused (INVALID_ARGUMENT) and reaches nothing', async () => {
  const m = {
    messageId: 'm-null',
    contextId: '',
    taskId: '',
    role: 1,
    content: [{ part: { $case: 'data', value: { data: { amount: null } } } }],
    metadata: undefined,
    extensions: [],
  };
  rec.clear();
  guardian.clear();
  const a = await rawGrpc(allow.grpcAddress as string, method.path, grpcFrame(request.encode({ request: m, configuration: undefined, metadata: undefined })));
  expect(a.grpcStatus).toBe(3);
  expect(rec.calls).toEqual([]);
  expect(guardian.calls()).toEqual([]);
});
