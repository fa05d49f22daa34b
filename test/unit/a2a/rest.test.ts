/**
 * A2A HTTP+JSON routes (a2a/rest.ts), matched on the path below the agent's REST base: one meaning
 * or a refusal (every matching route must agree), custom verbs before bare ids, the SDK's version
 * fall-through, the tenant shown to the guardian, and the REST request rebuilt from the approved call.
 */
import type { JsonObject } from '../../../src/aos/schemas';
import {
  isLegacyVersion,
  jsonRpcToRest,
  looksLikeRest,
  matchRest,
  restHasBody,
  restToJsonRpc,
  type RestMatch,
  type RestRequestParts,
} from '../../../src/a2a/rest';

const V1 = '1.0';
const segs = (p: string): string[] => p.split('/').filter((s) => s !== '');

/** `version` omitted: A2A-Version 1.0; passed as undefined: no header. */
function match(verb: string, path: string, ...v: [version?: string]): RestMatch {
  const version = v.length === 0 ? V1 : v[0];
  const m = matchRest(verb, segs(path), version);
  if (m === undefined || 'ambiguous' in m) throw new Error(`expected one route for ${verb} ${path}, got ${JSON.stringify(m)}`);
  return m;
}

function call(m: RestMatch, query: [string, string][] = [], body?: JsonObject): JsonObject {
  const r = restToJsonRpc(m, query, body, 'id-1');
  if (typeof r === 'string') throw new Error(`expected a call, got: ${r}`);
  return r;
}

function parts(m: RestMatch, payload: JsonObject, ...v: [version?: string]): RestRequestParts {
  const r = jsonRpcToRest(m, payload, v.length === 0 ? V1 : v[0]);
  if (typeof r === 'string') throw new Error(`expected a rebuilt request, got: ${r}`);
  return r;
}

describe("isLegacyVersion (the SDK's rule: absent, empty, or in [0.3, 1.0))", () => {
  test.each([
    [undefined, true],
    ['', true],
    [' ', true],
    ['0.3', true],
    [' 0.3 ', true],
    ['0.3.1', true],
    ['0.9', true],
    ['0.10', true],
    ['0.3-beta', true],
    ['1.0', false],
    ['1', false],
    ['1.0.0', false],
    ['2.0', false],
    ['0.2', false],
    ['0', false],
    ['abc', false],
    ['0.x', false],
    ['v0.3', false],
  ])('%p -> %p', (v, want) => {
    expect(isLegacyVersion(v)).toBe(want);
  });
});

describe('matchRest: v1.0 routes, with and without a tenant', () => {
  test.each([
    ['POST', '/message:send', 'SendMessage', {}],
    ['POST', '/message:stream', 'SendStreamingMessage', {}],
    ['GET', '/tasks/abc', 'GetTask', { id: 'abc' }],
    ['GET', '/tasks', 'ListTasks', {}],
    ['POST', '/tasks/abc:cancel', 'CancelTask', { id: 'abc' }],
    ['GET', '/tasks/abc:subscribe', 'SubscribeToTask', { id: 'abc' }],
    ['POST', '/tasks/abc:subscribe', 'SubscribeToTask', { id: 'abc' }],
    ['POST', '/tasks/abc/pushNotificationConfigs', 'CreateTaskPushNotificationConfig', { taskId: 'abc' }],
    ['GET', '/tasks/abc/pushNotificationConfigs', 'ListTaskPushNotificationConfigs', { taskId: 'abc' }],
    ['GET', '/tasks/abc/pushNotificationConfigs/cfg', 'GetTaskPushNotificationConfig', { taskId: 'abc', id: 'cfg' }],
    ['DELETE', '/tasks/abc/pushNotificationConfigs/cfg', 'DeleteTaskPushNotificationConfig', { taskId: 'abc', id: 'cfg' }],
    ['GET', '/extendedAgentCard', 'GetExtendedAgentCard', {}],
  ])('%s %s -> %s %j, and below /{tenant}', (verb, path, op, params) => {
    const m = match(verb, path);
    expect(m.op.v1Method).toBe(op);
    expect(m.version).toBe('1.0');
    expect(m.pathParams).toEqual(params);
    expect(m.tenant).toBeUndefined();
    const t = match(verb, `/acme${path}`);
    expect(t.op).toBe(m.op);
    expect(t.pathParams).toEqual(params);
    expect(t.tenant).toBe('acme');
  });

  test('HEAD is the GET route; other verbs, extra or missing segments match nothing', () => {
    expect(match('HEAD', '/tasks/abc').op.v1Method).toBe('GetTask');
    expect(match('head', '/acme/tasks').op.v1Method).toBe('ListTasks');
    for (const [verb, path] of [
      ['PUT', '/tasks/abc'],
      ['PATCH', '/message:send'],
      ['GET', '/message:send'],
      ['POST', '/tasks/abc'],
      ['GET', '/tasks/a/b'],
      ['GET', '/a/b/tasks/c'],
      ['GET', '/'],
      ['DELETE', '/tasks/abc/pushNotificationConfigs'],
      ['POST', '/message:sendx'],
    ]) {
      expect(matchRest(verb as string, segs(path as string), V1)).toBeUndefined();
    }
  });

  test('literals ignore letter case (Express routes do); values keep theirs', () => {
    const m = match('GET', '/Acme/TASKS/AbC/PushNotificationConfigs/CfG');
    expect(m.op.v1Method).toBe('GetTaskPushNotificationConfig');
    expect(m.pathParams).toEqual({ taskId: 'AbC', id: 'CfG' });
    expect(m.tenant).toBe('Acme');
    expect(match('POST', '/MESSAGE:SEND').op.v1Method).toBe('SendMessage');
  });

  test('values are whatever the segment holds once decoded (spaces, unicode, "@", ":" inside)', () => {
    expect(match('GET', '/tasks/a b').pathParams).toEqual({ id: 'a b' });
    expect(match('GET', '/tasks/日本@x').pathParams).toEqual({ id: '日本@x' });
    expect(match('GET', '/tasks/a:b').pathParams).toEqual({ id: 'a:b' });
    expect(match('GET', '/x:cancel/tasks/b').tenant).toBe('x:cancel');
  });
});

describe('matchRest: every matching route must agree (router order is not a meaning)', () => {
  test.each([
    ['GET', '/tasks/extendedAgentCard', 'GetTask', 'GetExtendedAgentCard'],
    ['GET', '/tasks/tasks/pushNotificationConfigs', 'GetTask', 'ListTaskPushNotificationConfigs'],
    ['GET', '/tasks/tasks', 'GetTask', 'ListTasks'],
  ])('%s %s is ambiguous', (verb, path, a, b) => {
    const m = matchRest(verb, segs(path), V1);
    expect(m).toBeDefined();
    expect(m !== undefined && 'ambiguous' in m).toBe(true);
    if (m !== undefined && 'ambiguous' in m) {
      expect(m.ambiguous).toContain(a);
      expect(m.ambiguous).toContain(b);
    }
  });

  test('a path that reads one way only is not ambiguous, whatever words its values hold', () => {
    expect(match('GET', '/tasks/card').pathParams).toEqual({ id: 'card' });
    expect(match('GET', '/v1/tasks/extendedAgentCard').pathParams).toEqual({ id: 'extendedAgentCard' });
    expect(match('POST', '/tasks/tasks/pushNotificationConfigs').pathParams).toEqual({ taskId: 'tasks' });
    expect(match('GET', '/tasks/tasks/pushNotificationConfigs/x').pathParams).toEqual({ taskId: 'tasks', id: 'x' });
    expect(match('GET', '/x/tasks/tasks/pushNotificationConfigs').tenant).toBe('x');
  });
});

describe('matchRest: custom verbs win over bare ids', () => {
  test('a verb route is the verb, never the bare-id route with the verb in the id', () => {
    expect(match('POST', '/tasks/abc:cancel').op.v1Method).toBe('CancelTask');
    expect(match('GET', '/tasks/abc:subscribe').op.v1Method).toBe('SubscribeToTask');
    expect(match('POST', '/tasks/abc:Cancel').pathParams).toEqual({ id: 'abc' });
  });

  test.each([
    ['GET', '/tasks/abc:cancel'],
    ['GET', '/tasks/abc:CANCEL'],
    ['GET', '/tasks/abc:send'],
    ['GET', '/tasks/abc:stream'],
    ['GET', '/tasks/t/pushNotificationConfigs/cfg:cancel'],
    ['DELETE', '/tasks/t/pushNotificationConfigs/cfg:cancel'],
    ['DELETE', '/acme/tasks/t/pushNotificationConfigs/cfg:subscribe'],
    ['POST', '/tasks/:cancel'],
  ])("%s %s: an id ending in a verb matches no route (the agent's router served it as that id)", (verb, path) => {
    expect(matchRest(verb, segs(path), V1)).toBeUndefined();
    expect(matchRest(verb, segs(path), undefined)).toBeUndefined();
  });

  test('only the last segment carries a verb: an id further left may hold ":cancel"', () => {
    expect(match('GET', '/tasks/a:cancel/pushNotificationConfigs/b').pathParams).toEqual({ taskId: 'a:cancel', id: 'b' });
    expect(match('GET', '/tasks/abc:other').pathParams).toEqual({ id: 'abc:other' });
  });
});

describe("matchRest: the SDK's version fall-through (v0.3 table first when legacy, then v1.0)", () => {
  test.each([undefined, '', '0.3'])('A2A-Version %p: /v1/... are the v0.3 routes', (v) => {
    const m = match('GET', '/v1/tasks/abc', v);
    expect(m.version).toBe('0.3');
    expect(m.op.v1Method).toBe('GetTask');
    expect(m.tenant).toBeUndefined();
    expect(match('GET', '/v1/card', v).op.v1Method).toBe('GetExtendedAgentCard');
    expect(match('POST', '/v1/message:send', v).version).toBe('0.3');
  });

  test('legacy: a path the v0.3 table lacks falls through to v1.0 (GET /v1/tasks is ListTasks for tenant "v1")', () => {
    const m = match('GET', '/v1/tasks', undefined);
    expect(m.version).toBe('1.0');
    expect(m.op.v1Method).toBe('ListTasks');
    expect(m.tenant).toBe('v1');
    expect(match('GET', '/tasks/abc', undefined).version).toBe('1.0');
    expect(match('POST', '/acme/message:send', '0.3').tenant).toBe('acme');
  });

  test.each(['1.0', '2.0', 'abc'])('A2A-Version %p: only v1.0 routes; /v1 is a tenant', (v) => {
    const m = match('GET', '/v1/tasks/abc', v);
    expect(m.version).toBe('1.0');
    expect(m.tenant).toBe('v1');
    expect(matchRest('GET', segs('/v1/card'), v)).toBeUndefined();
  });
});

describe('looksLikeRest: anything some router could read as an A2A route, under any base', () => {
  test.each([
    ['/tasks'],
    ['/x/y/tasks/abc'],
    ['/v1/card'],
    ['/MESSAGE:SEND'],
    ['/api/message:stream'],
    ['/tasks/a/pushNotificationConfigs/cfg:cancel'],
    ['/a/tasks/b:cancel'],
    ['/extendedagentcard'],
    ['/a2a/rest/v1/tasks'],
  ])('%p reads as REST', (p) => {
    expect(looksLikeRest(segs(p))).toBe(true);
  });
  test.each([['/'], ['/healthz'], ['/static/app.js'], ['/api/message:sendx'], ['/a2a/jsonrpc'], ['/tasksx/abc'], ['/card']])('%p does not', (p) => {
    expect(looksLikeRest(segs(p))).toBe(false);
  });
});

describe('restToJsonRpc: the JSON-RPC request the guardian sees', () => {
  test('v1.0: the v1 method, body as params, path parameters and the path tenant added', () => {
    expect(call(match('POST', '/acme/message:send'), [], { message: { text: 'hi' } })).toEqual({
      jsonrpc: '2.0',
      id: 'id-1',
      method: 'SendMessage',
      params: { message: { text: 'hi' }, tenant: 'acme' },
    });
    expect(call(match('DELETE', '/tasks/t1/pushNotificationConfigs/c1'))).toEqual({
      jsonrpc: '2.0',
      id: 'id-1',
      method: 'DeleteTaskPushNotificationConfig',
      params: { taskId: 't1', id: 'c1' },
    });
    expect(restHasBody(match('POST', '/message:send'))).toBe(true);
    expect(restHasBody(match('GET', '/tasks/x'))).toBe(false);
  });

  test('v0.3: the v0.3 method name', () => {
    expect(call(match('POST', '/v1/tasks/abc:cancel', undefined)).method).toBe('tasks/cancel');
    expect(call(match('GET', '/v1/card', undefined)).method).toBe('agent/getAuthenticatedExtendedCard');
  });

  test('GET queries are params, typed as the SDK reads them', () => {
    expect(
      call(match('GET', '/tasks'), [
        ['pageSize', '2'],
        ['includeArtifacts', 'true'],
        ['historyLength', '007'],
        ['contextId', '12'],
        ['status', 'x'],
        ['page_size', 'big'],
      ]).params,
    ).toEqual({ pageSize: 2, includeArtifacts: true, historyLength: 7, contextId: '12', status: 'x', page_size: 'big' });
    expect(
      call(match('GET', '/tasks'), [
        ['historyLength', '1e3'],
        ['includeArtifacts', 'True'],
        ['pageSize', '9999999999999999'],
      ]).params,
    ).toEqual({ historyLength: '1e3', includeArtifacts: 'True', pageSize: '9999999999999999' });
  });

  test('a body or query field that names another task than the path is refused; the same value is one meaning', () => {
    expect(restToJsonRpc(match('POST', '/tasks/t1/pushNotificationConfigs'), [], { taskId: 't2' }, 'i')).toMatch(/body field "taskId" contradicts/);
    expect(restToJsonRpc(match('GET', '/tasks/t1'), [['id', 't2']], undefined, 'i')).toMatch(/query field "id" contradicts/);
    expect(call(match('POST', '/tasks/t1/pushNotificationConfigs'), [], { taskId: 't1', url: 'u' }).params).toEqual({ taskId: 't1', url: 'u' });
  });

  test('query parameters on a route that carries a body are refused (the guardian would not see them)', () => {
    expect(restToJsonRpc(match('POST', '/message:send'), [['configuration', 'x']], {}, 'i')).toMatch(/query parameter configuration is not accepted/);
  });

  describe('tenant contradictions', () => {
    test('body tenant against the path tenant (message, push-config creation)', () => {
      expect(restToJsonRpc(match('POST', '/restricted/message:send'), [], { tenant: 'public' }, 'i')).toMatch(/tenant "public" contradicts the path tenant/);
      expect(restToJsonRpc(match('POST', '/a/tasks/t/pushNotificationConfigs'), [], { tenant: 'b' }, 'i')).toMatch(/contradicts the path tenant/);
      expect(call(match('POST', '/restricted/message:send'), [], { tenant: 'restricted' }).params).toEqual({ tenant: 'restricted' });
    });

    test('query tenant against the path tenant (GET and DELETE routes)', () => {
      expect(restToJsonRpc(match('GET', '/t1/tasks/abc'), [['tenant', 't2']], undefined, 'i')).toMatch(/contradicts the path tenant/);
      expect(restToJsonRpc(match('DELETE', '/t1/tasks/a/pushNotificationConfigs/b'), [['tenant', '']], undefined, 'i')).toMatch(/contradicts the path tenant/);
      expect(call(match('GET', '/t1/tasks/abc'), [['tenant', 't1']]).params).toEqual({ tenant: 't1', id: 'abc' });
    });

    // Without a path tenant the SDK puts a body or query tenant in the request but not in the call's context: two tenants for one call.
    test.each([
      ['POST', '/message:send', 'body'],
      ['POST', '/tasks/t/pushNotificationConfigs', 'body'],
      ['GET', '/tasks/abc', 'query'],
      ['GET', '/tasks/abc:subscribe', 'query'],
      ['DELETE', '/tasks/a/pushNotificationConfigs/b', 'query'],
      ['GET', '/tasks', 'query'],
    ])('without a path tenant, %s %s refuses a %s tenant: the tenant comes from the path only', (verb, path, where) => {
      const r =
        where === 'body'
          ? restToJsonRpc(match(verb, path), [], { tenant: 'public' }, 'i')
          : restToJsonRpc(match(verb, path), [['tenant', 'public']], undefined, 'i');
      expect(r).toMatch(/takes its tenant from the path only \(\/\{tenant\}\//);
      // The same call with the tenant in the path is judged for that tenant.
      const ok = where === 'body' ? call(match(verb, `/public${path}`), [], { tenant: 'public' }) : call(match(verb, `/public${path}`), [['tenant', 'public']]);
      expect((ok.params as JsonObject).tenant).toBe('public');
    });

    // The SDK reads the tenant of POST cancel/subscribe from the query, the spec from the body: only the path is unambiguous.
    test.each(['/tasks/abc:cancel', '/tasks/abc:subscribe'])('POST %s takes its tenant from the path only', (path) => {
      expect(restToJsonRpc(match('POST', path), [], { tenant: 'x' }, 'i')).toMatch(/takes its tenant from the path only/);
      expect(restToJsonRpc(match('POST', path), [['tenant', 'x']], undefined, 'i')).toMatch(/query parameter tenant is not accepted/);
      expect(call(match('POST', `/x${path}`), [], { tenant: 'x' }).params).toEqual({ tenant: 'x', id: 'abc' });
      expect(restToJsonRpc(match('POST', `/x${path}`), [], { tenant: 'y' }, 'i')).toMatch(/contradicts the path tenant/);
    });

    test('v0.3 routes take no tenant at all', () => {
      expect(restToJsonRpc(match('GET', '/v1/tasks/abc', undefined), [['tenant', 'x']], undefined, 'i')).toBe('v0.3 REST routes take no tenant');
      expect(restToJsonRpc(match('POST', '/v1/message:send', undefined), [], { tenant: 'x' }, 'i')).toBe('v0.3 REST routes take no tenant');
    });
  });
});

describe('jsonRpcToRest: the REST request rebuilt from the approved call', () => {
  test('path from the route template, the path tenant first, values encoded canonically', () => {
    const m = match('GET', '/t é/tasks/a:b c/pushNotificationConfigs/x@y');
    const p = parts(m, call(m));
    expect(p).toEqual({ path: '/t%20%C3%A9/tasks/a:b%20c/pushNotificationConfigs/x@y', search: '', body: null });
  });

  test('GET: the other params become the query; numbers and booleans as text, null dropped', () => {
    const m = match('GET', '/tasks');
    const p = parts(m, { jsonrpc: '2.0', id: 'i', method: 'ListTasks', params: { pageSize: 2, includeArtifacts: true, contextId: 'a&b', status: null } });
    expect(p).toEqual({ path: '/tasks', search: '?pageSize=2&includeArtifacts=true&contextId=a%26b', body: null });
  });

  test('POST: the other params are the JSON body; the path tenant is in the path only', () => {
    const m = match('POST', '/message:send');
    const p = parts(m, call(m, [], { message: { text: 'hi' }, configuration: { blocking: true } }));
    expect(p.path).toBe('/message:send');
    expect(JSON.parse(p.body!.toString('utf8'))).toEqual({ message: { text: 'hi' }, configuration: { blocking: true } });
    const t = match('POST', '/acme/message:send');
    expect(parts(t, call(t, [], { message: {}, tenant: 'acme' })).path).toBe('/acme/message:send');
    expect(JSON.parse(parts(t, call(t, [], { message: {}, tenant: 'acme' })).body!.toString('utf8'))).toEqual({ message: {} });
  });

  test('no body where nothing is left (cancel), but "{}" for a message call', () => {
    const cancel = match('POST', '/tasks/abc:cancel');
    expect(parts(cancel, call(cancel)).body).toBeNull();
    const send = match('POST', '/message:send');
    expect(parts(send, call(send)).body?.toString('utf8')).toBe('{}');
  });

  test('a modify may rewrite content: it reaches the rebuilt body or query', () => {
    const m = match('POST', '/acme/message:send');
    const approved = call(m, [], { message: { text: 'molotov' } });
    const modified = { ...approved, params: { ...(approved.params as JsonObject), message: { text: '[redacted]' } } };
    expect(JSON.parse(parts(m, modified).body!.toString('utf8'))).toEqual({ message: { text: '[redacted]' } });
    const g = match('GET', '/tasks/abc');
    expect(parts(g, { ...call(g), params: { id: 'abc', historyLength: 1 } }).search).toBe('?historyLength=1');
  });

  test('a modify may not re-target the call: path parameters and the path tenant are fixed', () => {
    const m = match('GET', '/acme/tasks/t1/pushNotificationConfigs/c1');
    const p = call(m).params as JsonObject;
    expect(jsonRpcToRest(m, { params: { ...p, taskId: 't2' } }, V1)).toBe('modify changed the path parameter taskId');
    expect(jsonRpcToRest(m, { params: { ...p, id: undefined } as unknown as JsonObject }, V1)).toBe('modify changed the path parameter id');
    expect(jsonRpcToRest(m, { params: { ...p, tenant: 'other' } }, V1)).toBe('modify changed the path tenant');
    const { tenant: _t, ...noTenant } = p;
    expect(jsonRpcToRest(m, { params: noTenant }, V1)).toBe('modify changed the path tenant');
    expect(jsonRpcToRest(m, { params: [] as unknown as JsonObject }, V1)).toBe('request has no params object');
    expect(jsonRpcToRest(m, {}, V1)).toBe('request has no params object');
  });

  test('the rebuilt path is matched again and must be the same call', () => {
    // Matches that classification never produces (a value the path could not carry) are refused, not sent.
    const get = match('GET', '/tasks/abc');
    const forged = (id: string): RestMatch => ({ ...get, pathParams: { id } });
    expect(jsonRpcToRest(forged('extendedAgentCard'), { params: { id: 'extendedAgentCard' } }, V1)).toBe('the rebuilt path would mean another call');
    expect(jsonRpcToRest(forged('abc:cancel'), { params: { id: 'abc:cancel' } }, V1)).toBe('the rebuilt path would mean another call');
    // A v0.3 call rebuilt under another A2A-Version would be read from the v1.0 table (tenant "v1").
    const legacy = match('GET', '/v1/tasks/abc', undefined);
    expect(jsonRpcToRest(legacy, call(legacy), '1.0')).toBe('the rebuilt path would mean another call');
    expect(parts(legacy, call(legacy), undefined).path).toBe('/v1/tasks/abc');
  });

  test('rebuild then match gives the same route, parameters and tenant', () => {
    for (const [verb, path, v] of [
      ['GET', '/v1/tasks', undefined],
      ['POST', '/v1/tasks/x:subscribe', '0.3'],
      ['DELETE', '/t/tasks/a:cancel/pushNotificationConfigs/b', V1],
      ['HEAD', '/tasks/x', V1],
    ] as const) {
      const m = match(verb, path, v);
      const p = parts(m, call(m), v);
      const again = matchRest(verb, segs(decodeURIComponent(p.path)), v);
      expect(again).toEqual(m);
    }
  });
});
