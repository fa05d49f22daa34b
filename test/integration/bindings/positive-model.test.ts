/**
 * The positive model (what the agent reads is what the guardian saw), against a real SDK agent: each example of the bypass class that
 * was found (a charset the agent decodes differently, a REST custom-verb suffix, a Connection
 * header removing A2A-Version, a tenant the guardian never saw), unknown traffic refused by default
 * and PASSTHROUGH_PATHS, the binding's standard refusal codes compared with the SDK agent's own
 * answers, the in-flight body budget, stacked codings, proxy-owned header spellings and the card's
 * cache headers. Every case asserts what the agent received and what the caller saw.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import { makeClient, sendReq, type TestAgent } from '../../helpers/agent';
import type { GuardianReply, TestGuardian } from '../../helpers/guardian';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';
import { exchange } from '../../helpers/wire';

jest.setTimeout(60_000);

const stack = useStack({ pushNotifications: true });
let agent: TestAgent;
let guardian: TestGuardian;
let proxy: TestProxy;
let task: string;

const DENY: GuardianReply = { decision: 'deny', message: 'no', reasonCode: ['NO'] };
const ALLOW: GuardianReply = { decision: 'allow' };
const V1 = { 'a2a-version': '1.0' };

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

function send(base: string, method: string, path: string, opts: { headers?: Record<string, string>; body?: Buffer | string | object } = {}): Promise<Reply> {
  const body =
    opts.body === undefined
      ? undefined
      : Buffer.isBuffer(opts.body)
        ? opts.body
        : Buffer.from(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body));
  const headers: Record<string, string | number> = {
    ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': body.length }),
    ...opts.headers,
  };
  return new Promise((resolve, reject) => {
    const u = new URL(base);
    const r = http.request({ host: u.hostname, port: u.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    r.on('error', reject);
    r.end(body);
  });
}

const v03Send = (id: unknown, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${text}-${Math.random()}`, role: 'user', parts: [{ kind: 'text', text }] } },
});
const v1Body = (text: string, extra: object = {}) => ({ message: { messageId: `r-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] }, ...extra });

function proxyInfo(r: Reply): unknown[] {
  return (r.status === 200 ? r.json?.error?.data : r.json?.error?.details) ?? [];
}
function expectRefused(r: Reply): void {
  expect(proxyInfo(r)).toEqual(expect.arrayContaining([expect.objectContaining({ reason: 'REQUEST_REJECTED', domain: 'a2a-guard' })]));
}
const a2aCalls = () => agent.received.filter((r) => r.path.startsWith('/a2a/'));

beforeAll(async () => {
  ({ agent, guardian } = stack);
  proxy = await stack.proxy({ ROLE: 'server' });
  await proxy.upstreamCard.ready();
  const direct = await makeClient(agent.origin, 'JSONRPC', '1.0');
  task = ((await direct.sendMessage(sendReq('setup'))) as { id: string }).id;
  await direct.createTaskPushNotificationConfig({
    tenant: '',
    id: 'cfg',
    taskId: task,
    url: 'https://hooks.example/cfg',
    token: '',
    authentication: undefined,
  });
});

beforeEach(() => {
  agent.received.length = 0;
});

describe('the examples of the bypass class, each closed', () => {
  test('charset=utf-7: refused (the agent would decode "+AG0-essage/send" into message/send)', async () => {
    for (const method of ['+AG0-essage/send', 'message/send']) {
      const r = await send(proxy.url, 'POST', '/a2a/jsonrpc', {
        body: { ...v03Send(1, '+AG0-olotov'), method },
        headers: { 'content-type': 'application/json; charset=utf-7' },
      });
      expectRefused(r);
    }
    expect(guardian.calls()).toEqual([]);
    expect(agent.received).toEqual([]);
  });

  test.each(['GET', 'DELETE'])('%s /tasks/{t}/pushNotificationConfigs/cfg:cancel: refused, the config is neither read nor deleted', async (verb) => {
    guardian.script(() => ALLOW);
    const r = await send(proxy.url, verb, `/a2a/rest/tasks/${task}/pushNotificationConfigs/cfg:cancel`, { headers: V1 });
    expect(r.status).toBe(404);
    expectRefused(r);
    expect(agent.received).toEqual([]);
  });

  test('Connection: a2a-version cannot remove the header classification read: refused', async () => {
    guardian.script(() => DENY);
    const r = await send(proxy.url, 'GET', '/a2a/rest/v1/card', { headers: { ...V1, connection: 'a2a-version' } });
    expect(r.status).toBe(400);
    expectRefused(r);
    expect(agent.received).toEqual([]);
  });

  test('the path tenant is what the guardian judges; a body tenant that contradicts it is refused', async () => {
    guardian.script(() => DENY);
    const contradicted = await send(proxy.url, 'POST', '/a2a/rest/restricted/message:send', { headers: V1, body: v1Body('hi', { tenant: 'public' }) });
    expect(contradicted.status).toBe(400);
    expectRefused(contradicted);
    expect(guardian.calls()).toEqual([]);

    const judged = await send(proxy.url, 'POST', '/a2a/rest/restricted/message:send', { headers: V1, body: v1Body('hi') });
    expect(judged.status).toBe(403);
    expect(guardian.calls().map((e) => e.params.payload.params.tenant)).toEqual(['restricted']);
    expect(agent.received).toEqual([]);

    // Without a path tenant, a body or query tenant would be two tenants to the SDK (request vs call context): refused.
    for (const [verb, path, body] of [
      ['POST', '/a2a/rest/message:send', v1Body('x', { tenant: 'public' })],
      ['GET', `/a2a/rest/tasks/${task}?tenant=public`, undefined],
    ] as const) {
      const r = await send(proxy.url, verb, path, { headers: V1, ...(body === undefined ? {} : { body }) });
      expect(r.status).toBe(400);
      expectRefused(r);
    }
    expect(guardian.calls()).toHaveLength(1);

    guardian.clear();
    guardian.script(() => ALLOW);
    await send(proxy.url, 'POST', '/a2a/rest/restricted/message:send', { headers: V1, body: v1Body('hi again') });
    // What reached the agent is the route the proxy rebuilt, for the tenant the guardian saw.
    expect(a2aCalls().map((c) => c.path)).toEqual(['/a2a/rest/restricted/message:send']);
    expect(guardian.calls().map((e) => e.params.payload.params.tenant)).toEqual(['restricted']);
  });
});

describe('a body field that names another task than the path', () => {
  test('v0.3 REST push config set: a body `name` for another task (which the SDK router would use) is refused', async () => {
    guardian.script(() => ALLOW);
    const r = await send(proxy.url, 'POST', `/a2a/rest/v1/tasks/${task}/pushNotificationConfigs`, {
      body: { name: 'tasks/other-task/pushNotificationConfigs/c9', pushNotificationConfig: { id: 'c9', url: 'https://hooks.example/c9' } },
    });
    expect(r.status).toBe(400);
    expectRefused(r);
    expect(guardian.calls()).toEqual([]);
    expect(agent.received).toEqual([]);
  });
});

describe('unknown traffic is refused by default; PASSTHROUGH_PATHS lets listed routes through, counted', () => {
  test("a route the agent serves that is not A2A: 404 with the proxy's ErrorInfo, nothing forwarded", async () => {
    for (const [verb, path] of [
      ['GET', '/admin/users'],
      ['POST', '/webhook'],
      ['GET', '/'],
      ['PUT', '/a2a/rest/anything'],
    ]) {
      const r = await send(proxy.url, verb as string, path as string, verb === 'GET' ? {} : { body: { x: 1 } });
      expect(r.status === 404 || (r.status === 200 && r.json?.error?.code !== undefined)).toBe(true);
      expectRefused(r);
    }
    expect(agent.received).toEqual([]);
  });

  test('a listed prefix is forwarded unjudged and counted; it never opens an A2A endpoint', async () => {
    const p = await stack.proxy({ ROLE: 'server', PASSTHROUGH_PATHS: '/admin,/a2a' });
    await p.upstreamCard.ready();
    guardian.script(() => DENY);
    const r = await send(p.url, 'GET', '/admin/users?x=1');
    expect(r.status).toBe(404); // the agent's own answer (it serves no /admin)
    expect(proxyInfo(r)).toEqual([]);
    expect(agent.received.map((x) => x.path).filter((x) => !x.includes('.well-known'))).toEqual(['/admin/users?x=1']);
    expect(await p.metrics.registry.metrics()).toMatch(/a2a_guard_requests_total\{operation="passthrough",outcome="forwarded"\} 1/);

    agent.received.length = 0;
    // "/a2a" covers the agent's A2A endpoints: a call there is still judged, an unmatched REST path still refused.
    expect((await send(p.url, 'POST', '/a2a/jsonrpc', { body: v03Send(1, 'judged') })).json?.error?.code).toBe(-31403);
    expectRefused(await send(p.url, 'GET', '/a2a/rest/tasks/x/unknown', { headers: V1 }));
    expect(agent.received).toEqual([]);
  });
});

describe("refusals in the binding's own terms, as the SDK agent answers the same request", () => {
  const cases: [string, string, Record<string, string>, Buffer | string | object][] = [
    ['parse error', '/a2a/jsonrpc', {}, '{"jsonrpc":"2.0",'],
    ['unsupported content type', '/a2a/jsonrpc', { 'content-type': 'text/plain' }, v03Send(1, 'x')],
    ['unknown method', '/a2a/jsonrpc', {}, { jsonrpc: '2.0', id: 9, method: 'tasks/destroy', params: {} }],
    // The A2A TCK's JSONRPC-SSE-002 case: the SDK checks the media type before it parses, so this is -32005, not -32700.
    [
      'unsupported content type, body not JSON (v1.0)',
      '/a2a/jsonrpc',
      { ...V1, 'content-type': 'text/plain' },
      "{'jsonrpc': '2.0', 'id': 1, 'method': 'SendMessage'}",
    ],
    [
      'unsupported content type, body not JSON (v0.3)',
      '/a2a/jsonrpc',
      { 'content-type': 'text/plain' },
      "{'jsonrpc': '2.0', 'id': 1, 'method': 'message/send'}",
    ],
    [
      'unsupported content type, unknown method',
      '/a2a/jsonrpc',
      { ...V1, 'content-type': 'text/plain' },
      { jsonrpc: '2.0', id: 9, method: 'tasks/destroy', params: {} },
    ],
    [
      'unsupported content type, not JSON-RPC 2.0',
      '/a2a/jsonrpc',
      { ...V1, 'content-type': 'text/plain' },
      { jsonrpc: '1.0', id: 9, method: 'GetTask', params: { id: 'x' } },
    ],
    ['unsupported content type, a batch', '/a2a/jsonrpc', { 'content-type': 'text/plain' }, [v03Send(1, 'x')]],
  ];
  test.each(cases)("%s: same JSON-RPC code as the agent, plus the proxy's ErrorInfo", async (_name, path, headers, body) => {
    const direct = await send(agent.origin, 'POST', path, { headers, body });
    const via = await send(proxy.url, 'POST', path, { headers, body });
    expect(direct.json?.error?.code).toEqual(expect.any(Number));
    expect(via.status).toBe(direct.status);
    expect(via.json?.error?.code).toBe(direct.json?.error?.code);
    // The caller's id wherever its body could be read (the SDK agent answers -32005 with null, before it reads the body).
    const sent = typeof body === 'object' && !Array.isArray(body) && !Buffer.isBuffer(body) ? ((body as { id?: unknown }).id ?? null) : null;
    expect(via.json?.id).toEqual(sent);
    expectRefused(via);
  });

  test('REST: unsupported content type is HTTP 400 CONTENT_TYPE_NOT_SUPPORTED as the agent answers; unknown REST route is 404', async () => {
    const headers = { ...V1, 'content-type': 'text/plain' };
    const direct = await send(agent.origin, 'POST', '/a2a/rest/message:send', { headers, body: v1Body('x') });
    const via = await send(proxy.url, 'POST', '/a2a/rest/message:send', { headers, body: v1Body('x') });
    expect(via.status).toBe(direct.status);
    expect(via.json?.error?.details?.[0]?.reason).toBe(direct.json?.error?.details?.[0]?.reason);
    expectRefused(via);
    // A body that is not JSON under a refused media type: the SDK's content-type guard answers before its parser.
    const notJson = await send(agent.origin, 'POST', '/a2a/rest/message:send', { headers, body: "{'message': 1}" });
    const notJsonVia = await send(proxy.url, 'POST', '/a2a/rest/message:send', { headers, body: "{'message': 1}" });
    expect(notJson.json?.error?.details?.[0]?.reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
    expect(notJsonVia.status).toBe(notJson.status);
    expect(notJsonVia.json?.error?.details?.[0]?.reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
    expectRefused(notJsonVia);
    const nf = await send(proxy.url, 'GET', '/a2a/rest/tasks/x/nothing', { headers: V1 });
    expect(nf.status).toBe(404);
    expect(nf.json?.error?.status).toBe('NOT_FOUND');
  });
});

describe('bounded work per request', () => {
  test('a stack of content codings is refused before it is decoded', async () => {
    let b = Buffer.from(JSON.stringify(v03Send(1, 'x')));
    for (let i = 0; i < 50; i++) b = zlib.gzipSync(b, { level: 0 });
    const r = await send(proxy.url, 'POST', '/a2a/jsonrpc', { body: b, headers: { 'content-encoding': Array(50).fill('gzip').join(', ') } });
    expectRefused(r);
    expect(agent.received).toEqual([]);
  });

  test('over MAX_INFLIGHT_BODY_BYTES: "overloaded" (-31429, HTTP 503) at once; the budget is returned when calls end', async () => {
    const p = await stack.proxy({ ROLE: 'server', MAX_INFLIGHT_BODY_BYTES: String(200 * 1024) });
    await p.upstreamCard.ready();
    guardian.script(() => ({ decision: 'allow', delayMs: 800 }));
    const big = (id: number) => v03Send(id, 'x'.repeat(30 * 1024)); // ~60 KiB on the wire (the text is also in the messageId)
    const first = send(p.url, 'POST', '/a2a/jsonrpc', { body: big(1) });
    await new Promise((r) => setTimeout(r, 200)); // the first call is waiting on the guardian, its body held
    const second = await send(p.url, 'POST', '/a2a/jsonrpc', { body: big(2) });
    expect(second.status).toBe(503);
    expect(second.json?.error?.code).toBe(-31429);
    expect(second.json?.error?.data?.[0]?.reason).toBe('PROXY_OVERLOADED');
    const firstReply = await first;
    expect({ status: firstReply.status, text: firstReply.text.slice(0, 300) }).toEqual({ status: 200, text: expect.stringContaining('"result"') });
    guardian.script(() => ALLOW);
    expect((await send(p.url, 'POST', '/a2a/jsonrpc', { body: big(3) })).json?.result).toBeDefined();
  });
});

describe('proxy-owned headers in every spelling, and what the agent receives', () => {
  test("X_AOS_Reasoning, x_aos_unchecked and X-AOS-* never reach the agent; Content-Type and A2A-Version are the proxy's", async () => {
    guardian.script(() => ALLOW);
    await send(proxy.url, 'POST', '/a2a/jsonrpc', {
      body: v03Send(1, 'hdr'),
      headers: { x_aos_reasoning: 'secret plan', x_aos_unchecked: 'true', 'x-aos-whatever': '1', 'content-type': 'application/json; charset=UTF-8' },
    });
    const got = a2aCalls();
    expect(got).toHaveLength(1);
    expect(Object.keys(got[0]?.headers ?? {}).filter((h) => /aos/i.test(h))).toEqual([]);
    expect(got[0]?.headers['content-type']).toBe('application/json');
    expect(got[0]?.headers['a2a-version']).toBeUndefined();
  });
});

describe('the agent card', () => {
  test('without PUBLIC_URL the rewritten card is private and varies on Host; HEAD answers the rewritten length and ETag', async () => {
    const get = await send(proxy.url, 'GET', '/.well-known/agent-card.json');
    const head = await send(proxy.url, 'HEAD', '/.well-known/agent-card.json');
    expect(get.status).toBe(200);
    // Private (rewritten for this Host), with the agent's own freshness: the SDK agent sends `public, max-age=3600`
    // (the A2A TCK's CARD-CACHE-001 asks for max-age).
    const direct = await send(agent.origin, 'GET', '/.well-known/agent-card.json');
    expect(direct.headers['cache-control']).toBe('public, max-age=3600');
    expect(get.headers['cache-control']).toBe('private, max-age=3600');
    expect(String(get.headers.vary)).toMatch(/host/i);
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.text)));
    expect(head.headers.etag).toBe(get.headers.etag);
    expect(head.text).toBe('');
  });

  test("with PUBLIC_URL the card is the same for every Host: the agent's cache headers are kept", async () => {
    const p = await stack.proxy({ ROLE: 'server', PUBLIC_URL: 'https://agents.example/' });
    const get = await send(p.url, 'GET', '/.well-known/agent-card.json');
    expect(get.headers['cache-control']).not.toMatch(/private/);
    expect(get.text).toContain('https://agents.example/');
  });
});

describe('a request whose body is sent without a length (found by the differential search, DIFF_SEED=253751651)', () => {
  // The request parses with an empty body; its body bytes then fail to parse as the next request. Node's
  // clientError used to answer "400" at once, while the first request was still being judged: the caller took the
  // 400 as its answer, and the guardian's approval then sent the request on to the agent. Now answers keep their
  // order: the answer to the request as parsed comes first (the 400 and the close after it).
  test.each([
    [
      'REST v0.3 push-config set',
      `/a2a/rest/v1/tasks/TASK/pushNotificationConfigs`,
      (t: string) => ({ name: `tasks/${t}/pushNotificationConfigs/c`, pushNotificationConfig: { url: 'https://hooks.example/x' } }),
    ],
    ['JSON-RPC message/send', '/a2a/jsonrpc', () => v03Send(1, 'no length')],
  ])(
    '%s: the caller gets the answer to the request as parsed, never a 400 in its place; the agent acts only on what was approved',
    async (_name, target, body) => {
      guardian.clear();
      const bytes = Buffer.from(JSON.stringify(body(task)), 'utf8');
      const out = await exchange(
        Number(new URL(proxy.url).port),
        {
          verb: 'POST',
          target: target.replace('TASK', task),
          headers: [
            ['Host', '127.0.0.1'],
            ['Content-Type', 'application/json'],
            ['Accept', 'application/json'],
          ],
          body: bytes,
        },
        10_000,
      );
      expect(out.kind).toBe('answer');
      if (out.kind === 'answer') {
        expect(out.status === 400 && out.body.length === 0).toBe(false);
        expect(out.body.length).toBeGreaterThan(0);
      }
      await new Promise((r) => setTimeout(r, 300));
      expect(a2aCalls().length).toBeLessThanOrEqual(guardian.approved().length);
    },
  );
});
