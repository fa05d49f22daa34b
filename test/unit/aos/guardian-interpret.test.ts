import { interpret } from '../../../src/aos/guardian';

const ID = '0b6c1d1e-4c1b-4f6e-9a51-2f0d1b1f7a11';
const reply = (body: unknown, status = 200) => ({ status, body: typeof body === 'string' ? body : JSON.stringify(body) });
const success = (result: unknown, id: unknown = ID) => ({ jsonrpc: '2.0', id, result });

function failureKind(r: ReturnType<typeof interpret>): string {
  if (r.ok) throw new Error(`expected a failure, got ${JSON.stringify(r)}`);
  expect(typeof r.detail).toBe('string');
  expect(r.detail.length).toBeGreaterThan(0);
  return r.kind;
}

describe('interpret: success', () => {
  test.each(['allow', 'deny', 'modify'])('decision %p', (decision) => {
    const r = interpret(reply(success({ decision, message: 'm' })), ID);
    expect(r).toEqual({ ok: true, result: { decision, message: 'm' } });
  });

  test('all optional fields are kept', () => {
    const result = {
      decision: 'modify',
      message: 'masked',
      reasoning: 'pii',
      reasonCode: ['PII', 'EMAIL'],
      data: { k: 1 },
      modifiedRequest: { jsonrpc: '2.0', id: ID, method: 'message/send', params: { payload: { jsonrpc: '2.0', id: 1, method: 'message/send' } } },
      extra: 'ignored but allowed',
    };
    const r = interpret(reply(success(result)), ID);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.result.reasonCode).toEqual(['PII', 'EMAIL']);
      expect(r.result.modifiedRequest?.params.payload).toEqual({ jsonrpc: '2.0', id: 1, method: 'message/send' });
      expect(r.result.reasoning).toBe('pii');
    }
  });

  test.each([200, 201, 299])('any 2xx (%p) is accepted', (status) => {
    expect(interpret(reply(success({ decision: 'allow', message: '' }), status), ID).ok).toBe(true);
  });

  test('numeric envelope id matching numerically', () => {
    expect(interpret(reply(success({ decision: 'allow', message: 'ok' }, 1)), 1).ok).toBe(true);
  });
});

describe('interpret: no valid answer', () => {
  test.each([100, 199, 301, 304, 400, 401, 404, 500, 502, 503])('HTTP %p -> http', (status) => {
    expect(failureKind(interpret(reply(success({ decision: 'allow', message: 'x' }), status), ID))).toBe('http');
  });

  test('204 No Content (empty body) -> json', () => {
    expect(failureKind(interpret({ status: 204, body: '' }, ID))).toBe('json');
  });

  test('non-2xx wins even with a valid body', () => {
    const r = interpret(reply(success({ decision: 'allow', message: 'x' }), 500), ID);
    expect(r).toEqual({ ok: false, kind: 'http', detail: 'HTTP 500' });
  });

  test.each(['', 'not json', '<html>oops</html>', '{"jsonrpc":"2.0",', 'NaN'])('non-JSON body %p -> json', (body) => {
    expect(failureKind(interpret({ status: 200, body }, ID))).toBe('json');
  });

  test('JSON-RPC error -> rpcError, with code and message in detail', () => {
    const r = interpret(reply({ jsonrpc: '2.0', id: ID, error: { code: -32603, message: 'boom' } }), ID);
    expect(failureKind(r)).toBe('rpcError');
    if (!r.ok) expect(r.detail).toContain('-32603');
    expect(failureKind(interpret(reply({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse' } }), ID))).toBe('rpcError');
  });

  test('a body carrying both result and error is not a success', () => {
    const r = interpret(reply({ jsonrpc: '2.0', id: ID, result: { decision: 'allow', message: '' }, error: { code: 1, message: 'x' } }), ID);
    expect(r.ok).toBe(false);
  });

  test.each([
    ['missing decision', { message: 'x' }],
    ['bad decision value', { decision: 'block', message: 'x' }],
    ['upper-case decision', { decision: 'ALLOW', message: 'x' }],
    ['missing message', { decision: 'allow' }],
    ['non-string message', { decision: 'allow', message: 5 }],
    ['reasonCode not a list', { decision: 'deny', message: 'x', reasonCode: 'PII' }],
    ['modifiedRequest without params.payload', { decision: 'modify', message: 'x', modifiedRequest: { params: {} } }],
    ['payload not an object', { decision: 'modify', message: 'x', modifiedRequest: { params: { payload: 'text' } } }],
    ['result is null', null],
  ])('schema-invalid result (%s) -> schema', (_n, result) => {
    expect(failureKind(interpret(reply(success(result)), ID))).toBe('schema');
  });

  test.each([
    ['missing jsonrpc', { id: ID, result: { decision: 'allow', message: 'x' } }],
    ['wrong jsonrpc', { jsonrpc: '1.0', id: ID, result: { decision: 'allow', message: 'x' } }],
    ['missing result', { jsonrpc: '2.0', id: ID }],
    ['array', [{ jsonrpc: '2.0', id: ID, result: { decision: 'allow', message: 'x' } }]],
    ['null id', { jsonrpc: '2.0', id: null, result: { decision: 'allow', message: 'x' } }],
    ['plain string', 'allow'],
  ])('schema-invalid envelope (%s) -> schema', (_n, body) => {
    expect(failureKind(interpret(reply(typeof body === 'string' ? JSON.stringify(body) : body), ID))).toBe('schema');
  });

  test('wrong id -> id', () => {
    expect(failureKind(interpret(reply(success({ decision: 'allow', message: 'x' }, 'other-id')), ID))).toBe('id');
  });

  test('id type mismatch "1" vs 1 -> id (both directions)', () => {
    expect(failureKind(interpret(reply(success({ decision: 'allow', message: 'x' }, '1')), 1))).toBe('id');
    expect(failureKind(interpret(reply(success({ decision: 'allow', message: 'x' }, 1)), '1'))).toBe('id');
  });

  test('a deny with a wrong id is not a deny (no valid answer)', () => {
    const r = interpret(reply(success({ decision: 'deny', message: 'x' }, 'nope')), ID);
    expect(r.ok).toBe(false);
  });
});
