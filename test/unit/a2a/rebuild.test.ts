/**
 * The request the agent receives is built by the proxy from the approved call (a2a/rebuild.ts):
 * nothing of the caller's bytes is relayed. Classified with the options the proxy derives from an
 * SDK agent's card, then rebuilt from the payload the guardian saw or its modified replacement.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { classify, type HttpRequestFacts } from '../../../src/a2a/classify';
import { rebuildRequest, type RebuiltRequest } from '../../../src/a2a/rebuild';
import type { JsonObject } from '../../../src/aos/schemas';
import { A2A_OPTIONS, classifyOptions, expectA2a, type A2ACall } from '../../helpers/classify';

const JSON_CT: IncomingHttpHeaders = { 'content-type': 'application/json' };
const V1: IncomingHttpHeaders = { 'a2a-version': '1.0' };

function a2a(
  r: Partial<Omit<HttpRequestFacts, 'body'>> & { body?: string | Buffer | null },
  aos: string,
  binding: 'jsonrpc' | 'rest',
  opts = A2A_OPTIONS,
): A2ACall {
  const body = r.body === undefined || r.body === null ? null : Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body);
  return expectA2a(classify({ verb: 'POST', path: '/a2a/jsonrpc', headers: JSON_CT, ...r, body }, opts), aos, binding);
}

function rebuilt(c: A2ACall, verb: string, payload: JsonObject = c.request): RebuiltRequest {
  const r = rebuildRequest(c, verb, payload, JSON.stringify(payload));
  if (typeof r === 'string') throw new Error(`expected a rebuilt request, got: ${r}`);
  return r;
}

describe('JSON-RPC', () => {
  test('the approved JSON as the body, POST, on the canonical path, the A2A-Version it was read under', () => {
    const raw = '{ "jsonrpc" : "2.0", "id" : 1, "method" : "message/send", "params" : {"message": {"text": "\\u0068i"}}, "extra": true }';
    const c = a2a(
      { path: '/a2a/%6Asonrpc/?A2A-Version=0.3', headers: { 'content-type': 'application/json; charset=utf-8', 'a2a-version': '0.3' }, body: raw },
      'message/send',
      'jsonrpc',
    );
    const r = rebuilt(c, 'POST');
    expect(r).toEqual({
      verb: 'POST',
      path: '/a2a/jsonrpc/',
      body: Buffer.from('{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"text":"hi"}},"extra":true}'),
      version: '0.3',
    });
  });

  test("a modify is held to the rules the caller's request passed: members beside the four are carried, misspelled or unsafe ones are not", () => {
    const c = a2a(
      { body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { text: 'hi' } }, context: { userId: 'u1' } }) },
      'message/send',
      'jsonrpc',
    );
    const carried = { ...c.request, context: { userId: 'u2' }, added: 1 };
    expect(rebuilt(c, 'POST', carried).body?.toString('utf8')).toBe(JSON.stringify(carried));
    const problems: Array<[JsonObject, RegExp]> = [
      [{ ...c.request, Params: {} }, /member names must be exact \(Params\)/],
      [{ ...c.request, i_d: 2 }, /member names must be exact \(i_d\)/],
      [{ ...c.request, result: {} }, /carries no result member/],
      [JSON.parse(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{},"__proto__":{"context":{}}}`) as JsonObject, /__proto__ is not accepted/],
      [{ ...c.request, context: { userId: 'u2', UserId: 'u3' } }, /Ambiguous member names in context \(UserId\)/],
    ];
    for (const [payload, why] of problems) expect(rebuildRequest(c, 'POST', payload, JSON.stringify(payload))).toMatch(why);
  });

  test('the body is exactly the serialization the guardian saw (made once, reused)', () => {
    const c = a2a(
      { body: JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'SendMessage', params: { message: { text: 'molotov' } } }) },
      'message/send',
      'jsonrpc',
    );
    const modified = { ...c.request, params: { message: { text: '[redacted]' } } };
    const seen = JSON.stringify(modified);
    const r = rebuildRequest(c, 'POST', modified, seen);
    expect(typeof r === 'string' ? r : r.body?.toString('utf8')).toBe(seen);
  });

  test('no A2A-Version when the caller sent none', () => {
    expect(
      rebuilt(a2a({ body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 't' } }) }, 'tasks/get', 'jsonrpc'), 'POST').version,
    ).toBeUndefined();
  });
});

describe('REST', () => {
  test('path from the route template below the REST base, body from the approved params (path params and path tenant taken out)', () => {
    const c = a2a(
      {
        path: '/A2A/REST/acme/MESSAGE:SEND',
        headers: { ...V1, 'content-type': 'application/a2a+json' },
        body: JSON.stringify({ message: { text: 'hi' }, tenant: 'acme' }),
      },
      'message/send',
      'rest',
    );
    expect(c.request.params).toEqual({ message: { text: 'hi' }, tenant: 'acme' });
    const r = rebuilt(c, 'POST');
    expect(r.verb).toBe('POST');
    expect(r.path).toBe('/a2a/rest/acme/message:send');
    expect(JSON.parse(r.body!.toString('utf8'))).toEqual({ message: { text: 'hi' } });
    expect(r.version).toBe('1.0');
  });

  test('GET: the query rebuilt from the params, re-encoded; A2A-Version travels as the header only', () => {
    const c = a2a(
      { verb: 'GET', path: '/a2a/rest/t%201/tasks/a%3Ab?historyLength=007&A2A-Version=1.0&contextId=x+y', headers: V1, body: null },
      'tasks/get',
      'rest',
    );
    expect(rebuilt(c, 'GET')).toEqual({ verb: 'GET', path: '/a2a/rest/t%201/tasks/a:b?historyLength=7&contextId=x%20y', body: null, version: '1.0' });
  });

  test('HEAD stays HEAD (the agent runs the GET route and sends no body)', () => {
    const c = a2a({ verb: 'HEAD', path: '/a2a/rest/tasks/abc', headers: V1, body: null }, 'tasks/get', 'rest');
    expect(rebuilt(c, 'HEAD').verb).toBe('HEAD');
  });

  test('v0.3 routes stay v0.3 routes; no A2A-Version stays none', () => {
    const c = a2a({ path: '/a2a/rest/v1/tasks/abc:cancel', headers: {}, body: null }, 'tasks/cancel', 'rest');
    expect(c.request.method).toBe('tasks/cancel');
    expect(rebuilt(c, 'POST')).toEqual({ verb: 'POST', path: '/a2a/rest/v1/tasks/abc:cancel', body: null, version: undefined });
  });

  test('GET /v1/tasks without A2A-Version is ListTasks for tenant "v1" (the SDK falls through to v1.0), rebuilt so', () => {
    const c = a2a({ verb: 'GET', path: '/a2a/rest/v1/tasks', headers: {}, body: null }, 'tasks/list', 'rest');
    expect(c.request.params).toEqual({ tenant: 'v1' });
    expect(rebuilt(c, 'GET').path).toBe('/a2a/rest/v1/tasks');
  });

  test('a REST base at the upstream root rebuilds without a double slash', () => {
    const opts = classifyOptions({ endpoints: { rest: [[]], jsonrpc: [['rpc']] } });
    const c = a2a({ verb: 'GET', path: '/tasks/abc', headers: V1, body: null }, 'tasks/get', 'rest', opts);
    expect(rebuilt(c, 'GET').path).toBe('/tasks/abc');
  });

  test('a modify that re-targets the call is refused, a content change goes through', () => {
    const c = a2a(
      {
        path: '/a2a/rest/restricted/tasks/t1/pushNotificationConfigs',
        headers: { ...V1, ...JSON_CT },
        body: JSON.stringify({ url: 'https://hooks.example/a' }),
      },
      'tasks/pushNotificationConfig/set',
      'rest',
    );
    const p = c.request.params as JsonObject;
    expect(rebuildRequest(c, 'POST', { ...c.request, params: { ...p, tenant: 'public' } }, '')).toBe('modify changed the path tenant');
    expect(rebuildRequest(c, 'POST', { ...c.request, params: { ...p, taskId: 't2' } }, '')).toBe('modify changed the path parameter taskId');
    const r = rebuilt(c, 'POST', { ...c.request, params: { ...p, url: 'https://hooks.example/safe' } });
    expect(r.path).toBe('/a2a/rest/restricted/tasks/t1/pushNotificationConfigs');
    expect(JSON.parse(r.body!.toString('utf8'))).toEqual({ url: 'https://hooks.example/safe' });
  });

  test('rebuilding what was rebuilt gives the same request (canonical)', () => {
    const c = a2a({ verb: 'GET', path: '/a2a/rest/%C3%A9/tasks?pageSize=02&includeArtifacts=true', headers: V1, body: null }, 'tasks/list', 'rest');
    const once = rebuilt(c, 'GET');
    const again = a2a({ verb: once.verb, path: once.path, headers: V1, body: null }, 'tasks/list', 'rest');
    expect(again.request.params).toEqual(c.request.params);
    expect(rebuilt(again, 'GET')).toEqual(once);
  });
});
