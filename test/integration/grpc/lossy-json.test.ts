/**
 * Protobuf values the JSON mapping cannot carry. The guardian judges a gRPC call in its
 * protobuf JSON form (the SDK's toJSON); the agent decodes protobuf bytes. Some values have no JSON
 * form of their own: an enum number the generated code does not know is shown as "UNRECOGNIZED",
 * a Struct number NaN or +-Infinity as null (JSON.stringify), -0 as 0, a Value with no kind not at
 * all. The guardian then approved one thing and the agent got another (a role of 99 shown as
 * "UNRECOGNIZED", a NaN shown as null), in requests and in judged answers alike.
 *
 * Oracle at the agent's request handler (real SDK gRPC agent, handler recorder): every call the
 * handler acts on, encoded with the SDK's own code, must be byte for byte the encoding of the JSON
 * the guardian approved; a call whose JSON form is not faithful must be refused and reach nothing.
 * Answers: the message the caller receives must be the encoding of the JSON the guardian approved.
 * LOSSY_CASES (default 40) sets the generated cases; LOSSY_SEED replays a run.
 */
import fc from 'fast-check';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { isResponseEnvelope } from '../../helpers/guardian';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor, type MessageCodec } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(120_000);

const CASES = Number(process.env.LOSSY_CASES ?? 40);
const SEED = process.env.LOSSY_SEED === undefined ? undefined : Number(process.env.LOSSY_SEED);
const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const LIST = '/lf.a2a.v1.A2AService/ListTasks';
const GET = '/lf.a2a.v1.A2AService/GetTask';

function codecs(path: string): { request: MessageCodec; response: MessageCodec } {
  const m = grpcMethodForPath(path);
  if (m === undefined) throw new Error(path);
  return codecFor(m);
}

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap, stepMs: 20 });

/** A value the JSON mapping cannot carry faithfully, or a plain one (so the oracle is not vacuous). */
type Oddity =
  | { readonly at: 'role'; readonly role: number }
  | { readonly at: 'metadata'; readonly value: number }
  | { readonly at: 'data'; readonly value: number }
  | { readonly at: 'emptyValue' }
  | { readonly at: 'listStatus'; readonly status: number }
  | { readonly at: 'none' };

const oddityArb: fc.Arbitrary<Oddity> = fc.oneof(
  fc.constant({ at: 'none' as const }),
  fc.record({ at: fc.constant('role' as const), role: fc.oneof(fc.integer({ min: 3, max: 2 ** 31 - 1 }), fc.integer({ min: -(2 ** 31), max: -2 })) }),
  fc.record({ at: fc.constant('metadata' as const), value: fc.constantFrom(NaN, Infinity, -Infinity, -0, 1.5) }),
  fc.record({ at: fc.constant('data' as const), value: fc.constantFrom(NaN, Infinity, -Infinity, -0, 7) }),
  fc.constant({ at: 'emptyValue' as const }),
  fc.record({ at: fc.constant('listStatus' as const), status: fc.oneof(fc.integer({ min: 10, max: 1000 }), fc.integer({ min: 0, max: 9 })) }),
);

/** The wire bytes of the call an oddity describes (built with the SDK's generated code, then bent). */
function callOf(o: Oddity, n: number): { path: string; bytes: Buffer } {
  if (o.at === 'listStatus') {
    const c = codecs(LIST).request;
    const m = c.fromJson({ pageSize: 5 }) as { status: number };
    m.status = o.status;
    return { path: LIST, bytes: c.encode(m) };
  }
  const c = codecs(SEND).request;
  const m = c.fromJson({ message: { messageId: `lossy-${n}`, role: 'ROLE_USER', parts: [{ text: 'lossy' }, { data: { k: 1 } }], metadata: { k: 'v' } } }) as {
    message: { role: number; metadata: Record<string, unknown>; parts: Array<{ content: { value: unknown } }> };
  };
  if (o.at === 'role') m.message.role = o.role;
  if (o.at === 'metadata') m.message.metadata.k = o.value;
  if (o.at === 'data') (m.message.parts[1]?.content.value as { k?: unknown }).k = o.value;
  if (o.at === 'emptyValue') m.message.metadata.k = undefined;
  const bytes = c.encode(m);
  return { path: SEND, bytes };
}

/** What the handler acted on, encoded with the SDK's code (the agent's own reading, in bytes). */
function actedBytes(path: string, params: unknown): Buffer {
  return codecs(path).request.encode(params);
}

let allowAll: TestProxy;

beforeAll(async () => {
  allowAll = await s.proxy({ GRPC_PORT: '0' });
});

describe('gRPC values without a faithful JSON form', () => {
  test('request oracle: what the agent acts on encodes exactly as what the guardian approved; the rest is refused', async () => {
    let n = 0;
    let passed = 0;
    await fc.assert(
      fc.asyncProperty(oddityArb, async (o) => {
        rec.clear();
        s.guardian.clear();
        const call = callOf(o, n++);
        const a = await rawGrpc(allowAll.grpcAddress as string, call.path, grpcFrame(call.bytes), { 'a2a-version': '1.0' });
        const approved = s.guardian
          .calls()
          .filter((e) => !isResponseEnvelope(e))
          .map((e) => e.params.payload.params);
        if (a.grpcStatus !== 0) {
          expect(rec.calls).toEqual([]);
          return;
        }
        passed++;
        expect(approved).toHaveLength(1);
        const c = codecs(call.path).request;
        const approvedBytes = c.encode(c.fromJson(approved[0]));
        // The agent got the proxy's bytes: decoded by the agent, they are what the guardian's JSON encodes to.
        expect(rec.calls).toHaveLength(1);
        // The recorder's `params` is JSON-safe (a NaN is null there too): compare the live request object.
        expect(Buffer.compare(actedBytes(call.path, rec.calls[0]?.live), approvedBytes)).toBe(0);
      }),
      { numRuns: CASES, ...(SEED === undefined ? {} : { seed: SEED }) },
    );
    expect(passed).toBeGreaterThan(0);
  });

  test('a role the SDK does not know (99) and a NaN are refused, never shown as "UNRECOGNIZED" / null and relayed', async () => {
    for (const o of [
      { at: 'role', role: 99 },
      { at: 'metadata', value: NaN },
      { at: 'data', value: Infinity },
    ] as const) {
      rec.clear();
      const call = callOf(o, 1000);
      const a = await rawGrpc(allowAll.grpcAddress as string, call.path, grpcFrame(call.bytes), { 'a2a-version': '1.0' });
      expect(a.grpcStatus).toBe(3);
      expect(a.details.map((d) => d.reason)).toEqual(['REQUEST_REJECTED']);
      expect(rec.calls).toEqual([]);
    }
  });

  test('answer: a judged answer holding a NaN is not relayed as the NaN the guardian saw as null', async () => {
    const inspecting = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true' });
    // The task is made at the agent directly (its history keeps the user's message with the NaN).
    const call = callOf({ at: 'metadata', value: NaN }, 2000);
    const made = await rawGrpc(s.agent.grpcAddress as string, SEND, grpcFrame(call.bytes), { 'a2a-version': '1.0' });
    expect(made.grpcStatus).toBe(0);
    const resp0 = codecs(SEND).response;
    const answer = resp0.toJson(resp0.decode(made.body.subarray(5))) as { task?: { id: string } };
    const id = answer.task?.id as string;
    const get = codecs(GET).request;
    s.guardian.clear();
    const a = await rawGrpc(inspecting.grpcAddress as string, GET, grpcFrame(get.encode(get.fromJson({ id, historyLength: 5 }))), { 'a2a-version': '1.0' });
    const judged = s.guardian.calls().filter(isResponseEnvelope);
    if (a.grpcStatus === 0) {
      // Relayed: then the caller's bytes are exactly the encoding of what the guardian approved.
      const resp = codecs(GET).response;
      expect(judged).toHaveLength(1);
      expect(Buffer.compare(a.body.subarray(5), resp.encode(resp.fromJson(judged[0].params.payload.result)))).toBe(0);
    } else {
      expect(a.grpcStatus).toBe(13);
    }
  });
});
