/**
 * The gRPC binding with real parts: an @a2a-js/sdk gRPC agent (the same request handler as its HTTP
 * bindings, recorded below the transport), the SDK's gRPC client created from the proxy's card, a
 * scriptable HTTP guardian. What the agent's handler acted on and what the caller saw are asserted.
 */
import { collect, sendReq, TaskState, textOf, type Client } from '../helpers/agent';
import { handlerRecorder } from '../helpers/handler-recorder';
import { makeGrpcClient } from '../helpers/grpc';
import { textIn } from '../helpers/guardian';
import { useStack, type TestProxy } from './proxy-harness';

jest.setTimeout(30_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap, slowMs: 3000, stepMs: 20 });

let proxy: TestProxy;
let client: Client;
let grpcUrl: string | undefined;

beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true' });
  ({ client, grpcUrl } = await makeGrpcClient(proxy.url));
});
beforeEach(() => rec.clear());

/** Calls the guardian judged, by A2A method of the payload (request hooks only). */
const requestEnvelopes = () => s.guardian.calls().filter((e) => e.params?.payload?.method !== undefined);

/** The SDK client's error as { code, reason } (gRPC status and the first ErrorInfo reason of a2a-guard). */
async function grpcError(p: Promise<unknown>): Promise<{ code: number | undefined; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { code?: number; message: string; cause?: { code?: number } };
    return { code: e.code ?? e.cause?.code, message: e.message };
  }
  throw new Error('expected the call to fail');
}

describe('card', () => {
  test("the proxy's card names its own gRPC listener, and the SDK client created from it calls there", async () => {
    expect(proxy.grpcAddress).toBeDefined();
    expect(grpcUrl).toBe(proxy.grpcAddress);
    expect(grpcUrl).not.toBe(s.agent.grpcAddress);
    const res = (await client.sendMessage(sendReq('through the proxy'))) as { id: string };
    expect(res.id).toBeTruthy();
    expect(requestEnvelopes().map((e) => e.params.payload.method)).toEqual(['SendMessage']);
  });

  test('without GRPC_PORT the served card carries no gRPC interface', async () => {
    const plain = await s.proxy({});
    const card = (await (await fetch(`${plain.url}/.well-known/agent-card.json`)).json()) as { supportedInterfaces: Array<{ protocolBinding: string }> };
    expect(card.supportedInterfaces.some((i) => i.protocolBinding === 'GRPC')).toBe(false);
  });
});

describe('unary calls', () => {
  test('allow: the guardian sees the canonical JSON-RPC request; the agent acts on it; the caller gets the answer', async () => {
    const task = (await client.sendMessage(sendReq('hello grpc'))) as { id: string; status?: { state: number } };
    const env = requestEnvelopes()[0];
    expect(env.method).toBe('message/send');
    expect(env.params.payload).toMatchObject({ jsonrpc: '2.0', method: 'SendMessage', params: { message: { role: 'ROLE_USER', parts: [{ text: 'hello grpc' }] } } });
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
    expect(textOf(rec.calls[0]?.params)).toContain('hello grpc');
    expect(task.id).toBeTruthy();
    // INSPECT_RESPONSES: the answer was judged too, as a JSON-RPC response with the request's id.
    const resp = s.guardian.calls().find((e) => e.params?.payload?.result !== undefined);
    expect(resp?.params.payload.id).toBe(env.params.payload.id);
    expect(resp?.params.payload.result.task.id).toBe(task.id);

    rec.clear();
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(got.id).toBe(task.id);
    expect(rec.calls.map((c) => c.method)).toEqual(['getTask']);
    expect(requestEnvelopes().at(-1)?.params.payload).toMatchObject({ method: 'GetTask', params: { id: task.id } });
  });

  test('deny: PERMISSION_DENIED with the guardian reason; the agent never acts', async () => {
    s.guardian.script((env) => (textIn(env).includes('forbidden') ? { decision: 'deny', message: 'no forbidden things', reasonCode: ['POLICY'] } : { decision: 'allow' }));
    const err = await grpcError(client.sendMessage(sendReq('forbidden words')));
    expect(err.code).toBe(7);
    expect(err.message).toContain('no forbidden things');
    expect(rec.calls).toHaveLength(0);
  });

  test('modify: the agent acts on the replacement, re-encoded', async () => {
    s.guardian.script((env) => {
      const p = env.params.payload;
      if (p.method !== 'SendMessage') return { decision: 'allow' };
      const modified = structuredClone(p);
      modified.params.message.parts = [{ text: 'masked by guardian' }];
      return { decision: 'modify', modifiedPayload: modified };
    });
    await client.sendMessage(sendReq('my secret number 4111'));
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
    expect(textOf(rec.calls[0]?.params)).toContain('masked by guardian');
    expect(JSON.stringify(rec.calls[0]?.params)).not.toContain('4111');
  });

  test('guardian failure: UNAVAILABLE (FAIL_MODE=closed); the agent never acts', async () => {
    s.guardian.script(() => ({ fault: 'http500' }));
    const err = await grpcError(client.getTask({ tenant: '', id: 'whatever', historyLength: undefined }));
    expect(err.code).toBe(14);
    expect(rec.calls).toHaveLength(0);
  });
});

describe('streams', () => {
  test('SendStreamingMessage relays every event, each judged in order', async () => {
    const events = await collect(client.sendMessageStream(sendReq('stream 3')));
    expect(events.length).toBeGreaterThanOrEqual(4);
    const judged = s.guardian.calls().filter((e) => e.params?.payload?.result !== undefined);
    expect(judged).toHaveLength(events.length);
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessageStream']);
    const last = events.at(-1) as { payload?: { $case: string; value: { status?: { state: number } } } };
    expect(last.payload?.$case).toBe('statusUpdate');
    expect(last.payload?.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  test('a deny at event k ends the stream with PERMISSION_DENIED after k-1 events', async () => {
    let n = 0;
    s.guardian.script((env) => (env.params.payload.result !== undefined && ++n === 3 ? { decision: 'deny', message: 'third event' } : { decision: 'allow' }));
    const seen: unknown[] = [];
    const err = await grpcError((async () => {
      for await (const ev of client.sendMessageStream(sendReq('stream 5'))) seen.push(ev);
    })());
    expect(err.code).toBe(7);
    expect(seen).toHaveLength(2);
  });
});
