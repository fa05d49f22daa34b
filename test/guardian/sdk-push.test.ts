/**
 * Differential check against a real @a2a-js/sdk agent: generated webhook registrations (every
 * binding, key spellings, host spellings) are sent straight to the agent, and the webhook URLs
 * its request handler stored are read back. Oracle: whenever the agent stored a webhook that is
 * not a public address, the guardian denies the same request, in the form the proxy shows it.
 */
import fc from 'fast-check';
import type { JsonObject } from '../../src/aos/schemas';
import { classifyUrl } from '../../src/core/address';
import { createEngine } from '../../src/guardian/engine';
import { parsePolicy } from '../../src/guardian/policy';
import { startAgent, type TestAgent } from '../helpers/agent';
import { requestEnvelope } from './fixtures/envelopes';
import { respell, toSnake } from './fixtures/spelling';

const engine = createEngine(parsePolicy({}, 'test'));
let agent: TestAgent;

beforeAll(async () => {
  agent = await startAgent({ pushNotifications: true });
});
afterAll(async () => {
  await agent.close();
});

interface Answer {
  readonly status: number;
  readonly json: unknown;
}

async function post(path: string, body: unknown, version: '1.0' | '0.3'): Promise<Answer> {
  const res = await fetch(`${agent.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': version },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

const rpc = (method: string, params: unknown): JsonObject => ({ jsonrpc: '2.0', id: 1, method, params: params as JsonObject });

function field(value: unknown, ...path: string[]): unknown {
  let at = value;
  for (const key of path) at = typeof at === 'object' && at !== null ? (at as JsonObject)[key] : undefined;
  return at;
}

async function newTask(): Promise<string> {
  const message = { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'hello' }] };
  const answer = await post('/a2a/jsonrpc', rpc('SendMessage', { message, configuration: { returnImmediately: false } }), '1.0');
  const id = field(answer.json, 'result', 'task', 'id');
  if (typeof id !== 'string') throw new Error(`no task: ${JSON.stringify(answer.json)}`);
  return id;
}

/** Webhook URLs the agent stored for a task (what its push sender would POST to). */
async function storedUrls(taskId: string): Promise<string[]> {
  const answer = await post('/a2a/jsonrpc', rpc('ListTaskPushNotificationConfigs', { taskId }), '1.0');
  const configs = field(answer.json, 'result', 'configs');
  return Array.isArray(configs) ? configs.map((c) => String(field(c, 'url'))) : [];
}

/** One way to register a webhook: what is sent to the agent, and what the guardian is shown. */
interface Registration {
  readonly path: string;
  readonly version: '1.0' | '0.3';
  readonly body: unknown;
  readonly payload: JsonObject;
  /** The task the webhook belongs to, when the request names it (else read from the answer). */
  readonly taskId: string | undefined;
}

type Binding = (url: string, taskId: string, spell: (k: string) => string) => Registration;

const userMessage = (v03rest: boolean): JsonObject =>
  v03rest
    ? { messageId: `m-${Math.random()}`, role: 'ROLE_USER', content: [{ text: 'hi' }] }
    : { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'hi' }] };

const BINDINGS: Array<[string, Binding]> = [
  [
    'v1 JSON-RPC SendMessage',
    (url, _t, spell) => {
      const params = respell({ message: userMessage(false), configuration: { returnImmediately: true, taskPushNotificationConfig: { url } } }, spell);
      return { path: '/a2a/jsonrpc', version: '1.0', body: rpc('SendMessage', params), payload: rpc('SendMessage', params), taskId: undefined };
    },
  ],
  [
    'v1 JSON-RPC CreateTaskPushNotificationConfig',
    (url, taskId, spell) => {
      const params = respell({ taskId, id: 'c-1', url, token: 'tok' }, spell);
      const body = rpc('CreateTaskPushNotificationConfig', params);
      return { path: '/a2a/jsonrpc', version: '1.0', body, payload: body, taskId };
    },
  ],
  [
    'v1 REST message:send',
    (url, _t, spell) => {
      const body = respell({ message: userMessage(false), configuration: { returnImmediately: true, taskPushNotificationConfig: { url } } }, spell);
      return { path: '/a2a/rest/message:send', version: '1.0', body, payload: rpc('SendMessage', body), taskId: undefined };
    },
  ],
  [
    'v1 REST pushNotificationConfigs',
    (url, taskId, spell) => {
      const body = respell({ id: 'c-1', url, token: 'tok' }, spell) as JsonObject;
      const payload = rpc('CreateTaskPushNotificationConfig', { taskId, ...body });
      return { path: `/a2a/rest/tasks/${taskId}/pushNotificationConfigs`, version: '1.0', body, payload, taskId };
    },
  ],
  [
    'v0.3 REST message:send',
    (url, _t, spell) => {
      const body = respell({ message: userMessage(true), configuration: { blocking: false, pushNotification: { id: 'c-1', url } } }, spell);
      return { path: '/a2a/rest/v1/message:send', version: '0.3', body, payload: rpc('message/send', body), taskId: undefined };
    },
  ],
  [
    'v0.3 REST pushNotificationConfigs',
    (url, taskId, spell) => {
      const body = respell({ name: `tasks/${taskId}/pushNotificationConfigs/c-1`, pushNotificationConfig: { id: 'c-1', url } }, spell) as JsonObject;
      const payload = rpc('tasks/pushNotificationConfig/set', { taskId, ...body });
      return { path: `/a2a/rest/v1/tasks/${taskId}/pushNotificationConfigs`, version: '0.3', body, payload, taskId };
    },
  ],
  [
    'v0.3 JSON-RPC set',
    (url, taskId, spell) => {
      const params = respell({ taskId, pushNotificationConfig: { id: 'c-1', url } }, spell);
      const body = rpc('tasks/pushNotificationConfig/set', params);
      return { path: '/a2a/jsonrpc', version: '0.3', body, payload: body, taskId };
    },
  ],
  [
    'v0.3 JSON-RPC message/send',
    (url, _t, spell) => {
      const message = { kind: 'message', messageId: `m-${Math.random()}`, role: 'user', parts: [{ kind: 'text', text: 'hi' }] };
      const params = respell({ message, configuration: { blocking: false, pushNotificationConfig: { url } } }, spell);
      const body = rpc('message/send', params);
      return { path: '/a2a/jsonrpc', version: '0.3', body, payload: body, taskId: undefined };
    },
  ],
];

const URLS = [
  'https://hooks.example.com/cb',
  'https://127.0.0.1/cb',
  'https://2130706433/cb',
  'https://[::ffff:7f00:1]/cb',
  'https://0x7f.1/cb',
  'https://169.254.169.254/latest',
  'https://[2001::1]/cb',
  'https://[2002:a9fe:a9fe::1]/cb',
  'https://100.64.0.1/cb',
  'https://192.0.2.1/cb',
  'https://metadata.google.internal./',
  'https://LOCALHOST./cb',
  'https://public.example@10.0.0.1/cb',
];

function taskIdOf(answer: Answer): string | undefined {
  const json = answer.json;
  const id = field(json, 'result', 'task', 'id') ?? field(json, 'result', 'id') ?? field(json, 'task', 'id');
  return typeof id === 'string' ? id : undefined;
}

it('the guardian denies every request that makes the SDK agent store a non-public webhook (property)', async () => {
  const acted = { total: 0, nonPublic: 0, snakeSpelled: 0 };
  await fc.assert(
    fc.asyncProperty(fc.nat({ max: BINDINGS.length - 1 }), fc.constantFrom(...URLS), fc.func(fc.boolean()), async (b, host, snake) => {
      const [, bind] = BINDINGS[b] as [string, Binding];
      const url = `${host}${host.includes('?') ? '&' : '?'}case=${Math.random()}`;
      const usedSnake: string[] = [];
      const spell = (key: string): string => {
        const s = toSnake(key);
        if (s === key || !snake(key)) return key;
        usedSnake.push(key);
        return s;
      };
      const reg = bind(url, await newTask(), spell);
      const answer = await post(reg.path, reg.body, reg.version);
      const taskId = reg.taskId ?? taskIdOf(answer);
      const stored = taskId === undefined ? [] : (await storedUrls(taskId)).filter((u) => u === url);
      const result = engine.decide(requestEnvelope(reg.payload));
      for (const u of stored) {
        acted.total++;
        if (classifyUrl(new URL(u)).class === 'public') continue;
        acted.nonPublic++;
        if (usedSnake.some((k) => /push|config/i.test(k))) acted.snakeSpelled++;
        expect({ url: u, decision: result.decision }).toEqual({ url: u, decision: 'deny' });
        expect(result.reasonCode?.[0]).toMatch(/^PUSH_URL_/);
      }
      // A public webhook in a well-formed request is allowed.
      if (stored.length > 0 && classifyUrl(new URL(url)).class === 'public') expect(result.decision).toBe('allow');
    }),
    { numRuns: 250 },
  );
  // The run exercised what it claims: the agent acted on non-public webhooks, some spelled in snake_case.
  expect(acted.nonPublic).toBeGreaterThan(50);
  expect(acted.snakeSpelled).toBeGreaterThan(10);
}, 120_000);
