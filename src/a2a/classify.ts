/**
 * HTTP request -> what it is: an A2A JSON-RPC call (with its operation), something to forward
 * untouched by the guardian (not A2A), or something to refuse because a lenient upstream could
 * read an A2A call into it that the guardian never saw. Pure.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type Operation, operationForLooseMethod, operationForMethod } from './operations';
import type { JsonObject, JsonRpcId } from '../aos/schemas';
import { proxyError, type ProxyError } from '../proxy/errors';

export interface HttpRequestFacts {
  readonly verb: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** Decoded body, or null when the request has none. */
  readonly body: Buffer | null;
}

export type Classified =
  | { readonly kind: 'a2a'; readonly binding: 'jsonrpc'; readonly op: Operation; readonly request: JsonObject; readonly id: JsonRpcId | null }
  /** Not A2A. `body` is what to forward: the canonical re-serialization of parsed JSON, or the bytes as received. */
  | { readonly kind: 'other'; readonly body: Buffer | null; readonly unknownMethod?: string }
  | { readonly kind: 'reject'; readonly error: ProxyError; readonly id: JsonRpcId | null };

const OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'];
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function reject(message: string, id: JsonRpcId | null = null, metadata: Record<string, string> = {}): Classified {
  return { kind: 'reject', error: proxyError('rejected', message, metadata), id };
}

/** Could a lenient parser (JSON5, comments, BOM, NaN...) read JSON out of these bytes? */
function mightBeJson(text: string): boolean {
  const t = text.replace(/^[\s\uFEFF]+/, '');
  return /^[[{/]/.test(t) || /jsonrpc|"method"|'method'|\bmethod\s*:/i.test(text);
}

function validId(v: unknown): v is JsonRpcId | null | undefined {
  return v === undefined || v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

export function classify(req: HttpRequestFacts): Classified {
  for (const h of OVERRIDE_HEADERS) {
    // A method override turns a harmless-looking verb into a POST for some servers.
    if (req.headers[h] !== undefined) return reject(`${h} is not accepted by this proxy`);
  }
  if (req.body === null || req.body.length === 0) return { kind: 'other', body: req.body };

  let text: string;
  try {
    text = utf8.decode(req.body);
  } catch {
    return looksTextual(req) ? reject('Request body is not valid UTF-8') : { kind: 'other', body: req.body };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not strict JSON (NaN, comments, trailing commas, a BOM...). Refuse if a lenient upstream
    // parser could still find a JSON-RPC call in it.
    return mightBeJson(text) ? reject('Request body is not strict JSON') : { kind: 'other', body: req.body };
  }

  if (Array.isArray(parsed)) {
    if (parsed.some((e) => typeof e === 'object' && e !== null)) return reject('JSON-RPC batches are not accepted');
    return { kind: 'other', body: canonical(parsed) };
  }
  if (typeof parsed !== 'object' || parsed === null) return { kind: 'other', body: canonical(parsed) };

  const request = parsed as JsonObject;
  if (!('method' in request)) return { kind: 'other', body: canonical(request) };
  const id = request.id;
  const safeId: JsonRpcId | null = typeof id === 'string' || typeof id === 'number' ? id : null;
  const method = request.method;
  if (typeof method !== 'string') return reject('JSON-RPC method must be a string', safeId);
  const op = operationForMethod(method);
  if (op === undefined) {
    const near = operationForLooseMethod(method);
    if (near !== undefined) return reject(`Method "${method.slice(0, 64)}" is not an exact A2A method name`, safeId);
    return { kind: 'other', body: canonical(request), unknownMethod: method };
  }
  if (!validId(id)) return reject('JSON-RPC id must be a string, a number or null');
  if (req.verb !== 'POST') return reject(`A2A JSON-RPC calls must use POST, not ${req.verb.slice(0, 16)}`, safeId);
  return { kind: 'a2a', binding: 'jsonrpc', op, request, id: safeId };
}

function looksTextual(req: HttpRequestFacts): boolean {
  const ct = String(req.headers['content-type'] ?? '').toLowerCase();
  return ct === '' || ct.includes('json') || ct.startsWith('text/');
}

/**
 * Forward what was parsed, not the raw bytes: duplicate keys, odd escapes and whitespace tricks then
 * mean the same thing to every parser downstream.
 */
function canonical(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v), 'utf8');
}
