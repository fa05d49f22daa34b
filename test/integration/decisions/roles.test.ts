/**
 * Proxy roles and identities (design sections 1, 3, 6):
 *   - ROLE=both: the client-side hook runs first, then the server-side hook; a modify from the first is
 *     what the second sees (and what the agent receives); any deny blocks; a failure in either hook counts;
 *   - the two-sidecar topology (client agent -> ROLE=client proxy -> ROLE=server proxy -> agent): the
 *     client proxy announces its observed agent in X-AOS-Agent-* headers, a server proxy with
 *     IDENTITY_POLICY=claims reads them as the caller's (unverified) claim and removes them before the
 *     agent; reasoning stays on the client side (verified identities: identity-*.test.ts);
 *   - X-AOS-Agent-* handling on each side (believed only under IDENTITY_POLICY=claims); a configurable reasoning header.
 */
import { collect, makeClient, rawRpc, rawSse, sendReq, textOf, TaskState, type Client, type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { postsTo } from '../../helpers/agent';
import { type Envelope, type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { waitFor } from '../../helpers/net';
import { validateAosRequest } from '../../helpers/schema';
import { type TestProxy, startTestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const REASONING = 'I will delegate this request to the specialized agent.';
const CLIENT_ENV = {
  OBSERVED_AGENT_ID: 'content-gen-1',
  OBSERVED_AGENT_NAME: 'Content generator',
  OBSERVED_AGENT_URL: 'https://content-generator.example/api/v1',
  OBSERVED_AGENT_VERSION: '1.4.0',
  OBSERVED_AGENT_INSTRUCTIONS: 'You are a helpful assistant that can answer questions and help with tasks.',
  OBSERVED_AGENT_PROVIDER_NAME: 'OpenAI',
  OBSERVED_AGENT_PROVIDER_URL: 'https://openai.com',
};
const CLIENT_AGENT = {
  id: 'content-gen-1',
  name: 'Content generator',
  url: 'https://content-generator.example/api/v1',
  version: '1.4.0',
  instructions: 'You are a helpful assistant that can answer questions and help with tasks.',
  provider: { name: 'OpenAI', url: 'https://openai.com' },
};
const CLIENT_PARTIAL = { url: CLIENT_AGENT.url, name: CLIENT_AGENT.name, version: CLIENT_AGENT.version };
/** ROLE=both: the caller is the proxy's own observed client, so the server-side hook sees it verified (source local). */
const CLIENT_LOCAL = { ...CLIENT_PARTIAL, id: CLIENT_AGENT.id, metadata: { identity: { verified: true, source: 'local', subject: CLIENT_AGENT.id } } };
/** IDENTITY_POLICY=claims: what X-AOS-Agent-* headers say, marked as a claim. */
const claimed = (agent: { url: string; name: string; version: string }) => ({ ...agent, metadata: { identity: { verified: false, source: 'claim' } } });

const stack = useStack({
  name: 'Story teller',
  version: '5.0.0',
  description: 'Tells stories',
  provider: { organization: 'AzureAIFoundry', url: 'https://ai.azure.com' },
});
let agent: TestAgent;
let guardian: TestGuardian;
let both: Proxy;
let direct: Client;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  both = await stack.proxy({ ROLE: 'both', ...CLIENT_ENV });
  direct = await makeClient(agent.origin, 'JSONRPC', '1.0');
});

const agentPosts = (): ReceivedRequest[] => postsTo(agent);
const postsFor = (...methods: string[]): ReceivedRequest[] => postsTo(agent, ...methods);

/** The client-side hook's envelope carries the observed client agent in full in `from`. */
const isClientHook = (env: Envelope): boolean => 'instructions' in (env.params?.context?.from?.agent ?? {});

function appendText(payload: any, suffix: string): any {
  const p = structuredClone(payload);
  const part = p.params.message.parts[0];
  part.text = `${part.text}${suffix}`;
  return p;
}

function expectError(json: any, id: unknown, code: number, reason: string): Record<string, string> {
  expect(json).toMatchObject({
    jsonrpc: '2.0',
    id,
    error: { code, data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-guard' }] },
  });
  return json.error.data[0].metadata;
}

async function sdkCode(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err: any) {
    return err?.envelopeCode ?? err?.errorResponse?.error?.code ?? err?.cause?.envelopeCode ?? err?.code;
  }
  return 'no error';
}

const v03Send = (id: string | number, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] }, metadata: {} },
});

/* ---------------------------------------------------------------------------------------------- */
/* ROLE=both                                                                                      */
/* ---------------------------------------------------------------------------------------------- */

describe('ROLE=both', () => {
  test('allow: client-side hook, then server-side hook, with the right contexts; the agent gets the payload', async () => {
    const body = v03Send(1, 'how to prepare a cheese cake?');
    const res = await rawRpc(`${both.url}/a2a/jsonrpc`, body, { 'x-aos-reasoning': REASONING });
    expect(textOf(res.json)).toBe('echo: how to prepare a cheese cake?');

    const envs = guardian.calls();
    expect(envs).toHaveLength(2);
    const [c, s] = envs;
    for (const e of envs) {
      expect(e.jsonrpc).toBe('2.0');
      expect(e.id).toMatch(UUID_V4);
      expect(e.method).toBe('message/send');
      expect(e.params.payload).toEqual(body);
      expect(e.params.context.from.role).toBe('client');
      expect(e.params.context.to.role).toBe('server');
    }
    expect(c.id).not.toBe(s.id);
    // client-side hook: observed client in full -> upstream server agent (partial, from its card); with reasoning
    expect(isClientHook(c)).toBe(true);
    expect(c.params.reasoning).toBe(REASONING);
    expect(c.params.context.from.agent).toEqual(CLIENT_AGENT);
    expect(c.params.context.to.agent).toEqual({ url: `${agent.origin}/a2a/jsonrpc`, name: 'Story teller', version: '5.0.0' });
    expect(validateAosRequest(c, 'message/send', { fullSide: 'from' })).toEqual([]);
    // server-side hook: the client (partial, its own observed agent: verified locally) -> the server agent in full; no reasoning
    expect('reasoning' in s.params).toBe(false);
    expect(s.params.context.from.agent).toEqual(CLIENT_LOCAL);
    expect(s.params.context.to.agent).toMatchObject({
      name: 'Story teller',
      url: `${agent.origin}/a2a/jsonrpc`,
      version: '5.0.0',
      provider: { name: 'AzureAIFoundry', url: 'https://ai.azure.com' },
    });
    expect(validateAosRequest(s, 'message/send', { fullSide: 'to' })).toEqual([]);

    const posts = agentPosts();
    expect(posts).toHaveLength(1);
    expect(posts[0]!.bodyText).toBe(JSON.stringify(body));
    expect(posts[0]!.headers['x-aos-reasoning']).toBeUndefined();
  });

  test('all four methods (SDK v1.0): two hooks each, client side first, same payload', async () => {
    const client = await makeClient(both.url, 'JSONRPC', '1.0');
    expect(textOf(await client.sendMessage(sendReq('hi')))).toBe('echo: hi');
    expect((await collect(client.sendMessageStream(sendReq('stream 4')))).length).toBe(6);
    const t1 = (await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string };
    expect((await client.cancelTask({ tenant: '', id: t1.id, metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const t2 = (await direct.sendMessage(sendReq('wait-for-cancel', true))) as { id: string };
    const sub = collect(client.resubscribeTask({ tenant: '', id: t2.id }));
    await waitFor(() => postsFor('SubscribeToTask').length === 1, 10_000, 'subscription at the agent');
    await direct.cancelTask({ tenant: '', id: t2.id, metadata: undefined });
    expect((await sub)[0]?.payload?.$case).toBe('task');

    const envs = guardian.calls();
    const methods = ['message/send', 'message/stream', 'tasks/cancel', 'tasks/resubscribe'];
    expect(envs.map((e) => `${e.method} ${isClientHook(e) ? 'client' : 'server'}`)).toEqual(methods.flatMap((m) => [`${m} client`, `${m} server`]));
    for (let i = 0; i < envs.length; i += 2) {
      expect(envs[i + 1].params.payload).toEqual(envs[i].params.payload);
      expect(validateAosRequest(envs[i], envs[i].method, { fullSide: 'from' })).toEqual([]);
      expect(validateAosRequest(envs[i + 1], envs[i].method, { fullSide: 'to' })).toEqual([]);
    }
    expect(new Set(envs.map((e) => e.id)).size).toBe(envs.length);
    const wire = ['SendMessage', 'SendStreamingMessage', 'CancelTask', 'SubscribeToTask'];
    // The agent got each (server-hook) payload exactly once; the other calls of the same method went
    // straight to the agent to set up and end the tasks.
    for (const [i, w] of wire.entries()) {
      const payload = JSON.stringify(envs[2 * i + 1].params.payload);
      expect(postsFor(w).filter((r) => r.bodyText === payload)).toHaveLength(1);
    }
  });

  test('modify in the client-side hook is what the server-side hook sees and what the agent gets', async () => {
    guardian.script((env) =>
      isClientHook(env) ? { decision: 'modify', modifiedPayload: appendText(env.params.payload, ' [client-checked]') } : { decision: 'allow' },
    );
    const body = v03Send('m1', 'draft');
    const res = await rawRpc(`${both.url}/a2a/jsonrpc`, body);
    expect(textOf(res.json)).toBe('echo: draft [client-checked]');
    const [c, s] = guardian.calls();
    expect(c.params.payload).toEqual(body);
    expect(s.params.payload).toEqual(appendText(body, ' [client-checked]'));
    expect(agentPosts().map((r) => r.body)).toEqual([s.params.payload]);
  });

  test('modify in both hooks chains; the agent gets the server-side result', async () => {
    guardian.script((env) => ({ decision: 'modify', modifiedPayload: appendText(env.params.payload, isClientHook(env) ? ' [c]' : ' [s]') }));
    const client = await makeClient(both.url, 'JSONRPC', '0.3');
    expect(textOf(await client.sendMessage(sendReq('text')))).toBe('echo: text [c] [s]');
    const [c, s] = guardian.calls();
    expect(textOf(c.params.payload.params)).toBe('text');
    expect(textOf(s.params.payload.params)).toBe('text [c]');
    expect(agentPosts()).toHaveLength(1);
    expect(agentPosts()[0]!.body).toEqual(appendText(s.params.payload, ' [s]'));
  });

  test('modify in the server-side hook only', async () => {
    guardian.script((env) =>
      isClientHook(env) ? { decision: 'allow' } : { decision: 'modify', modifiedPayload: appendText(env.params.payload, ' [server-checked]') },
    );
    const res = await rawRpc(`${both.url}/a2a/jsonrpc`, v03Send(3, 'x'));
    expect(textOf(res.json)).toBe('echo: x [server-checked]');
    expect(textOf((agentPosts()[0]!.body as any).params)).toBe('x [server-checked]');
  });

  test.each([
    [
      'the client-side hook',
      (env: Envelope): GuardianReply => (isClientHook(env) ? { decision: 'deny', message: 'client says no' } : { decision: 'allow' }),
      1,
      'client says no',
    ],
    [
      'the server-side hook',
      (env: Envelope): GuardianReply => (isClientHook(env) ? { decision: 'allow' } : { decision: 'deny', message: 'server says no' }),
      2,
      'server says no',
    ],
    [
      'the server-side hook after a client-side modify',
      (env: Envelope): GuardianReply =>
        isClientHook(env) ? { decision: 'modify', modifiedPayload: appendText(env.params.payload, '!') } : { decision: 'deny', message: 'still no' },
      2,
      'still no',
    ],
  ])('deny in %s blocks (-31403), nothing forwarded', async (_where, script, hooks, message) => {
    guardian.script(script);
    const res = await rawRpc(`${both.url}/a2a/jsonrpc`, v03Send('d', 'something'));
    expect(res.status).toBe(200);
    const md = expectError(res.json, 'd', -31403, 'GUARDIAN_DENIED');
    const envs = guardian.calls();
    expect(envs).toHaveLength(hooks); // a client-side deny never reaches the server-side hook
    expect(md.envelopeId).toBe(envs[hooks - 1].id);
    expect(md.message).toBe(message);
    expect(agentPosts()).toEqual([]);
    // and through the SDK, on a stream
    guardian.clear();
    const client = await makeClient(both.url, 'JSONRPC', '1.0');
    expect(await sdkCode(collect(client.sendMessageStream(sendReq('stream 5'))))).toBe(-31403);
    expect(agentPosts()).toEqual([]);
  });

  test('a failure in the server-side hook fails closed (-31503)', async () => {
    guardian.script((env) => (isClientHook(env) ? { decision: 'allow' } : { fault: 'http500' }));
    const res = await rawRpc(`${both.url}/a2a/jsonrpc`, v03Send('f', 'x'));
    expectError(res.json, 'f', -31503, 'GUARDIAN_UNAVAILABLE');
    expect(guardian.calls()).toHaveLength(2);
    expect(agentPosts()).toEqual([]);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Two sidecars: client agent -> ROLE=client -> ROLE=server -> agent                              */
/* ---------------------------------------------------------------------------------------------- */

describe('two sidecars: ROLE=client proxy in front of a ROLE=server proxy', () => {
  let serverProxy: Proxy;
  let clientProxy: Proxy;
  beforeAll(async () => {
    serverProxy = await startTestProxy({
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      ROLE: 'server',
      IDENTITY_POLICY: 'claims',
      OBSERVED_AGENT_INSTRUCTIONS: 'Tell stories.',
    });
    clientProxy = await startTestProxy({ UPSTREAM_URL: serverProxy.url, GUARDIAN_URL: guardian.url, ROLE: 'client', ...CLIENT_ENV });
  });
  afterAll(async () => {
    await clientProxy?.close();
    await serverProxy?.close();
  });

  test.each(['1.0', '0.3'] as const)('SDK %s: both hooks see the right parties; X-AOS-Agent-* and reasoning never reach the agent', async (version) => {
    const client = await makeClient(clientProxy.url, 'JSONRPC', version);
    const opts = { serviceParameters: { 'X-AOS-Reasoning': REASONING } };
    expect(textOf(await client.sendMessage(sendReq('once upon a time'), opts))).toBe('echo: once upon a time');
    const events = await collect(client.sendMessageStream(sendReq('stream 3'), opts));
    expect(events.map((e) => e.payload?.$case)).toEqual(['task', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate']);

    const envs = guardian.calls();
    expect(envs.map((e) => `${e.method} ${isClientHook(e) ? 'client' : 'server'}`)).toEqual([
      'message/send client',
      'message/send server',
      'message/stream client',
      'message/stream server',
    ]);
    for (const [i, e] of envs.entries()) {
      if (i % 2 === 0) {
        expect(e.params.reasoning).toBe(REASONING);
        expect(e.params.context.from.agent).toEqual(CLIENT_AGENT);
        // the upstream of the client sidecar is the server sidecar: its (rewritten) card names it
        expect(e.params.context.to.agent).toEqual({ url: `${serverProxy.url}/a2a/jsonrpc`, name: 'Story teller', version: '5.0.0' });
        expect(validateAosRequest(e, e.method, { fullSide: 'from' })).toEqual([]);
      } else {
        expect('reasoning' in e.params).toBe(false);
        // the caller, as the client sidecar announced it in X-AOS-Agent-* headers (IDENTITY_POLICY=claims: marked unverified)
        expect(e.params.context.from.agent).toEqual(claimed(CLIENT_PARTIAL));
        expect(e.params.context.to.agent).toMatchObject({
          name: 'Story teller',
          version: '5.0.0',
          instructions: 'Tell stories.',
          url: `${agent.origin}/a2a/jsonrpc`,
        });
        expect(validateAosRequest(e, e.method, { fullSide: 'to' })).toEqual([]);
        expect(e.params.payload).toEqual(envs[i - 1].params.payload);
      }
    }
    const posts = agentPosts();
    expect(posts).toHaveLength(2);
    for (const p of posts) {
      expect(p.headers['x-aos-reasoning']).toBeUndefined();
      expect(p.headers['x-aos-agent-name']).toBeUndefined();
      expect(p.headers['x-aos-agent-url']).toBeUndefined();
      expect(p.headers['x-aos-agent-version']).toBeUndefined();
      expect(p.headers['a2a-version']).toBe(version);
    }
    expect(posts.map((p) => p.body)).toEqual([envs[1].params.payload, envs[3].params.payload]);
  });

  test('a deny at the server sidecar reaches the SDK client through the client sidecar as -31403', async () => {
    guardian.script((env) => (isClientHook(env) ? { decision: 'allow' } : { decision: 'deny', message: 'server sidecar says no' }));
    const client = await makeClient(clientProxy.url, 'JSONRPC', '1.0');
    let err: any;
    await client.sendMessage(sendReq('hello')).catch((e: unknown) => (err = e));
    expect(err?.envelopeCode ?? err?.errorResponse?.error?.code).toBe(-31403);
    expect(String(err?.message)).toContain('server sidecar says no');
    expect(err?.errorResponse?.error?.data?.[0]?.metadata?.envelopeId).toBe(guardian.calls()[1].id);
    expect(agentPosts()).toEqual([]);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* X-AOS-Agent-* and the reasoning header, per side                                              */
/* ---------------------------------------------------------------------------------------------- */

describe('identity headers and reasoning header', () => {
  const extra: Proxy[] = [];
  afterAll(async () => {
    for (const p of extra) await p.close();
  });
  async function proxy(env: Record<string, string>): Promise<Proxy> {
    const p = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ...env });
    extra.push(p);
    return p;
  }

  test('ROLE=server, IDENTITY_POLICY=claims: missing X-AOS-Agent-* values are "unknown"; the headers are removed before the agent', async () => {
    const p = await proxy({ ROLE: 'server', IDENTITY_POLICY: 'claims' });
    await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'a'), { 'X-AOS-Agent-Name': 'Only A Name' });
    await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(2, 'b'), { 'X-AOS-Agent-Url': 'https://caller.example', 'X-AOS-Agent-Version': '0.0.1' });
    await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(3, 'c'));
    expect(guardian.calls().map((e) => e.params.context.from)).toEqual([
      { agent: claimed({ url: 'unknown', name: 'Only A Name', version: 'unknown' }), role: 'client' },
      { agent: claimed({ url: 'https://caller.example', name: 'unknown', version: '0.0.1' }), role: 'client' },
      { agent: claimed({ url: 'unknown', name: 'unknown', version: 'unknown' }), role: 'client' },
    ]);
    for (const r of agentPosts()) expect(Object.keys(r.headers).filter((h) => h.startsWith('x-aos-'))).toEqual([]);
  });

  test('ROLE=server, IDENTITY_POLICY=optional (the default): X-AOS-Agent-* claims are never believed, and never reach the agent', async () => {
    const p = await proxy({ ROLE: 'server' });
    await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'a'), {
      'X-AOS-Agent-Name': 'Trusted bank',
      'X-AOS-Agent-Url': 'https://bank.example',
      'X-AOS-Agent-Version': '1',
    });
    expect(guardian.calls()[0].params.context.from).toEqual({
      agent: { url: 'unknown', name: 'unknown', version: 'unknown', metadata: { identity: { verified: false } } },
      role: 'client',
    });
    expect(validateAosRequest(guardian.calls()[0], 'message/send', { fullSide: 'to' })).toEqual([]);
    for (const r of agentPosts()) expect(Object.keys(r.headers).filter((h) => h.startsWith('x-aos-'))).toEqual([]);
  });

  test('ROLE=server without OBSERVED_AGENT_*: the observed agent comes from the upstream card', async () => {
    const p = await proxy({ ROLE: 'server' });
    await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'a'));
    const to = guardian.calls()[0].params.context.to;
    expect(to.role).toBe('server');
    expect(to.agent).toMatchObject({
      name: 'Story teller',
      version: '5.0.0',
      url: `${agent.origin}/a2a/jsonrpc`,
      provider: { name: 'AzureAIFoundry', url: 'https://ai.azure.com' },
    });
    expect(validateAosRequest(guardian.calls()[0], 'message/send', { fullSide: 'to' })).toEqual([]);
  });

  test("ROLE=client: X-AOS-Agent-* sent by the caller are replaced by the observed agent's", async () => {
    const p = await proxy({ ROLE: 'client', ...CLIENT_ENV });
    await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'a'), {
      'X-AOS-Agent-Name': 'Spoofed',
      'X-AOS-Agent-Url': 'https://evil.example',
      'X-AOS-Agent-Version': '6.6.6',
    });
    expect(guardian.calls()[0].params.context.from.agent).toEqual(CLIENT_AGENT);
    const h = agentPosts()[0]!.headers;
    expect([h['x-aos-agent-name'], h['x-aos-agent-url'], h['x-aos-agent-version']]).toEqual([CLIENT_AGENT.name, CLIENT_AGENT.url, CLIENT_AGENT.version]);
  });

  test('REASONING_HEADER=X-Agent-Thought: reasoning comes from that header, which never reaches the agent', async () => {
    const p = await proxy({ ROLE: 'client', REASONING_HEADER: 'X-Agent-Thought', ...CLIENT_ENV });
    await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(1, 'a'), { 'X-Agent-Thought': 'because stories matter' });
    await rawRpc(`${p.url}/a2a/jsonrpc`, v03Send(2, 'b'));
    const envs = guardian.calls();
    expect(envs[0].params.reasoning).toBe('because stories matter');
    expect('reasoning' in envs[1].params).toBe(false);
    for (const r of agentPosts()) expect(r.headers['x-agent-thought']).toBeUndefined();
  });

  test('ROLE=server ignores a reasoning header (no reasoning on the server side) and still strips it', async () => {
    const p = await proxy({ ROLE: 'server' });
    const res = await rawSse(
      `${p.url}/a2a/jsonrpc`,
      {
        jsonrpc: '2.0',
        id: 4,
        method: 'message/stream',
        params: { message: { kind: 'message', messageId: 'r', role: 'user', parts: [{ kind: 'text', text: 'stream 2' }] } },
      },
      { 'x-aos-reasoning': REASONING },
    );
    expect(res.events).toHaveLength(4);
    expect('reasoning' in guardian.calls()[0].params).toBe(false);
    expect(agentPosts()[0]!.headers['x-aos-reasoning']).toBeUndefined();
  });
});
