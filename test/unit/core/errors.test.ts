import {
  ERROR_CODES,
  errorCode,
  jsonRpcErrorBody,
  jsonRpcErrorObject,
  proxyError,
  restErrorObject,
  restHttpStatus,
  type ProxyErrorKind,
} from '../../../src/core/errors';
import { codeSpans, doc, sourceText, tableRows } from '../../helpers/readme';

const INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const META = { envelopeId: 'e-1', reasonCode: 'R1,R2' };

/** The proxy's own errors: codes outside JSON-RPC's reserved range and A2A's -32001..-32099. */
const OWN: Array<[ProxyErrorKind, number, string, number, string]> = [
  ['denied', -31403, 'GUARDIAN_DENIED', 403, 'PERMISSION_DENIED'],
  ['guardianUnavailable', -31503, 'GUARDIAN_UNAVAILABLE', 503, 'UNAVAILABLE'],
  ['rejected', -31400, 'REQUEST_REJECTED', 400, 'INVALID_ARGUMENT'],
  ['upstreamUnavailable', -31502, 'UPSTREAM_UNAVAILABLE', 502, 'UNAVAILABLE'],
  ['overloaded', -31429, 'PROXY_OVERLOADED', 503, 'RESOURCE_EXHAUSTED'],
  ['limited', -31429, 'CALLER_LIMITED', 429, 'RESOURCE_EXHAUSTED'],
  ['unauthenticated', -31401, 'UNAUTHENTICATED', 401, 'UNAUTHENTICATED'],
];

/**
 * Refusals of what the agent would refuse too (design section 5): the binding's standard code, the
 * proxy's ErrorInfo (REQUEST_REJECTED), and where A2A defines one, A2A's own ErrorInfo first.
 */
const STANDARD: Array<[ProxyErrorKind, number, number, string, string | undefined]> = [
  ['parseError', -32700, 400, 'INVALID_ARGUMENT', undefined],
  ['invalidRequest', -32600, 400, 'INVALID_ARGUMENT', undefined],
  ['invalidParams', -32602, 400, 'INVALID_ARGUMENT', undefined],
  ['methodNotFound', -32601, 404, 'UNIMPLEMENTED', undefined],
  ['notFound', -32601, 404, 'NOT_FOUND', undefined],
  ['contentTypeNotSupported', -32005, 400, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED'],
  ['versionNotSupported', -32009, 400, 'UNIMPLEMENTED', 'VERSION_NOT_SUPPORTED'],
];

describe.each(OWN)('%s', (kind, code, reason, http, status) => {
  const err = proxyError(kind, 'custom message', META);

  test('code', () => {
    expect(errorCode(kind)).toBe(code);
    expect(ERROR_CODES[kind as keyof typeof ERROR_CODES]).toBe(code);
    expect(code < -32768 || code > -32000).toBe(true);
  });

  test('JSON-RPC form keeps the caller id and carries one ErrorInfo', () => {
    for (const id of ['abc', 7, 0, null] as const) {
      expect(jsonRpcErrorObject(err, id)).toEqual({
        jsonrpc: '2.0',
        id,
        error: { code, message: 'custom message', data: [{ '@type': INFO, reason, domain: 'a2a-guard', metadata: META }] },
      });
      expect(JSON.parse(jsonRpcErrorBody(err, id))).toEqual(jsonRpcErrorObject(err, id));
    }
  });

  test('REST form: google.rpc.Status inside error, HTTP status', () => {
    expect(restHttpStatus(err)).toBe(http);
    expect(restErrorObject(err)).toEqual({
      error: { code: http, status, message: 'custom message', details: [{ '@type': INFO, reason, domain: 'a2a-guard', metadata: META }] },
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

describe.each(STANDARD)('%s', (kind, code, http, status, a2aReason) => {
  const err = proxyError(kind, 'why', { limit: '1' });
  const own = { '@type': INFO, reason: 'REQUEST_REJECTED', domain: 'a2a-guard', metadata: { limit: '1' } };
  const details = a2aReason === undefined ? [own] : [{ '@type': INFO, reason: a2aReason, domain: 'a2a-protocol.org' }, own];

  test("the binding's standard JSON-RPC code, not one of the proxy's own", () => {
    expect(errorCode(kind)).toBe(code);
    expect(code >= -32768 && code <= -32000).toBe(true);
    expect(kind in ERROR_CODES).toBe(false);
  });

  test("JSON-RPC form: the caller id, the standard code, and the proxy's ErrorInfo so operators see who refused", () => {
    expect(jsonRpcErrorObject(err, 'q')).toEqual({ jsonrpc: '2.0', id: 'q', error: { code, message: 'why', data: details } });
  });

  test('REST form: HTTP status and google.rpc.Status name, same details', () => {
    expect(restHttpStatus(err)).toBe(http);
    expect(restErrorObject(err)).toEqual({ error: { code: http, status, message: 'why', details } });
  });

  test('has a default message', () => {
    expect(proxyError(kind).message.length).toBeGreaterThan(0);
  });
});

test.each([
  [413, 'RESOURCE_EXHAUSTED'],
  [408, 'DEADLINE_EXCEEDED'],
  [405, 'UNIMPLEMENTED'],
  [400, 'INVALID_ARGUMENT'],
])('explicit HTTP status %p overrides the REST status (and its name) but not the JSON-RPC code', (http, name) => {
  const e = proxyError('rejected', 'too big', { limit: '10' }, http);
  expect(restHttpStatus(e)).toBe(http);
  expect(restErrorObject(e).error.code).toBe(http);
  expect(restErrorObject(e).error.status).toBe(name);
  expect(jsonRpcErrorObject(e, 1).error.code).toBe(-31400);
});

test('"overloaded" is HTTP 503 in both forms\' status and -31429 in JSON-RPC', () => {
  const e = proxyError('overloaded', 'busy', {}, 503);
  expect(restHttpStatus(e)).toBe(503);
  expect(jsonRpcErrorObject(e, null).error.code).toBe(-31429);
});

test('the JSON-RPC body is a single line of JSON', () => {
  expect(jsonRpcErrorBody(proxyError('denied', 'multi\nline'), 'x')).not.toMatch(/\n/);
});

describe('the error reference (docs/reference/errors.md)', () => {
  const KINDS: ProxyErrorKind[] = [...OWN.map(([k]) => k), ...STANDARD.map(([k]) => k), 'taskNotFound', 'taskStoreUnavailable'];
  const STATUS_NAMES = new Set([
    'PERMISSION_DENIED',
    'UNAVAILABLE',
    'INVALID_ARGUMENT',
    'RESOURCE_EXHAUSTED',
    'UNAUTHENTICATED',
    'NOT_FOUND',
    'UNIMPLEMENTED',
    'DEADLINE_EXCEEDED',
    'INTERNAL',
  ]);
  const rows = tableRows(doc('docs/reference/errors.md'), '| code | ErrorInfo reason | meaning | REST form |');
  /** What a caller gets for a kind: the JSON-RPC code, the ErrorInfo reasons, the REST status and its name. */
  const form = (kind: ProxyErrorKind) => {
    const e = proxyError(kind);
    const rest = restErrorObject(e).error;
    return { code: errorCode(kind), reasons: jsonRpcErrorObject(e, 1).error.data.map((d) => d.reason), http: rest.code, status: rest.status };
  };

  test('every row is what the proxy answers: code, ErrorInfo reason, REST status and its name', () => {
    expect(rows.length).toBeGreaterThan(10);
    for (const [code, reason, , restForm] of rows) {
      const wanted = {
        code: Number(codeSpans(code as string)[0]),
        reasons: codeSpans(reason as string),
        http: Number(/HTTP (\d{3})/.exec(restForm as string)?.[1]),
        status: codeSpans(restForm as string).filter((s) => STATUS_NAMES.has(s)),
      };
      const matching = KINDS.map(form).filter(
        (f) =>
          f.code === wanted.code && wanted.reasons.every((r) => f.reasons.includes(r)) && f.http === wanted.http && wanted.status.every((s) => s === f.status),
      );
      expect([code, matching.length > 0]).toEqual([code, true]);
    }
  });

  test('every error the proxy answers with has a row', () => {
    // A kind counts when src/ uses it outside the error table itself.
    const src = sourceText(['core/errors.ts']);
    const listed = new Set(rows.map(([code]) => Number(codeSpans(code as string)[0])));
    for (const kind of KINDS.filter((k) => src.includes(`'${k}'`))) expect([kind, listed.has(errorCode(kind))]).toEqual([kind, true]);
  });
});
