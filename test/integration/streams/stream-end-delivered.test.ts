/**
 * Nothing lost at the end of a stream: on every stream path (JSON-RPC v1.0 and v0.3, REST, gRPC;
 * inspected or not; task ownership in memory or in a real Redis), the caller receives every event
 * the agent wrote, in order, then the agent's end. The agent (a real @a2a-js/sdk server) writes its
 * last events in the same turn as it ends the stream, and a resubscribed stream ends right after the
 * cancellation event; the proxy runs as the operator runs it (a child process, a real TCP hop) on
 * each Node it supports: the one running the tests and the one the images ship (Node 24, whose HTTP
 * writer put the chunked terminator ahead of corked events and ended such streams early).
 * Oracle: the event sequence through the proxy equals the one the agent gives directly.
 */
import { randomUUID } from 'node:crypto';
import { collect, rawRpc, rawSse, openSse, sendReq, startAgent, TaskState, type SseEvent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { makeGrpcClient } from '../../helpers/grpc';
import { freePort } from '../../helpers/net';
import { ensureBuilt, reapAll, startProxyProcess, type ProxyRun } from '../../helpers/proxy-process';
import { startRedis, type TestRedis } from '../../helpers/redis';
import { runtimes } from '../../helpers/runtimes';
import { startIdentities, type TestIdentities } from '../../helpers/identities';

const STEPS = 6;

let agent: TestAgent;
let guardian: TestGuardian;
let redis: TestRedis;
let ids: TestIdentities;

beforeAll(async () => {
  ensureBuilt();
  [agent, guardian, redis, ids] = await Promise.all([startAgent({ grpc: true, stepMs: 20 }), startGuardian(), startRedis(), startIdentities()]);
}, 240_000);
afterAll(async () => {
  await reapAll();
  await Promise.all([agent?.close(), guardian?.close(), redis?.close(), ids?.close()]);
});

interface Mode {
  readonly name: string;
  readonly env: () => Record<string, string>;
  /** Calls present caller A's credential (ownership needs a verified caller). */
  readonly verified: boolean;
  readonly inspected: boolean;
}

const MODES: Mode[] = [
  { name: 'plain relay', env: () => ({}), verified: false, inspected: false },
  { name: 'inspected', env: () => ({ INSPECT_RESPONSES: 'true' }), verified: false, inspected: true },
  { name: 'ownership in memory', env: () => ids.env, verified: true, inspected: false },
  { name: 'ownership in Redis', env: () => ({ ...ids.env, TASK_STORE_URL: redis.url }), verified: true, inspected: false },
  { name: 'inspected, ownership in Redis', env: () => ({ ...ids.env, TASK_STORE_URL: redis.url, INSPECT_RESPONSES: 'true' }), verified: true, inspected: true },
];

/** What a stream said, ids and timestamps aside: the kind of each event and its state or text. */
function shape(json: any): string {
  const r = json?.result ?? json;
  if (json?.error !== undefined) return `error ${json.error.code}`;
  if (r?.task !== undefined || r?.kind === 'task') return `task ${(r.task ?? r).status?.state}`;
  const su = r?.statusUpdate ?? (r?.kind === 'status-update' ? r : undefined);
  if (su !== undefined) return `status ${su.status?.state}`;
  const au = r?.artifactUpdate ?? (r?.kind === 'artifact-update' ? r : undefined);
  if (au !== undefined) return `artifact ${JSON.stringify(au.artifact?.parts?.[0]?.text ?? au.artifact?.parts?.[0])}`;
  return `other ${JSON.stringify(r).slice(0, 80)}`;
}

const shapes = (events: SseEvent[]): string[] => events.map((e) => shape(e.json));

const v1Stream = (text: string) => ({
  jsonrpc: '2.0',
  id: randomUUID(),
  method: 'SendStreamingMessage',
  params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] } },
});
const v03Stream = (text: string) => ({
  jsonrpc: '2.0',
  id: randomUUID(),
  method: 'message/stream',
  params: { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }] } },
});
const restStream = (text: string) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] } });

describe.each(runtimes().map((r) => [r.name, r] as const))('streams end with every event on %s', (_name, runtime) => {
  describe.each(MODES.map((m) => [m.name, m] as const))('%s', (_mode, mode) => {
    let proxy: ProxyRun;
    let grpcPort: number;
    const auth = (): Record<string, string> => (mode.verified ? ids.headersAs('A') : {});

    beforeAll(async () => {
      grpcPort = await freePort();
      proxy = await startProxyProcess(
        // Generous store and guardian budgets: under a loaded machine a slow Redis or guardian answer would end a
        // stream with its (correct) error event, and this file is about framing, not about those budgets.
        {
          ROLE: 'server',
          UPSTREAM_URL: agent.origin,
          GUARDIAN_URL: guardian.url,
          FAIL_MODE: 'closed',
          GRPC_PORT: String(grpcPort),
          GRPC_UPSTREAM_URL: `http://${agent.grpcAddress}`,
          TASK_STORE_TIMEOUT_MS: '10000',
          GUARDIAN_TIMEOUT_MS: '30000',
          ...mode.env(),
        },
        runtime.node,
      );
    }, 60_000);

    test.each([
      ['JSON-RPC v1.0', '/a2a/jsonrpc', v1Stream, { 'a2a-version': '1.0' }],
      ['JSON-RPC v0.3', '/a2a/jsonrpc', v03Stream, {}],
      ['REST v1.0', '/a2a/rest/message:stream', restStream, { 'a2a-version': '1.0' }],
    ] as const)('%s: the last events, written as the agent ends the stream, all arrive', async (_b, path, body, headers) => {
      const text = `stream ${STEPS}`;
      const direct = await rawSse(`${agent.origin}${path}`, body(text), headers);
      expect(shapes(direct.events)).toHaveLength(STEPS + 2);
      for (let round = 0; round < 3; round++) {
        const through = await rawSse(`${proxy.base}${path}`, body(text), { ...headers, ...auth() });
        expect(through.status).toBe(200);
        // An error event would show here as `error <code>`: the oracle is the agent's own sequence.
        expect(shapes(through.events)).toEqual(shapes(direct.events));
      }
    });

    (mode.inspected ? test : test.skip)('a deny at event k: the events before it, then the error event, never a silent end', async () => {
      guardian.script((env) =>
        JSON.stringify(env.params?.payload?.result ?? '').includes(`chunk ${STEPS - 1}`) ? { decision: 'deny', message: 'last chunk' } : { decision: 'allow' },
      );
      try {
        const through = await rawSse(`${proxy.base}/a2a/jsonrpc`, v1Stream(`stream ${STEPS}`), { 'a2a-version': '1.0', ...auth() });
        expect(shapes(through.events)).toEqual([
          'task TASK_STATE_SUBMITTED',
          ...Array.from({ length: STEPS - 1 }, (_v, i) => `artifact "chunk ${i}"`),
          'error -31403',
        ]);
      } finally {
        guardian.reset();
      }
    });

    test('a resubscribed stream gets the cancellation, then its end', async () => {
      const sent = await rawRpc(
        `${proxy.base}/a2a/jsonrpc`,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'wait-for-cancel' }] }, configuration: { returnImmediately: true } },
        },
        { 'a2a-version': '1.0', ...auth() },
      );
      const taskId = sent.json?.result?.task?.id as string;
      expect(typeof taskId).toBe('string');
      const sub = await openSse(
        `${proxy.base}/a2a/jsonrpc`,
        { jsonrpc: '2.0', id: 2, method: 'SubscribeToTask', params: { id: taskId } },
        { 'a2a-version': '1.0', ...auth() },
      );
      expect(sub.status).toBe(200);
      const seen: string[] = [];
      const it = sub.events[Symbol.asyncIterator]();
      seen.push(shape((await it.next()).value?.json));
      const cancelled = await rawRpc(
        `${proxy.base}/a2a/jsonrpc`,
        { jsonrpc: '2.0', id: 3, method: 'CancelTask', params: { id: taskId } },
        { 'a2a-version': '1.0', ...auth() },
      );
      expect(cancelled.json?.result?.status?.state).toBe('TASK_STATE_CANCELED');
      for (let r = await it.next(); r.done !== true; r = await it.next()) seen.push(shape(r.value.json));
      expect(seen[0]).toBe('task TASK_STATE_WORKING');
      expect(seen[seen.length - 1]).toBe('status TASK_STATE_CANCELED');
    });

    test('gRPC: a streamed answer ends with every event', async () => {
      const fetchImpl = mode.verified ? ids.fetchAs('A') : fetch;
      const { client, grpcUrl } = await makeGrpcClient(proxy.base, { fetchImpl });
      expect(grpcUrl).toBe(`127.0.0.1:${grpcPort}`);
      const events = (await collect(
        client.sendMessageStream(sendReq(`stream ${STEPS}`), mode.verified ? { serviceParameters: ids.headersAs('A') } : undefined),
      )) as Array<{ payload?: { $case: string; value: { status?: { state: number } } } }>;
      const kinds = events.map((e) => e.payload?.$case);
      expect(kinds).toEqual(['task', ...Array<string>(STEPS).fill('artifactUpdate'), 'statusUpdate']);
      expect(events.at(-1)?.payload?.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    });
  });
});
