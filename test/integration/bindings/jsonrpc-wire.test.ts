/**
 * JSON-RPC wire rules and header transparency (design sections 2, 5, 6; a2a-wire-reference 1, 2, 5-7):
 *   - A2A-Version, A2A-Extensions, X-A2A-Extensions and Authorization reach the agent untouched,
 *     for JSON-RPC and REST, unary and streaming; an absent A2A-Version stays absent (v0.3);
 *   - JSON-RPC batches (arrays) are refused with -32600 and never forwarded, whatever they contain;
 *   - JSON-RPC methods that are not A2A are refused with -32601 (NON_A2A=refuse, the default), or
 *     forwarded unseen by the guardian under NON_A2A=forward; near-miss spellings of A2A methods are
 *     refused under both;
 *   - the operations with no SDK client call here: raw v0.3 tasks/list, and the extended card
 *     (GetExtendedAgentCard / agent/getAuthenticatedExtendedCard, which this agent declines with -32004):
 *     allow, deny, modify.
 */
import { makeClient, rawRpc, rawSse, sendReq, type Client, type ReceivedRequest, type TestAgent } from '../../helpers/agent';
import { type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;

const stack = useStack({ pushNotifications: true });
let agent: TestAgent;
let guardian: TestGuardian;
let proxy: Proxy;
let open: Proxy;
let direct: Client;
let done: string;

beforeAll(async () => {
  ({ agent, guardian } = stack);
  proxy = await stack.proxy({ ROLE: 'server' });
  open = await stack.proxy({ ROLE: 'server', NON_A2A: 'forward' });
  direct = await makeClient(agent.origin, 'JSONRPC', '1.0');
  done = ((await direct.sendMessage(sendReq('setup'))) as { id: string }).id;
  await proxy.upstreamCard.ready();
  await open.upstreamCard.ready();
});

const DENY: GuardianReply = { decision: 'deny', message: 'wire says no', reasonCode: ['WIRE'] };
const v03Send = (id: unknown, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${text}`, role: 'user', parts: [{ kind: 'text', text }] } },
});
const v1Send = (id: unknown, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'SendMessage',
  params: { message: { messageId: `m-${text}`, role: 'ROLE_USER', parts: [{ text }] }, configuration: {} },
});

function expectRpcError(res: { status: number; json: any }, id: unknown, code: number, reason: string): void {
  expect(res.status).toBe(200);
  expect(res.json).toMatchObject({ jsonrpc: '2.0', id, error: { code, message: expect.any(String) } });
  expect(res.json.error.data).toHaveLength(1);
  expect(res.json.error.data[0]).toMatchObject({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-guard' });
}

/* ---------------------------------------------------------------------------------------------- */
/* Headers                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

describe('headers pass through untouched', () => {
  const H = {
    'A2A-Extensions': 'https://ext.example/a/v1, https://ext.example/b/v2',
    // Both spellings with one list: two different lists are refused (docs/reference/service-parameters.md).
    'X-A2A-Extensions': 'https://ext.example/a/v1, https://ext.example/b/v2',
    Authorization: 'Bearer abc.DEF-123_xyz',
  };
  const sent = (version?: string) => ({ ...H, ...(version === undefined ? {} : { 'A2A-Version': version }) });
  function expectHeaders(r: ReceivedRequest | undefined, version: string | undefined): void {
    expect(r).toBeDefined();
    const h = (r as ReceivedRequest).headers;
    expect(h['a2a-version']).toBe(version);
    expect(h['a2a-extensions']).toBe(H['A2A-Extensions']);
    expect(h['x-a2a-extensions']).toBe(H['X-A2A-Extensions']);
    expect(h.authorization).toBe(H.Authorization);
  }

  test.each([['1.0'], ['0.3'], [undefined]] as const)('JSON-RPC unary, A2A-Version %s', async (version) => {
    const body = version === '1.0' ? v1Send(1, 'hdr') : v03Send(1, 'hdr');
    const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, body, sent(version));
    expect(res.json.result).toBeDefined();
    expect(guardian.calls()).toHaveLength(1);
    expectHeaders(agent.received[0], version);
  });

  test.each([['1.0'], [undefined]] as const)('JSON-RPC streaming, A2A-Version %s', async (version) => {
    const body = {
      ...(version === '1.0' ? v1Send(2, 'hdr stream') : v03Send(2, 'hdr stream')),
      method: version === '1.0' ? 'SendStreamingMessage' : 'message/stream',
    };
    const res = await rawSse(`${proxy.url}/a2a/jsonrpc`, body, sent(version));
    expect(res.contentType).toMatch(/^text\/event-stream/);
    expect(res.events.length).toBeGreaterThan(1);
    expectHeaders(agent.received[0], version);
  });

  test.each([
    ['1.0', 'GET', '/a2a/rest/tasks/{T}'],
    ['1.0', 'POST', '/a2a/rest/message:send'],
    [undefined, 'GET', '/a2a/rest/v1/tasks/{T}'],
    [undefined, 'POST', '/a2a/rest/v1/message:send'],
  ] as const)('REST, A2A-Version %s, %s %s', async (version, verb, path) => {
    const body =
      verb === 'POST'
        ? JSON.stringify(
            version === '1.0'
              ? { message: { messageId: 'r1', role: 'ROLE_USER', parts: [{ text: 'rest hdr' }] } }
              : { message: { messageId: 'r1', role: 'ROLE_USER', content: [{ text: 'rest hdr' }] } },
          )
        : undefined;
    const res = await fetch(`${proxy.url}${path.replace('{T}', done)}`, {
      method: verb,
      headers: { ...sent(version), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body }),
    });
    expect(res.status).toBeLessThan(300);
    await res.text();
    expect(guardian.calls()).toHaveLength(1);
    expectHeaders(agent.received[0], version);
  });

  test('a header-less v0.3 call reaches the agent without a2a-version, extensions or authorization headers, and works', async () => {
    const res = await fetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(v03Send('bare', 'no headers')),
    });
    const json = (await res.json()) as any;
    expect(json).toMatchObject({ jsonrpc: '2.0', id: 'bare', result: { kind: 'task' } });
    const h = (agent.received[0] as ReceivedRequest).headers;
    for (const name of ['a2a-version', 'a2a-extensions', 'x-a2a-extensions', 'authorization']) expect(h[name]).toBeUndefined();
    expect(guardian.calls().map((e) => [e.method, e.params.payload.method])).toEqual([['message/send', 'message/send']]);
  });

  test('a header-less v0.3 REST call reaches the agent without a2a-version', async () => {
    const res = await fetch(`${proxy.url}/a2a/rest/v1/message:send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: { messageId: 'r2', role: 'ROLE_USER', content: [{ text: 'bare rest' }] }, configuration: { blocking: true } }),
    });
    expect(res.status).toBe(201); // the SDK's v0.3 REST send answers 201
    expect(JSON.stringify(await res.json())).toContain('echo: bare rest');
    expect((agent.received[0] as ReceivedRequest).headers['a2a-version']).toBeUndefined();
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Batches                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

describe('JSON-RPC batches are refused as the agent would (-32600 / v1.0: -32602) and never forwarded', () => {
  test.each([
    ['two A2A calls (v0.3)', [v03Send(1, 'a'), { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: 'x' } }], {}],
    ['one A2A call (v1)', [v1Send('b1', 'b')], { 'a2a-version': '1.0' }],
    ['an A2A call hidden behind a harmless one', [{ jsonrpc: '2.0', id: 1, method: 'custom/echo' }, v03Send(2, 'hidden')], {}],
    [
      'only non-A2A methods',
      [
        { jsonrpc: '2.0', id: 1, method: 'custom/echo' },
        { jsonrpc: '2.0', id: 2, method: 'other' },
      ],
      {},
    ],
    ['notifications (no ids)', [{ jsonrpc: '2.0', method: 'message/send', params: v03Send(0, 'n').params }], {}],
  ] as const)('%s', async (_name, batch, headers) => {
    guardian.script(() => ({ decision: 'allow' }));
    for (const p of [proxy, open]) {
      const res = await rawRpc(`${p.url}/a2a/jsonrpc`, batch, headers);
      // As the SDK answers: -32600 on its v0.3 dispatcher, -32602 on its v1.0 one.
      expectRpcError(res, null, 'a2a-version' in headers ? -32602 : -32600, 'REQUEST_REJECTED');
    }
    expect(guardian.calls()).toEqual([]);
    expect(agent.received).toEqual([]);
  });

  test('a batch sent to another path, or to a REST route, is refused too', async () => {
    for (const path of ['/', '/a2a/jsonrpc/', '/a2a/rest/message:send']) {
      const res = await rawRpc(`${proxy.url}${path}`, [v03Send(1, 'x')]);
      expect(res.status === 200 ? res.json?.error?.data?.[0]?.reason : res.json?.error?.details?.[0]?.reason).toBe('REQUEST_REJECTED');
    }
    expect(guardian.calls()).toEqual([]);
    expect(agent.received).toEqual([]);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Non-A2A methods                                                                                */
/* ---------------------------------------------------------------------------------------------- */

describe('JSON-RPC methods that are not A2A', () => {
  const custom = { jsonrpc: '2.0', id: 'c-1', method: 'custom/diagnostics', params: { verbose: true } };

  test("NON_A2A=refuse (default): -32601 method not found with the caller's id and the proxy's ErrorInfo, not forwarded", async () => {
    guardian.script(() => DENY);
    const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, custom);
    expectRpcError(res, 'c-1', -32601, 'REQUEST_REJECTED');
    expect(guardian.calls()).toEqual([]);
    expect(agent.received).toEqual([]);
  });

  test("NON_A2A=forward: forwarded as is, unseen by the guardian; the agent's answer is relayed", async () => {
    const res = await rawRpc(`${open.url}/a2a/jsonrpc`, custom);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', id: 'c-1', error: { code: -32601 } }); // the SDK agent's own answer
    expect(res.json?.error?.data?.[0]?.domain).not.toBe('a2a-guard');
    expect(guardian.calls()).toEqual([]);
    expect(agent.received.map((r) => r.body)).toEqual([custom]);
  });

  test('NON_A2A=forward still sends A2A methods through the guardian', async () => {
    const res = await rawRpc(`${open.url}/a2a/jsonrpc`, v03Send(3, 'open ok'));
    expect(res.json).toMatchObject({ id: 3, result: { kind: 'task' } });
    expect(guardian.calls().map((e) => e.method)).toEqual(['message/send']);
  });

  test.each(['Message/Send', 'message/send ', 'sendmessage', 'SEND_MESSAGE', 'tasks/Cancel', 'getTask'])(
    'near-miss A2A spelling %j is refused (-32601) under every NON_A2A, never forwarded',
    async (method) => {
      for (const p of [proxy, open]) {
        const res = await rawRpc(`${p.url}/a2a/jsonrpc`, { ...v03Send('nm', 'near miss'), method });
        expectRpcError(res, 'nm', -32601, 'REQUEST_REJECTED');
      }
      expect(guardian.calls()).toEqual([]);
      expect(agent.received).toEqual([]);
    },
  );

  test('an A2A JSON-RPC call on any path is inspected', async () => {
    guardian.script(() => DENY);
    for (const path of ['/', '/some/other/path', '/a2a/jsonrpc/extra']) {
      const res = await rawRpc(`${proxy.url}${path}`, v03Send('any', 'any path'));
      expectRpcError(res, 'any', -31403, 'GUARDIAN_DENIED');
    }
    expect(guardian.calls().map((e) => e.method)).toEqual(['message/send', 'message/send', 'message/send']);
    expect(agent.received).toEqual([]);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Raw-only operations: v0.3 tasks/list, extended card                                            */
/* ---------------------------------------------------------------------------------------------- */

describe('raw JSON-RPC tasks/list (v0.3 has none) and extended card', () => {
  const cases = [
    {
      name: 'v0.3 tasks/list',
      headers: {},
      body: { jsonrpc: '2.0', id: 'l-1', method: 'tasks/list', params: { pageSize: 2 } },
      aos: 'tasks/list',
      agentCode: -32601,
    },
    {
      name: 'v1 GetExtendedAgentCard',
      headers: { 'a2a-version': '1.0' },
      body: { jsonrpc: '2.0', id: 'e-1', method: 'GetExtendedAgentCard', params: {} },
      aos: 'agent/getAuthenticatedExtendedCard',
      agentCode: -32004,
    },
    {
      name: 'v0.3 agent/getAuthenticatedExtendedCard',
      headers: {},
      body: { jsonrpc: '2.0', id: 7, method: 'agent/getAuthenticatedExtendedCard' },
      aos: 'agent/getAuthenticatedExtendedCard',
      agentCode: -32004,
    },
  ];

  test.each(cases.map((c) => [c.name, c] as const))(
    "%s: allow -> envelope under the AOS name, forwarded, the agent's answer relayed with the caller's id",
    async (_n, c) => {
      const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, c.body, c.headers);
      const envs = guardian.calls();
      expect(envs.map((e) => e.method)).toEqual([c.aos]);
      expect(envs[0].params.payload).toEqual(c.body);
      expect(agent.received.map((r) => r.body)).toEqual([c.body]);
      expect(res.json).toMatchObject({ jsonrpc: '2.0', id: c.body.id, error: { code: c.agentCode } });
    },
  );

  test.each(cases.map((c) => [c.name, c] as const))("%s: deny -> -31403 with the caller's id, not forwarded", async (_n, c) => {
    guardian.script(() => DENY);
    const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, c.body, c.headers);
    expectRpcError(res, c.body.id, -31403, 'GUARDIAN_DENIED');
    expect(res.json.error.data[0].metadata.envelopeId).toBe(guardian.calls()[0].id);
    expect(agent.received).toEqual([]);
  });

  test.each(cases.map((c) => [c.name, c] as const))('%s: modify -> the agent receives the replacement', async (_n, c) => {
    const replacement = { ...c.body, params: { ...((c.body as { params?: object }).params ?? {}), tenant: 'guardian-chosen' } };
    guardian.script(() => ({ decision: 'modify', modifiedPayload: replacement }));
    const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, c.body, c.headers);
    expect(res.json.id).toBe(c.body.id);
    expect(agent.received.map((r) => r.body)).toEqual([replacement]);
  });
});
