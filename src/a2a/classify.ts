/**
 * HTTP request -> what it is: an A2A call (JSON-RPC on any path, or a REST route) with its
 * operation, something to forward without a guardian decision (not A2A), or something to refuse
 * because a lenient upstream could read an A2A call into it that the guardian never saw. Pure
 * apart from minting ids for REST calls.
 */
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { type Operation, operationForLooseMethod, operationForMethod } from './operations';
import { matchRest, restHasBody, restToJsonRpc, type RestMatch } from './rest';
import type { JsonObject, JsonRpcId } from '../aos/schemas';
import { proxyError, type ProxyError } from '../proxy/errors';

export interface HttpRequestFacts {
  readonly verb: string;
  /** Path and query as received. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** Decoded body, or null when the request has none. */
  readonly body: Buffer | null;
}

export interface RestCall {
  readonly match: RestMatch;
  /** Path without query, as received. */
  readonly pathname: string;
  /** Query with leading `?`, or ''. */
  readonly search: string;
  /** The body to forward on allow: canonical JSON of what was parsed, or null. */
  readonly body: Buffer | null;
}

export type Binding = 'jsonrpc' | 'rest';

export type Classified =
  | {
      readonly kind: 'a2a';
      readonly binding: Binding;
      readonly op: Operation;
      /** The JSON-RPC request (REST: its JSON-RPC equivalent). */
      readonly request: JsonObject;
      /** The caller's JSON-RPC id (REST: the minted id of the equivalent request). */
      readonly id: JsonRpcId | null;
      readonly rest?: RestCall;
    }
  /** Not A2A. `body` is what to forward: the canonical re-serialization of parsed JSON, or the bytes as received. */
  | { readonly kind: 'other'; readonly body: Buffer | null; readonly unknownMethod?: string; readonly id?: JsonRpcId | null }
  | { readonly kind: 'reject'; readonly error: ProxyError; readonly id: JsonRpcId | null; readonly binding: Binding };

const OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'];

type ParsedBody = { readonly kind: 'none' } | { readonly kind: 'json'; readonly value: unknown } | { readonly kind: 'opaque' } | { readonly kind: 'bad'; readonly why: string };

function reject(message: string, id: JsonRpcId | null = null, binding: Binding = 'jsonrpc'): Classified {
  return { kind: 'reject', error: proxyError('rejected', message), id, binding };
}

/** Could a lenient parser (JSON5, comments, BOM, NaN...) read JSON out of these bytes? */
function mightBeJson(text: string): boolean {
  const t = text.replace(/^[\s\uFEFF]+/, '');
  return /^[[{/]/.test(t) || /jsonrpc|"method"|'method'|\bmethod\s*:/i.test(text);
}

function parseBody(req: HttpRequestFacts): ParsedBody {
  if (req.body === null || req.body.length === 0) return { kind: 'none' };
  if (!isUtf8(req.body)) {
    // Not UTF-8. Some parsers detect UTF-16/32 JSON (RFC 4627) or decode leniently: refuse anything
    // that would read as JSON that way, whatever the Content-Type says.
    const alt = wideDecode(req.body) ?? req.body.toString('latin1');
    return looksTextual(req) || mightBeJson(alt) || mightBeJson(req.body.toString('utf8'))
      ? { kind: 'bad', why: 'Request body is not valid UTF-8' }
      : { kind: 'opaque' };
  }
  const text = req.body.toString('utf8'); // keeps a BOM, which JSON.parse then refuses
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch {
    // Not strict JSON (NaN, comments, trailing commas, a BOM...). Refuse if a lenient upstream
    // parser could still find a JSON-RPC call in it.
    // NULs between ASCII characters are UTF-16/32 JSON that is also valid UTF-8.
    const suspicious = mightBeJson(text) || (text.includes('\0') && mightBeJson(text.replace(/\0/g, '')));
    return suspicious ? { kind: 'bad', why: 'Request body is not strict JSON' } : { kind: 'opaque' };
  }
}

/** UTF-16/32 text by BOM or by the RFC 4627 NUL pattern of its first bytes, decoded; else undefined. */
function wideDecode(b: Buffer): string | undefined {
  if (b.length < 4) return undefined;
  const [b0, b1, b2, b3] = [b[0], b[1], b[2], b[3]];
  let enc: 'utf-16le' | 'utf-16be' | undefined;
  if ((b0 === 0xff && b1 === 0xfe) || (b0 !== 0 && b1 === 0 && b3 === 0)) enc = 'utf-16le';
  else if ((b0 === 0xfe && b1 === 0xff) || (b0 === 0 && b2 === 0 && b1 !== 0)) enc = 'utf-16be';
  else if (b0 === 0 && b1 === 0 && b2 === 0) return b.toString('latin1').replace(/\0/g, ''); // UTF-32BE, ASCII range
  if (enc === undefined) return undefined;
  const text = new TextDecoder(enc).decode(b);
  return text.replace(/\0/g, ''); // UTF-32LE read as UTF-16 leaves NULs between characters
}

function validId(v: unknown): v is JsonRpcId | null | undefined {
  return v === undefined || v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

export function classify(req: HttpRequestFacts): Classified {
  try {
    return classifyUnsafe(req);
  } catch (err) {
    // JSON nested deeper than the engine's stack (or similar hostile input): refuse, never crash.
    return reject(`Request body could not be processed: ${(err as Error).name}`);
  }
}

function classifyUnsafe(req: HttpRequestFacts): Classified {
  const q = req.path.indexOf('?');
  const pathname = q === -1 ? req.path : req.path.slice(0, q);
  const search = q === -1 ? '' : req.path.slice(q);
  const rest = matchRest(req.verb, pathname, headerValue(req.headers['a2a-version']));
  if (rest !== undefined && 'ambiguous' in rest) return reject(`Ambiguous request path: ${rest.ambiguous}`, null, 'rest');
  const binding: Binding = rest === undefined ? 'jsonrpc' : 'rest';

  // Fragments and backslashes never belong in a request target; servers disagree on what they mean.
  if (/[#\\]/.test(req.path)) return reject('Request target contains "#" or "\\"', null, binding);
  for (const h of OVERRIDE_HEADERS) {
    // A method override turns a harmless-looking verb into a POST for some servers.
    if (req.headers[h] !== undefined) return reject(`${h} is not accepted by this proxy`, null, binding);
  }
  const body = parseBody(req);
  if (body.kind === 'bad') return reject(body.why, null, binding);

  if (body.kind === 'json') {
    const v = body.value;
    if (Array.isArray(v) && v.some((e) => typeof e === 'object' && e !== null)) return reject('JSON-RPC batches are not accepted', null, binding);
    const looksRpc = isObject(v) && Object.keys(v).some((k) => fold(k) === 'method' || fold(k) === 'jsonrpc');
    if (isObject(v) && (looksRpc || rest !== undefined)) {
      // Some parsers (Go's encoding/json) match keys without regard to case: "METHOD" is a method there.
      const caseTrick = caseAmbiguousKeys(v) ?? (isObject(v.params) ? caseAmbiguousKeys(v.params) : undefined);
      if (caseTrick !== undefined) return reject(`JSON-RPC member names must be exact (${caseTrick.slice(0, 32)})`, null, binding);
      if ('method' in v) {
        // A JSON-RPC body on a REST route: the guardian would judge one operation, the agent may run the other.
        if (rest !== undefined) return reject('A JSON-RPC body on an A2A REST route is ambiguous', null, 'rest');
        return classifyJsonRpc(req, v);
      }
    }
  }
  if (rest !== undefined) return classifyRest(rest, pathname, search, body);

  if (body.kind === 'json') return { kind: 'other', body: canonical(body.value) };
  return { kind: 'other', body: req.body };
}

const RPC_MEMBERS = new Set(['jsonrpc', 'method', 'params', 'id']);
/** Unicode-aware case fold (ſ -> s, K (Kelvin) -> k), as case-insensitive JSON decoders do. */
const fold = (k: string): string => k.toUpperCase().toLowerCase();

/** A key that is a JSON-RPC member name only when case is ignored, or two keys equal under folding. */
function caseAmbiguousKeys(o: JsonObject): string | undefined {
  const seen = new Set<string>();
  for (const k of Object.keys(o)) {
    const f = fold(k);
    if (RPC_MEMBERS.has(f) && f !== k) return k;
    if (seen.has(f)) return k;
    seen.add(f);
  }
  return undefined;
}

function classifyJsonRpc(req: HttpRequestFacts, request: JsonObject): Classified {
  const id = request.id;
  const safeId: JsonRpcId | null = typeof id === 'string' || typeof id === 'number' ? id : null;
  const method = request.method;
  if (typeof method !== 'string') return reject('JSON-RPC method must be a string', safeId);
  const op = operationForMethod(method);
  if (op === undefined) {
    if (operationForLooseMethod(method) !== undefined) return reject(`Method "${method.slice(0, 64)}" is not an exact A2A method name`, safeId);
    return { kind: 'other', body: canonical(request), unknownMethod: method, id: safeId };
  }
  if (!validId(id)) return reject('JSON-RPC id must be a string, a number or null');
  if (req.verb !== 'POST') return reject(`A2A JSON-RPC calls must use POST, not ${req.verb.slice(0, 16)}`, safeId);
  return { kind: 'a2a', binding: 'jsonrpc', op, request, id: safeId };
}

function classifyRest(match: RestMatch, pathname: string, search: string, body: ParsedBody): Classified {
  let params: JsonObject | undefined;
  if (body.kind === 'opaque') return reject('A2A REST calls carry JSON bodies', null, 'rest');
  if (body.kind === 'json') {
    // GET/DELETE routes take no body: one a lenient server might read would bypass the guardian.
    if (!restHasBody(match)) return reject(`${match.route.verb} ${match.op.aosMethod} takes no request body`, null, 'rest');
    if (!isObject(body.value)) return reject('A2A REST request body must be a JSON object', null, 'rest');
    params = body.value;
    // A body field named like a path parameter would make the guardian judge one task and the agent act on another.
    for (const [k, v] of Object.entries(match.pathParams)) {
      if (k in params && params[k] !== v) return reject(`Body field "${k}" contradicts the request path`, null, 'rest');
    }
  }
  const query = new URLSearchParams(search);
  const keys = [...query.keys()];
  // Parsers disagree on repeated parameters (first or last wins): the guardian must see the one the agent reads.
  if (new Set(keys).size !== keys.length) return reject('Repeated query parameters are not accepted on A2A REST routes', null, 'rest');
  if (restHasBody(match) && keys.some((k) => k.toLowerCase() !== 'a2a-version')) {
    return reject('Query parameters are not accepted on A2A REST routes that carry a body', null, 'rest');
  }
  const id = randomUUID();
  const request = restToJsonRpc(match, query, params, id);
  return {
    kind: 'a2a', binding: 'rest', op: match.op, request, id,
    rest: { match, pathname, search, body: params === undefined ? null : canonical(params) },
  };
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
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
