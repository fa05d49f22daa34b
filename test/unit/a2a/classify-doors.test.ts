/**
 * Known doors: request targets, headers and JSON member names that some
 * servers read differently from the proxy. Each must be refused (or judged), never forwarded
 * unjudged, whatever PASSTHROUGH_PATHS or NON_A2A say.
 */
import { classify, CLASSIFYING_HEADERS, type ClassifyOptions, type Classified } from '../../../src/a2a/classify';
import { isCardPath } from '../../../src/a2a/card';
import { A2A_OPTIONS, classifyOptions, expectA2a, expectForwarded, expectRefusal } from '../../helpers/classify';

/** Every path listed and the escape hatch on: what is refused here is refused for every operator. */
const OPEN: ClassifyOptions = classifyOptions({ forwardNonA2A: true, passthrough: [[]] });
const BOTH = [A2A_OPTIONS, OPEN];
const V1 = { 'a2a-version': '1.0' };

const send = { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } };
const post = (path: string, body: unknown, headers: Record<string, string> = {}, opts = A2A_OPTIONS): Classified =>
  classify({ verb: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, body: Buffer.from(JSON.stringify(body)) }, opts);
const call = (verb: string, path: string, headers: Record<string, string> = V1, opts = A2A_OPTIONS): Classified =>
  classify({ verb, path, headers, body: null }, opts);
const get = (path: string, headers: Record<string, string> = V1, opts = A2A_OPTIONS): Classified => call('GET', path, headers, opts);

describe('request targets', () => {
  test.each(['/a2a/rest/v1/message:send#x', '/a2a/rest/message:send#', '/a2a/rest/t/message:send#frag', '/a2a\\rest/message:send', '/a2a/rest\\message:send'])(
    '%p is refused (-31400, REST form)',
    (path) => {
      for (const opts of BOTH) expectRefusal(post(path, send, V1, opts), 'rejected', 'rest');
    },
  );

  test('a fragment on a GET route is refused, not judged as another task id', () => {
    for (const opts of BOTH) expectRefusal(get('/a2a/rest/v1/tasks/abc#x', {}, opts), 'rejected', 'rest');
  });

  test.each([
    ['POST', '/a2a/rest/message:send;x=1'],
    ['GET', '/a2a/rest/tasks/abc;v=1'],
    ['POST', '/a2a/rest/tasks;x/abc:cancel'],
    ['GET', '/a2a/rest/tasks/abc%3Bv=1'],
    ['GET', '/static/app.js;v=2'],
  ])('matrix parameters (%s %p) are refused: routers disagree on them', (verb, path) => {
    for (const opts of BOTH) {
      const c = verb === 'POST' ? post(path, path.includes('message') ? send : {}, V1, opts) : get(path, V1, opts);
      expectRefusal(c, 'rejected', 'rest');
    }
  });

  test.each([
    ['encoded slash', '/a2a/rest/tasks/a%2Fb'],
    ['encoded slash (lower case)', '/a2a%2frest/tasks/abc'],
    ['encoded backslash', '/a2a/rest/tasks/a%5Cb'],
    ['dot segment', '/a2a/rest/x/../tasks/abc'],
    ['encoded dot segment', '/a2a/rest/%2e%2e/rest/tasks/abc'],
    ['single dot', '/a2a/./rest/tasks/abc'],
    ['empty segment', '/a2a//rest/tasks/abc'],
    ['leading //', '//a2a/rest/tasks/abc'],
    ['double encoding', '/a2a/rest/tasks/a%252Fb'],
    ['double-encoded verb', '/a2a/rest/tasks/abc%253Acancel'],
    ['NUL', '/a2a/rest/tasks/a%00b'],
    ['newline', '/a2a/rest/tasks/a%0Ab'],
    ['DEL', '/a2a/rest/tasks/a%7Fb'],
    ['encoded ?', '/a2a/rest/tasks/a%3Fb'],
    ['encoded #', '/a2a/rest/tasks/a%23b'],
    ['malformed escape', '/a2a/rest/tasks/a%E0%A4%A'],
    ['malformed query escape', '/a2a/rest/tasks/abc?x=%ZZ'],
    ['absolute form', 'http://agent.example/a2a/rest/tasks/abc'],
  ])('%s (%p) is refused before any route is read', (_n, path) => {
    for (const opts of BOTH) {
      expectRefusal(get(path, V1, opts), 'rejected', 'rest');
      expectRefusal(post(path, { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }, {}, opts), 'rejected', 'rest');
    }
  });

  test('an encoded custom verb is the literal id text (a router decodes it the same way): GET /tasks/x%3Acancel is no GetTask', () => {
    for (const opts of BOTH) expectRefusal(get('/a2a/rest/tasks/x%3Acancel', V1, opts), 'notFound', 'rest');
  });
});

describe('the examples of the bypass class', () => {
  test.each(['GET', 'DELETE'])('%s /tasks/{t}/pushNotificationConfigs/cfg:cancel matches no route and is refused (REST 404), never forwarded', (verb) => {
    for (const opts of [...BOTH, classifyOptions({ passthrough: [['a2a']] })]) {
      expectRefusal(call(verb, '/a2a/rest/tasks/t1/pushNotificationConfigs/cfg:cancel', V1, opts), 'notFound', 'rest');
      expectRefusal(call(verb, '/a2a/rest/tenant/tasks/t1/pushNotificationConfigs/cfg:CANCEL', V1, opts), 'notFound', 'rest');
    }
  });

  // Regression: under NON_A2A=forward a JSON-RPC-shaped body with an unknown method carried the custom-verb door
  // through the JSON-RPC branch, which forwarded it to the REST path unjudged (the SDK then read or deleted the config).
  test.each([
    ['GET', '/a2a/rest/tasks/abc:cancel'],
    ['DELETE', '/a2a/rest/tasks/t/pushNotificationConfigs/cfg:cancel'],
    ['GET', '/tasks/abc'],
    ['OPTIONS', '/a2a/rest/v1/tasks/x:subscribe'],
  ])('NON_A2A=forward: %s %s with an unknown JSON-RPC method in the body is refused, not forwarded', (verb, path) => {
    const body = Buffer.from('{"jsonrpc":"2.0","id":4,"method":"custom/x"}');
    for (const opts of BOTH) {
      const c = classify({ verb, path, headers: { ...V1, 'content-type': 'application/json' }, body }, opts);
      expect(expectRefusal(c, 'methodNotFound', 'jsonrpc').id).toBe(4);
    }
  });

  test('Connection: a2a-version (the header that chose the route table would vanish upstream) is refused', () => {
    for (const opts of BOTH) {
      expectRefusal(get('/a2a/rest/v1/card', { ...V1, connection: 'a2a-version' }, opts), 'rejected', 'rest');
      expectRefusal(get('/a2a/rest/v1/card', { ...V1, connection: 'keep-alive, A2A-Version' }, opts), 'rejected', 'rest');
    }
    // GET /v1/card under A2A-Version 1.0 is no route at all.
    expectRefusal(get('/a2a/rest/v1/card'), 'notFound', 'rest');
  });

  test.each(CLASSIFYING_HEADERS)('Connection naming %p is refused on any request', (h) => {
    for (const opts of BOTH) {
      expectRefusal(get('/a2a/rest/tasks/abc', { ...V1, connection: h }, opts), 'rejected', 'rest');
      expectRefusal(
        post('/a2a/jsonrpc', { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }, { connection: `close, ${h.toUpperCase()}` }, opts),
        'rejected',
        'jsonrpc',
      );
      expectRefusal(get('/healthz', { connection: h }, opts), 'rejected', 'rest');
    }
  });

  test('Connection naming only hop-by-hop headers changes nothing', () => {
    for (const connection of ['keep-alive', 'close', 'upgrade', 'te, keep-alive', 'x-aos-reasoning']) {
      expectA2a(get('/a2a/rest/tasks/abc', { ...V1, connection }), 'tasks/get', 'rest');
    }
  });

  test.each(CLASSIFYING_HEADERS.filter((h) => h.includes('-')).map((h) => h.replace(/-/g, '_')))(
    'the underscore spelling %p (the same header to CGI-style servers) is refused',
    (h) => {
      for (const opts of BOTH) {
        expectRefusal(get('/a2a/rest/tasks/abc', { ...V1, [h]: '0.3' }, opts), 'rejected', 'rest');
        expectRefusal(get('/healthz', { [h]: 'x' }, opts), 'rejected', 'rest');
      }
    },
  );

  test('the path tenant is what the guardian sees; a body tenant that contradicts it is refused', () => {
    for (const opts of BOTH) {
      expectRefusal(post('/a2a/rest/restricted/message:send', { ...send, tenant: 'public' }, V1, opts), 'rejected', 'rest');
    }
    const c = expectA2a(post('/a2a/rest/restricted/message:send', send, V1), 'message/send', 'rest');
    expect(c.request.params).toEqual({ ...send, tenant: 'restricted' });
    expect(c.rest?.match.tenant).toBe('restricted');
    // The same tenant in body and path is one meaning.
    expect(expectA2a(post('/a2a/rest/restricted/message:send', { ...send, tenant: 'restricted' }, V1), 'message/send', 'rest').request.params).toEqual({
      ...send,
      tenant: 'restricted',
    });
  });

  test('charset=utf-7 ("+AG0-essage/send" is message/send to the agent) is refused, whatever the path or option', () => {
    const body = { jsonrpc: '2.0', id: 1, method: '+AG0-essage/send', params: { message: { parts: [{ kind: 'text', text: '+AG0-olotov' }] } } };
    for (const opts of BOTH) {
      for (const path of ['/a2a/jsonrpc', '/', '/webhook']) {
        expectRefusal(post(path, body, { 'content-type': 'application/json; charset=utf-7' }, opts), 'rejected');
      }
      expectRefusal(post('/a2a/rest/message:send', send, { ...V1, 'content-type': 'application/json; charset=utf-7' }, opts), 'rejected', 'rest');
    }
  });

  test('A2A-Version with two values, or a query value that contradicts the header, is refused', () => {
    for (const opts of BOTH) {
      expectRefusal(get('/a2a/rest/tasks/abc', { 'a2a-version': '1.0, 0.3' }, opts), 'rejected', 'rest');
      expectRefusal(get('/a2a/rest/tasks/abc?A2A-Version=0.3', V1, opts), 'rejected', 'rest');
      expectRefusal(get('/a2a/rest/v1/tasks/abc?a2a-version=0.3&A2A-Version=1.0', {}, opts), 'rejected', 'rest');
    }
    expectA2a(get('/a2a/rest/tasks/abc?A2A-Version=1.0'), 'tasks/get', 'rest');
  });
});

describe('JSON-RPC member names under case folding and snake_case', () => {
  test.each([
    [{ jsonrpc: '2.0', id: 1, METHOD: 'message/send', params: send }],
    [{ jsonrpc: '2.0', id: 1, Method: 'message/send', params: send }],
    [{ jsonrpc: '2.0', id: 1, method: 'message/send', Params: send }],
    [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: send, PARAMS: { message: { parts: [{ text: 'evil' }] } } }],
    [{ jſonrpc: '2.0', id: 1, method: 'message/send', params: send }],
    [{ jsonrpc: '2.0', ID: 1, method: 'message/send', params: send }],
    [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: { ...send, Message: { parts: [{ text: 'evil' }] } } }],
    [{ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'a', ID: 'b' } }],
    [{ jsonrpc: '2.0', id: 1, method: 'tasks/pushNotificationConfig/set', params: { taskId: 'a', task_id: 'b' } }],
    [{ jsonrpc: '2.0', id: 1, method: 'tasks/pushNotificationConfig/set', params: { config: [{ pushNotificationConfig: 1, 'push-notification-config': 2 }] } }],
  ])('%j is refused (-31400)', (body) => {
    for (const opts of BOTH) for (const path of ['/', '/a2a/jsonrpc']) expectRefusal(post(path, body, {}, opts), 'rejected', 'jsonrpc');
  });

  test('ambiguous member names in a REST body are refused too', () => {
    expectRefusal(post('/a2a/rest/tasks/t1/pushNotificationConfigs', { taskId: 't1', task_id: 't2', url: 'https://x' }, V1), 'rejected', 'rest');
    expectRefusal(post('/a2a/rest/message:send', { message: send.message, MESSAGE: { parts: [] } }, V1), 'rejected', 'rest');
  });

  test('an ordinary JSON body with upper-case keys that is not JSON-RPC: refused by default, forwarded under a listed prefix', () => {
    expectRefusal(post('/api/things', { ID: 5, Name: 'x' }), 'invalidRequest', 'jsonrpc');
    const f = expectForwarded(post('/api/things', { ID: 5, Name: 'x' }, {}, classifyOptions({ passthrough: [['api']] })), 'passthrough');
    expect(f.body?.toString('utf8')).toBe('{"ID":5,"Name":"x"}');
  });
});

describe('REST queries', () => {
  test('repeated query parameters, in any spelling, are refused (first-wins and last-wins parsers disagree)', () => {
    for (const q of ['contextId=secret&contextId=ok', 'historyLength=1&history_length=2', 'pageSize=1&PageSize=2']) {
      expectRefusal(get(`/a2a/rest/tasks?${q}`), 'rejected', 'rest');
    }
  });

  test('a query on a REST route that carries a body is refused (the guardian would not see it)', () => {
    expectRefusal(post('/a2a/rest/message:send?configuration=x', send, V1), 'rejected', 'rest');
    expectRefusal(post('/a2a/rest/tasks/abc:cancel?tenant=x', {}, V1), 'rejected', 'rest');
    expectA2a(post('/a2a/rest/message:send?A2A-Version=1.0', send, V1), 'message/send', 'rest');
  });

  test('single query parameters on GET routes are shown to the guardian, typed as the SDK reads them', () => {
    const c = expectA2a(get('/a2a/rest/tasks?contextId=c1&pageSize=2&includeArtifacts=true&pageToken=007'), 'tasks/list', 'rest');
    expect(c.request.params).toEqual({ contextId: 'c1', pageSize: 2, includeArtifacts: true, pageToken: '007' });
  });

  test('a body on a GET or DELETE route is refused (a lenient server might read it)', () => {
    const body = Buffer.from('{"id":"other"}');
    for (const verb of ['GET', 'DELETE', 'HEAD']) {
      const path = verb === 'DELETE' ? '/a2a/rest/tasks/t/pushNotificationConfigs/c' : '/a2a/rest/tasks/abc';
      expectRefusal(classify({ verb, path, headers: { ...V1, 'content-type': 'application/json' }, body }, A2A_OPTIONS), 'rejected', 'rest');
    }
  });
});

describe('agent card paths as lenient routers see them', () => {
  test.each([
    '/.well-known/agent-card.json',
    '/.well-known/Agent-Card.json',
    '/.WELL-KNOWN/AGENT-CARD.JSON',
    '/.well-known/agent-card.json/',
    '/x/.well-known/agent.json',
    '/.well-known/agent-card.json;v=1',
  ])('%p is the card', (p) => expect(isCardPath(p)).toBe(true));
  test.each(['/.well-known/agent-card.jsonx', '/well-known/agent-card.json'])('%p is not', (p) => expect(isCardPath(p)).toBe(false));

  test('classification serves every case spelling on the canonical path; a matrix parameter is refused', () => {
    expect(get('/.WELL-KNOWN/AGENT-CARD.JSON', {})).toEqual({ kind: 'card', target: '/.well-known/agent-card.json' });
    expect(get('/x/.Well-Known/Agent.json/', {})).toEqual({ kind: 'card', target: '/x/.well-known/agent.json' });
    expectRefusal(get('/.well-known/agent-card.json;v=1', {}), 'rejected', 'rest');
  });
});
