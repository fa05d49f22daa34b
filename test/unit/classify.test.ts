import type { IncomingHttpHeaders } from 'node:http';
import { classify, type Classified, type HttpRequestFacts } from '../../src/a2a/classify';
import { ERROR_CODES, errorCode } from '../../src/proxy/errors';

const JSON_CT: IncomingHttpHeaders = { 'content-type': 'application/json' };

function req(body: string | Buffer | null, over: Partial<HttpRequestFacts> = {}): HttpRequestFacts {
  return {
    verb: 'POST',
    path: '/a2a/jsonrpc',
    headers: JSON_CT,
    body: body === null ? null : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'),
    ...over,
  };
}

const rpc = (method: unknown, id: unknown = 1, params: unknown = { id: 't-1' }) => JSON.stringify({ jsonrpc: '2.0', id, method, params });

function expectA2a(c: Classified, aos: string): Extract<Classified, { kind: 'a2a' }> {
  expect(c.kind).toBe('a2a');
  if (c.kind !== 'a2a') throw new Error('unreachable');
  expect(c.binding).toBe('jsonrpc');
  expect(c.op.aosMethod).toBe(aos);
  return c;
}

function expectReject(c: Classified): Extract<Classified, { kind: 'reject' }> {
  expect(c.kind).toBe('reject');
  if (c.kind !== 'reject') throw new Error('unreachable');
  expect(c.error.kind).toBe('rejected');
  expect(errorCode(c.error.kind)).toBe(-31400);
  return c;
}

function expectOther(c: Classified): Extract<Classified, { kind: 'other' }> {
  expect(c.kind).toBe('other');
  if (c.kind !== 'other') throw new Error('unreachable');
  return c;
}

describe('A2A JSON-RPC calls', () => {
  test.each([
    ['message/send', 'message/send'], ['SendMessage', 'message/send'],
    ['message/stream', 'message/stream'], ['SendStreamingMessage', 'message/stream'],
    ['tasks/get', 'tasks/get'], ['GetTask', 'tasks/get'],
    ['ListTasks', 'tasks/list'],
    ['tasks/cancel', 'tasks/cancel'], ['CancelTask', 'tasks/cancel'],
    ['tasks/resubscribe', 'tasks/resubscribe'], ['SubscribeToTask', 'tasks/resubscribe'],
    ['tasks/pushNotificationConfig/set', 'tasks/pushNotificationConfig/set'], ['CreateTaskPushNotificationConfig', 'tasks/pushNotificationConfig/set'],
    ['tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/get'], ['GetTaskPushNotificationConfig', 'tasks/pushNotificationConfig/get'],
    ['tasks/pushNotificationConfig/list', 'tasks/pushNotificationConfig/list'], ['ListTaskPushNotificationConfigs', 'tasks/pushNotificationConfig/list'],
    ['tasks/pushNotificationConfig/delete', 'tasks/pushNotificationConfig/delete'], ['DeleteTaskPushNotificationConfig', 'tasks/pushNotificationConfig/delete'],
    ['agent/getAuthenticatedExtendedCard', 'agent/getAuthenticatedExtendedCard'], ['GetExtendedAgentCard', 'agent/getAuthenticatedExtendedCard'],
  ])('%p -> %p', (method, aos) => {
    const c = expectA2a(classify(req(rpc(method, 7))), aos);
    expect(c.id).toBe(7);
    expect(c.request).toEqual({ jsonrpc: '2.0', id: 7, method, params: { id: 't-1' } });
  });

  test.each(['/', '/a2a/jsonrpc', '/.well-known/agent-card.json', '/healthz', '/static/x.png?x=1', '/v1/card?x=1', '/a2a/rest/message:send/extra'])(
    'is intercepted on any path: %p', (path) => {
      expectA2a(classify(req(rpc('message/send'), { path })), 'message/send');
    },
  );

  test.each(['/a2a/rest/message:send', '/message:stream', '/t/tasks/abc:cancel'])(
    'is refused on a path that is also an A2A REST route (%p): the agent could run the route instead', (path) => {
      const c = classify(req(rpc('message/send'), { path }));
      expect(c.kind).toBe('reject');
      if (c.kind === 'reject') expect(c.binding).toBe('rest');
    },
  );

  test('the observed SDK v1.0 request', () => {
    const body = '{"jsonrpc":"2.0","method":"SendMessage","params":{"message":{"messageId":"e2cf22fc","role":"ROLE_USER","parts":[{"text":"hello"}]},"configuration":{}},"id":1}';
    const c = expectA2a(classify(req(body, { headers: { ...JSON_CT, 'a2a-version': '1.0' } })), 'message/send');
    expect(c.id).toBe(1);
    expect(c.request.params).toEqual({ message: { messageId: 'e2cf22fc', role: 'ROLE_USER', parts: [{ text: 'hello' }] }, configuration: {} });
  });

  test('a body that is only whitespace-padded strict JSON is still A2A', () => {
    expectA2a(classify(req(` \n\t${rpc('message/send')}\r\n `)), 'message/send');
  });

  test('jsonrpc member absent or wrong still counts as an A2A call (no bypass by omitting it)', () => {
    expectA2a(classify(req(JSON.stringify({ id: 1, method: 'message/send', params: {} }))), 'message/send');
    expectA2a(classify(req(JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'SendMessage' }))), 'message/send');
  });
});

describe('JSON-RPC ids', () => {
  test.each([
    ['string', 'abc', 'abc'],
    ['empty string', '', ''],
    ['integer', 42, 42],
    ['zero', 0, 0],
    ['negative', -3, -3],
    ['fraction', 1.5, 1.5],
    ['null', null, null],
  ])('%s id is kept', (_n, id, want) => {
    const c = expectA2a(classify(req(rpc('message/send', id))), 'message/send');
    expect(c.id).toBe(want);
  });

  test('missing id (notification) -> a2a with id null', () => {
    const c = expectA2a(classify(req(JSON.stringify({ jsonrpc: '2.0', method: 'tasks/get', params: { id: 'x' } }))), 'tasks/get');
    expect(c.id).toBeNull();
    expect('id' in c.request).toBe(false);
  });

  test.each([
    ['object', { a: 1 }],
    ['array', [1]],
    ['boolean', true],
  ])('%s id -> reject with id null', (_n, id) => {
    const c = expectReject(classify(req(rpc('message/send', id))));
    expect(c.id).toBeNull();
  });

  test('a number that overflows to Infinity is not a valid id', () => {
    expectReject(classify(req('{"jsonrpc":"2.0","id":1e999,"method":"message/send"}')));
  });
});

describe('refusals', () => {
  test.each(['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'post'])('A2A JSON-RPC body with verb %s -> reject, id kept', (verb) => {
    const c = expectReject(classify(req(rpc('message/send', 'r-9'), { verb })));
    expect(c.id).toBe('r-9');
  });

  test.each([
    ['one call', [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: {} }]],
    ['two calls', [{ jsonrpc: '2.0', id: 1, method: 'tasks/get' }, { jsonrpc: '2.0', id: 2, method: 'message/send' }]],
    ['non-A2A objects', [{ jsonrpc: '2.0', id: 1, method: 'custom/thing' }]],
    ['mixed', [1, { method: 'message/send' }]],
    ['nested', [[{ method: 'message/send' }]]],
  ])('batch (%s) -> reject -31400', (_n, batch) => {
    const c = expectReject(classify(req(JSON.stringify(batch))));
    expect(c.id).toBeNull();
    expect(ERROR_CODES.rejected).toBe(-31400);
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
  ])('not strict JSON but JSON-ish (%s) -> reject', (_n, body) => {
    expectReject(classify(req(body)));
  });

  test.each(['x-http-method-override', 'x-http-method', 'x-method-override'])('%s header -> reject, whatever the body', (h) => {
    expectReject(classify(req(rpc('message/send'), { headers: { ...JSON_CT, [h]: 'POST' } })));
    expectReject(classify(req(null, { verb: 'GET', headers: { [h]: 'POST' } })));
    expectReject(classify(req('hello', { headers: { 'content-type': 'text/plain', [h]: 'GET' } })));
  });

  test.each([
    ['number', 5], ['null', null], ['object', { x: 'message/send' }], ['array', ['message/send']], ['boolean', true],
  ])('method that is not a string (%s) -> reject, id kept', (_n, method) => {
    const c = expectReject(classify(req(rpc(method, 3))));
    expect(c.id).toBe(3);
  });

  test.each(['Message/Send', ' message/send', 'message/send ', 'SENDMESSAGE', 'sendmessage', 'Tasks/Cancel', 'send_streaming_message'])(
    'near-miss method %p -> reject (a lenient upstream could run it unchecked)', (m) => {
      const c = expectReject(classify(req(rpc(m, 'q'))));
      expect(c.id).toBe('q');
    },
  );

  test('invalid UTF-8 in a JSON body -> reject', () => {
    const body = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"t":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]);
    expectReject(classify(req(body)));
    expectReject(classify(req(body, { headers: {} })));
    expectReject(classify(req(body, { headers: { 'content-type': 'text/plain; charset=utf-8' } })));
  });
});

describe('content type is not trusted', () => {
  test.each(['text/plain', 'application/octet-stream', 'application/x-www-form-urlencoded', 'application/a2a+json', 'image/png'])(
    'A2A JSON body with content-type %p -> still a2a', (ct) => {
      expectA2a(classify(req(rpc('tasks/cancel'), { headers: { 'content-type': ct } })), 'tasks/cancel');
    },
  );

  test('no content-type at all -> still a2a', () => {
    expectA2a(classify(req(rpc('GetTask'), { headers: {} })), 'tasks/get');
  });

  // Regression: invalid UTF-8 used to be refused only when the content-type looked textual; with any other
  // content-type the bytes went out as 'other' without a guardian decision, yet lenient upstream decoders
  // (Node Buffer#toString, Go encoding/json) replace the bad byte with U+FFFD and run the A2A call.
  test('an A2A call with one invalid UTF-8 byte and content-type application/octet-stream is not forwarded unchecked', () => {
    const text = rpc('message/send', 1, { message: { role: 'user', parts: [{ kind: 'text', text: 'hi #' }] } });
    const body = Buffer.from(text, 'utf8');
    body[body.indexOf('#')] = 0xff;
    expect(JSON.parse(body.toString('utf8')).method).toBe('message/send'); // what a lenient upstream sees
    const c = classify(req(body, { headers: { 'content-type': 'application/octet-stream' } }));
    expect(c.kind).not.toBe('other');
  });

  // Regression: JSON in UTF-16BE / UTF-32BE (no BOM) is valid UTF-8 (NUL bytes) and fails JSON.parse; it used
  // to be forwarded as 'other'. Python's json.loads(bytes) (Starlette's Request.json(), i.e. the Python A2A
  // SDK) auto-detects UTF-16/32 and would run the call: a guardian bypass.
  test.each([
    ['UTF-16BE', (s: string) => Buffer.from(s, 'utf16le').swap16()],
    ['UTF-32BE', (s: string) => Buffer.concat([...s].map((ch) => Buffer.from([0, 0, 0, ch.charCodeAt(0)])))],
  ])('an A2A call encoded as %s (JSON per RFC 7159 encoding detection) is not forwarded unchecked', (_n, encode) => {
    const c = classify(req(encode(rpc('message/send')), { headers: JSON_CT }));
    expect(c.kind).not.toBe('other');
  });

  test('UTF-16LE and UTF-32LE A2A calls are refused', () => {
    const s = rpc('message/send');
    expectReject(classify(req(Buffer.from(s, 'utf16le'))));
    expectReject(classify(req(Buffer.concat([...s].map((ch) => Buffer.from([ch.charCodeAt(0), 0, 0, 0]))))));
    expectReject(classify(req(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(s, 'utf16le')]))));
  });
});

describe('duplicate keys: what JSON.parse gives (last wins) is what counts', () => {
  test('harmless method first, A2A method last -> a2a', () => {
    const c = expectA2a(classify(req('{"jsonrpc":"2.0","id":1,"method":"custom/echo","method":"message/send","params":{}}')), 'message/send');
    expect(c.request.method).toBe('message/send');
  });

  test('A2A method first, other method last -> other, forwarded in canonical form (first-wins upstreams see the same)', () => {
    const raw = '{"jsonrpc":"2.0","id":1,"method":"message/send","method":"custom/echo","params":{"a":1}}';
    const c = expectOther(classify(req(raw)));
    expect(c.unknownMethod).toBe('custom/echo');
    expect(c.body?.toString('utf8')).toBe('{"jsonrpc":"2.0","id":1,"method":"custom/echo","params":{"a":1}}');
  });

  test('duplicate id: last wins', () => {
    const c = expectA2a(classify(req('{"jsonrpc":"2.0","id":{"x":1},"id":5,"method":"tasks/get"}')), 'tasks/get');
    expect(c.id).toBe(5);
  });

  test('duplicate params: the request carries the last one', () => {
    const c = expectA2a(classify(req('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"evil":1},"params":{"good":2}}')), 'message/send');
    expect(c.request.params).toEqual({ good: 2 });
  });

  test('non-A2A objects are forwarded canonically (escapes and whitespace normalised)', () => {
    const c = expectOther(classify(req('{ "hello" : "\\u0077orld",  "n" : 1.0 }')));
    expect(c.body?.toString('utf8')).toBe('{"hello":"world","n":1}');
    expect(c.unknownMethod).toBeUndefined();
  });

  test('escaped A2A method name is still the A2A method', () => {
    expectA2a(classify(req('{"jsonrpc":"2.0","id":1,"method":"message\\/send"}')), 'message/send');
    expectA2a(classify(req('{"jsonrpc":"2.0","id":1,"method":"\\u0053endMessage"}')), 'message/send');
  });
});

describe('not A2A', () => {
  test('null body and empty body -> other with the body as given', () => {
    expect(classify(req(null))).toEqual({ kind: 'other', body: null });
    const empty = Buffer.alloc(0);
    const c = expectOther(classify(req(empty)));
    expect(c.body).toBe(empty);
  });

  test('GET without a body -> other', () => {
    expectOther(classify(req(null, { verb: 'GET', path: '/.well-known/agent-card.json', headers: {} })));
  });

  test('unknown JSON-RPC method -> other with unknownMethod', () => {
    const c = expectOther(classify(req(rpc('custom/doStuff', 2))));
    expect(c.unknownMethod).toBe('custom/doStuff');
    expect(JSON.parse(c.body!.toString('utf8'))).toEqual({ jsonrpc: '2.0', id: 2, method: 'custom/doStuff', params: { id: 't-1' } });
  });

  test('unknown method with an object id is still just other (no A2A meaning)', () => {
    const c = expectOther(classify(req(rpc('ping', { a: 1 }))));
    expect(c.unknownMethod).toBe('ping');
  });

  test('unknown method on a non-POST verb -> other', () => {
    expectOther(classify(req(rpc('custom/x'), { verb: 'PUT' })));
  });

  test.each([
    ['JSON object without method', '{"hello":"world"}', '{"hello":"world"}'],
    ['JSON string', '"message/send"', '"message/send"'],
    ['JSON number', ' 42 ', '42'],
    ['JSON null', 'null', 'null'],
    ['array of scalars', '[1, "message/send", null]', '[1,"message/send",null]'],
    ['empty array', '[]', '[]'],
  ])('%s -> other, canonical body', (_n, raw, canon) => {
    const c = expectOther(classify(req(raw)));
    expect(c.body?.toString('utf8')).toBe(canon);
  });

  test.each([
    ['plain text', 'hello world', 'text/plain'],
    ['form data', 'a=1&b=2', 'application/x-www-form-urlencoded'],
    ['xml', '<x>message</x>', 'application/xml'],
  ])('non-JSON text (%s) -> other, bytes as received', (_n, raw, ct) => {
    const body = Buffer.from(raw);
    const c = expectOther(classify(req(body, { headers: { 'content-type': ct } })));
    expect(c.body).toBe(body);
  });

  test('binary body with a binary content type -> other, bytes as received', () => {
    const body = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00]);
    const c = expectOther(classify(req(body, { headers: { 'content-type': 'image/png' } })));
    expect(c.body).toBe(body);
  });
});

describe('robustness', () => {
  // Regression: JSON.parse accepts deep nesting, JSON.stringify (canonical()) then overflowed the stack and
  // classify threw a RangeError instead of returning a Classified.
  test('deeply nested non-A2A JSON does not make classify throw', () => {
    const depth = 20000;
    const body = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    let c: Classified | undefined;
    expect(() => { c = classify(req(body)); }).not.toThrow();
    expect(['other', 'reject']).toContain(c?.kind);
  });

  test('deeply nested batch array is refused, not thrown', () => {
    const depth = 20000;
    const body = `${'['.repeat(depth)}{}${']'.repeat(depth)}`;
    expectReject(classify(req(body)));
  });
});
