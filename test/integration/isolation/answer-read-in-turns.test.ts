/**
 * An answer the proxy holds to judge (INSPECT_RESPONSES) is read from the agent's socket a slice per turn of its
 * caller, as a request body is (core/turns.ts readInTurns): a 3 MB answer is paused and resumed a dozen times on its
 * way, and still reaches the caller whole, after the guardian judged all of it. Real SDK agent (its task keeps the
 * long message in its history and echoes it as an artifact), real HTTP guardian.
 */
import { isResponseEnvelope } from '../../helpers/guardian';
import { makeGrpcClient } from '../../helpers/grpc';
import { sendReq } from '../../helpers/agent';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { UpstreamAnswer } from '../../../src/proxy/http/forward';
import { READ_SLICE } from '../../../src/proxy/http/body';

jest.setTimeout(60_000);

const s = useStack({ grpc: true, stepMs: 10 });
const TEXT = `start ${'y'.repeat(1_500_000)} end`;

let proxy: TestProxy;
let taskId: string;

beforeAll(async () => {
  proxy = await s.proxy({ INSPECT_RESPONSES: 'true', MAX_BODY_BYTES: String(8 * 1024 * 1024) });
  const direct = (await makeGrpcClient(s.agent.url)).client;
  taskId = ((await direct.sendMessage(sendReq(TEXT))) as { id: string }).id;
});

test("a large inspected answer, read in its caller's turns, reaches the caller whole and judged whole", async () => {
  s.guardian.clear();
  // The agent's socket is paused once per slice read (the caller reads its answer at once: no backpressure pauses it).
  const pause = jest.spyOn(UpstreamAnswer.prototype, 'pause');
  const res = await fetch(`${proxy.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: taskId } }),
  });
  const text = await res.text();
  expect(res.status).toBe(200);
  expect(text.length).toBeGreaterThan(2 * TEXT.length);
  expect(pause.mock.calls.length).toBeGreaterThanOrEqual(Math.floor((2 * TEXT.length) / (READ_SLICE + 128 * 1024)));
  pause.mockRestore();
  const body = JSON.parse(text) as { id: number; result?: { id: string; history?: { parts: { text?: string }[] }[] } };
  expect(body.id).toBe(7);
  expect(body.result?.id).toBe(taskId);
  expect(body.result?.history?.some((m) => m.parts.some((p) => p.text === TEXT))).toBe(true);
  // The guardian judged the answer, all of it.
  const judged = s.guardian.calls().filter(isResponseEnvelope);
  expect(judged).toHaveLength(1);
  expect(JSON.stringify(judged[0])).toContain(TEXT);
});
