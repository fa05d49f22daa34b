/**
 * Memory held for the agent's answers. MAX_INFLIGHT_BODY_BYTES bounds the request bytes
 * held across all calls, but an inspected answer (INSPECT_RESPONSES, a card result, a task list under
 * task ownership) is held whole while the guardian judges it, up to MAX_BODY_BYTES per call and with
 * no bound across calls. A caller that makes one large task (a long message: the agent keeps it in
 * the task's history) and then reads it with many small concurrent GetTask calls made the proxy hold
 * one large answer per call: memory grew with the number of calls until the process died. Now the
 * answer bytes held for inspection count against the same in-flight budget: past it, the call is
 * answered "overloaded" (-31429 / HTTP 503 / RESOURCE_EXHAUSTED) and the agent's answer dropped.
 * Real SDK agent (JSON-RPC and gRPC), real HTTP guardian that takes its time over answers.
 */
import { rawSse, sendReq } from '../../helpers/agent';
import { isResponseEnvelope } from '../../helpers/guardian';
import { grpcFrame, makeGrpcClient, rawGrpc } from '../../helpers/grpc';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(90_000);

const s = useStack({ grpc: true, stepMs: 10 });
/** One answer is ~2 x TEXT bytes (the history keeps the message, the artifact echoes it). */
const TEXT = 'x'.repeat(400_000);
const BUDGET = 2_000_000;
const CALLS = 6;

let proxy: TestProxy;
let taskId: string;

beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true', MAX_BODY_BYTES: '1500000', MAX_INFLIGHT_BODY_BYTES: String(BUDGET) });
  // The large task is made at the agent directly: the attack is the reads.
  const direct = (await makeGrpcClient(s.agent.url)).client;
  const task = (await direct.sendMessage(sendReq(TEXT))) as { id: string };
  taskId = task.id;
});

beforeEach(() => {
  // The guardian takes its time over answers: each read holds its answer meanwhile.
  s.guardian.script(async (e) => (isResponseEnvelope(e) ? { decision: 'allow', delayMs: 600 } : { decision: 'allow' }));
});

async function getTaskJsonRpc(n: number): Promise<{ code?: number; ok: boolean }> {
  const res = await fetch(`${proxy.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: n, method: 'GetTask', params: { id: taskId } }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { code: number } };
  return body.error === undefined ? { ok: true } : { ok: false, code: body.error.code };
}

test('JSON-RPC: concurrent reads of a large answer hold at most the in-flight budget; the rest are "overloaded"', async () => {
  const results = await Promise.all(Array.from({ length: CALLS }, (_, i) => getTaskJsonRpc(i)));
  const judged = s.guardian.calls().filter(isResponseEnvelope).length;
  // Each answer is ~800 kB: the budget holds two at once, never all six.
  expect(judged).toBeLessThan(CALLS);
  expect(results.filter((r) => r.ok)).toHaveLength(judged);
  expect(results.filter((r) => !r.ok).every((r) => r.code === -31429)).toBe(true);
  // The budget is returned when the calls end: a read now goes through.
  expect(await getTaskJsonRpc(100)).toEqual({ ok: true });
});

test('gRPC: the same, RESOURCE_EXHAUSTED past the budget', async () => {
  const m = grpcMethodForPath('/lf.a2a.v1.A2AService/GetTask');
  if (m === undefined) throw new Error('GetTask');
  const c = codecFor(m).request;
  const frame = grpcFrame(c.encode(c.fromJson({ id: taskId })));
  const read = () => rawGrpc(proxy.grpcAddress as string, m.path, frame, { 'a2a-version': '1.0' });
  const results = await Promise.all(Array.from({ length: CALLS }, read));
  const judged = s.guardian.calls().filter(isResponseEnvelope).length;
  expect(judged).toBeLessThan(CALLS);
  expect(results.filter((r) => r.grpcStatus === 0)).toHaveLength(judged);
  expect(results.filter((r) => r.grpcStatus !== 0).map((r) => r.grpcStatus)).toEqual(Array(CALLS - judged).fill(8));
  expect((await read()).grpcStatus).toBe(0);
});

test('SSE: concurrent inspected streams of large events hold at most the budget; a stream past it ends with an "overloaded" error event', async () => {
  // A running task whose snapshot (the first event of every subscription) holds a 400 kB message.
  const direct = (await makeGrpcClient(s.agent.url)).client;
  const running = (await direct.sendMessage(sendReq(`wait-for-cancel ${TEXT}`, true))) as { id: string };
  const stream = (n: number) =>
    rawSse(
      `${proxy.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: n, method: 'SubscribeToTask', params: { id: running.id } },
      { 'a2a-version': '1.0' },
      { signal: AbortSignal.timeout(3000) },
    ).catch(() => undefined);
  const results = await Promise.all(Array.from({ length: CALLS }, (_, i) => stream(i)));
  const overloaded = results.filter((r) => r?.events.some((e) => e.event === 'error' && (e.json as { error?: { code?: number } }).error?.code === -31429));
  // Past the budget a stream ends with the error event; within it, streams stay open (the test aborts them).
  expect(overloaded.length).toBeGreaterThan(0);
  expect(overloaded.length).toBeLessThan(CALLS);
  await direct.cancelTask({ tenant: '', id: running.id, metadata: undefined }).catch(() => undefined);
  // Returned when the streams end.
  expect(await getTaskJsonRpc(200)).toEqual({ ok: true });
});
