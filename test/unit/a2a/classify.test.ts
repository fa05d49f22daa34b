/**
 * Request classification in the positive model (design section 2): A2A JSON-RPC calls are
 * judged on any path, the agent card is served, everything else is refused in the binding's own
 * terms unless PASSTHROUGH_PATHS or NON_A2A=forward lets it through. The options are those the
 * proxy derives from an SDK agent's card (JSON-RPC at /a2a/jsonrpc, REST at /a2a/rest).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { classify, type ClassifyOptions, type Classified, type HttpRequestFacts } from '../../../src/a2a/classify';
import { endpointsFromCard, NO_ENDPOINTS } from '../../../src/a2a/endpoints';
import { jsonRpcErrorObject } from '../../../src/core/errors';
import { A2A_OPTIONS, FORWARD_OPTIONS, classifyOptions, expectA2a, expectForwarded, expectRefusal } from '../../helpers/classify';

const JSON_CT: IncomingHttpHeaders = { 'content-type': 'application/json' };
/** Every listed prefix and the escape hatch at once: still nothing A2A-looking may pass unjudged. */
const OPEN_OPTIONS: ClassifyOptions = classifyOptions({ forwardNonA2A: true, passthrough: [[]] });

function req(body: string | Buffer | null, over: Partial<HttpRequestFacts> = {}): HttpRequestFacts {
  return {
    verb: 'POST',
    path: '/a2a/jsonrpc',
    headers: JSON_CT,
    body: body === null ? null : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'),
    ...over,
  };
}

const run = (r: HttpRequestFacts, opts: ClassifyOptions = A2A_OPTIONS): Classified => classify(r, opts);
const rpc = (method: unknown, id: unknown = 1, params: unknown = { id: 't-1' }) => JSON.stringify({ jsonrpc: '2.0', id, method, params });

describe('A2A JSON-RPC calls', () => {
  test.each([
    ['message/send', 'message/send'],
    ['SendMessage', 'message/send'],
    ['message/stream', 'message/stream'],
    ['SendStreamingMessage', 'message/stream'],
    ['tasks/get', 'tasks/get'],
    ['GetTask', 'tasks/get'],
    ['ListTasks', 'tasks/list'],
    ['tasks/cancel', 'tasks/cancel'],
    ['CancelTask', 'tasks/cancel'],
    ['tasks/resubscribe', 'tasks/resubscribe'],
    ['SubscribeToTask', 'tasks/resubscribe'],
    ['tasks/pushNotificationConfig/set', 'tasks/pushNotificationConfig/set'],
    ['CreateTaskPushNotificationConfig', 'tasks/pushNotificationConfig/set'],
    ['tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/get'],
    ['GetTaskPushNotificationConfig', 'tasks/pushNotificationConfig/get'],
    ['tasks/pushNotificationConfig/list', 'tasks/pushNotificationConfig/list'],
    ['ListTaskPushNotificationConfigs', 'tasks/pushNotificationConfig/list'],
    ['tasks/pushNotificationConfig/delete', 'tasks/pushNotificationConfig/delete'],
    ['DeleteTaskPushNotificationConfig', 'tasks/pushNotificationConfig/delete'],
    ['agent/getAuthenticatedExtendedCard', 'agent/getAuthenticatedExtendedCard'],
    ['GetExtendedAgentCard', 'agent/getAuthenticatedExtendedCard'],
  ])('%p -> %p', (method, aos) => {
    const c = expectA2a(run(req(rpc(method, 7))), aos);
    expect(c.id).toBe(7);
    expect(c.request).toEqual({ jsonrpc: '2.0', id: 7, method, params: { id: 't-1' } });
    expect(c.target).toBe('/a2a/jsonrpc');
    expect(c.rest).toBeUndefined();
  });

  test.each([
    ['/', '/'],
    ['/a2a/jsonrpc', '/a2a/jsonrpc'],
    ['/a2a/jsonrpc/', '/a2a/jsonrpc/'],
    ['/A2A/JSONRPC', '/A2A/JSONRPC'],
    ['/.well-known/agent-card.json', '/.well-known/agent-card.json'],
    ['/healthz', '/healthz'],
    ['/static/x.png', '/static/x.png'],
    ['/x?', '/x'],
    ['/a2a/rest', '/a2a/rest'],
    ['/a2a/rest/message:send/extra', '/a2a/rest/message:send/extra'],
    ['/caf%C3%A9', '/caf%C3%A9'],
  ])('is judged on any path: %p (forwarded to the canonical %p)', (path, target) => {
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      const c = expectA2a(run(req(rpc('message/send'), { path }), opts), 'message/send');
      expect(c.target).toBe(target);
    }
  });

  test.each([
    '/a2a/jsonrpc?x=1',
    '/a2a/jsonrpc?access_token=t',
    '/a2a/jsonrpc?tenant=a',
    '/a2a/jsonrpc?A2A-Version=1.0&x',
    '/a2a/jsonrpc?=',
    '/caf%C3%A9?q=a%20b',
  ])('query parameters are refused: the agent would get them unjudged (%p)', (path) => {
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      const c = run(req(rpc('message/send'), { path }), opts);
      expect(c.kind === 'reject' ? c.error.kind : c.kind).toBe('invalidRequest');
    }
  });

  test("the one query accepted is exactly the one the agent's card publishes for its JSON-RPC endpoint (the agent's value, forwarded)", () => {
    const opts = {
      ...A2A_OPTIONS,
      endpoints: endpointsFromCard({ url: 'https://agent.example/a2a/jsonrpc?code=a%2Bb&x=1', preferredTransport: 'JSONRPC' }, ''),
    };
    expect(opts.endpoints.jsonrpcQueries).toEqual(['?code=a%2Bb&x=1']);
    expect(expectA2a(run(req(rpc('message/send'), { path: '/a2a/jsonrpc?code=a%2Bb&x=1' }), opts), 'message/send').target).toBe('/a2a/jsonrpc?code=a%2Bb&x=1');
    expect(expectA2a(run(req(rpc('message/send'), { path: '/a2a/jsonrpc?code=a%2bb&x=1&A2A-Version=1.0' }), opts), 'message/send').target).toBe(
      '/a2a/jsonrpc?code=a%2Bb&x=1',
    );
    for (const path of [
      '/a2a/jsonrpc?code=other&x=1',
      '/a2a/jsonrpc?code=a%2Bb',
      '/a2a/jsonrpc?code=a%2Bb&x=1&y=2',
      '/a2a/jsonrpc?x=1&code=a%2Bb',
      '/a2a/jsonrpc?code=a%2Bb&x=1&x=1',
    ]) {
      const c = run(req(rpc('message/send'), { path }), opts);
      expect([path, c.kind === 'reject' ? c.error.kind : c.kind]).toEqual([path, 'invalidRequest']);
    }
  });

  test('the A2A-Version query parameter is not forwarded; the call is read under the header (the SDK ignores the query)', () => {
    const c = expectA2a(run(req(rpc('message/send'), { path: '/a2a/jsonrpc?A2A-Version=1.0' })), 'message/send');
    expect(c.target).toBe('/a2a/jsonrpc');
    expect(c.version).toBeUndefined();
    const v1 = expectA2a(run(req(rpc('SendMessage'), { headers: { ...JSON_CT, 'a2a-version': ' 1.0 ' } })), 'message/send');
    expect(v1.version).toBe('1.0');
  });

  test.each([
    ['/a2a/rest/message:send', 'rest', null],
    ['/message:stream', 'jsonrpc', 1],
    ['/t/tasks/abc:cancel', 'jsonrpc', 1],
    ['/v1/card?x=1', 'jsonrpc', 1],
    ['/a2a/rest/v1/tasks', 'jsonrpc', 1],
  ])('is refused on a path that reads as an A2A REST route (%p): the agent could run the route instead', (path, binding, id) => {
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      const c = expectRefusal(run(req(rpc('message/send'), { path }), opts), 'rejected', binding as 'jsonrpc' | 'rest');
      expect(c.id).toBe(id);
    }
  });

  test('the observed SDK v1.0 request', () => {
    const body =
      '{"jsonrpc":"2.0","method":"SendMessage","params":{"message":{"messageId":"e2cf22fc","role":"ROLE_USER","parts":[{"text":"hello"}]},"configuration":{}},"id":1}';
    const c = expectA2a(run(req(body, { headers: { ...JSON_CT, 'a2a-version': '1.0' } })), 'message/send');
    expect(c.id).toBe(1);
    expect(c.version).toBe('1.0');
    expect(c.request.params).toEqual({ message: { messageId: 'e2cf22fc', role: 'ROLE_USER', parts: [{ text: 'hello' }] }, configuration: {} });
  });

  test('a body that is only whitespace-padded strict JSON is still A2A', () => {
    expectA2a(run(req(` \n\t${rpc('message/send')}\r\n `)), 'message/send');
  });

  test('what the guardian sees (and the agent gets) is the whole request: members beside the four are carried, in order', () => {
    const c = expectA2a(
      run(req(JSON.stringify({ context: { userId: 'u1' }, jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' }, extra: { hidden: true } }))),
      'tasks/get',
    );
    expect(c.request).toEqual({ context: { userId: 'u1' }, jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' }, extra: { hidden: true } });
    expect(Object.keys(c.request)).toEqual(['context', 'jsonrpc', 'id', 'method', 'params', 'extra']);
  });

  test.each([
    ['a JSON-RPC member in another case', '"Params":{}', /member names must be exact \(Params\)/],
    ['a JSON-RPC member with a separator', '"i_d":2', /member names must be exact \(i_d\)/],
    ['a JSON-RPC member with a Unicode case fold', '"jſonrpc":"2.0"', /member names must be exact/],
    ['a response member', '"result":{}', /carries no result member/],
    ['a response member in another case', '"Error":null', /carries no Error member/],
    ['__proto__', '"__proto__":{"context":{"userId":"admin"}}', /__proto__ is not accepted/],
    ['two names in a carried member that a decoder reads as one', '"context":{"userId":"a","user_id":"b"}', /Ambiguous member names in context \(user_id\)/],
  ])("a top-level member that cannot be carried as it is (%s) is refused by name, with the caller's id", (_n, member, why) => {
    const body = `{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x"},${member}}`;
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      const r = expectRefusal(run(req(body), opts), 'rejected', 'jsonrpc');
      expect(r.error.message).toMatch(why);
      expect(r.id).toBe(7);
    }
  });

  test("a query on a JSON-RPC call is refused naming the parameter (VoltAgent's ?context=)", () => {
    const r = expectRefusal(run(req(rpc('GetTask'), { path: '/a2a/jsonrpc?context=%7B%7D&a2a-version=1.0' })), 'invalidRequest', 'jsonrpc');
    expect(r.error.message).toMatch(/take no query parameters \(context\)/);
    expect(r.id).toBe(1);
  });

  test('jsonrpc member absent or wrong: refused as the SDK refuses it (v0.3: -32600, v1.0: -32602), never forwarded unjudged', () => {
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      expect(expectRefusal(run(req(JSON.stringify({ id: 1, method: 'message/send', params: {} })), opts), 'invalidRequest', 'jsonrpc').id).toBe(1);
      expect(expectRefusal(run(req(JSON.stringify({ jsonrpc: '1.0', id: 2, method: 'SendMessage', params: {} })), opts), 'invalidRequest', 'jsonrpc').id).toBe(
        2,
      );
      const v1 = req(JSON.stringify({ jsonrpc: '1.0', id: 3, method: 'SendMessage', params: {} }), { headers: { ...JSON_CT, 'a2a-version': '1.0' } });
      expect(expectRefusal(run(v1, opts), 'invalidParams', 'jsonrpc').id).toBe(3);
    }
  });

  test.each([
    ['absent', undefined],
    ['an array', [1]],
    ['a string', 'x'],
    ['null', null],
    ['an object with an empty member name', { '': 1 }],
  ])('params %s -> invalid params (-32602) as the SDK answers, id kept', (_n, params) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tasks/get', ...(params === undefined ? {} : { params }) });
    expect(expectRefusal(run(req(body)), 'invalidParams', 'jsonrpc').id).toBe(4);
  });

  test('the extended-card call may omit params', () => {
    expectA2a(run(req('{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}')), 'agent/getAuthenticatedExtendedCard');
  });

  test('an empty method is no method (v0.3: -32600)', () => {
    expect(expectRefusal(run(req(rpc('', 5))), 'invalidRequest', 'jsonrpc').id).toBe(5);
  });

  test('a message in the other version\'s shape ("content" outside v0.3 REST) is refused: the agent would drop what the guardian read', () => {
    const body = rpc('message/send', 6, { message: { role: 'user', content: [{ text: 'molotov' }], parts: [{ kind: 'text', text: 'hi' }] } });
    expect(expectRefusal(run(req(body)), 'invalidParams', 'jsonrpc').id).toBe(6);
  });
});

describe('JSON-RPC ids', () => {
  test.each([
    ['string', 'abc', 'abc'],
    ['empty string', '', ''],
    ['integer', 42, 42],
    ['zero', 0, 0],
    ['negative', -3, -3],
    ['null', null, null],
  ])('%s id is kept', (_n, id, want) => {
    const c = expectA2a(run(req(rpc('message/send', id))), 'message/send');
    expect(c.id).toBe(want);
  });

  test('missing id (notification) -> a2a with id null', () => {
    const c = expectA2a(run(req(JSON.stringify({ jsonrpc: '2.0', method: 'tasks/get', params: { id: 'x' } }))), 'tasks/get');
    expect(c.id).toBeNull();
    expect('id' in c.request).toBe(false);
  });

  test.each([
    ['object', { a: 1 }],
    ['array', [1]],
    ['boolean', true],
  ])('%s id -> invalid request (-32600) with id null', (_n, id) => {
    expect(expectRefusal(run(req(rpc('message/send', id))), 'invalidRequest', 'jsonrpc').id).toBeNull();
  });

  test('a fractional id is no id to the SDK: invalid request (v0.3: -32600, v1.0: -32602), the number echoed', () => {
    expect(expectRefusal(run(req(rpc('message/send', 1.5))), 'invalidRequest', 'jsonrpc').id).toBe(1.5);
    expect(expectRefusal(run(req(rpc('SendMessage', 1.5), { headers: { ...JSON_CT, 'a2a-version': '1.0' } })), 'invalidParams', 'jsonrpc').id).toBe(1.5);
  });

  test('a number that overflows to Infinity is not a valid id (and the answer is still valid JSON)', () => {
    const c = expectRefusal(run(req('{"jsonrpc":"2.0","id":1e999,"method":"message/send","params":{}}')), 'invalidRequest', 'jsonrpc');
    expect(JSON.parse(JSON.stringify(jsonRpcErrorObject(c.error, c.id))).id).toBeNull();
  });
});

describe('refusals', () => {
  test.each(['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'])('A2A JSON-RPC body with verb %s -> invalid request (-32600), id kept', (verb) => {
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      expect(expectRefusal(run(req(rpc('message/send', 'r-9'), { verb }), opts), 'invalidRequest', 'jsonrpc').id).toBe('r-9');
    }
  });

  test.each([
    ['one call', [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: {} }]],
    [
      'two calls',
      [
        { jsonrpc: '2.0', id: 1, method: 'tasks/get' },
        { jsonrpc: '2.0', id: 2, method: 'message/send' },
      ],
    ],
    ['non-A2A objects', [{ jsonrpc: '2.0', id: 1, method: 'custom/thing' }]],
    ['mixed', [1, { method: 'message/send' }]],
    ['nested', [[{ method: 'message/send' }]]],
  ])('batch (%s) -> invalid request (-32600), under every NON_A2A and passthrough', (_n, batch) => {
    for (const path of ['/a2a/jsonrpc', '/', '/webhook']) {
      for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
        expect(expectRefusal(run(req(JSON.stringify(batch), { path }), opts), 'invalidRequest', 'jsonrpc').id).toBeNull();
      }
    }
  });

  test.each([
    ['NaN', '{"jsonrpc":"2.0","id":NaN,"method":"message/send"}'],
    ['Infinity literal', '{"jsonrpc":"2.0","id":Infinity,"method":"message/send"}'],
    ['block comment', '/* hi */{"jsonrpc":"2.0","id":1,"method":"message/send"}'],
    ['line comment', '{"jsonrpc":"2.0","id":1,"method":"message/send"} // x'],
    ['inner comment', '{"jsonrpc":"2.0",/*x*/"id":1,"method":"message/send"}'],
    ['trailing comma (object)', '{"jsonrpc":"2.0","id":1,"method":"message/send",}'],
    ['trailing comma (array)', '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"a":[1,]}}'],
    ['UTF-8 BOM', '\uFEFF{"jsonrpc":"2.0","id":1,"method":"message/send"}'],
    ['single quotes', "{'jsonrpc':'2.0','id':1,'method':'message/send'}"],
    ['unquoted keys', '{jsonrpc:"2.0",id:1,method:"message/send"}'],
    ['hex number', '{"jsonrpc":"2.0","id":0x1,"method":"message/send"}'],
    ['two JSON texts', '{"jsonrpc":"2.0","id":1,"method":"tasks/get"}{"jsonrpc":"2.0","id":2,"method":"message/send"}'],
    ['truncated', '{"jsonrpc":"2.0","id":1,"method":"message/send"'],
    ['leading garbage before JSON', 'x{"jsonrpc":"2.0","id":1,"method":"message/send"}'],
  ])('not strict JSON but JSON-ish (%s) -> parse error (-32700), whatever the path, content type or options', (_n, body) => {
    expectRefusal(run(req(body)), 'parseError', 'jsonrpc');
    for (const headers of [{}, { 'content-type': 'text/plain' }, JSON_CT]) {
      expectRefusal(run(req(body, { path: '/webhook', headers }), OPEN_OPTIONS), 'parseError');
    }
  });

  test.each(['x-http-method-override', 'x-http-method', 'x-method-override'])('%s header -> refused (-31400), whatever the body and options', (h) => {
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      expectRefusal(run(req(rpc('message/send'), { headers: { ...JSON_CT, [h]: 'POST' } }), opts), 'rejected', 'jsonrpc');
      expectRefusal(run(req(null, { verb: 'GET', headers: { [h]: 'POST' } }), opts), 'rejected', 'jsonrpc');
      expectRefusal(run(req('hello', { path: '/webhook', headers: { 'content-type': 'text/plain', [h]: 'GET' } }), opts), 'rejected', 'rest');
    }
  });

  test.each([
    ['number', 5],
    ['null', null],
    ['object', { x: 'message/send' }],
    ['array', ['message/send']],
    ['boolean', true],
  ])('method that is not a string (%s) -> invalid request (-32600), id kept', (_n, method) => {
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      expect(expectRefusal(run(req(rpc(method, 3)), opts), 'invalidRequest', 'jsonrpc').id).toBe(3);
    }
  });

  test.each(['Message/Send', ' message/send', 'message/send ', 'SENDMESSAGE', 'sendmessage', 'Tasks/Cancel', 'send_streaming_message'])(
    'near-miss method %p -> method not found (-32601), never forwarded, even where unknown methods are',
    (m) => {
      for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
        expect(expectRefusal(run(req(rpc(m, 'q')), opts), 'methodNotFound', 'jsonrpc').id).toBe('q');
        expect(expectRefusal(run(req(rpc(m, 'q'), { path: '/webhook' }), opts), 'methodNotFound', 'jsonrpc').id).toBe('q');
      }
    },
  );

  test('invalid UTF-8 in a JSON body -> parse error (-32700)', () => {
    const body = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"t":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]);
    expectRefusal(run(req(body)), 'parseError', 'jsonrpc');
    expectRefusal(run(req(body, { headers: {} })), 'parseError', 'jsonrpc');
    // The SDK's JSON-RPC router refuses another media type before it parses the body (-32005), as the proxy does.
    expectRefusal(run(req(body, { headers: { 'content-type': 'text/plain; charset=utf-8' } })), 'contentTypeNotSupported', 'jsonrpc');
    expectRefusal(run(req(body, { path: '/webhook', headers: { 'content-type': 'text/plain' } }), OPEN_OPTIONS), 'parseError');
  });
});

describe('content type and charset (the agent parses only what its body parser accepts)', () => {
  // The SDK's JSON-RPC router runs its content-type guard before anything reads the body (A2A TCK JSONRPC-SSE-002).
  test.each([
    ['a body that is not JSON', "{'jsonrpc': '2.0', 'id': 1, 'method': 'SendMessage'}"],
    ['an unknown method', rpc('tasks/destroy')],
    ['JSON-RPC 1.0', JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'GetTask', params: {} })],
    ['a batch', `[${rpc('tasks/get')}]`],
    ['a JSON scalar', '42'],
  ])('%s with content-type text/plain at the JSON-RPC endpoint -> content type not supported (-32005)', (_n, body) => {
    expectRefusal(run(req(body, { headers: { 'content-type': 'text/plain', 'a2a-version': '1.0' } })), 'contentTypeNotSupported', 'jsonrpc');
    // Without a Content-Type the guard lets the body through: the refusal is the body's own.
    const bare = run(req(body, { headers: { 'a2a-version': '1.0' } }));
    expect(bare.kind === 'reject' ? bare.error.kind : bare.kind).not.toMatch(/^(contentTypeNotSupported|a2a|other)$/);
  });

  test.each(['text/plain', 'application/octet-stream', 'application/x-www-form-urlencoded', 'image/png', 'application/jsonx', 'application/a2a+jsonx'])(
    "A2A JSON-RPC body with content-type %p -> content type not supported (-32005) with the caller's id, never forwarded",
    (ct) => {
      for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
        expect(expectRefusal(run(req(rpc('tasks/cancel', 'c-1'), { headers: { 'content-type': ct } }), opts), 'contentTypeNotSupported', 'jsonrpc').id).toBe(
          'c-1',
        );
      }
    },
  );

  test.each(['application/a2a+json', 'application/a2a+json; charset=utf-8', 'Application/A2A+JSON', 'application/a2a+json;charset="UTF-8"'])(
    "A2A JSON-RPC body with content-type %p is A2A (the A2A media type, which the Python SDK's server reads)",
    (ct) => {
      for (const method of ['tasks/cancel', 'CancelTask']) expectA2a(run(req(rpc(method), { headers: { 'content-type': ct } })), 'tasks/cancel');
    },
  );

  test('application/a2a+json in another charset is refused as application/json is', () => {
    expectRefusal(run(req(rpc('tasks/cancel'), { headers: { 'content-type': 'application/a2a+json; charset=utf-16' } })), 'rejected');
  });

  test('no content-type at all -> content type not supported (-32005)', () => {
    expectRefusal(run(req(rpc('GetTask'), { headers: {} })), 'contentTypeNotSupported', 'jsonrpc');
  });

  test("-32005 carries A2A's own CONTENT_TYPE_NOT_SUPPORTED ErrorInfo too", () => {
    const c = expectRefusal(run(req(rpc('GetTask'), { headers: { 'content-type': 'text/plain' } })), 'contentTypeNotSupported', 'jsonrpc');
    expect(c.error.message).toMatch(/text\/plain/);
  });

  test.each([
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'application/json; charset="utf8"',
    'APPLICATION/JSON',
    'application/json ; foo=bar',
  ])('UTF-8 JSON (%p) is A2A', (ct) => {
    expectA2a(run(req(rpc('tasks/cancel'), { headers: { 'content-type': ct } })), 'tasks/cancel');
  });

  // Issue 10: the agent's body parser decodes UTF-7 ("+AG0-essage/send" is message/send); the guardian would see other text.
  test.each([
    'application/json; charset=utf-7',
    'application/json; charset=UTF-16',
    'application/json; charset=iso-8859-1',
    'application/json; charset=utf-8; charset=utf-7',
    'application/json; Charset = "utf-7"',
    'text/plain; charset=utf-7',
    'application/json; charset=',
  ])('charset other than UTF-8 (%p) -> refused (-31400), under every option', (ct) => {
    for (const method of ['+AG0-essage/send', 'message/send', 'custom/x']) {
      for (const [opts, path] of [
        [A2A_OPTIONS, '/a2a/jsonrpc'],
        [OPEN_OPTIONS, '/webhook'],
      ] as const) {
        expectRefusal(run(req(rpc(method), { path, headers: { 'content-type': ct } }), opts), 'rejected');
      }
    }
  });

  // Regression: invalid UTF-8 used to be refused only when the content-type looked textual; with any other
  // content-type the bytes went out without a guardian decision, yet lenient upstream decoders (Node
  // Buffer#toString, Go encoding/json) replace the bad byte with U+FFFD and run the A2A call.
  test('an A2A call with one invalid UTF-8 byte and content-type application/octet-stream is not forwarded unchecked', () => {
    const text = rpc('message/send', 1, { message: { role: 'user', parts: [{ kind: 'text', text: 'hi #' }] } });
    const body = Buffer.from(text, 'utf8');
    body[body.indexOf('#')] = 0xff;
    expect(JSON.parse(body.toString('utf8')).method).toBe('message/send'); // what a lenient upstream sees
    // At the agent's JSON-RPC endpoint the media type is refused first, as the SDK does (-32005); elsewhere a parse error.
    for (const [opts, path, kind] of [
      [A2A_OPTIONS, '/a2a/jsonrpc', 'contentTypeNotSupported'],
      [OPEN_OPTIONS, '/webhook', 'parseError'],
    ] as const) {
      expectRefusal(run(req(body, { path, headers: { 'content-type': 'application/octet-stream' } }), opts), kind);
    }
  });

  // Regression: JSON in UTF-16BE / UTF-32BE (no BOM) is valid UTF-8 (NUL bytes) and fails JSON.parse; it used
  // to be forwarded. Python's json.loads(bytes) (the Python A2A SDK) auto-detects UTF-16/32 and would run the call.
  test.each([
    ['UTF-16BE', (s: string) => Buffer.from(s, 'utf16le').swap16()],
    ['UTF-32BE', (s: string) => Buffer.concat([...s].map((ch) => Buffer.from([0, 0, 0, ch.charCodeAt(0)])))],
    ['UTF-16LE', (s: string) => Buffer.from(s, 'utf16le')],
    ['UTF-32LE', (s: string) => Buffer.concat([...s].map((ch) => Buffer.from([ch.charCodeAt(0), 0, 0, 0])))],
    ['UTF-16LE with BOM', (s: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(s, 'utf16le')])],
  ])('an A2A call encoded as %s is refused as a parse error (-32700), never forwarded', (_n, encode) => {
    for (const ct of [JSON_CT, {}, { 'content-type': 'image/png' }]) {
      for (const [opts, path] of [
        [A2A_OPTIONS, '/a2a/jsonrpc'],
        [OPEN_OPTIONS, '/webhook'],
      ] as const) {
        // A media type the SDK's JSON-RPC endpoint refuses is answered -32005 there, before any parsing.
        const kind = path === '/a2a/jsonrpc' && 'content-type' in ct && ct['content-type'] === 'image/png' ? 'contentTypeNotSupported' : 'parseError';
        expectRefusal(run(req(encode(rpc('message/send')), { path, headers: ct }), opts), kind);
      }
    }
  });
});

describe('duplicate keys: what JSON.parse gives (last wins) is what counts', () => {
  test('harmless method first, A2A method last -> a2a', () => {
    const c = expectA2a(run(req('{"jsonrpc":"2.0","id":1,"method":"custom/echo","method":"message/send","params":{}}')), 'message/send');
    expect(c.request.method).toBe('message/send');
  });

  test('A2A method first, other method last -> method not found; forwarded (NON_A2A=forward) only in canonical form, which first-wins upstreams read the same', () => {
    const raw = '{"jsonrpc":"2.0","id":1,"method":"message/send","method":"custom/echo","params":{"a":1}}';
    expect(expectRefusal(run(req(raw)), 'methodNotFound', 'jsonrpc').id).toBe(1);
    const c = expectForwarded(run(req(raw), FORWARD_OPTIONS), 'non-a2a');
    expect(c.method).toBe('custom/echo');
    expect(c.body?.toString('utf8')).toBe('{"jsonrpc":"2.0","id":1,"method":"custom/echo","params":{"a":1}}');
  });

  test('duplicate id: last wins', () => {
    const c = expectA2a(run(req('{"jsonrpc":"2.0","id":{"x":1},"id":5,"method":"tasks/get","params":{}}')), 'tasks/get');
    expect(c.id).toBe(5);
  });

  test('duplicate params: the request carries the last one', () => {
    const c = expectA2a(run(req('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"evil":1},"params":{"good":2}}')), 'message/send');
    expect(c.request.params).toEqual({ good: 2 });
  });

  test('non-A2A objects are refused, and forwarded (NON_A2A=forward) canonically: escapes and whitespace normalised', () => {
    const raw = '{ "hello" : "\\u0077orld",  "n" : 1.0 }';
    expectRefusal(run(req(raw)), 'invalidRequest', 'jsonrpc');
    const c = expectForwarded(run(req(raw), FORWARD_OPTIONS), 'non-a2a');
    expect(c.body?.toString('utf8')).toBe('{"hello":"world","n":1}');
    expect(c.method).toBeUndefined();
    expect(c.target).toBe('/a2a/jsonrpc');
  });

  test('escaped A2A method name is still the A2A method', () => {
    expectA2a(run(req('{"jsonrpc":"2.0","id":1,"method":"message\\/send","params":{}}')), 'message/send');
    expectA2a(run(req('{"jsonrpc":"2.0","id":1,"method":"\\u0053endMessage","params":{}}')), 'message/send');
  });
});

describe('not A2A: refused by default', () => {
  test('no body or an empty body at the JSON-RPC endpoint -> parse error (-32700); without a JSON content type -> -32005', () => {
    expectRefusal(run(req(null)), 'parseError', 'jsonrpc');
    expectRefusal(run(req(Buffer.alloc(0))), 'parseError', 'jsonrpc');
    expectRefusal(run(req(null, { headers: {} })), 'contentTypeNotSupported', 'jsonrpc');
  });

  test.each(['GET', 'HEAD'])('%s of the agent card paths is the card, on its canonical path', (verb) => {
    for (const [path, target] of [
      ['/.well-known/agent-card.json', '/.well-known/agent-card.json'],
      ['/.well-known/agent.json', '/.well-known/agent.json'],
      ['/.well-known/agent-card.json?x=1', '/.well-known/agent-card.json'],
      ['/.well-known/agent-card.json/', '/.well-known/agent-card.json'],
    ]) {
      expect(run(req(null, { verb, path: path as string, headers: {} }))).toEqual({ kind: 'card', target });
    }
  });

  test('a POST to the card path is no card: refused as not found (REST 404)', () => {
    expectRefusal(run(req(null, { path: '/.well-known/agent-card.json', headers: {} })), 'notFound', 'rest');
  });

  test.each([
    ['GET', '/healthz'],
    ['GET', '/'],
    ['DELETE', '/admin/users/1'],
    ['PUT', '/a2a/rest/anything'],
    ['GET', '/a2a/rest'],
  ])('%s %s -> not found (REST 404); forwarded only with NON_A2A=forward or a listed prefix', (verb, path) => {
    expectRefusal(run(req(null, { verb, path, headers: {} })), 'notFound', 'rest');
    const f = expectForwarded(run(req(null, { verb, path, headers: {} }), FORWARD_OPTIONS), 'non-a2a');
    expect(f.target).toBe(path);
    expect(f.body).toBeNull();
  });

  test('unknown JSON-RPC method -> method not found (-32601), id kept; forwarded canonically with NON_A2A=forward or under a listed prefix', () => {
    expect(expectRefusal(run(req(rpc('custom/doStuff', 2))), 'methodNotFound', 'jsonrpc').id).toBe(2);
    expect(expectRefusal(run(req(rpc('custom/doStuff', 2), { path: '/tools/run' })), 'methodNotFound', 'jsonrpc').id).toBe(2);
    const f = expectForwarded(run(req(rpc('custom/doStuff', 2)), FORWARD_OPTIONS), 'non-a2a');
    expect(f.method).toBe('custom/doStuff');
    expect(JSON.parse(f.body!.toString('utf8'))).toEqual({ jsonrpc: '2.0', id: 2, method: 'custom/doStuff', params: { id: 't-1' } });
    const p = expectForwarded(run(req(rpc('custom/doStuff', 2), { path: '/tools/run' }), classifyOptions({ passthrough: [['tools']] })), 'passthrough');
    expect(p.target).toBe('/tools/run');
    expect(p.method).toBe('custom/doStuff');
  });

  test('unknown method with an object id: an invalid request (-32600, id null) before any method lookup, under every option', () => {
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) expect(expectRefusal(run(req(rpc('ping', { a: 1 })), opts), 'invalidRequest', 'jsonrpc').id).toBeNull();
  });

  test('unknown method on a non-POST verb: method not found; forwarded with NON_A2A=forward', () => {
    expectRefusal(run(req(rpc('custom/x'), { verb: 'PUT' })), 'methodNotFound', 'jsonrpc');
    expectForwarded(run(req(rpc('custom/x'), { verb: 'PUT' }), FORWARD_OPTIONS), 'non-a2a');
  });

  test.each([
    ['JSON object without method', '{"hello":"world"}', '{"hello":"world"}', 'invalidRequest'],
    ['JSON string', '"message/send"', '"message/send"', 'parseError'],
    ['JSON number', ' 42 ', '42', 'parseError'],
    ['JSON null', 'null', 'null', 'parseError'],
    ['array of scalars', '[1, "message/send", null]', '[1,"message/send",null]', 'invalidRequest'],
    ['empty array', '[]', '[]', 'invalidRequest'],
  ] as const)("%s -> refused as the SDK's strict body parser does, anywhere; with NON_A2A=forward: forwarded, canonical body", (_n, raw, canon, kind) => {
    expectRefusal(run(req(raw)), kind, 'jsonrpc');
    expectRefusal(run(req(raw, { path: '/webhook' })), kind, 'jsonrpc');
    const c = expectForwarded(run(req(raw, { path: '/webhook' }), FORWARD_OPTIONS), 'non-a2a');
    expect(c.body?.toString('utf8')).toBe(canon);
  });

  test.each([
    ['plain text', 'hello world', 'text/plain'],
    ['form data', 'a=1&b=2', 'application/x-www-form-urlencoded'],
    ['xml', '<x>message</x>', 'application/xml'],
  ])('non-JSON text (%s): -32005 at the JSON-RPC endpoint, REST 404 elsewhere; forwarded as received only when allowed', (_n, raw, ct) => {
    const body = Buffer.from(raw);
    expectRefusal(run(req(body, { headers: { 'content-type': ct } })), 'contentTypeNotSupported', 'jsonrpc');
    expectRefusal(run(req(body, { path: '/upload', headers: { 'content-type': ct } })), 'notFound', 'rest');
    expect(expectForwarded(run(req(body, { path: '/upload', headers: { 'content-type': ct } }), FORWARD_OPTIONS), 'non-a2a').body).toBe(body);
    expect(
      expectForwarded(run(req(body, { path: '/upload', headers: { 'content-type': ct } }), classifyOptions({ passthrough: [['upload']] })), 'passthrough').body,
    ).toBe(body);
  });

  test('binary body with a binary content type: refused; forwarded byte for byte under a listed prefix', () => {
    const body = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00]);
    const r = req(body, { path: '/images/up', headers: { 'content-type': 'image/png' } });
    expectRefusal(run(r), 'notFound', 'rest');
    expect(expectForwarded(run(r, classifyOptions({ passthrough: [['images']] })), 'passthrough').body).toBe(body);
  });
});

describe('PASSTHROUGH_PATHS', () => {
  const opts = classifyOptions({ passthrough: [['admin'], ['a2a'], ['static', 'v2']] });

  test('a listed prefix is forwarded unjudged on its canonical target, any verb, letter case as received', () => {
    const f = expectForwarded(run(req(null, { verb: 'GET', path: '/admin/users?x=1&y=a%20b+c', headers: {} }), opts), 'passthrough');
    expect(f.target).toBe('/admin/users?x=1&y=a%20b%20c');
    expect(expectForwarded(run(req(null, { verb: 'DELETE', path: '/ADMIN/x/', headers: {} }), opts), 'passthrough').target).toBe('/ADMIN/x/');
    expect(expectForwarded(run(req(null, { verb: 'GET', path: '/admin', headers: {} }), opts), 'passthrough').target).toBe('/admin');
    expect(expectForwarded(run(req(null, { verb: 'GET', path: '/static/v2/app.js', headers: {} }), opts), 'passthrough').target).toBe('/static/v2/app.js');
  });

  test('prefixes are whole segments', () => {
    expectRefusal(run(req(null, { verb: 'GET', path: '/administrator', headers: {} }), opts), 'notFound', 'rest');
    expectRefusal(run(req(null, { verb: 'GET', path: '/static/v21/app.js', headers: {} }), opts), 'notFound', 'rest');
  });

  test("a listed prefix never opens the agent's A2A endpoints, nor anything a router could read as an A2A route", () => {
    expectRefusal(run(req(null, { verb: 'GET', path: '/a2a/rest/tasks/x/unknown', headers: { 'a2a-version': '1.0' } }), opts), 'notFound', 'rest');
    expectRefusal(run(req('hello', { path: '/a2a/jsonrpc', headers: { 'content-type': 'text/plain' } }), opts), 'contentTypeNotSupported', 'jsonrpc');
    expectRefusal(run(req(null, { verb: 'GET', path: '/admin/tasks/abc', headers: {} }), opts), 'notFound', 'rest');
    expectRefusal(run(req(null, { verb: 'POST', path: '/admin/x/message:send', headers: {} }), opts), 'notFound', 'rest');
    expectA2a(run(req(rpc('message/send')), opts), 'message/send');
    expectA2a(run(req(rpc('message/send'), { path: '/admin/x' }), opts), 'message/send');
  });

  test('paths naming an A2A gRPC method (gRPC-Web, Connect, Twirp) are refused under every prefix and NON_A2A, in any body', () => {
    const paths = [
      '/admin/lf.a2a.v1.A2AService/SendMessage',
      '/lf.a2a.v1.A2AService/SendMessage',
      '/a2a/a2a.v1.A2AService/GetTask',
      '/twirp/LF.A2A.V1.A2ASERVICE/GETTASK',
      '/admin/A2AService/TaskSubscription',
      '/a2a.v1.A2AService/GetAgentCard',
    ];
    const bodies: Array<[string | null, IncomingHttpHeaders]> = [
      ['{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}', { 'content-type': 'application/json', 'connect-protocol-version': '1' }],
      [null, { 'content-type': 'application/grpc-web+proto' }],
      [rpc('custom/doStuff'), JSON_CT],
    ];
    for (const o of [opts, OPEN_OPTIONS, FORWARD_OPTIONS]) {
      for (const path of paths) {
        for (const [body, headers] of bodies) {
          const c = run(req(body, { path, headers }), o);
          expect([path, c.kind]).toEqual([path, 'reject']);
        }
      }
      // An A2A JSON-RPC call there is ambiguous too (a Connect handler would read its body as the method's message).
      expectRefusal(run(req(rpc('message/send'), { path: '/admin/lf.a2a.v1.A2AService/SendMessage' }), o), 'rejected', 'jsonrpc');
      // The service name as the last segment, in another word, or followed by what is no A2A RPC, is an ordinary path.
      expect(run(req(null, { verb: 'GET', path: '/admin/lf.a2a.v1.A2AService', headers: {} }), o).kind).toBe('other');
      expect(run(req(null, { verb: 'GET', path: '/admin/A2AServices/GetTask', headers: {} }), o).kind).toBe('other');
      expect(run(req(null, { verb: 'GET', path: '/admin/A2AService/health', headers: {} }), o).kind).toBe('other');
    }
  });

  test('an agent whose JSON-RPC endpoint sits under a segment named like the service keeps working', () => {
    const under = { ...A2A_OPTIONS, endpoints: endpointsFromCard({ url: 'https://agent.example/A2AService/jsonrpc', preferredTransport: 'JSONRPC' }, '') };
    for (const path of ['/A2AService/jsonrpc', '/travel-a2aservice/jsonrpc']) {
      const o = path === '/A2AService/jsonrpc' ? under : A2A_OPTIONS;
      expectA2a(run(req(rpc('message/send'), { path }), o), 'message/send');
    }
  });

  test('a near-miss A2A method under a listed prefix is refused, an unknown one forwarded', () => {
    expectRefusal(run(req(rpc('Message/Send'), { path: '/admin/x' }), opts), 'methodNotFound', 'jsonrpc');
    expect(expectForwarded(run(req(rpc('custom/x'), { path: '/admin/x' }), opts), 'passthrough').method).toBe('custom/x');
  });

  test('header and target refusals come first, listed or not', () => {
    expectRefusal(run(req(null, { verb: 'GET', path: '/admin/x', headers: { 'x-http-method-override': 'POST' } }), opts), 'rejected', 'rest');
    expectRefusal(run(req(null, { verb: 'GET', path: '/admin/x', headers: { connection: 'content-length' } }), opts), 'rejected', 'rest');
    expectRefusal(run(req(null, { verb: 'GET', path: '/admin/app.js;v=2', headers: {} }), opts), 'rejected', 'rest');
    expectRefusal(run(req(null, { verb: 'GET', path: '/admin/%2e%2e/a2a/rest/tasks/x', headers: {} }), opts), 'rejected', 'rest');
  });

  test('text a lenient parser could read JSON-RPC out of is refused, even under a listed prefix', () => {
    expectRefusal(run(req('the method: here', { path: '/admin/x', headers: { 'content-type': 'text/plain' } }), opts), 'parseError', 'rest');
  });
});

describe('NON_A2A=forward never forwards what a router could read as A2A', () => {
  test.each([
    ['GET', '/tasks/abc'],
    ['GET', '/other/tasks/abc'],
    ['GET', '/a2a/rest/tasks/t/pushNotificationConfigs/cfg:cancel'],
    ['DELETE', '/a2a/rest/tasks/t/pushNotificationConfigs/cfg:cancel'],
    ['GET', '/a2a/rest/tasks/abc:cancel'],
    ['GET', '/a2a/rest/v1/card'],
    ['POST', '/x/message:send'],
  ])('%s %s -> REST 404', (verb, path) => {
    expectRefusal(run(req(null, { verb, path, headers: { 'a2a-version': '1.0' } }), OPEN_OPTIONS), 'notFound', 'rest');
  });
});

describe('before the agent card is known', () => {
  const unknown = { endpoints: NO_ENDPOINTS, cardKnown: false, passthrough: [], forwardNonA2A: false };

  test('a REST-looking call is refused as upstream unavailable (-31502, HTTP 502): its endpoint is not known yet', () => {
    expectRefusal(run(req(null, { verb: 'GET', path: '/a2a/rest/tasks/abc', headers: { 'a2a-version': '1.0' } }), unknown), 'upstreamUnavailable', 'rest');
  });

  test('JSON-RPC calls are judged anyway; other traffic refused', () => {
    expectA2a(run(req(rpc('message/send')), unknown), 'message/send');
    expectRefusal(run(req(null, { verb: 'GET', path: '/x', headers: {} }), unknown), 'notFound', 'rest');
  });
});

describe('robustness', () => {
  // Regression: JSON.parse accepts deep nesting, JSON.stringify (canonical()) then overflowed the stack and
  // classify threw a RangeError instead of returning a Classified.
  test('JSON deeper than the bound is refused (-31400) before it is parsed, A2A or not, under any option', () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      expectRefusal(run(req(rpc('message/send', 1, { x: JSON.parse(deep(64)) })), opts), 'rejected', 'jsonrpc');
      expectRefusal(run(req(`{"a":${deep(70)}}`, { path: '/webhook' }), opts), 'rejected', 'jsonrpc');
    }
    // Strings are not structure: brackets inside them do not count.
    expectA2a(run(req(rpc('message/send', 1, { text: '['.repeat(1000) }))), 'message/send');
    expectA2a(run(req(rpc('message/send', 1, { x: JSON.parse(deep(60)) }))), 'message/send');
  });

  test('deeply nested non-A2A JSON does not make classify throw, under any option', () => {
    const depth = 20000;
    const body = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) {
      let c: Classified | undefined;
      expect(() => {
        c = run(req(body, { path: '/webhook' }), opts);
      }).not.toThrow();
      expect(c?.kind).toBe('reject');
    }
  });

  test('deeply nested batch array is refused, not thrown', () => {
    const depth = 20000;
    const body = `${'['.repeat(depth)}{}${']'.repeat(depth)}`;
    for (const opts of [A2A_OPTIONS, OPEN_OPTIONS]) expectRefusal(run(req(body), opts), 'rejected', 'jsonrpc');
  });
});

describe('Unicode case folds of A2A route shapes (a router comparing with Unicode case folding)', () => {
  const OPEN: ClassifyOptions = classifyOptions({ forwardNonA2A: true, passthrough: [[]] });
  test.each([
    ['/lf.a2a.v1.A2A%C5%BFervice/SendMessage', 'long s in the gRPC service'],
    ['/lf.a2a.v1.A2ASERV%C4%B1CE/SendMessage', 'dotless i in the gRPC service'],
    ['/lf.a2a.v1.%E2%84%AA2AService/SendMessage', 'no fold to a (control: Kelvin sign is k)'],
    ['/lf.a2a.v1.A2AServ%C4%B0ce/SendMessage', 'dotted capital I in the gRPC service (Java lower-cases it to i)'],
    ['/lf.a2a.v1.A2AService/%C5%BFendMessage', 'long s in the RPC name'],
    ['/tasks/t1/pushNot%C4%B0ficationConfigs', 'dotted capital I in a REST route'],
    ['/ta%C5%BFks/abc', 'long s in a REST route'],
    ['/tasks/abc:%C5%BFubscribe', 'long s in a REST verb suffix'],
  ])('%s (%s) is refused, never forwarded unjudged', (path, what) => {
    const c = run(req(null, { verb: what.includes('verb') ? 'POST' : 'GET', path, headers: {} }), OPEN);
    if (what.startsWith('no fold')) expect(c.kind).toBe('other');
    else expect(c.kind).toBe('reject');
  });
});
