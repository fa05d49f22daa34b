/**
 * The agent's gRPC error statuses under INSPECT_RESPONSES, compared with what the HTTP
 * bindings do with the agent's error answers. Over JSON-RPC and REST an agent's error (a JSON-RPC
 * `error`, a REST google.rpc.Status body) is a response the guardian judges; over gRPC the same
 * error is a status (grpc-status, grpc-message, grpc-status-details-bin), and it went to the caller
 * unjudged: the guardian never saw the agent's error text, and could neither deny nor redact it.
 * Now a status is judged as the JSON-RPC error it stands for (`error` = its google.rpc.Status in
 * JSON, as a REST error's body), and the caller gets the status rebuilt from what was approved.
 * Real SDK gRPC agent, real HTTP guardian, real SDK gRPC client and raw HTTP/2.
 */
import { sendReq, type Client } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { isResponseEnvelope, type Envelope } from '../../helpers/guardian';
import { grpcFailure, grpcFrame, makeGrpcClient, rawGrpc } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(60_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap, stepMs: 20 });
const GET_TASK = '/lf.a2a.v1.A2AService/GetTask';
const SUBSCRIBE = '/lf.a2a.v1.A2AService/SubscribeToTask';

function requestFrame(path: string, json: Record<string, unknown>): Buffer {
  const m = grpcMethodForPath(path);
  if (m === undefined) throw new Error(path);
  const c = codecFor(m).request;
  return grpcFrame(c.encode(c.fromJson(json)));
}

const responseEnvelopes = (): Envelope[] => s.guardian.calls().filter(isResponseEnvelope);

let proxy: TestProxy;
let client: Client;

beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true' });
  client = (await makeGrpcClient(proxy.url)).client;
});

describe("the agent's gRPC error status is a response the guardian judges", () => {
  test('allow: the guardian saw the status as a JSON-RPC error, the caller gets the same status', async () => {
    const a = await rawGrpc(proxy.grpcAddress as string, GET_TASK, requestFrame(GET_TASK, { id: 'no-such-task-1' }), { 'a2a-version': '1.0' });
    expect(a.grpcStatus).toBe(5);
    expect(a.grpcMessage).toContain('no-such-task-1');
    expect(a.details.map((d) => d.reason)).toEqual(['TASK_NOT_FOUND']);
    const [env] = responseEnvelopes();
    expect(env?.method).toBe('tasks/get');
    expect(env?.params.payload).toEqual({
      jsonrpc: '2.0',
      id: expect.stringMatching(/^grpc-/),
      error: {
        code: 5,
        status: 'NOT_FOUND',
        message: a.grpcMessage,
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: {} }],
      },
    });
  });

  test("the SDK client still reads the relayed status as the agent's own error", async () => {
    const viaProxy = await grpcFailure(client.getTask({ tenant: '', id: 'no-such-task-2', historyLength: undefined }));
    const direct = (await makeGrpcClient(s.agent.url)).client;
    const viaAgent = await grpcFailure(direct.getTask({ tenant: '', id: 'no-such-task-2', historyLength: undefined }));
    expect(viaProxy).toEqual(viaAgent);
    expect(viaProxy.name).toMatch(/TaskNotFound/);
    expect(responseEnvelopes()).toHaveLength(1);
  });

  test("deny: the caller gets PERMISSION_DENIED with the proxy's ErrorInfo, not the agent's text", async () => {
    s.guardian.script((e) => (isResponseEnvelope(e) ? { decision: 'deny', message: 'no error leaks' } : { decision: 'allow' }));
    const a = await rawGrpc(proxy.grpcAddress as string, GET_TASK, requestFrame(GET_TASK, { id: 'secret-task-name' }), { 'a2a-version': '1.0' });
    expect(a.grpcStatus).toBe(7);
    expect(a.details.map((d) => d.reason)).toEqual(['GUARDIAN_DENIED']);
    expect(JSON.stringify(a)).not.toContain('secret-task-name');
  });

  test('modify: the caller gets the replaced message, in grpc-message and in the status details alike', async () => {
    s.guardian.script((e) => {
      if (!isResponseEnvelope(e)) return { decision: 'allow' };
      const p = e.params.payload;
      return { decision: 'modify', modifiedPayload: { ...p, error: { ...p.error, message: 'Task not found: [redacted]' } } };
    });
    const a = await rawGrpc(proxy.grpcAddress as string, GET_TASK, requestFrame(GET_TASK, { id: 'secret-task-name' }), { 'a2a-version': '1.0' });
    expect(a.grpcStatus).toBe(5);
    expect(a.grpcMessage).toBe('Task not found: [redacted]');
    expect(a.details.map((d) => d.reason)).toEqual(['TASK_NOT_FOUND']);
    expect(JSON.stringify(a.trailers)).not.toContain('secret-task-name');
    expect(JSON.stringify(a.headers)).not.toContain('secret-task-name');
  });

  test('a modify that is no gRPC status (a result for an error, a code out of range) is no valid answer: UNAVAILABLE', async () => {
    for (const bad of [(p: Envelope) => ({ jsonrpc: '2.0', id: p.id, result: { id: 'x' } }), (p: Envelope) => ({ ...p, error: { ...p.error, code: 0 } })]) {
      s.guardian.script((e) => (isResponseEnvelope(e) ? { decision: 'modify', modifiedPayload: bad(e.params.payload) } : { decision: 'allow' }));
      const a = await rawGrpc(proxy.grpcAddress as string, GET_TASK, requestFrame(GET_TASK, { id: 'no-such-task-3' }), { 'a2a-version': '1.0' });
      expect(a.grpcStatus).toBe(14);
      expect(a.details.map((d) => d.reason)).toEqual(['GUARDIAN_UNAVAILABLE']);
    }
  });

  test("a stream's error status is judged too (SubscribeToTask of an unknown task)", async () => {
    s.guardian.script((e) => (isResponseEnvelope(e) ? { decision: 'deny' } : { decision: 'allow' }));
    const a = await rawGrpc(proxy.grpcAddress as string, SUBSCRIBE, requestFrame(SUBSCRIBE, { id: 'no-such-task-4' }), { 'a2a-version': '1.0' });
    expect(a.grpcStatus).toBe(7);
    const [env] = responseEnvelopes();
    expect(env?.method).toBe('tasks/resubscribe');
    expect(env?.params.payload.error.status).toBe('NOT_FOUND');
  });

  test('HTTP parity: the same error over JSON-RPC is judged the same way', async () => {
    const res = await fetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'GetTask', params: { id: 'no-such-task-5' } }),
    });
    const body = (await res.json()) as { error?: { code: number } };
    expect(body.error?.code).toBe(-32001);
    const [env] = responseEnvelopes();
    expect(env?.params.payload.error.code).toBe(-32001);
  });

  test('a successful call is judged as before (no error envelope for an OK status)', async () => {
    await client.sendMessage(sendReq('hello'));
    const envs = responseEnvelopes();
    expect(envs).toHaveLength(1);
    expect(envs[0]?.params.payload.result).toBeDefined();
  });
});
