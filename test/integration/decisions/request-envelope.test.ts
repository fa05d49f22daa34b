/**
 * The AOS request envelope (design section 3, seed hook documents 000/001/003/004) for the four
 * core A2A methods, on both proxy sides (ROLE=client, ROLE=server), for three kinds of caller:
 *   - the @a2a-js/sdk client speaking v1.0 JSON-RPC (SendMessage, SendStreamingMessage, CancelTask, SubscribeToTask),
 *   - the SDK client speaking v0.3 JSON-RPC through its compat layer (message/send, ...),
 *   - raw fetch with the exact A2A payloads of the seed documents (section "4. A2A payload").
 * Every envelope the real HTTP guardian recorded is checked against the seed's AOS payload structure,
 * the AOS JSON schema and the identities the proxy must put in the context; and the guardian (which
 * allows everything here) must have seen exactly what reached the agent.
 */
import fs from 'node:fs';
import path from 'node:path';
import type * as A2AClient from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import { collect, makeClient, rawRpc, rawSse, sendReq, textOf, TaskState, type Client, type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { postsTo } from '../../helpers/agent';
import { type Envelope, type TestGuardian } from '../../helpers/guardian';
import { waitFor } from '../../helpers/net';
import { SEEDS_DIR, seedAosPayloads, stripTrailingCommas, validateAosRequest } from '../../helpers/schema';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

const sdkClient: typeof A2AClient = require('@a2a-js/sdk/client');

type Proxy = TestProxy;
type Role = 'client' | 'server';
type Kind = 'sdk-1.0' | 'sdk-0.3' | 'raw-seed';
type Aos = 'message/send' | 'message/stream' | 'tasks/cancel' | 'tasks/resubscribe';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const WIRE: Record<Aos, { v1: string; v03: string; seed: string }> = {
  'message/send': { v1: 'SendMessage', v03: 'message/send', seed: '000_' },
  'message/stream': { v1: 'SendStreamingMessage', v03: 'message/stream', seed: '004_' },
  'tasks/cancel': { v1: 'CancelTask', v03: 'tasks/cancel', seed: '001_' },
  'tasks/resubscribe': { v1: 'SubscribeToTask', v03: 'tasks/resubscribe', seed: '003_' },
};

/* ---------------------------------------------------------------------------------------------- */
/* Seed documents: the A2A payloads of section 4, embedded (the suite must also run without       */
/* /work/shared) and checked against the documents when they are present.                        */
/* ---------------------------------------------------------------------------------------------- */

const SEED_A2A: Record<Aos, Record<string, unknown>> = {
  'message/send': {
    jsonrpc: '2.0',
    id: 1,
    method: 'message/send',
    params: {
      message: { role: 'agent', parts: [{ kind: 'text', text: 'how to prepare a cheese cake?' }], messageId: '9229e770-767c-417b-a0b0-f0741243c589' },
      metadata: {},
    },
  },
  'message/stream': {
    jsonrpc: '2.0',
    id: 2,
    method: 'message/stream',
    params: {
      message: {
        role: 'user',
        parts: [
          { kind: 'text', text: 'write a long paper describing the attached pictures' },
          { kind: 'file', file: { mimeType: 'image/png', data: '<base64-encoded-content>' } },
        ],
        messageId: 'bbb7dee1-cf5c-4683-8a6f-4114529da5eb',
      },
      configuration: { acceptedOutputModes: [], pushNotificationConfig: { url: 'https://agent.notifications.com/webhooks/1234567' } },
      metadata: {},
    },
  },
  'tasks/cancel': { jsonrpc: '2.0', id: 100, method: 'tasks/cancel', params: { id: '2232321', metadata: {} } },
  'tasks/resubscribe': { jsonrpc: '2.0', id: 65, method: 'tasks/resubscribe', params: { id: '2232321', metadata: {} } },
};

/** Skeleton of the seeds' AOS payloads (client hook = [0], server hook = [1]) when the documents are absent. */
const FULL = { name: '', url: '', instructions: '', version: '', provider: { name: '', url: '' } };
const PARTIAL = { url: '', name: '', version: '' };
const SKELETON = [
  {
    jsonrpc: '2.0',
    id: '',
    method: '',
    params: { payload: {}, reasoning: '', context: { from: { agent: FULL, role: 'client' }, to: { agent: PARTIAL, role: 'server' } } },
  },
  { jsonrpc: '2.0', id: '', method: '', params: { payload: {}, context: { from: { agent: PARTIAL, role: 'client' }, to: { agent: FULL, role: 'server' } } } },
];

function seedA2aFromDoc(prefix: string): unknown[] {
  const file = fs.readdirSync(SEEDS_DIR).find((f) => f.startsWith(prefix));
  if (!file) return [];
  const doc = fs.readFileSync(path.join(SEEDS_DIR, file), 'utf8');
  const out: unknown[] = [];
  for (let at = doc.indexOf('4. A2A payload'); at >= 0; at = doc.indexOf('4. A2A payload', at + 1)) {
    const start = doc.indexOf('{', at);
    let depth = 0;
    let inStr = false;
    let end = start;
    for (let i = start; i < doc.length; i++) {
      const c = doc[i];
      if (inStr) {
        if (c === '\\') i++;
        else if (c === '"') inStr = false;
      } else if (c === '"') inStr = true;
      else if (c === '{' || c === '[') depth++;
      else if ((c === '}' || c === ']') && --depth === 0) {
        end = i + 1;
        break;
      }
    }
    out.push(JSON.parse(stripTrailingCommas(doc.slice(start, end))));
  }
  return out;
}

function seedAos(aos: Aos, role: Role): any {
  const docs = seedAosPayloads(WIRE[aos].seed);
  return docs?.[role === 'client' ? 0 : 1] ?? SKELETON[role === 'client' ? 0 : 1];
}

/**
 * Structural comparison with a seed AOS payload: same top-level and params keys (reasoning only when
 * expected), same roles, the peer's partial agent with exactly the seed's keys, the observed agent with at
 * least the seed's keys (the seeds spell "instruction" once; the AOS Agent field is "instructions").
 */
function shapeProblems(seed: any, env: any, observedSide: 'from' | 'to', expectReasoning: boolean): string[] {
  const problems: string[] = [];
  const keys = (o: unknown) => (o && typeof o === 'object' ? Object.keys(o).sort() : []);
  const same = (what: string, a: string[], b: string[]) => {
    if (JSON.stringify(a) !== JSON.stringify(b)) problems.push(`${what}: keys ${JSON.stringify(b)}, seed has ${JSON.stringify(a)}`);
  };
  same('envelope', keys(seed), keys(env));
  const seedParams = keys(seed.params).filter((k) => k !== 'reasoning' || expectReasoning);
  if (expectReasoning && !seedParams.includes('reasoning')) seedParams.push('reasoning');
  same('params', seedParams.sort(), keys(env.params));
  // a2a-guard adds the request's service parameters to the context (docs/reference/service-parameters.md).
  same(
    'context',
    keys(seed.params.context),
    keys(env.params?.context).filter((k) => k !== 'serviceParameters'),
  );
  for (const side of ['from', 'to'] as const) {
    const s = seed.params.context[side];
    const a = env.params?.context?.[side];
    same(`context.${side}`, keys(s), keys(a));
    if (a?.role !== s.role) problems.push(`context.${side}.role is ${JSON.stringify(a?.role)}, seed has ${JSON.stringify(s.role)}`);
    const seedAgentKeys = keys(s.agent).map((k) => (k === 'instruction' ? 'instructions' : k));
    if (side === observedSide) {
      for (const k of seedAgentKeys) if (!(k in (a?.agent ?? {}))) problems.push(`context.${side}.agent lacks ${k}`);
      same(`context.${side}.agent.provider`, keys(s.agent.provider), keys(a?.agent?.provider));
    } else {
      // The caller's identity marker (`metadata.identity`, and `id` when verified) is the proxy's addition
      // (README "Identity"); the schema allows it. Everything else matches the seed.
      same(
        `context.${side}.agent`,
        seedAgentKeys.sort(),
        keys(a?.agent).filter((k) => k !== 'metadata' && k !== 'id'),
      );
    }
  }
  for (const [k, v] of Object.entries({ jsonrpc: env.jsonrpc, idType: typeof env.id, methodType: typeof env.method })) {
    const want = k === 'jsonrpc' ? seed.jsonrpc : k === 'idType' ? typeof seed.id : typeof seed.method;
    if (v !== want) problems.push(`${k} is ${JSON.stringify(v)}, seed has ${JSON.stringify(want)}`);
  }
  return problems;
}

/* ---------------------------------------------------------------------------------------------- */
/* Identities                                                                                     */
/* ---------------------------------------------------------------------------------------------- */

/** ROLE=client: the observed client agent, entirely from OBSERVED_AGENT_* (no card for it). */
const CLIENT_ENV = {
  OBSERVED_AGENT_ID: 'cooking-assistant-7',
  OBSERVED_AGENT_NAME: 'Cooking assistant',
  OBSERVED_AGENT_URL: 'https://cooking-assistant.example/api/v1',
  OBSERVED_AGENT_VERSION: '1.0.0',
  OBSERVED_AGENT_INSTRUCTIONS: 'You are a helpful assistant that can answer questions about cooking.',
  OBSERVED_AGENT_PROVIDER_NAME: 'OpenAI',
  OBSERVED_AGENT_PROVIDER_URL: 'https://openai.com',
};
const CLIENT_AGENT = {
  id: 'cooking-assistant-7',
  name: 'Cooking assistant',
  url: 'https://cooking-assistant.example/api/v1',
  version: '1.0.0',
  instructions: 'You are a helpful assistant that can answer questions about cooking.',
  provider: { name: 'OpenAI', url: 'https://openai.com' },
};
/** ROLE=server: some OBSERVED_AGENT_* set, the rest must come from the upstream agent's card. */
const SERVER_ENV = {
  OBSERVED_AGENT_ID: 'cake-baker-42',
  OBSERVED_AGENT_INSTRUCTIONS: 'You answer questions about cake baking.',
};
const AGENT_CARD_OPTS = {
  name: 'Cake Baker',
  version: '2.0.0',
  description: 'Bakes cakes',
  provider: { organization: 'AzureAIFoundry', url: 'https://ai.azure.com' },
};
/** The caller the raw seed requests claim to be (X-AOS-Agent-* headers), as in the seeds' server hooks. */
const SEED_CALLER = { name: 'Cooking assistant', url: 'https://cooking-assistant.openai.com/api/v1', version: '1.0.0' };
const REASONING = 'Best to complete the task is to delegate it to the agent that specializes in cakes.';

/* ---------------------------------------------------------------------------------------------- */
/* Fixtures                                                                                       */
/* ---------------------------------------------------------------------------------------------- */

const stack = useStack(AGENT_CARD_OPTS);
let agent: TestAgent;
let guardian: TestGuardian;
const proxies = {} as Record<Role, Proxy>;
let direct: Client;
const envelopeIds = new Set<string>();

const consoleError = console.error;
beforeAll(async () => {
  ({ agent, guardian } = stack);
  // The SDK agent logs the (expected) "Task not found" of the seed resubscribe; keep other errors visible.
  jest.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    if (!String(args[0]).startsWith('Error during SSE streaming')) consoleError(...args);
  });
  proxies.client = await stack.proxy({ ROLE: 'client', ...CLIENT_ENV });
  proxies.server = await stack.proxy({ ROLE: 'server', ...SERVER_ENV });
  direct = await makeClient(agent.origin, 'JSONRPC', '1.0');
});
afterAll(async () => {
  jest.restoreAllMocks();
});

interface Sent {
  headers: Record<string, string>;
  body: string;
}

/** An SDK JSON-RPC client for `base` in `version` whose fetch records every POST it sends. */
async function recordingClient(base: string, version: '1.0' | '0.3'): Promise<{ client: Client; sent: Sent[] }> {
  const sent: Sent[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    if ((init?.method ?? 'GET').toUpperCase() === 'POST') {
      const h: Record<string, string> = {};
      new Headers(init?.headers).forEach((v, k) => (h[k] = v));
      sent.push({ headers: h, body: typeof init?.body === 'string' ? init.body : String(init?.body) });
    }
    return fetch(input, init);
  };
  const compat = { legacyCompat: { enabled: true } };
  const factory = new sdkClient.ClientFactory(
    sdkClient.ClientFactoryOptions.createFrom(sdkClient.ClientFactoryOptions.default, {
      cardResolver: new sdkClient.DefaultAgentCardResolver(compat),
      preferredTransports: ['JSONRPC'],
      transports: [new sdkClient.JsonRpcTransportFactory({ ...compat, fetchImpl })],
    }),
  );
  const card = await new sdkClient.DefaultAgentCardResolver(compat).resolve(base);
  const interfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === version && i.protocolBinding === 'JSONRPC');
  expect(interfaces.map((i) => new URL(i.url).origin)).toEqual([base]); // the card points at the proxy
  return { client: await factory.createFromAgentCard({ ...card, supportedInterfaces: interfaces }), sent };
}

const wireMethod = (aos: Aos, kind: Kind) => (kind === 'sdk-1.0' ? WIRE[aos].v1 : WIRE[aos].v03);
const postsFor = (method: string): ReceivedRequest[] => postsTo(agent, method);

/** A task that runs until cancelled, created directly at the agent (no proxy, no guardian). */
async function runningTask(): Promise<string> {
  const t = await direct.sendMessage(sendReq('wait-for-cancel', true));
  const id = (t as { id?: string }).id;
  expect(id).toEqual(expect.any(String));
  return id as string;
}

interface CallResult {
  /** The A2A request JSON text as the caller put it on the wire. */
  sentBody: string;
  /** Headers the caller sent (raw calls only; lower-case). */
  sentHeaders: Record<string, string>;
}

/** Make one call of `aos` through `proxy` as `kind`; asserts the agent's answer arrived. */
async function call(proxy: Proxy, aos: Aos, kind: Kind, withReasoning: boolean): Promise<CallResult> {
  const reasoningHeaders: Record<string, string> = withReasoning ? { 'x-aos-reasoning': REASONING } : {};
  if (kind === 'raw-seed') {
    const payload = SEED_A2A[aos];
    const sentBody = JSON.stringify(payload);
    const sentHeaders = {
      'x-aos-agent-name': SEED_CALLER.name,
      'x-aos-agent-url': SEED_CALLER.url,
      'x-aos-agent-version': SEED_CALLER.version,
      ...reasoningHeaders,
    };
    const url = `${proxy.url}/a2a/jsonrpc`;
    if (aos === 'message/stream' || aos === 'tasks/resubscribe') {
      const r = await rawSse(url, sentBody, sentHeaders);
      expect(r.status).toBe(200);
      // The agent rejects these seed requests (file part without bytes/uri; unknown task), but it did answer
      // them, under the caller's id.
      const answers = r.events.length > 0 ? r.events.map((e) => e.json) : [JSON.parse(r.text)];
      for (const a of answers) expect(a).toMatchObject({ jsonrpc: '2.0', id: payload.id });
    } else {
      const r = await rawRpc(url, sentBody, sentHeaders);
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ jsonrpc: '2.0', id: payload.id });
      if (aos === 'message/send') expect(textOf(r.json)).toBe('echo: how to prepare a cheese cake?');
      else expect(r.json.error.code).toBe(-32001); // task 2232321 does not exist at the agent
    }
    return { sentBody, sentHeaders };
  }

  const { client, sent } = await recordingClient(proxy.url, kind === 'sdk-1.0' ? '1.0' : '0.3');
  const opts = { serviceParameters: reasoningHeaders };
  switch (aos) {
    case 'message/send': {
      const r = await client.sendMessage(sendReq('hello envelope'), opts);
      expect(textOf(r)).toBe('echo: hello envelope');
      break;
    }
    case 'message/stream': {
      const events = await collect(client.sendMessageStream(sendReq('stream 3'), opts));
      expect(events.map((e) => e.payload?.$case)).toEqual(['task', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate']);
      break;
    }
    case 'tasks/cancel': {
      const id = await runningTask();
      const t = await client.cancelTask({ tenant: '', id, metadata: undefined }, opts);
      expect(t.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      expect(agent.cancelled.has(id)).toBe(true);
      break;
    }
    case 'tasks/resubscribe': {
      const id = await runningTask();
      const events = collect(client.resubscribeTask({ tenant: '', id }, opts));
      await waitFor(() => postsFor(wireMethod(aos, kind)).length > 0, 10_000, 'subscribe request at the agent');
      await new Promise((r) => setTimeout(r, 50));
      await direct.cancelTask({ tenant: '', id, metadata: undefined });
      const got = await events;
      expect(got[0]?.payload?.$case).toBe('task');
      const last = got[got.length - 1]?.payload;
      expect(last?.$case === 'statusUpdate' ? last.value.status?.state : last?.$case).toBe(TaskState.TASK_STATE_CANCELED);
      break;
    }
  }
  const mine = sent.filter((s) => (JSON.parse(s.body) as { method?: string }).method === wireMethod(aos, kind));
  expect(mine).toHaveLength(1);
  return { sentBody: mine[0]!.body, sentHeaders: {} };
}

/* ---------------------------------------------------------------------------------------------- */
/* Tests                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

test("the embedded seed payloads are the seed documents' section 4 payloads", () => {
  if (!fs.existsSync(SEEDS_DIR)) return; // outside the dev workspace only the embedded copies exist
  for (const aos of Object.keys(SEED_A2A) as Aos[]) {
    const fromDoc = seedA2aFromDoc(WIRE[aos].seed);
    expect(fromDoc.length).toBeGreaterThanOrEqual(2);
    for (const p of fromDoc) expect(p).toEqual(SEED_A2A[aos]);
    // and each AOS example of the document carries that same payload
    for (const env of seedAosPayloads(WIRE[aos].seed) ?? []) expect(env.params.payload).toEqual(SEED_A2A[aos]);
  }
});

const ROLES: Role[] = ['client', 'server'];
const KINDS: Kind[] = ['sdk-1.0', 'sdk-0.3', 'raw-seed'];
const METHODS: Aos[] = ['message/send', 'message/stream', 'tasks/cancel', 'tasks/resubscribe'];

describe.each(ROLES)('ROLE=%s', (role) => {
  describe.each(KINDS)('%s', (kind) => {
    // The v0.3 SDK calls go without a reasoning header: reasoning must then be absent on both sides.
    const withReasoning = kind !== 'sdk-0.3';

    test.each(METHODS)('%s: envelope, context and forwarded request', async (aos) => {
      const proxy = proxies[role];
      const { sentBody, sentHeaders } = await call(proxy, aos, kind, withReasoning);
      const wire = wireMethod(aos, kind);

      // One request hook for this call, under the AOS (v0.3) method name.
      const envs: Envelope[] = guardian.calls().filter((e) => e.params?.payload?.method === wire);
      expect(envs).toHaveLength(1);
      expect(guardian.calls().filter((e) => e.params?.payload?.method !== 'GetTask')).toHaveLength(1);
      const env = envs[0];
      expect(env.jsonrpc).toBe('2.0');
      expect(env.id).toMatch(UUID_V4);
      expect(envelopeIds.has(env.id)).toBe(false);
      envelopeIds.add(env.id);
      expect(env.method).toBe(aos);

      // payload: the A2A request exactly as the caller sent it (same JSON, same key order)
      expect(env.params.payload).toEqual(JSON.parse(sentBody));
      if (kind === 'raw-seed') {
        expect(env.params.payload).toEqual(SEED_A2A[aos]);
        expect(JSON.stringify(env.params.payload)).toBe(sentBody);
      }

      // reasoning: client side only, only when supplied
      if (role === 'client' && withReasoning) expect(env.params.reasoning).toBe(REASONING);
      else expect('reasoning' in env.params).toBe(false);

      // context: request hook = from client, to server
      const ctx = env.params.context;
      expect(ctx.from.role).toBe('client');
      expect(ctx.to.role).toBe('server');
      if (role === 'client') {
        expect(ctx.from.agent).toEqual(CLIENT_AGENT);
        expect(ctx.to.agent).toEqual({ url: `${agent.origin}/a2a/jsonrpc`, name: 'Cake Baker', version: '2.0.0' });
      } else {
        // IDENTITY_POLICY=optional (the default): the seed's X-AOS-Agent-* claim is not believed; nothing verified it.
        expect(ctx.from.agent).toEqual({ url: 'unknown', name: 'unknown', version: 'unknown', metadata: { identity: { verified: false } } });
        expect(ctx.to.agent).toMatchObject({
          id: 'cake-baker-42',
          name: 'Cake Baker',
          url: `${agent.origin}/a2a/jsonrpc`,
          version: '2.0.0',
          instructions: 'You answer questions about cake baking.',
          provider: { name: 'AzureAIFoundry', url: 'https://ai.azure.com' },
        });
        expect(Object.keys(ctx.to.agent).sort()).toEqual(expect.arrayContaining(['id', 'instructions', 'name', 'provider', 'url', 'version']));
        if ('description' in ctx.to.agent) expect(ctx.to.agent.description).toBe('Bakes cakes');
      }
      const observedSide = role === 'client' ? 'from' : 'to';
      expect(validateAosRequest(env, aos, { fullSide: observedSide })).toEqual([]);
      expect(shapeProblems(seedAos(aos, role), env, observedSide, role === 'client' && withReasoning)).toEqual([]);

      // allow: the agent received exactly the JSON the guardian saw, once
      const at = postsFor(wire);
      expect(at).toHaveLength(1);
      const got = at[0]!;
      expect(got.path).toBe('/a2a/jsonrpc');
      expect(got.body).toEqual(env.params.payload);
      expect(got.bodyText).toBe(JSON.stringify(env.params.payload));
      expect(got.bodyText).toBe(sentBody);
      // headers: reasoning never reaches the agent; A2A-Version passes through untouched
      expect(got.headers['x-aos-reasoning']).toBeUndefined();
      expect(got.bodyText).not.toContain('delegate it to the agent');
      expect(got.headers['a2a-version']).toBe(kind === 'sdk-1.0' ? '1.0' : kind === 'sdk-0.3' ? '0.3' : undefined);
      expect(got.headers['x-aos-unchecked']).toBeUndefined();
      if (role === 'client') {
        // ROLE=client announces its observed agent (replacing what the caller claimed)
        expect(got.headers['x-aos-agent-name']).toBe(CLIENT_AGENT.name);
        expect(got.headers['x-aos-agent-url']).toBe(CLIENT_AGENT.url);
        expect(got.headers['x-aos-agent-version']).toBe(CLIENT_AGENT.version);
      } else {
        // ROLE=server does not believe the caller's claim, and removes it before the agent
        expect(got.headers['x-aos-agent-name']).toBeUndefined();
        expect(got.headers['x-aos-agent-url']).toBeUndefined();
        expect(got.headers['x-aos-agent-version']).toBeUndefined();
      }
      if (kind === 'raw-seed') expect(sentHeaders['x-aos-agent-name']).toBe(SEED_CALLER.name);
    });
  });
});

test('ROLE=client: reasoning header absent -> no reasoning; a fresh envelope id per call', async () => {
  for (let i = 0; i < 3; i++) await call(proxies.client, 'message/send', 'raw-seed', false);
  const envs = guardian.calls();
  expect(envs).toHaveLength(3);
  for (const e of envs) {
    expect('reasoning' in e.params).toBe(false);
    expect(e.id).toMatch(UUID_V4);
  }
  expect(new Set(envs.map((e) => e.id)).size).toBe(3);
  // the payload (same seed request three times) is identical; only the envelope id differs
  expect(envs[1].params.payload).toEqual(envs[0].params.payload);
});
