/**
 * Enforcing the guardian's answer on requests (design section 5), judged by what the upstream agent
 * actually received (agent.received) and by what the caller saw:
 *   deny    -> JSON-RPC error -31403 (HTTP 200, caller's id, google.rpc.ErrorInfo GUARDIAN_DENIED), nothing forwarded,
 *              the SDK client raises an error carrying -31403;
 *   modify  -> the modified payload reaches the agent, the original does not;
 *   modify for tasks/cancel and tasks/resubscribe, or a modify that changes the A2A method or id
 *           -> no valid answer (FAIL_MODE=closed: -31503, nothing forwarded);
 *   cancel denied -> the task keeps running (GetTask through the proxy);
 *   resubscribe allowed (events arrive) / denied.
 * Callers: SDK clients (v1.0 JSON-RPC, v0.3 JSON-RPC through the compat layer) and raw fetch.
 */
import { collect, makeClient, rawRpc, rawSse, sendReq, textOf, TaskState, type Client, type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { postsTo } from '../../helpers/agent';
import { textIn, type Envelope, type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { waitFor } from '../../helpers/net';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;
type Version = '1.0' | '0.3';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const EMAIL = /[\w.+-]+@[\w-]+(\.[\w-]+)+/g;
const HAS_EMAIL = /[\w.+-]+@[\w-]+(\.[\w-]+)+/;
const SECRET_EMAIL = 'alice.secret@example.com';

const stack = useStack({ name: 'Cake Baker', version: '2.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let server: Proxy;
let clientSide: Proxy;
let direct: Client;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  server = await stack.proxy({ ROLE: 'server' });
  clientSide = await stack.proxy({
    ROLE: 'client',
    OBSERVED_AGENT_ID: 'c-1',
    OBSERVED_AGENT_NAME: 'Cooking assistant',
    OBSERVED_AGENT_URL: 'https://cooking.example/a2a',
    OBSERVED_AGENT_VERSION: '1.0.0',
    OBSERVED_AGENT_INSTRUCTIONS: 'Help with cooking.',
    OBSERVED_AGENT_PROVIDER_NAME: 'OpenAI',
    OBSERVED_AGENT_PROVIDER_URL: 'https://openai.com',
  });
  direct = await makeClient(agent.origin, 'JSONRPC', '1.0');
});

/* ---------------------------------------------------------------------------------------------- */
/* Helpers                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

const GET_TASK = new Set(['GetTask', 'tasks/get']);
/** Deny (or answer `reply`) for everything but GetTask, which is allowed so tests can look at tasks. */
function scriptAllButGetTask(reply: (env: Envelope) => GuardianReply): void {
  guardian.script((env) => (GET_TASK.has(env.params?.payload?.method) ? { decision: 'allow' } : reply(env)));
}
const DENY: GuardianReply = { decision: 'deny', message: 'contains a secret', reasonCode: ['PII', 'POLICY_7'] };

const agentPosts = (): ReceivedRequest[] => postsTo(agent);
const postsFor = (...methods: string[]): ReceivedRequest[] => postsTo(agent, ...methods);
const nonGetTaskEnvelopes = (): Envelope[] => guardian.calls().filter((e) => !GET_TASK.has(e.params?.payload?.method));

/** The proxy's JSON-RPC error answer, checked in full; returns the ErrorInfo metadata. */
function expectProxyError(
  res: { status: number; headers: Record<string, string>; json: any },
  id: unknown,
  code: number,
  reason: string,
): Record<string, string> {
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json).toMatchObject({ jsonrpc: '2.0', id, error: { code, message: expect.any(String) } });
  expect('result' in res.json).toBe(false);
  const data = res.json.error.data;
  expect(Array.isArray(data)).toBe(true);
  expect(data).toHaveLength(1);
  expect(data[0]).toMatchObject({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-guard' });
  const md = data[0].metadata as Record<string, unknown>;
  for (const v of Object.values(md)) expect(typeof v).toBe('string'); // google.rpc.ErrorInfo: map<string, string>
  return md as Record<string, string>;
}

/** Checks the deny metadata against the guardian's answer and the recorded envelope. */
function expectDenyMetadata(md: Record<string, string>, env: Envelope): void {
  expect(md.envelopeId).toBe(env.id);
  expect(md.envelopeId).toMatch(UUID_V4);
  expect(md.message).toBe('contains a secret');
  expect(md.reasonCode).toContain('PII');
  expect(md.reasonCode).toContain('POLICY_7');
}

/** What an SDK call rejected with: the JSON-RPC code it carries, and its message. */
async function sdkFailure(p: Promise<unknown>): Promise<{ code: unknown; message: string; err: any }> {
  let err: any;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  expect(err).toBeDefined();
  const code = err?.envelopeCode ?? err?.errorResponse?.error?.code ?? err?.cause?.envelopeCode ?? err?.code;
  return { code, message: String(err?.message ?? ''), err };
}

/** Replace every e-mail address in every string of `x` (deep copy). */
function mask<T>(x: T): T {
  return JSON.parse(JSON.stringify(x), (_k, v) => (typeof v === 'string' ? v.replace(EMAIL, '[email]') : v)) as T;
}

async function runningTask(): Promise<string> {
  const t = await direct.sendMessage(sendReq('wait-for-cancel', true));
  return (t as { id: string }).id;
}

/* ---------------------------------------------------------------------------------------------- */
/* deny                                                                                           */
/* ---------------------------------------------------------------------------------------------- */

describe('deny', () => {
  test.each([
    ['message/send', 'msg-1', { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } }],
    ['message/stream', 17, { message: { kind: 'message', messageId: 'm2', role: 'user', parts: [{ kind: 'text', text: 'stream 5' }] } }],
    ['tasks/cancel', 'c-9', { id: 'task-that-is-irrelevant' }],
    ['tasks/resubscribe', 0, { id: 'task-that-is-irrelevant' }],
    ['SendMessage', 'v1-send', { message: { messageId: 'm3', role: 'ROLE_USER', parts: [{ text: 'hi' }] } }],
    ['SendStreamingMessage', 4, { message: { messageId: 'm4', role: 'ROLE_USER', parts: [{ text: 'stream 5' }] } }],
    ['CancelTask', 'v1-cancel', { id: 'whatever' }],
    ['SubscribeToTask', 5, { id: 'whatever' }],
  ])("raw %s: -31403 with the caller's id, ErrorInfo, nothing forwarded", async (method, id, params) => {
    guardian.script(() => DENY);
    const body = { jsonrpc: '2.0', id, method, params };
    const v1 = /^[A-Z]/.test(method);
    const streaming = /stream|subscribe/i.test(method) && !/cancel/i.test(method);
    const headers = v1 ? { 'a2a-version': '1.0' } : {};
    const url = `${server.url}/a2a/jsonrpc`;
    // A streaming call denied before it started is a plain JSON-RPC error body with HTTP 200, not SSE.
    const res = streaming ? await rawSse(url, body, headers) : await rawRpc(url, body, headers);
    const json = streaming ? JSON.parse(res.text) : (res as { json: unknown }).json;
    const md = expectProxyError({ status: res.status, headers: res.headers, json }, id, -31403, 'GUARDIAN_DENIED');
    expect(guardian.calls()).toHaveLength(1);
    expectDenyMetadata(md, guardian.calls()[0]);
    expect(json.error.message).toContain('contains a secret');
    expect(agentPosts()).toEqual([]);
  });

  test('raw request without an id: error id is null, still nothing forwarded', async () => {
    guardian.script(() => DENY);
    const res = await rawRpc(`${server.url}/a2a/jsonrpc`, {
      jsonrpc: '2.0',
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'x', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
    });
    expectProxyError(res, null, -31403, 'GUARDIAN_DENIED');
    expect(agentPosts()).toEqual([]);
  });

  describe.each(['1.0', '0.3'] as Version[])('SDK client %s', (version) => {
    test.each(['server', 'client'] as const)('ROLE=%s: sendMessage and sendMessageStream raise -31403; the agent sees nothing', async (role) => {
      guardian.script(() => DENY);
      const client = await makeClient(role === 'server' ? server.url : clientSide.url, 'JSONRPC', version);
      const a = await sdkFailure(client.sendMessage(sendReq(`mail ${SECRET_EMAIL}`)));
      expect(a.code).toBe(-31403);
      expect(a.message).toContain('contains a secret');
      const b = await sdkFailure(collect(client.sendMessageStream(sendReq('stream 10'))));
      expect(b.code).toBe(-31403);
      expect(b.message).toContain('contains a secret');
      expect(guardian.calls().map((e) => e.method)).toEqual(['message/send', 'message/stream']);
      // the ErrorInfo reaches the SDK caller too
      expect(a.err?.errorResponse?.error?.data?.[0]).toMatchObject({
        reason: 'GUARDIAN_DENIED',
        domain: 'a2a-guard',
        metadata: { envelopeId: guardian.calls()[0].id },
      });
      expect(agentPosts()).toEqual([]);
    });

    test('cancel denied: -31403, the agent never sees CancelTask and the task keeps running', async () => {
      scriptAllButGetTask(() => DENY);
      const client = await makeClient(server.url, 'JSONRPC', version);
      const id = await runningTask();
      agent.clear();
      const f = await sdkFailure(client.cancelTask({ tenant: '', id, metadata: undefined }));
      expect(f.code).toBe(-31403);
      expect(postsFor('CancelTask', 'tasks/cancel')).toEqual([]);
      expect(agent.cancelled.has(id)).toBe(false);
      // GetTask through the proxy (allowed): still working
      const t = await client.getTask({ tenant: '', id, historyLength: undefined });
      expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
      expect(postsFor('GetTask', 'tasks/get')).toHaveLength(1);
      expect(nonGetTaskEnvelopes().map((e) => [e.method, e.params.payload.params.id])).toEqual([['tasks/cancel', id]]);
      // the same cancel, allowed, does cancel it
      guardian.reset();
      const done = await client.cancelTask({ tenant: '', id, metadata: undefined });
      expect(done.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      expect(agent.cancelled.has(id)).toBe(true);
    });

    test('resubscribe denied: -31403, no subscription reaches the agent; allowed: events arrive', async () => {
      scriptAllButGetTask((env) => (env.method === 'tasks/resubscribe' ? DENY : { decision: 'allow' }));
      const client = await makeClient(server.url, 'JSONRPC', version);
      const id = await runningTask();
      agent.clear();
      const f = await sdkFailure(collect(client.resubscribeTask({ tenant: '', id })));
      expect(f.code).toBe(-31403);
      expect(f.message).toContain('contains a secret');
      expect(postsFor('SubscribeToTask', 'tasks/resubscribe')).toEqual([]);

      guardian.reset();
      const events = collect(client.resubscribeTask({ tenant: '', id }));
      await waitFor(() => postsFor('SubscribeToTask', 'tasks/resubscribe').length === 1, 10_000, 'subscription at the agent');
      await new Promise((r) => setTimeout(r, 50));
      await direct.cancelTask({ tenant: '', id, metadata: undefined });
      const got = await events;
      expect(got[0]?.payload?.$case).toBe('task');
      expect(got[0]?.payload?.$case === 'task' && got[0].payload.value.id).toBe(id);
      const last = got[got.length - 1]?.payload;
      expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      expect(guardian.calls().map((e) => e.method)).toEqual(['tasks/resubscribe', 'tasks/resubscribe']);
    });
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* modify                                                                                         */
/* ---------------------------------------------------------------------------------------------- */

describe('modify', () => {
  const masking = (env: Envelope): GuardianReply =>
    HAS_EMAIL.test(textIn(env)) ? { decision: 'modify', message: 'masked PII', modifiedPayload: mask(env.params.payload) } : { decision: 'allow' };

  describe.each(['1.0', '0.3'] as Version[])('SDK client %s', (version) => {
    test.each(['server', 'client'] as const)('ROLE=%s: masked e-mail reaches the agent (send and stream), the original never does', async (role) => {
      guardian.script(masking);
      const client = await makeClient(role === 'server' ? server.url : clientSide.url, 'JSONRPC', version);
      const r = await client.sendMessage(sendReq(`please mail ${SECRET_EMAIL} today`));
      expect(textOf(r)).toBe('echo: please mail [email] today');
      const events = await collect(client.sendMessageStream(sendReq(`contact ${SECRET_EMAIL}`)));
      expect(textOf(events)).toContain('echo: contact [email]');
      expect(textOf(events)).not.toContain(SECRET_EMAIL);

      const envs = guardian.calls();
      expect(envs.map((e) => e.method)).toEqual(['message/send', 'message/stream']);
      const posts = agentPosts();
      expect(posts).toHaveLength(2);
      for (let i = 0; i < 2; i++) {
        // exactly the guardian's modifiedRequest.params.payload, same id and method as the caller's
        expect(posts[i]!.body).toEqual(mask(envs[i].params.payload));
        expect((posts[i]!.body as { id: unknown }).id).toBe(envs[i].params.payload.id);
        expect(posts[i]!.bodyText).toContain('[email]');
        expect(posts[i]!.bodyText).not.toContain(SECRET_EMAIL);
        expect(JSON.stringify(envs[i].params.payload)).toContain(SECRET_EMAIL); // the guardian did see the original
      }
    });
  });

  test('raw message/send: the agent receives the modified JSON exactly (data parts and metadata too)', async () => {
    const payload = {
      jsonrpc: '2.0',
      id: 'mod-1',
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: 'mm-1',
          role: 'user',
          parts: [
            { kind: 'text', text: `write to ${SECRET_EMAIL}` },
            { kind: 'data', data: { owner: SECRET_EMAIL, n: 1 } },
          ],
          metadata: { replyTo: SECRET_EMAIL },
        },
        metadata: {},
      },
    };
    const modified = mask(payload);
    guardian.script(() => ({ decision: 'modify', modifiedPayload: modified }));
    const res = await rawRpc(`${server.url}/a2a/jsonrpc`, payload);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', id: 'mod-1', result: { kind: 'task' } });
    expect(textOf(res.json).trim()).toBe('echo: write to [email]'); // the agent joins parts with ' '
    expect(agentPosts()).toHaveLength(1);
    expect(agentPosts()[0]!.body).toEqual(modified);
    expect(agentPosts()[0]!.bodyText).not.toContain(SECRET_EMAIL);
    expect(guardian.calls()[0].params.payload).toEqual(payload);
  });

  test.each([
    ['tasks/cancel', { jsonrpc: '2.0', id: 31, method: 'tasks/cancel', params: { id: 'T' } }],
    ['CancelTask', { jsonrpc: '2.0', id: 'cx', method: 'CancelTask', params: { id: 'T' } }],
    ['tasks/resubscribe', { jsonrpc: '2.0', id: 32, method: 'tasks/resubscribe', params: { id: 'T' } }],
    ['SubscribeToTask', { jsonrpc: '2.0', id: 'sx', method: 'SubscribeToTask', params: { id: 'T' } }],
  ])('modify for %s is no valid answer: -31503, nothing forwarded, the task keeps running', async (method, template) => {
    const id = await runningTask();
    agent.clear();
    const payload = { ...template, params: { id } };
    // A "modify" that would even be harmless (same request) is still not an accepted decision here.
    scriptAllButGetTask((env) => ({
      decision: 'modify',
      modifiedPayload: { ...env.params.payload, params: { ...env.params.payload.params, metadata: { note: 'x' } } },
    }));
    const headers = /^[A-Z]/.test(method) ? { 'a2a-version': '1.0' } : {};
    const streaming = /subscribe/i.test(method);
    const url = `${server.url}/a2a/jsonrpc`;
    const res = streaming ? await rawSse(url, payload, headers) : await rawRpc(url, payload, headers);
    const json = streaming ? JSON.parse(res.text) : (res as { json: unknown }).json;
    const md = expectProxyError({ status: res.status, headers: res.headers, json }, payload.id, -31503, 'GUARDIAN_UNAVAILABLE');
    expect(md.envelopeId).toBe(guardian.calls()[0].id);
    expect(agentPosts()).toEqual([]);
    expect(agent.cancelled.has(id)).toBe(false);
    const t = await direct.getTask({ tenant: '', id, historyLength: undefined });
    expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    await direct.cancelTask({ tenant: '', id, metadata: undefined });
  });

  test('SDK cancelTask / resubscribeTask answered with modify raise -31503', async () => {
    scriptAllButGetTask((env) => ({ decision: 'modify', modifiedPayload: env.params.payload }));
    const client = await makeClient(server.url, 'JSONRPC', '1.0');
    const id = await runningTask();
    agent.clear();
    expect((await sdkFailure(client.cancelTask({ tenant: '', id, metadata: undefined }))).code).toBe(-31503);
    expect((await sdkFailure(collect(client.resubscribeTask({ tenant: '', id })))).code).toBe(-31503);
    expect(agentPosts()).toEqual([]);
    expect(agent.cancelled.has(id)).toBe(false);
    await direct.cancelTask({ tenant: '', id, metadata: undefined });
  });

  const base = {
    jsonrpc: '2.0',
    id: 'orig-7',
    method: 'message/send',
    params: { message: { kind: 'message', messageId: 'q', role: 'user', parts: [{ kind: 'text', text: 'hello' }] } },
  };
  test.each([
    ['changes the JSON-RPC id', { ...base, id: 'other-id' }],
    ['changes the id type', { ...base, id: 7 }],
    ['drops the id', { jsonrpc: base.jsonrpc, method: base.method, params: base.params }],
    ['changes the method', { ...base, method: 'tasks/get', params: { id: 'x' } }],
    ['changes the method to its v1.0 name', { ...base, method: 'SendMessage' }],
    ['changes send into stream', { ...base, method: 'message/stream' }],
  ])('modify that %s is no valid answer: -31503, nothing forwarded', async (_what, modifiedPayload) => {
    guardian.script(() => ({ decision: 'modify', modifiedPayload }));
    const res = await rawRpc(`${server.url}/a2a/jsonrpc`, base);
    expectProxyError(res, 'orig-7', -31503, 'GUARDIAN_UNAVAILABLE');
    expect(agentPosts()).toEqual([]);
  });

  test('modify without modifiedRequest is no valid answer', async () => {
    guardian.script(() => ({ decision: 'modify' }));
    const res = await rawRpc(`${server.url}/a2a/jsonrpc`, base);
    expectProxyError(res, 'orig-7', -31503, 'GUARDIAN_UNAVAILABLE');
    expect(agentPosts()).toEqual([]);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* allow                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

describe('allow', () => {
  test('the decision is per call: allow, deny, allow on one connection', async () => {
    let n = 0;
    guardian.script(() => (n++ === 1 ? DENY : { decision: 'allow' }));
    const client = await makeClient(server.url, 'JSONRPC', '1.0');
    expect(textOf(await client.sendMessage(sendReq('one')))).toBe('echo: one');
    expect((await sdkFailure(client.sendMessage(sendReq('two')))).code).toBe(-31403);
    expect(textOf(await client.sendMessage(sendReq('three')))).toBe('echo: three');
    const texts = agentPosts().map((r) => textOf((r.body as { params: unknown }).params));
    expect(texts).toEqual(['one', 'three']);
    const envs = guardian.calls();
    expect(envs).toHaveLength(3);
    expect(agentPosts().map((r) => r.body)).toEqual([envs[0].params.payload, envs[2].params.payload]);
  });
});
