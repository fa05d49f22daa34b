/**
 * "No valid answer" from the guardian (design section 5) under FAIL_MODE=closed and FAIL_MODE=open,
 * for every failure kind: connection refused/reset, timeout (small GUARDIAN_TIMEOUT_MS + a hanging
 * guardian), HTTP 500, a non-JSON body, a JSON-RPC error, a schema-invalid result, a wrong id, and a
 * guardian URL where nothing listens. Plus an invalid modify under FAIL_MODE=open, and the upstream
 * agent being down (-31502).
 *   closed -> JSON-RPC error -31503 (HTTP 200, caller's id, ErrorInfo GUARDIAN_UNAVAILABLE), nothing forwarded;
 *   open   -> forwarded as if allowed, and the forwarded request carries `x-aos-unchecked: true`.
 * Each case gets its own proxy, so the guardian client's breaker state never leaks between cases.
 */
import { collect, makeClient, rawRpc, rawSse, sendReq, textOf, type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { postsTo } from '../../helpers/agent';
import { deadGuardianUrl, type GuardianFault, type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { type TestProxy, startTestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;

const stack = useStack({ name: 'Cake Baker', version: '2.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let deadUrl: string;
const open: Proxy[] = [];

beforeAll(async () => {
  ({ agent, guardian } = stack);
  deadUrl = await deadGuardianUrl();
});
afterEach(async () => {
  while (open.length > 0) await open.pop()!.close();
});

async function proxyWith(env: Record<string, string>): Promise<Proxy> {
  const p = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', ...env });
  open.push(p);
  return p;
}

const agentPosts = (): ReceivedRequest[] => postsTo(agent);

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
  expect(res.json.error.data).toHaveLength(1);
  expect(res.json.error.data[0]).toMatchObject({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-guard' });
  return res.json.error.data[0].metadata;
}

async function sdkCode(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err: any) {
    return err?.envelopeCode ?? err?.errorResponse?.error?.code ?? err?.cause?.envelopeCode ?? err?.code ?? String(err);
  }
  return 'no error';
}

const sendBody = (id: string | number, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] }, metadata: {} },
});

interface FailureCase {
  name: string;
  /** Guardian answer, or 'dead' for a GUARDIAN_URL where nothing listens. */
  reply: GuardianReply | 'dead';
  env?: Record<string, string>;
}
const fault = (f: GuardianFault): GuardianReply => ({ fault: f });
const CASES: FailureCase[] = [
  { name: 'connection reset (refuse)', reply: fault('refuse') },
  { name: 'timeout (hanging guardian, GUARDIAN_TIMEOUT_MS=300)', reply: fault('hang'), env: { GUARDIAN_TIMEOUT_MS: '300' } },
  { name: 'timeout (answer after the deadline)', reply: { decision: 'allow', delayMs: 3000 }, env: { GUARDIAN_TIMEOUT_MS: '250' } },
  { name: 'HTTP 500', reply: fault('http500') },
  {
    name: 'HTTP 503 with a valid-looking allow body',
    reply: { raw: { status: 503, body: '{"jsonrpc":"2.0","id":"x","result":{"decision":"allow","message":"ok"}}' } },
  },
  { name: 'non-JSON body', reply: fault('garbage') },
  { name: 'JSON-RPC error', reply: fault('rpcError') },
  { name: 'schema-invalid result (no decision)', reply: fault('badSchema') },
  { name: 'schema-invalid result (unknown decision)', reply: { raw: { status: 200, body: '' } } }, // body filled per envelope below
  { name: 'schema-invalid result (no message)', reply: { decision: 'allow', message: null } },
  { name: 'wrong id', reply: fault('wrongId') },
  // JSON.parse would read allow; a guardian's parser keeping the first member meant deny.
  { name: 'a member named twice (deny, then allow)', reply: { raw: { status: 200, body: '' } } }, // body filled per envelope below
  { name: 'nothing listens at GUARDIAN_URL', reply: 'dead' },
];

function install(c: FailureCase): void {
  if (c.reply === 'dead') return;
  const reply = c.reply;
  if (c.name.includes('unknown decision')) {
    guardian.script((env) => ({ raw: { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: env.id, result: { decision: 'maybe', message: 'hmm' } }) } }));
  } else if (c.name.includes('named twice')) {
    guardian.script((env) => ({
      raw: { status: 200, body: `{"jsonrpc":"2.0","id":${JSON.stringify(env.id)},"result":{"decision":"deny","message":"no","decision":"allow"}}` },
    }));
  } else {
    guardian.script(() => reply);
  }
}

describe.each(CASES)('guardian failure: $name', (c) => {
  const guardianEnv = (): Record<string, string> => ({ ...(c.env ?? {}), ...(c.reply === 'dead' ? { GUARDIAN_URL: deadUrl } : {}) });

  test('FAIL_MODE=closed: -31503 GUARDIAN_UNAVAILABLE, nothing forwarded (raw and SDK)', async () => {
    install(c);
    const proxy = await proxyWith({ ...guardianEnv(), FAIL_MODE: 'closed' });
    const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, sendBody('fc-1', 'closed please'));
    const md = expectProxyError(res, 'fc-1', -31503, 'GUARDIAN_UNAVAILABLE');
    if (c.reply !== 'dead') {
      expect(guardian.calls().length).toBeGreaterThanOrEqual(1); // the guardian was asked
      expect(md.envelopeId).toBe(guardian.calls()[0].id);
    }
    const client = await makeClient(proxy.url, 'JSONRPC', '1.0');
    expect(await sdkCode(client.sendMessage(sendReq('closed sdk')))).toBe(-31503);
    expect(agentPosts()).toEqual([]);
  });

  test('FAIL_MODE=open: forwarded unchanged with x-aos-unchecked: true', async () => {
    install(c);
    const proxy = await proxyWith({ ...guardianEnv(), FAIL_MODE: 'open' });
    const body = sendBody(41, 'open please');
    const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, body);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', id: 41, result: { kind: 'task', status: { state: 'completed' } } });
    expect(textOf(res.json)).toBe('echo: open please');
    const posts = agentPosts();
    expect(posts).toHaveLength(1);
    expect(posts[0]!.body).toEqual(body);
    expect(posts[0]!.bodyText).toBe(JSON.stringify(body));
    expect(posts[0]!.headers['x-aos-unchecked']).toBe('true');
  });
});

describe('FAIL_MODE=closed on the other methods (HTTP 500 guardian)', () => {
  test.each([
    [
      'message/stream',
      {
        jsonrpc: '2.0',
        id: 'st',
        method: 'message/stream',
        params: { message: { kind: 'message', messageId: 's', role: 'user', parts: [{ kind: 'text', text: 'stream 5' }] } },
      },
      {},
    ],
    [
      'SendStreamingMessage',
      { jsonrpc: '2.0', id: 9, method: 'SendStreamingMessage', params: { message: { messageId: 's', role: 'ROLE_USER', parts: [{ text: 'stream 5' }] } } },
      { 'a2a-version': '1.0' },
    ],
    ['tasks/cancel', { jsonrpc: '2.0', id: 'cn', method: 'tasks/cancel', params: { id: 't' } }, {}],
    ['CancelTask', { jsonrpc: '2.0', id: 'cn1', method: 'CancelTask', params: { id: 't' } }, { 'a2a-version': '1.0' }],
    ['tasks/resubscribe', { jsonrpc: '2.0', id: 'rs', method: 'tasks/resubscribe', params: { id: 't' } }, {}],
    ['SubscribeToTask', { jsonrpc: '2.0', id: 12, method: 'SubscribeToTask', params: { id: 't' } }, { 'a2a-version': '1.0' }],
  ])('%s: -31503 before anything is forwarded (a JSON body, not SSE)', async (method, body, headers) => {
    guardian.script(() => fault('http500'));
    const proxy = await proxyWith({ FAIL_MODE: 'closed' });
    const res = await rawSse(`${proxy.url}/a2a/jsonrpc`, body, headers);
    expect(res.events).toEqual([]);
    expectProxyError({ status: res.status, headers: res.headers, json: JSON.parse(res.text) }, body.id, -31503, 'GUARDIAN_UNAVAILABLE');
    expect(guardian.calls().map((e) => e.params.payload.method)).toEqual([method]);
    expect(agentPosts()).toEqual([]);
  });

  test('SDK sendMessageStream (v0.3) raises -31503', async () => {
    guardian.script(() => fault('garbage'));
    const proxy = await proxyWith({ FAIL_MODE: 'closed' });
    const client = await makeClient(proxy.url, 'JSONRPC', '0.3');
    expect(await sdkCode(collect(client.sendMessageStream(sendReq('stream 5'))))).toBe(-31503);
    expect(agentPosts()).toEqual([]);
  });
});

describe('FAIL_MODE=open and an invalid modify', () => {
  test('modify that changes the id: the original request is forwarded, marked unchecked', async () => {
    const proxy = await proxyWith({ FAIL_MODE: 'open' });
    const body = sendBody('keep-me', 'original text');
    guardian.script((env) => ({
      decision: 'modify',
      modifiedPayload: {
        ...env.params.payload,
        id: 'changed',
        params: { message: { kind: 'message', messageId: 'z', role: 'user', parts: [{ kind: 'text', text: 'replaced' }] } },
      },
    }));
    const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, body);
    expect(res.json).toMatchObject({ id: 'keep-me', result: { kind: 'task' } });
    expect(textOf(res.json)).toBe('echo: original text');
    expect(agentPosts()).toHaveLength(1);
    expect(agentPosts()[0]!.body).toEqual(body);
    expect(agentPosts()[0]!.headers['x-aos-unchecked']).toBe('true');
  });

  test('a valid decision is enforced as usual under FAIL_MODE=open (deny blocks, allow is not marked)', async () => {
    const proxy = await proxyWith({ FAIL_MODE: 'open' });
    guardian.script(() => ({ decision: 'deny', message: 'no', reasonCode: ['R'] }));
    expectProxyError(await rawRpc(`${proxy.url}/a2a/jsonrpc`, sendBody('d', 'x')), 'd', -31403, 'GUARDIAN_DENIED');
    expect(agentPosts()).toEqual([]);
    guardian.script(() => ({ decision: 'allow' }));
    const ok = await rawRpc(`${proxy.url}/a2a/jsonrpc`, sendBody('a', 'y'));
    expect(textOf(ok.json)).toBe('echo: y');
    expect(agentPosts()).toHaveLength(1);
    expect(agentPosts()[0]!.headers['x-aos-unchecked']).toBeUndefined();
  });
});

describe('upstream agent down', () => {
  test.each(['server', 'client'] as const)("ROLE=%s: -31502 UPSTREAM_UNAVAILABLE with the caller's id, after an allow", async (role) => {
    const proxy = await startTestProxy({ UPSTREAM_URL: deadUrl, GUARDIAN_URL: guardian.url, ROLE: role });
    open.push(proxy);
    const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, sendBody('up-1', 'anyone there?'));
    expectProxyError(res, 'up-1', -31502, 'UPSTREAM_UNAVAILABLE');
    expect(guardian.calls().map((e) => e.method)).toEqual(['message/send']);

    const stream = await rawSse(
      `${proxy.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 77, method: 'SendStreamingMessage', params: { message: { messageId: 'q', role: 'ROLE_USER', parts: [{ text: 'stream 3' }] } } },
      { 'a2a-version': '1.0' },
    );
    expect(stream.events).toEqual([]);
    expectProxyError({ status: stream.status, headers: stream.headers, json: JSON.parse(stream.text) }, 77, -31502, 'UPSTREAM_UNAVAILABLE');
  });
});
