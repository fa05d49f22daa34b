/**
 * Pipelined inspection of gRPC server-streaming answers (the ordering rules of src/proxy/window.ts,
 * as over HTTP), with a real @a2a-js/sdk agent serving gRPC ("stream N": a task, N artifact updates
 * "chunk 0".."chunk N-1", a final status), the SDK's gRPC client, a real HTTP guardian, and a proxy with
 * GRPC_PORT, INSPECT_RESPONSES=true and STREAM_INSPECT_WINDOW=8:
 *   - a guardian answering out of order: every message once, in the agent's order; several decisions
 *     really were under way at once, never more than the window;
 *   - deny at message k while calls for later messages are in flight: the caller gets exactly the k-1
 *     messages before it, then PERMISSION_DENIED; the in-flight guardian calls are cancelled; the agent's
 *     call is cancelled;
 *   - a modify of one message replaces exactly that message;
 *   - the caller cancelling mid-window: no guardian call starts afterwards, the ones under way are
 *     cancelled, the agent's call is cancelled;
 *   - gRPC and HTTP streams share the guardian's stream places (GUARDIAN_STREAM_CONNECTIONS).
 * Nothing here measures time: concurrency, order and cancellation are asserted (the speed-up is in
 * `npm run bench:grpc`).
 */
import { collect, makeClient, sendReq, textOf, type Client } from '../../helpers/agent';
import { type Envelope, isResponseEnvelope } from '../../helpers/guardian';
import { grpcFailure, makeGrpcClient } from '../../helpers/grpc';
import { sleep, waitFor } from '../../helpers/net';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

const WINDOW = 8;
const s = useStack({ grpc: true, stepMs: 20 });
let proxy: TestProxy;
let client: Client;

beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true', INSPECT_CARDS: 'false', STREAM_INSPECT_WINDOW: String(WINDOW) });
  client = (await makeGrpcClient(proxy.url)).client;
});

const responseEnvs = (): Envelope[] => s.guardian.calls().filter(isResponseEnvelope);
/** "chunk 7" -> 7; the task and the final status -> undefined. */
const chunkOf = (env: Envelope): number | undefined => {
  const m = /^chunk (\d+)$/.exec(textOf(env.params.payload));
  return m?.[1] === undefined ? undefined : Number(m[1]);
};
const chunks = (from: number, to: number): string[] => Array.from({ length: to - from + 1 }, (_, i) => `chunk ${from + i}`);
const randomDelay = (max: number) => Math.floor(Math.random() * max);
/** The kind of an SDK stream message: task, artifactUpdate, statusUpdate. */
const caseOf = (ev: unknown): string | undefined => (ev as { payload?: { $case?: string } }).payload?.$case;
const agentCancelled = () => s.agent.grpcCancelled.filter((m) => m === 'sendStreamingMessage').length;

test("a guardian answering out of order: every message once, in the agent's order; decisions overlap, never more than the window", async () => {
  const answerOrder: number[] = [];
  s.guardian.script(async (env) => {
    if (!isResponseEnvelope(env)) return { decision: 'allow' };
    await sleep(randomDelay(25));
    const k = chunkOf(env);
    if (k !== undefined) answerOrder.push(k);
    return { decision: 'allow' };
  });
  const events = await collect(client.sendMessageStream(sendReq('stream 60')));
  expect(events.map(caseOf)).toEqual(['task', ...Array<string>(60).fill('artifactUpdate'), 'statusUpdate']);
  expect(events.map((e) => textOf(e))).toEqual(['', ...chunks(0, 59), '']);
  expect(responseEnvs()).toHaveLength(62);
  // The guardian answered out of order and the caller still got the agent's order; the window was used and respected.
  expect(answerOrder).not.toEqual([...answerOrder].sort((a, b) => a - b));
  expect(s.guardian.load.maxInFlight).toBeGreaterThan(1);
  expect(s.guardian.load.maxInFlight).toBeLessThanOrEqual(WINDOW);
});

test("deny at message k while calls for later messages are in flight: k-1 messages, then PERMISSION_DENIED; later calls and the agent's call cancelled", async () => {
  s.guardian.script((env) => {
    if (!isResponseEnvelope(env)) return { decision: 'allow' };
    const k = chunkOf(env);
    if (k === 9) return { decision: 'deny', message: 'chunk refused', reasonCode: ['NO_NINE'], delayMs: 150 };
    // Later messages stay undecided well past the deny: their calls are in flight when it lands.
    if (k !== undefined && k > 9) return { decision: 'allow', delayMs: 3000 };
    return { decision: 'allow', delayMs: randomDelay(20) };
  });
  const seen: unknown[] = [];
  // 2,000 messages: more than HTTP/2 flow control lets the agent write ahead, so its call is still open at the deny.
  const err = await grpcFailure(
    (async () => {
      for await (const ev of client.sendMessageStream(sendReq('stream 2000'))) seen.push(ev);
    })(),
  );
  expect(err.code).toBe(7);
  expect(err.message).toContain('chunk refused');
  expect(seen.map((e) => textOf(e))).toEqual(['', ...chunks(0, 8)]);
  // Calls for later messages had started (the window), and the proxy cancelled them unanswered.
  const later = responseEnvs().filter((e) => (chunkOf(e) ?? -1) > 9);
  expect(later.length).toBeGreaterThan(0);
  expect(later.length).toBeLessThanOrEqual(WINDOW - 1);
  await waitFor(() => s.guardian.load.abandoned >= later.length, 10_000, 'in-flight guardian calls cancelled');
  await waitFor(() => agentCancelled() === 1, 10_000, "the agent's call cancelled");
});

test('a modify of one message replaces exactly that message, whatever order the decisions come in', async () => {
  s.guardian.script((env) => {
    if (!isResponseEnvelope(env)) return { decision: 'allow' };
    if (chunkOf(env) === 5) {
      const replaced = JSON.parse(JSON.stringify(env.params.payload).replace('"chunk 5"', '"CHUNK FIVE"'));
      return { decision: 'modify', message: 'rewritten', modifiedPayload: replaced, delayMs: 40 };
    }
    return { decision: 'allow', delayMs: randomDelay(20) };
  });
  const events = await collect(client.sendMessageStream(sendReq('stream 20')));
  expect(events.map((e) => textOf(e))).toEqual(['', ...chunks(0, 4), 'CHUNK FIVE', ...chunks(6, 19), '']);
  expect(events.map(caseOf)).toEqual(['task', ...Array<string>(20).fill('artifactUpdate'), 'statusUpdate']);
});

test("the caller cancelling mid-window: no guardian call starts afterwards, the ones under way are cancelled, the agent's call is cancelled", async () => {
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  s.guardian.script(async (env) => {
    if (!isResponseEnvelope(env)) return { decision: 'allow' };
    await held; // no message's decision comes back while the caller is there
    return { decision: 'allow' };
  });
  const ac = new AbortController();
  const received: unknown[] = [];
  const consuming = (async () => {
    for await (const ev of client.sendMessageStream(sendReq('stream 2000'), { signal: ac.signal })) received.push(ev);
  })().catch(() => undefined);
  try {
    await waitFor(() => responseEnvs().length >= WINDOW, 10_000, 'the window filled');
    await sleep(300);
    // Nothing was decided, so nothing left and nothing more was admitted: exactly the window.
    expect(responseEnvs()).toHaveLength(WINDOW);
    expect(received).toHaveLength(0);
    ac.abort();
    await consuming;
    await waitFor(() => agentCancelled() === 1, 10_000, "the agent's call cancelled");
    await waitFor(() => s.guardian.load.abandoned >= WINDOW, 10_000, 'guardian calls under way cancelled');
    await sleep(300);
    expect(responseEnvs()).toHaveLength(WINDOW);
  } finally {
    release();
  }
});

async function streamQueueGauge(p: TestProxy): Promise<number> {
  const text = await p.metrics.registry.getSingleMetricAsString('a2a_guard_guardian_queued_calls');
  return Number(/a2a_guard_guardian_queued_calls\{budget="stream"\} (\d+)/.exec(text)?.[1] ?? NaN);
}

test("gRPC and HTTP streams share the guardian's stream places (GUARDIAN_STREAM_CONNECTIONS): a stream's next message waits in the line, not in the guardian pool", async () => {
  const shared = await s.proxy({
    GRPC_PORT: '0',
    INSPECT_RESPONSES: 'true',
    INSPECT_CARDS: 'false',
    STREAM_INSPECT_WINDOW: String(WINDOW),
    GUARDIAN_STREAM_CONNECTIONS: '2',
  });
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  s.guardian.script(async (env) => {
    if (isResponseEnvelope(env)) await held;
    return { decision: 'allow' };
  });
  const grpcClient = (await makeGrpcClient(shared.url)).client;
  const httpClient = await makeClient(shared.url, 'JSONRPC', '1.0');
  const both = Promise.all([collect(grpcClient.sendMessageStream(sendReq('stream 30'))), collect(httpClient.sendMessageStream(sendReq('stream 30')))]);
  try {
    // Two places, both held by the guardian; each stream waits for one with its next message (the gauge counts
    // the streams waiting in the line and the calls queued in the pool: a gRPC window outside the line would queue 6+).
    await waitFor(async () => responseEnvs().length === 2 && (await streamQueueGauge(shared)) === 2, 10_000, 'both streams waiting for a place');
    await sleep(300);
    expect(responseEnvs()).toHaveLength(2);
    expect(await streamQueueGauge(shared)).toBe(2);
  } finally {
    release();
  }
  const [viaGrpc, viaHttp] = await both;
  expect(viaGrpc.map((e) => textOf(e))).toEqual(['', ...chunks(0, 29), '']);
  expect(viaHttp.map((e) => textOf(e))).toEqual(['', ...chunks(0, 29), '']);
  expect(responseEnvs()).toHaveLength(64);
  expect(await streamQueueGauge(shared)).toBe(0);
});
