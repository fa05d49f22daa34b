import {
  ERROR_CODES, errorCode, jsonRpcErrorBody, jsonRpcErrorObject, proxyError, restErrorObject, restHttpStatus, type ProxyErrorKind,
} from '../../src/proxy/errors';

const TABLE: Array<[ProxyErrorKind, number, string, number, string]> = [
  ['denied', -31403, 'GUARDIAN_DENIED', 403, 'PERMISSION_DENIED'],
  ['guardianUnavailable', -31503, 'GUARDIAN_UNAVAILABLE', 503, 'UNAVAILABLE'],
  ['rejected', -31400, 'REQUEST_REJECTED', 400, 'INVALID_ARGUMENT'],
  ['upstreamUnavailable', -31502, 'UPSTREAM_UNAVAILABLE', 502, 'UNAVAILABLE'],
  ['unauthenticated', -31401, 'UNAUTHENTICATED', 401, 'UNAUTHENTICATED'],
];

describe.each(TABLE)('%s', (kind, code, reason, http, status) => {
  const err = proxyError(kind, 'custom message', { envelopeId: 'e-1', reasonCode: 'R1,R2' });

  test('code', () => {
    expect(errorCode(kind)).toBe(code);
    expect(ERROR_CODES[kind]).toBe(code);
    // Outside JSON-RPC's reserved range and A2A's -32001..-32099.
    expect(code < -32768 || code > -32000).toBe(true);
  });

  test('JSON-RPC form keeps the caller id and carries one ErrorInfo', () => {
    for (const id of ['abc', 7, 0, null] as const) {
      expect(jsonRpcErrorObject(err, id)).toEqual({
        jsonrpc: '2.0', id,
        error: {
          code, message: 'custom message',
          data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-guard', metadata: { envelopeId: 'e-1', reasonCode: 'R1,R2' } }],
        },
      });
      expect(JSON.parse(jsonRpcErrorBody(err, id))).toEqual(jsonRpcErrorObject(err, id));
    }
  });

  test('REST form: google.rpc.Status inside error, HTTP status', () => {
    expect(restHttpStatus(err)).toBe(http);
    expect(restErrorObject(err)).toEqual({
      error: {
        code: http, status, message: 'custom message',
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-guard', metadata: { envelopeId: 'e-1', reasonCode: 'R1,R2' } }],
      },
    });
  });

  test('default message and empty metadata', () => {
    const e = proxyError(kind);
    expect(e.kind).toBe(kind);
    expect(e.message.length).toBeGreaterThan(0);
    expect(e.metadata).toEqual({});
    expect('httpStatus' in e).toBe(false);
  });
});

test('explicit HTTP status (413, 408) overrides the REST status but not the JSON-RPC code', () => {
  const e = proxyError('rejected', 'too big', { limit: '10' }, 413);
  expect(restHttpStatus(e)).toBe(413);
  expect(restErrorObject(e).error.code).toBe(413);
  expect(restErrorObject(e).error.status).toBe('INVALID_ARGUMENT');
  expect(jsonRpcErrorObject(e, 1).error.code).toBe(-31400);
});

test('the JSON-RPC body is a single line of JSON', () => {
  expect(jsonRpcErrorBody(proxyError('denied', 'multi\nline'), 'x')).not.toMatch(/\n/);
});
