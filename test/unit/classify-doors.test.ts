/**
 * Doors found in review: request targets and JSON member names that some servers read differently
 * from the proxy. Each must be refused (or inspected), never classified as "other" and forwarded.
 */
import { classify, type Classified } from '../../src/a2a/classify';
import { isCardPath } from '../../src/a2a/card';

const send = { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } };
const post = (path: string, body: unknown, headers: Record<string, string> = {}): Classified =>
  classify({ verb: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, body: Buffer.from(JSON.stringify(body)) });
const get = (path: string, headers: Record<string, string> = { 'a2a-version': '1.0' }): Classified =>
  classify({ verb: 'GET', path, headers, body: null });

describe('request targets', () => {
  test.each(['/v1/message:send#x', '/message:send#', '/t/message:send#frag', '/a2a\\rest/message:send'])('%p is refused', (path) => {
    const c = post(path, send, { 'a2a-version': '1.0' });
    expect(c.kind).toBe('reject');
  });

  test('a fragment on a GET route is refused, not judged as another task id', () => {
    expect(get('/v1/tasks/abc#x').kind).toBe('reject');
  });

  test.each(['/message:send;x=1', '/tasks/abc;v=1', '/tasks;x/abc:cancel'])('matrix parameters on a REST route (%p) are refused as ambiguous', (path) => {
    const c = path.includes(':') ? post(path, path.includes('message') ? send : {}, { 'a2a-version': '1.0' }) : get(path);
    expect(c.kind).toBe('reject');
    if (c.kind === 'reject') expect(c.binding).toBe('rest');
  });

  test('a semicolon on a path that is no A2A route is forwarded as before', () => {
    expect(get('/static/app.js;v=2').kind).toBe('other');
  });
});

describe('JSON-RPC member names under case folding', () => {
  test.each([
    [{ jsonrpc: '2.0', id: 1, METHOD: 'message/send', params: send }],
    [{ jsonrpc: '2.0', id: 1, Method: 'message/send', params: send }],
    [{ jsonrpc: '2.0', id: 1, method: 'message/send', Params: send }],
    [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: send, PARAMS: { message: { parts: [{ text: 'evil' }] } } }],
    [{ jſonrpc: '2.0', id: 1, method: 'message/send', params: send }],
    [{ jsonrpc: '2.0', ID: 1, method: 'message/send', params: send }],
    [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: { ...send, Message: { parts: [{ text: 'evil' }] } } }],
  ])('%j is refused', (body) => {
    const c = post('/', body);
    expect(c.kind).toBe('reject');
  });

  test('an ordinary JSON body with upper-case keys that is not JSON-RPC is still forwarded', () => {
    expect(post('/api/things', { ID: 5, Name: 'x' }).kind).toBe('other');
  });
});

describe('REST queries', () => {
  test('repeated query parameters are refused (first-wins and last-wins parsers disagree)', () => {
    const c = get('/v1/tasks?contextId=secret&contextId=ok');
    expect(c.kind).toBe('reject');
  });

  test('a query on a REST route that carries a body is refused (the guardian would not see it)', () => {
    expect(post('/message:send?configuration=x', send, { 'a2a-version': '1.0' }).kind).toBe('reject');
    const ok = post('/message:send?A2A-Version=1.0', send, { 'a2a-version': '1.0' });
    expect(ok.kind).toBe('a2a');
  });

  test('single query parameters on GET routes are shown to the guardian', () => {
    const c = get('/tasks?contextId=c1&pageSize=2');
    expect(c.kind).toBe('a2a');
    if (c.kind === 'a2a') expect(c.request.params).toEqual({ contextId: 'c1', pageSize: 2 });
  });
});

describe('agent card paths as lenient routers see them', () => {
  test.each(['/.well-known/agent-card.json', '/.well-known/Agent-Card.json', '/.WELL-KNOWN/AGENT-CARD.JSON', '/.well-known/agent-card.json/', '/x/.well-known/agent.json', '/.well-known/agent-card.json;v=1'])(
    '%p is the card', (p) => expect(isCardPath(p)).toBe(true),
  );
  test.each(['/.well-known/agent-card.jsonx', '/well-known/agent-card.json'])('%p is not', (p) => expect(isCardPath(p)).toBe(false));
});
