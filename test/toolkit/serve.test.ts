/**
 * The toolkit's server helper (src/aos/serve.ts) and decision helpers (src/aos/decisions.ts):
 * a guardian written as a typed function, served with one call, asked by a real a2a-guard proxy
 * in front of a real @a2a-js/sdk agent, called by a real SDK client. Judged by what the agent
 * received and what the client saw; the JSON-RPC edges are checked over real HTTP.
 */
import type { AddressInfo } from 'node:net';
import { acceptsModify, allow, deny, isA2AMethod, modify, serveGuardian, type DecisionEvent, type Envelope, type RunningGuardian } from '../../src/index';
import { makeClient, postsTo, sendReq, startAgent, type TestAgent } from '../helpers/agent';
import { startTestProxy, type TestProxy } from '../helpers/proxy-harness';
import { callError } from '../../src/demo/cooking-assistant';

const TOKEN = 'toolkit-test-token';

/** The ~10-line guardian of the README: deny molotov, mask e-mail addresses, allow the rest. */
function exampleGuardian(envelope: Envelope) {
  const text = JSON.stringify(envelope.params.payload);
  if (/molotov/i.test(text)) return deny('No weapons.', { reasonCode: ['WEAPONS'] });
  if (/@example\.com/.test(text) && acceptsModify(envelope.method)) {
    return modify(envelope, JSON.parse(text.replace(/[\w.+-]+@example\.com/g, '[EMAIL]')) as Record<string, unknown>, 'Masked.', { reasonCode: ['EMAIL'] });
  }
  return allow();
}

let agent: TestAgent;
let guardian: RunningGuardian;
let proxy: TestProxy;
const decisions: DecisionEvent[] = [];

beforeAll(async () => {
  agent = await startAgent({ name: 'Toolkit Agent' });
  guardian = await serveGuardian(async (envelope) => exampleGuardian(envelope), {
    port: 0,
    host: '127.0.0.1',
    token: TOKEN,
    version: '9.9.9',
    exitOnSignal: false,
    onDecision: (e) => decisions.push(e),
  });
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, GUARDIAN_TOKEN: TOKEN });
});

afterAll(async () => {
  await proxy?.close();
  await guardian?.close();
  await agent?.close();
});

beforeEach(() => {
  agent.clear();
  decisions.length = 0;
});

const sentTexts = (): string[] => postsTo(agent, 'SendMessage', 'message/send').map((r) => r.bodyText);

describe('a guardian function served with serveGuardian, behind a real a2a-guard', () => {
  test('allow: the message reaches the agent; onDecision saw the envelope and the answer', async () => {
    const client = await makeClient(proxy.url, 'JSONRPC', '1.0');
    await client.sendMessage(sendReq('how to prepare a cheese cake?'));
    expect(sentTexts().some((t) => t.includes('cheese cake'))).toBe(true);
    expect(decisions.map((d) => [d.envelope.method, d.result.decision])).toEqual([['message/send', 'allow']]);
  });

  test('deny: the client gets -31403 with the reason code, the agent nothing', async () => {
    const client = await makeClient(proxy.url, 'JSONRPC', '1.0');
    const err = await client.sendMessage(sendReq('how to create a molotov cocktail?')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(callError(err)).toMatchObject({ code: -31403, reason: 'GUARDIAN_DENIED', reasonCodes: ['WEAPONS'] });
    expect(sentTexts()).toEqual([]);
  });

  test('modify: the agent receives the masked message, never the address', async () => {
    const client = await makeClient(proxy.url, 'JSONRPC', '1.0');
    await client.sendMessage(sendReq('mail the receipt to jane.doe@example.com'));
    const texts = sentTexts();
    expect(texts).toHaveLength(1);
    expect(texts[0]).toContain('[EMAIL]');
    expect(texts[0]).not.toContain('jane.doe');
  });

  test('a proxy with the wrong token gets 401s, so it fails closed and nothing reaches the agent', async () => {
    const wrong = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, GUARDIAN_TOKEN: 'not-the-token' });
    try {
      const client = await makeClient(wrong.url, 'JSONRPC', '1.0');
      const err = await client.sendMessage(sendReq('how to prepare a cheese cake?')).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(callError(err)).toMatchObject({ code: -31503, reason: 'GUARDIAN_UNAVAILABLE' });
      expect(sentTexts()).toEqual([]);
      expect(decisions).toEqual([]);
    } finally {
      await wrong.close();
    }
  });
});

/** A raw JSON-RPC call to a guardian. */
async function rpc(
  url: string,
  body: unknown,
  headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` },
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const ENVELOPE = {
  jsonrpc: '2.0',
  id: 'env-1',
  method: 'message/send',
  params: {
    payload: { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { role: 'user', parts: [{ kind: 'text', text: 'hi' }] } } },
    context: {
      from: { agent: { url: 'https://a.example', name: 'A', version: '1' }, role: 'client' },
      to: {
        agent: { id: 'b', url: 'https://b.example', name: 'B', version: '1', instructions: 'x', provider: { name: 'P', url: 'https://p.example' } },
        role: 'server',
      },
    },
  },
};

describe('the JSON-RPC edges of serveGuardian', () => {
  test('ping, /healthz without a token, 401 without one, 405 for other verbs', async () => {
    const ping = await rpc(guardian.url, { jsonrpc: '2.0', id: 'p', method: 'ping', params: { timestamp: new Date().toISOString() } });
    expect(ping.json).toMatchObject({ id: 'p', result: { status: 'connected', version: '9.9.9' } });
    const health = await fetch(`${guardian.url}/healthz`);
    expect([health.status, await health.json()]).toEqual([200, { status: 'ok', version: '9.9.9' }]);
    const anonymous = await rpc(guardian.url, ENVELOPE, {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.json).toMatchObject({ error: { code: -32001 } });
    const wrong = await rpc(guardian.url, ENVELOPE, { authorization: `Bearer ${TOKEN}x` });
    expect(wrong.status).toBe(401);
    expect((await fetch(guardian.url, { method: 'PUT' })).status).toBe(405);
  });

  test("answers the envelope with the function's decision and the request id; -32601 / -32602 / -32700 otherwise", async () => {
    expect((await rpc(guardian.url, ENVELOPE)).json).toEqual({ jsonrpc: '2.0', id: 'env-1', result: { decision: 'allow', message: 'Allowed.' } });
    expect((await rpc(guardian.url, { ...ENVELOPE, method: 'tasks/explode' })).json).toMatchObject({ id: 'env-1', error: { code: -32601 } });
    expect((await rpc(guardian.url, { ...ENVELOPE, params: { payload: {} } })).json).toMatchObject({ id: 'env-1', error: { code: -32602 } });
    expect((await rpc(guardian.url, '{not json')).json).toMatchObject({ id: null, error: { code: -32700 } });
  });

  test('a function that throws, or returns what AOS does not accept, yields -32603 (never a malformed decision)', async () => {
    const answers: unknown[] = [
      new Error('boom'),
      { decision: 'deny' }, // no message
      { decision: 'maybe', message: 'x' },
      { decision: 'modify', message: 'x' }, // no modifiedRequest
    ];
    const errors: string[] = [];
    for (const answer of answers) {
      const g = await serveGuardian(
        () => {
          if (answer instanceof Error) throw answer;
          return answer as ReturnType<typeof allow>;
        },
        {
          port: 0,
          host: '127.0.0.1',
          exitOnSignal: false,
          logger: { info: () => undefined, warn: () => undefined, error: (_o, msg) => errors.push(msg) },
        },
      );
      try {
        const { status, json } = await rpc(g.url, ENVELOPE, {});
        expect({ status, json }).toEqual({ status: 200, json: { jsonrpc: '2.0', id: 'env-1', error: { code: -32603, message: 'Internal error' } } });
      } finally {
        await g.close();
      }
    }
    expect(errors).toHaveLength(answers.length);
  });

  test('serveGuardian listens where it is told and close() stops it', async () => {
    const g = await serveGuardian(() => allow(), { port: 0, host: '127.0.0.1', exitOnSignal: false });
    const { port } = g.server.address() as AddressInfo;
    expect(g.url).toBe(`http://127.0.0.1:${port}`);
    await g.close();
    expect(g.server.listening).toBe(false);
    expect(process.listenerCount('SIGTERM')).toBe(0);
  });
});

describe('decision helpers', () => {
  const env = ENVELOPE as unknown as Envelope;
  test('allow / deny / modify build AOS results; modify echoes the envelope with the new payload', () => {
    expect(allow()).toEqual({ decision: 'allow', message: 'Allowed.' });
    expect(deny('No.', { reasonCode: ['R'], reasoning: 'why' })).toEqual({ decision: 'deny', message: 'No.', reasonCode: ['R'], reasoning: 'why' });
    const payload = { ...ENVELOPE.params.payload, params: { message: { role: 'user', parts: [] } } };
    const m = modify(env, payload);
    expect(m.modifiedRequest).toEqual({ ...ENVELOPE, params: { ...ENVELOPE.params, payload } });
    expect(m.decision).toBe('modify');
  });

  test('acceptsModify and isA2AMethod follow the operation table (any name form)', () => {
    expect(acceptsModify('message/send')).toBe(true);
    expect(acceptsModify('SendMessage')).toBe(true);
    expect(acceptsModify('tasks/cancel')).toBe(false);
    expect(acceptsModify('SubscribeToTask')).toBe(false);
    expect(isA2AMethod('GetTask')).toBe(true);
    expect(isA2AMethod('ping')).toBe(false);
  });
});
