/**
 * The proxy's own errors (design section 5): JSON-RPC form (HTTP 200, caller's id) and REST form
 * (HTTP 4xx/5xx with a google.rpc.Status body). Codes sit outside JSON-RPC's reserved range and
 * A2A's -32001..-32099, so no client mistakes them for an agent error.
 */
import type { JsonRpcId } from './json';

export type ProxyErrorKind =
  | 'denied'
  | 'guardianUnavailable'
  | 'rejected'
  | 'upstreamUnavailable'
  | 'overloaded'
  | 'limited'
  | 'unauthenticated'
  // Refusals of what the agent would refuse too: the binding's standard codes, with the proxy's ErrorInfo.
  | 'parseError'
  | 'invalidRequest'
  | 'invalidParams'
  | 'methodNotFound'
  | 'notFound'
  | 'contentTypeNotSupported'
  | 'versionNotSupported'
  // Task ownership: another caller's task is answered exactly as a task that does not exist; the owner store is down.
  | 'taskNotFound'
  | 'taskStoreUnavailable';

interface KindInfo {
  readonly code: number;
  readonly reason: string;
  readonly httpStatus: number;
  readonly grpcStatus: string;
  readonly defaultMessage: string;
}

const KINDS: Record<ProxyErrorKind, KindInfo> = {
  denied: { code: -31403, reason: 'GUARDIAN_DENIED', httpStatus: 403, grpcStatus: 'PERMISSION_DENIED', defaultMessage: 'Blocked by guardian' },
  guardianUnavailable: { code: -31503, reason: 'GUARDIAN_UNAVAILABLE', httpStatus: 503, grpcStatus: 'UNAVAILABLE', defaultMessage: 'Guardian unavailable' },
  rejected: { code: -31400, reason: 'REQUEST_REJECTED', httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', defaultMessage: 'Request refused by proxy' },
  upstreamUnavailable: {
    code: -31502,
    reason: 'UPSTREAM_UNAVAILABLE',
    httpStatus: 502,
    grpcStatus: 'UNAVAILABLE',
    defaultMessage: 'Upstream agent unavailable',
  },
  // Too many request bytes held at once (MAX_INFLIGHT_BODY_BYTES): a clear "try later", not unbounded memory.
  overloaded: { code: -31429, reason: 'PROXY_OVERLOADED', httpStatus: 503, grpcStatus: 'RESOURCE_EXHAUSTED', defaultMessage: 'Proxy overloaded, retry later' },
  // One caller at its own share (calls, bytes, rate): its answer alone, with Retry-After; nobody else notices.
  limited: { code: -31429, reason: 'CALLER_LIMITED', httpStatus: 429, grpcStatus: 'RESOURCE_EXHAUSTED', defaultMessage: 'Caller over its share, retry later' },
  parseError: { code: -32700, reason: 'REQUEST_REJECTED', httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', defaultMessage: 'Invalid JSON payload' },
  invalidRequest: { code: -32600, reason: 'REQUEST_REJECTED', httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', defaultMessage: 'Invalid request' },
  invalidParams: { code: -32602, reason: 'REQUEST_REJECTED', httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', defaultMessage: 'Invalid params' },
  methodNotFound: { code: -32601, reason: 'REQUEST_REJECTED', httpStatus: 404, grpcStatus: 'UNIMPLEMENTED', defaultMessage: 'Method not found' },
  notFound: { code: -32601, reason: 'REQUEST_REJECTED', httpStatus: 404, grpcStatus: 'NOT_FOUND', defaultMessage: 'Not found' },
  contentTypeNotSupported: {
    code: -32005,
    reason: 'REQUEST_REJECTED',
    httpStatus: 400,
    grpcStatus: 'INVALID_ARGUMENT',
    defaultMessage: 'Content type not supported',
  },
  versionNotSupported: { code: -32009, reason: 'REQUEST_REJECTED', httpStatus: 400, grpcStatus: 'UNIMPLEMENTED', defaultMessage: 'A2A version not supported' },
  // The caller's identity could not be verified (IDENTITY_POLICY=required, or a bad credential).
  unauthenticated: { code: -31401, reason: 'UNAUTHENTICATED', httpStatus: 401, grpcStatus: 'UNAUTHENTICATED', defaultMessage: 'Caller identity not verified' },
  taskNotFound: { code: -32001, reason: 'TASK_NOT_FOUND', httpStatus: 404, grpcStatus: 'NOT_FOUND', defaultMessage: 'Task not found' },
  taskStoreUnavailable: {
    code: -31504,
    reason: 'TASK_STORE_UNAVAILABLE',
    httpStatus: 503,
    grpcStatus: 'UNAVAILABLE',
    defaultMessage: 'Task owner store unavailable',
  },
};

/** A2A's own ErrorInfo reason for the standard refusals (google.rpc.ErrorInfo, domain a2a-protocol.org). */
const A2A_REASONS: Partial<Record<ProxyErrorKind, string>> = {
  contentTypeNotSupported: 'CONTENT_TYPE_NOT_SUPPORTED',
  versionNotSupported: 'VERSION_NOT_SUPPORTED',
  taskNotFound: 'TASK_NOT_FOUND',
};

/**
 * Kinds answered exactly as the agent answers, without the proxy's ErrorInfo: telling "another
 * caller's task" from "no such task" would leak that the task exists.
 */
const AGENT_FORM_ONLY: ReadonlySet<ProxyErrorKind> = new Set(['taskNotFound']);

export const ERROR_CODES = {
  denied: KINDS.denied.code,
  guardianUnavailable: KINDS.guardianUnavailable.code,
  rejected: KINDS.rejected.code,
  upstreamUnavailable: KINDS.upstreamUnavailable.code,
  overloaded: KINDS.overloaded.code,
  limited: KINDS.limited.code,
  unauthenticated: KINDS.unauthenticated.code,
} as const;

/** A caller at its share: `retryAfterSeconds` goes out as Retry-After (HTTP) and in the ErrorInfo metadata. */
export function callerLimited(resource: string, retryAfterSeconds: number, message?: string): ProxyError {
  const seconds = String(Math.max(1, Math.ceil(retryAfterSeconds)));
  // HTTP 429 in every binding, as gateways answer a limit: the request was not read, a JSON-RPC id is not known.
  return proxyError('limited', message ?? `Too many ${resource} for this caller; retry later`, { resource, retryAfterSeconds: seconds }, 429);
}

export interface ProxyError {
  readonly kind: ProxyErrorKind;
  readonly message: string;
  /** ErrorInfo metadata; values are strings per google.rpc.ErrorInfo. */
  readonly metadata: Readonly<Record<string, string>>;
  /** HTTP status for the REST form (and for refusals that happen before JSON-RPC is known, e.g. 413). */
  readonly httpStatus?: number;
}

export function proxyError(kind: ProxyErrorKind, message?: string, metadata: Record<string, string> = {}, httpStatus?: number): ProxyError {
  return { kind, message: message ?? KINDS[kind].defaultMessage, metadata, ...(httpStatus === undefined ? {} : { httpStatus }) };
}

function errorInfo(err: ProxyError) {
  return { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: KINDS[err.kind].reason, domain: 'a2a-guard', metadata: err.metadata };
}

/** The A2A ErrorInfo (when the kind has one) first, as the agent would send it, then the proxy's. */
function errorDetails(err: ProxyError) {
  const a2a = A2A_REASONS[err.kind];
  if (a2a !== undefined && AGENT_FORM_ONLY.has(err.kind))
    return [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: a2a, domain: 'a2a-protocol.org' }];
  const own = errorInfo(err);
  return a2a === undefined ? [own] : [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: a2a, domain: 'a2a-protocol.org' }, own];
}

/** JSON-RPC error response object with the caller's id (null when it had none). */
export function jsonRpcErrorObject(err: ProxyError, id: JsonRpcId | null) {
  return { jsonrpc: '2.0' as const, id, error: { code: KINDS[err.kind].code, message: err.message, data: errorDetails(err) } };
}

export function jsonRpcErrorBody(err: ProxyError, id: JsonRpcId | null): string {
  return JSON.stringify(jsonRpcErrorObject(err, id));
}

/** REST (HTTP+JSON) form: google.rpc.Status inside `error`. */
export function restErrorObject(err: ProxyError) {
  const status = restHttpStatus(err);
  return { error: { code: status, status: restStatusName(status, err.kind), message: err.message, details: errorDetails(err) } };
}

/** google.rpc.Code name for the REST body: the kind's, unless the HTTP status says otherwise (413, 408). */
function restStatusName(status: number, kind: ProxyErrorKind): string {
  if (status === 413) return 'RESOURCE_EXHAUSTED';
  if (status === 408) return 'DEADLINE_EXCEEDED';
  if (status === 405) return 'UNIMPLEMENTED';
  return KINDS[kind].grpcStatus;
}

export function restHttpStatus(err: ProxyError): number {
  return err.httpStatus ?? KINDS[err.kind].httpStatus;
}

export function errorCode(kind: ProxyErrorKind): number {
  return KINDS[kind].code;
}

/** gRPC form: the status name (the kind's unless `status` overrides it) and the google.rpc.Status details. */
export function grpcErrorParts(err: ProxyError, status?: string): { status: string; message: string; details: ReturnType<typeof errorDetails> } {
  return { status: status ?? KINDS[err.kind].grpcStatus, message: err.message, details: errorDetails(err) };
}
