/**
 * Hostile bytes on every RPC of the gRPC binding. The gRPC differential covers SendMessage;
 * this generator covers all eleven RPCs, from a valid request of each, bent at the byte level (byte
 * flips, truncation inside a field, appended bytes, a length prefix that lies, a second frame, a
 * compressed flag without an encoding, wrong-type fields) and at the metadata level (duplicated
 * a2a-version, odd grpc-timeout and grpc-encoding spellings).
 *
 * Oracles, at the real SDK gRPC agent's request handler:
 *   deny-all:  the handler acts on nothing, and every call gets a status (no hang, no crash).
 *   allow-all: every call the handler acts on, encoded with the SDK's code, is byte for byte the
 *              encoding of a request the guardian approved; the proxy still answers a plain call
 *              after every hostile one.
 * GRPC_FUZZ_CASES (default 80) sets the cases per oracle; GRPC_FUZZ_SEED replays a run.
 */
import fc from 'fast-check';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { isResponseEnvelope } from '../../helpers/guardian';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { GRPC_METHODS, type GrpcMethod } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(180_000);

const CASES = Number(process.env.GRPC_FUZZ_CASES ?? 80);
const SEED = process.env.GRPC_FUZZ_SEED === undefined ? undefined : Number(process.env.GRPC_FUZZ_SEED);

const rec = handlerRecorder();
const s = useStack({ grpc: true, grpcVersions: ['1.0', '0.3'], wrapRequestHandler: rec.wrap, stepMs: 10, pushNotifications: true, extendedAgentCard: true });

/** A valid request of each RPC (JSON form), the seed every mutation starts from. */
const SEEDS: Record<string, Record<string, unknown>> = {
  SendMessage: {
    message: { messageId: 'fz', role: 'ROLE_USER', parts: [{ text: 'fuzz' }], metadata: { a: 1 } },
    configuration: { acceptedOutputModes: ['text/plain'] },
  },
  SendStreamingMessage: { message: { messageId: 'fz', role: 'ROLE_USER', parts: [{ text: 'fuzz' }] } },
  GetTask: { id: 'fuzz-task', historyLength: 2 },
  ListTasks: { pageSize: 3, contextId: 'ctx' },
  CancelTask: { id: 'fuzz-task' },
  SubscribeToTask: { id: 'fuzz-task' },
  CreateTaskPushNotificationConfig: { taskId: 'fuzz-task', id: 'cfg', url: 'https://hooks.example/x', token: 't' },
  GetTaskPushNotificationConfig: { taskId: 'fuzz-task', id: 'cfg' },
  ListTaskPushNotificationConfigs: { taskId: 'fuzz-task', pageSize: 2 },
  DeleteTaskPushNotificationConfig: { taskId: 'fuzz-task', id: 'cfg' },
  GetExtendedAgentCard: {},
};

/** The same for v0.3's `a2a.v1.A2AService` (its v0.3 JSON-RPC form). */
const SEEDS_V03: Record<string, unknown> = {
  SendMessage: {
    message: { kind: 'message', messageId: 'fz', role: 'user', parts: [{ kind: 'text', text: 'fuzz' }], metadata: { a: 1 } },
    configuration: { acceptedOutputModes: ['text/plain'], blocking: true },
  },
  SendStreamingMessage: { message: { kind: 'message', messageId: 'fz', role: 'user', parts: [{ kind: 'text', text: 'fuzz' }] } },
  GetTask: { id: 'fuzz-task', historyLength: 2 },
  CancelTask: { id: 'fuzz-task' },
  TaskSubscription: { id: 'fuzz-task' },
  CreateTaskPushNotificationConfig: { taskId: 'fuzz-task', pushNotificationConfig: { id: 'cfg', url: 'https://hooks.example/x', token: 't' } },
  GetTaskPushNotificationConfig: { id: 'fuzz-task', pushNotificationConfigId: 'cfg' },
  ListTaskPushNotificationConfig: { id: 'fuzz-task' },
  DeleteTaskPushNotificationConfig: { id: 'fuzz-task', pushNotificationConfigId: 'cfg' },
  GetAgentCard: {},
};

/** Both services' RPCs (deny-all); the allow-all oracle encodes what the handler acted on as a v1.0 request, so it runs on v1.0's. */
const ALL_METHODS: readonly GrpcMethod[] = [...GRPC_METHODS.values()];
const METHODS: readonly GrpcMethod[] = ALL_METHODS.filter((m) => m.version === '1.0');

type Mutation =
  | { readonly k: 'flip'; readonly at: number; readonly xor: number }
  | { readonly k: 'truncate'; readonly keep: number }
  | { readonly k: 'append'; readonly bytes: readonly number[] }
  | { readonly k: 'lengthLie'; readonly delta: number }
  | { readonly k: 'twoFrames' }
  | { readonly k: 'compressedFlag' }
  | { readonly k: 'wrongWire'; readonly field: number };

type MetaMutation = 'none' | 'dupVersion' | 'version03' | 'timeoutSpace' | 'encodingCase' | 'encodingList' | 'dupExtensions';

interface Case {
  readonly method: number;
  readonly mutations: readonly Mutation[];
  readonly meta: MetaMutation;
}

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ k: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ k: fc.constant('truncate' as const), keep: fc.nat() }),
  fc.record({ k: fc.constant('append' as const), bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 12 }) }),
  fc.record({ k: fc.constant('lengthLie' as const), delta: fc.integer({ min: -4, max: 4 }).filter((d) => d !== 0) }),
  fc.constant({ k: 'twoFrames' as const }),
  fc.constant({ k: 'compressedFlag' as const }),
  fc.record({ k: fc.constant('wrongWire' as const), field: fc.integer({ min: 1, max: 8 }) }),
);

const caseArb = (methods: readonly GrpcMethod[]): fc.Arbitrary<Case> =>
  fc.record({
    method: fc.nat({ max: methods.length - 1 }),
    mutations: fc.array(mutationArb, { maxLength: 2 }),
    meta: fc.constantFrom<MetaMutation>('none', 'none', 'none', 'dupVersion', 'version03', 'timeoutSpace', 'encodingCase', 'encodingList', 'dupExtensions'),
  });

/** Unbent calls the agent must act on under allow-all, run before the generated ones: the oracle is never vacuous. */
const VALID: readonly Case[] = ['SendMessage', 'GetTask', 'ListTasks'].map((name) => ({
  method: METHODS.findIndex((m) => m.name === name),
  mutations: [],
  meta: 'none' as const,
}));

function wireOf(c: Case, methods: readonly GrpcMethod[]): { method: GrpcMethod; body: Buffer; headers: Record<string, string | string[]> } {
  const method = methods[c.method] as GrpcMethod;
  const codec = codecFor(method).request;
  let msg = codec.encode(codec.fromJson((method.version === '1.0' ? SEEDS : SEEDS_V03)[method.name] ?? {}));
  let frame: Buffer | undefined;
  let flag = 0;
  let lie = 0;
  let two = false;
  for (const m of c.mutations) {
    switch (m.k) {
      case 'flip':
        if (msg.length > 0) {
          msg = Buffer.from(msg);
          const i = m.at % msg.length;
          msg[i] = (msg[i] as number) ^ m.xor;
        }
        break;
      case 'truncate':
        msg = msg.subarray(0, msg.length === 0 ? 0 : m.keep % msg.length);
        break;
      case 'append':
        msg = Buffer.concat([msg, Buffer.from(m.bytes)]);
        break;
      case 'lengthLie':
        lie = m.delta;
        break;
      case 'twoFrames':
        two = true;
        break;
      case 'compressedFlag':
        flag = 1;
        break;
      // A known field number with a wire type it does not have.
      case 'wrongWire':
        msg = Buffer.concat([msg, Buffer.from([(m.field << 3) | (m.field % 2 === 0 ? 0 : 5), 1, 0, 0, 0])]);
        break;
    }
  }
  frame = grpcFrame(msg, flag === 1);
  if (lie !== 0) frame.writeUInt32BE(Math.max(0, msg.length + lie), 1);
  if (two) frame = Buffer.concat([frame, grpcFrame(msg)]);
  const headers: Record<string, string | string[]> = { 'a2a-version': '1.0' };
  switch (c.meta) {
    case 'dupVersion':
      headers['a2a-version'] = ['1.0', '0.3'];
      break;
    case 'version03':
      headers['a2a-version'] = '0.3';
      break;
    case 'timeoutSpace':
      headers['grpc-timeout'] = '10 S';
      break;
    case 'encodingCase':
      headers['grpc-encoding'] = 'GZIP';
      break;
    case 'encodingList':
      headers['grpc-encoding'] = 'identity,gzip';
      break;
    case 'dupExtensions':
      headers['a2a-extensions'] = ['https://ext.example/a', 'https://ext.example/b'];
      break;
    default:
      break;
  }
  return { method, body: frame, headers };
}

/** A plain GetExtendedAgentCard: the proxy still serves after a hostile call. */
async function stillServes(proxy: TestProxy, expected: number): Promise<void> {
  const m = METHODS.find((x) => x.name === 'GetExtendedAgentCard') as GrpcMethod;
  const a = await rawGrpc(proxy.grpcAddress as string, m.path, grpcFrame(Buffer.alloc(0)), { 'a2a-version': '1.0' });
  expect(a.grpcStatus).toBe(expected);
}

async function run(
  proxy: TestProxy,
  plain: number,
  check: (c: Case, status: number | undefined) => void,
  methods_ = METHODS,
): Promise<{ passed: number; methods: Set<string> }> {
  let passed = 0;
  let n = 0;
  const examples = methods_ === METHODS ? VALID.map((c) => [c] as [Case]) : [];
  const methods = new Set<string>();
  await fc.assert(
    fc.asyncProperty(caseArb(methods_), async (c) => {
      const i = ++n;
      rec.clear();
      s.guardian.clear();
      const w = wireOf(c, methods_);
      const a = await rawGrpc(proxy.grpcAddress as string, w.method.path, w.body, w.headers as Record<string, string>);
      // Every call ends with a status (no hang: the test's timeout would catch one).
      expect(a.grpcStatus).toBeDefined();
      // Went through: the agent's handler acted on it (its answer may still be an error, e.g. an unknown task).
      if (rec.calls.length > 0 && i <= examples.length) passed++;
      methods.add(w.method.path);
      check(c, a.grpcStatus);
    }),
    { numRuns: CASES, examples, ...(SEED === undefined ? {} : { seed: SEED }) },
  );
  await stillServes(proxy, plain);
  return { passed, methods };
}

describe('gRPC fuzz, every RPC', () => {
  test('deny-all, both services (v1.0 and v0.3): the agent acts on nothing, every call gets a status', async () => {
    const proxy = await s.proxy({ GRPC_PORT: '0' });
    s.guardian.script(() => ({ decision: 'deny' }));
    const { methods } = await run(proxy, 7, () => expect(rec.calls).toEqual([]), ALL_METHODS);
    expect([...methods].some((p) => p.startsWith('/a2a.v1.'))).toBe(true);
  });

  test('allow-all: every call the agent acts on encodes exactly as a request the guardian approved', async () => {
    // Webhooks go direct: the push relay rewrites their URLs after approval by design (test/integration/push/).
    const proxy = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true', PUSH_DELIVERIES: 'direct' });
    s.guardian.script(() => ({ decision: 'allow' }));
    const { methods, passed } = await run(proxy, 0, (c) => {
      const method = METHODS[c.method] as GrpcMethod;
      const codec = codecFor(method).request;
      const approved = s.guardian
        .calls()
        .filter((e) => !isResponseEnvelope(e))
        .map((e) => codec.encode(codec.fromJson(e.params.payload.params)));
      for (const call of rec.calls) {
        const acted = codec.encode(call.live);
        expect(approved.some((b) => b.equals(acted))).toBe(true);
      }
      expect(rec.calls.length).toBeLessThanOrEqual(approved.length);
    });
    // Not vacuous: many RPCs were tried and the agent acted on each known-valid call.
    expect(methods.size).toBeGreaterThan(5);
    expect(passed).toBe(VALID.length);
  });
});
