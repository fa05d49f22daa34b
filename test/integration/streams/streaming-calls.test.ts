/**
 * Streaming calls through the proxy (design sections 5 and 6; wire reference section 4):
 *   - message/stream "stream 30" allowed end to end: every event, in order, each a JSON-RPC response with
 *     the caller's id (raw SSE v1.0 and v0.3; SDK clients v1.0 and v0.3), on ROLE=server and ROLE=client;
 *   - events are relayed as they come (the first events arrive while the task is still running);
 *   - streaming denied before start: a JSON-RPC error body with HTTP 200 (not SSE); the SDK raises -31403;
 *   - modify on message/stream: the masked message reaches the agent;
 *   - tasks/resubscribe (SubscribeToTask) allowed: the snapshot and live events arrive; denied: -31403.
 */
import {
  collect,
  makeClient,
  parseSse,
  rawSse,
  sendReq,
  startAgent,
  textOf,
  TaskState,
  type Client,
  type ReceivedRequest,
  type SseEvent,
  type TestAgent,
} from '../../helpers/agent';
import { postsTo } from '../../helpers/agent';
import { type TestGuardian } from '../../helpers/guardian';
import { waitFor } from '../../helpers/net';
import { type TestProxy, startTestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;
type Role = 'server' | 'client';

const stack = useStack({ name: 'Stream Agent', version: '3.1.0' });
let agent: TestAgent;
let guardian: TestGuardian;
const proxies = {} as Record<Role, Proxy>;
let direct: Client;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  proxies.server = await stack.proxy({ ROLE: 'server' });
  proxies.client = await stack.proxy({
    ROLE: 'client',
    OBSERVED_AGENT_ID: 'writer-1',
    OBSERVED_AGENT_NAME: 'Content generator',
    OBSERVED_AGENT_URL: 'https://writer.example/a2a',
    OBSERVED_AGENT_VERSION: '1.0.0',
    OBSERVED_AGENT_INSTRUCTIONS: 'Write things.',
    OBSERVED_AGENT_PROVIDER_NAME: 'OpenAI',
    OBSERVED_AGENT_PROVIDER_URL: 'https://openai.com',
  });
  direct = await makeClient(agent.origin, 'JSONRPC', '1.0');
});

const agentPosts = (): ReceivedRequest[] => postsTo(agent);
const postsFor = (...methods: string[]): ReceivedRequest[] => postsTo(agent, ...methods);
const CHUNKS = Array.from({ length: 30 }, (_, i) => `chunk ${i}`);
const DENY = { decision: 'deny' as const, message: 'streams are closed today', reasonCode: ['NO_STREAM'] };

async function sdkFailure(p: Promise<unknown>): Promise<{ code: unknown; message: string }> {
  try {
    await p;
  } catch (err: any) {
    return { code: err?.envelopeCode ?? err?.errorResponse?.error?.code ?? err?.cause?.envelopeCode ?? err?.code, message: String(err?.message) };
  }
  return { code: 'no error', message: '' };
}

function expectDeniedJson(res: { status: number; contentType: string; text: string; events: SseEvent[] }, id: unknown): void {
  expect(res.status).toBe(200);
  expect(res.contentType).toMatch(/^application\/json/);
  expect(res.events).toEqual([]);
  const json = JSON.parse(res.text);
  expect(json).toMatchObject({
    jsonrpc: '2.0',
    id,
    error: { code: -31403, data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'GUARDIAN_DENIED', domain: 'a2a-guard' }] },
  });
  expect(json.error.data[0].metadata).toMatchObject({ envelopeId: guardian.calls()[0].id, message: 'streams are closed today', reasonCode: 'NO_STREAM' });
}

/** Kind of a wire stream event result: v1 wrapper key, or v0.3 `kind`. */
function kindOf(result: any): string {
  if (typeof result?.kind === 'string') return result.kind;
  return Object.keys(result ?? {}).join(',');
}

/**
 * Read an SSE response incrementally: resolves `first(n)` once n events have arrived, and `done` with
 * every event once the server ends the stream.
 */
function openSse(url: string, body: unknown, headers: Record<string, string>) {
  let text = '';
  const waiters: Array<{ n: number; resolve: (e: SseEvent[]) => void }> = [];
  const events = (): SseEvent[] => parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2));
  const done = (async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      text += dec.decode(value, { stream: true });
      const got = events();
      for (const w of waiters.filter((x) => got.length >= x.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(got);
      }
    }
    return parseSse(text);
  })();
  return {
    first: (n: number) => new Promise<SseEvent[]>((resolve) => waiters.push({ n, resolve })),
    done,
  };
}

describe.each(['server', 'client'] as Role[])('ROLE=%s', (role) => {
  test('raw v1.0 SendStreamingMessage "stream 30": every event in order, same id, nothing injected', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 'st-30',
      method: 'SendStreamingMessage',
      params: { message: { messageId: `m-${role}`, role: 'ROLE_USER', parts: [{ text: 'stream 30' }] } },
    };
    const res = await rawSse(`${proxies[role].url}/a2a/jsonrpc`, body, { 'a2a-version': '1.0' });
    expect(res.status).toBe(200);
    expect(res.contentType).toMatch(/^text\/event-stream/);
    expect(res.events).toHaveLength(32);
    for (const e of res.events) {
      expect(e.event).toBeUndefined(); // no error events
      expect(e.json).toMatchObject({ jsonrpc: '2.0', id: 'st-30', result: expect.any(Object) });
    }
    const results = res.events.map((e) => e.json.result);
    expect(results.map(kindOf)).toEqual(['task', ...Array(30).fill('artifactUpdate'), 'statusUpdate']);
    expect(results.slice(1, 31).map(textOf)).toEqual(CHUNKS);
    expect(results[31].statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    const taskId = results[0].task.id;
    for (const r of results.slice(1)) expect(r[kindOf(r)].taskId).toBe(taskId);

    // One request hook; the agent got exactly what the guardian saw.
    const envs = guardian.calls();
    expect(envs).toHaveLength(1);
    expect(envs[0].method).toBe('message/stream');
    expect(envs[0].params.payload).toEqual(body);
    expect(postsFor('SendStreamingMessage').map((r) => r.body)).toEqual([body]);
  });

  test('raw v0.3 message/stream "stream 30" (no A2A-Version header): every event in order, same id', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 30,
      method: 'message/stream',
      params: { message: { kind: 'message', messageId: `m3-${role}`, role: 'user', parts: [{ kind: 'text', text: 'stream 30' }] } },
    };
    const res = await rawSse(`${proxies[role].url}/a2a/jsonrpc`, body);
    expect(res.contentType).toMatch(/^text\/event-stream/);
    expect(res.events).toHaveLength(32);
    for (const e of res.events) {
      expect(e.event).toBeUndefined();
      expect(e.json).toMatchObject({ jsonrpc: '2.0', id: 30 });
    }
    const results = res.events.map((e) => e.json.result);
    expect(results.map(kindOf)).toEqual(['task', ...Array(30).fill('artifact-update'), 'status-update']);
    expect(results.slice(1, 31).map((r) => r.artifact.parts[0].text)).toEqual(CHUNKS);
    expect(results[31]).toMatchObject({ final: true, status: { state: 'completed' } });
    expect(postsFor('message/stream')).toHaveLength(1);
    expect(postsFor('message/stream')[0]!.headers['a2a-version']).toBeUndefined();
    expect(guardian.calls().map((e) => e.method)).toEqual(['message/stream']);
  });

  test.each(['1.0', '0.3'] as const)('SDK %s sendMessageStream "stream 30": all events in order', async (version) => {
    const client = await makeClient(proxies[role].url, 'JSONRPC', version);
    const events = await collect(client.sendMessageStream(sendReq('stream 30')));
    expect(events.map((e) => e.payload?.$case)).toEqual(['task', ...Array(30).fill('artifactUpdate'), 'statusUpdate']);
    expect(events.slice(1, 31).map(textOf)).toEqual(CHUNKS);
    const last = events[31]!.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(guardian.calls()).toHaveLength(1);
    expect(postsFor('SendStreamingMessage', 'message/stream')).toHaveLength(1);
  });

  test('events are relayed as they come: the first events arrive while the task is still running', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 'live',
      method: 'SendStreamingMessage',
      params: { message: { messageId: `w-${role}`, role: 'ROLE_USER', parts: [{ text: 'wait-for-cancel' }] } },
    };
    const s = openSse(`${proxies[role].url}/a2a/jsonrpc`, body, { 'a2a-version': '1.0' });
    const early = await s.first(2); // task + WORKING; the task now waits for a cancel that only we can send
    expect(early.slice(0, 2).map((e) => kindOf(e.json.result))).toEqual(['task', 'statusUpdate']);
    const taskId = early[0]!.json.result.task.id;
    expect(agent.cancelled.has(taskId)).toBe(false);
    await direct.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    const all = await s.done;
    expect(all.map((e) => e.json.id)).toEqual(all.map(() => 'live'));
    expect(all[all.length - 1]!.json.result.statusUpdate.status.state).toBe('TASK_STATE_CANCELED');
  });

  test('denied before start: raw v1.0 and v0.3 get a JSON-RPC error body with HTTP 200; the SDK raises -31403', async () => {
    guardian.script(() => DENY);
    const v1 = await rawSse(
      `${proxies[role].url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 'd1', method: 'SendStreamingMessage', params: { message: { messageId: 'a', role: 'ROLE_USER', parts: [{ text: 'stream 30' }] } } },
      { 'a2a-version': '1.0' },
    );
    expectDeniedJson(v1, 'd1');
    guardian.clear();
    const v03 = await rawSse(`${proxies[role].url}/a2a/jsonrpc`, {
      jsonrpc: '2.0',
      id: 303,
      method: 'message/stream',
      params: { message: { kind: 'message', messageId: 'b', role: 'user', parts: [{ kind: 'text', text: 'stream 30' }] } },
    });
    expectDeniedJson(v03, 303);
    for (const version of ['1.0', '0.3'] as const) {
      const client = await makeClient(proxies[role].url, 'JSONRPC', version);
      const f = await sdkFailure(collect(client.sendMessageStream(sendReq('stream 30'))));
      expect(f.code).toBe(-31403);
      expect(f.message).toContain('streams are closed today');
    }
    expect(agentPosts()).toEqual([]);
  });
});

test('modify on message/stream: the masked message is what the agent streams back', async () => {
  guardian.script((env) => {
    const p = JSON.parse(JSON.stringify(env.params.payload).replace(/4111[- ]?1111[- ]?1111[- ]?1111/g, '[card]'));
    return { decision: 'modify', message: 'masked a card number', modifiedPayload: p };
  });
  const client = await makeClient(proxies.server.url, 'JSONRPC', '1.0');
  const events = await collect(client.sendMessageStream(sendReq('pay with 4111-1111-1111-1111')));
  expect(events.map((e) => e.payload?.$case)).toEqual(['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate']);
  expect(textOf(events[2])).toBe('echo: pay with [card]');
  const got = postsFor('SendStreamingMessage');
  expect(got).toHaveLength(1);
  expect(got[0]!.bodyText).toContain('pay with [card]');
  expect(got[0]!.bodyText).not.toContain('4111');
});

describe('tasks/resubscribe', () => {
  test.each([
    ['SubscribeToTask', 'sub-1', { 'a2a-version': '1.0' }],
    ['tasks/resubscribe', 65, {}],
  ] as const)('raw %s allowed: the snapshot arrives live, then the update that ends the task; same id', async (method, id, headers) => {
    const created = await direct.sendMessage(sendReq('wait-for-cancel', true));
    const taskId = (created as { id: string }).id;
    agent.clear();
    const s = openSse(`${proxies.server.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id, method, params: { id: taskId } }, headers);
    const early = await s.first(1);
    const snapshot = early[0]!.json.result;
    expect(kindOf(snapshot)).toBe('task');
    expect(snapshot.id ?? snapshot.task?.id).toBe(taskId);
    await waitFor(() => postsFor(method).length === 1, 10_000, 'subscription at the agent');
    await direct.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    const all = await s.done;
    for (const e of all) {
      expect(e.event).toBeUndefined();
      expect(e.json.id).toBe(id);
    }
    const last = all[all.length - 1]!.json.result;
    expect(last.statusUpdate?.status?.state ?? last.status?.state).toBe(method === 'SubscribeToTask' ? 'TASK_STATE_CANCELED' : 'canceled');
    expect(guardian.calls().map((e) => [e.method, e.params.payload.params.id])).toEqual([['tasks/resubscribe', taskId]]);
    expect(postsFor(method)[0]!.body).toEqual({ jsonrpc: '2.0', id, method, params: { id: taskId } });
  });

  test('denied: raw gets a JSON -31403 (not SSE), the SDK clients raise -31403, the agent sees no subscription', async () => {
    const created = await direct.sendMessage(sendReq('wait-for-cancel', true));
    const taskId = (created as { id: string }).id;
    agent.clear();
    guardian.script(() => DENY);
    const raw = await rawSse(`${proxies.server.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 'r-1', method: 'tasks/resubscribe', params: { id: taskId } });
    expectDeniedJson(raw, 'r-1');
    for (const version of ['1.0', '0.3'] as const) {
      const client = await makeClient(proxies.server.url, 'JSONRPC', version);
      expect((await sdkFailure(collect(client.resubscribeTask({ tenant: '', id: taskId })))).code).toBe(-31403);
    }
    expect(agentPosts()).toEqual([]);
    const t = await direct.getTask({ tenant: '', id: taskId, historyLength: undefined });
    expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    await direct.cancelTask({ tenant: '', id: taskId, metadata: undefined });
  });
});

test("upstream agent dies mid-stream: the stream ends with event: error carrying -31502 and the caller's id", async () => {
  const doomed = await startAgent({ name: 'Doomed Agent' });
  const proxy = await startTestProxy({ UPSTREAM_URL: doomed.origin, GUARDIAN_URL: guardian.url, ROLE: 'server' });
  try {
    const body = {
      jsonrpc: '2.0',
      id: 'cut-1',
      method: 'SendStreamingMessage',
      params: { message: { messageId: 'c', role: 'ROLE_USER', parts: [{ text: 'wait-for-cancel' }] } },
    };
    const s = openSse(`${proxy.url}/a2a/jsonrpc`, body, { 'a2a-version': '1.0' });
    await s.first(2);
    await doomed.close(); // destroys the agent's sockets: the upstream SSE response is cut
    const all = await s.done;
    expect(all.slice(0, 2).map((e) => kindOf(e.json.result))).toEqual(['task', 'statusUpdate']);
    const last = all[all.length - 1]!;
    expect(last.event).toBe('error');
    expect(last.json).toMatchObject({
      jsonrpc: '2.0',
      id: 'cut-1',
      error: { code: -31502, data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UPSTREAM_UNAVAILABLE', domain: 'a2a-guard' }] },
    });
  } finally {
    await proxy.close();
    await doomed.close();
  }
});
