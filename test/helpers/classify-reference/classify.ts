// Reference copy, verbatim but for import paths, of src/a2a/classify.ts as of main 8de3f8d (before the
// classify fast-path work): test/unit/a2a/classify-reference.test.ts holds the current code to it.
// Rule changes since, written here the plain way: JSON-RPC members beside the four are carried (or refused
// by name), JSON-RPC takes application/a2a+json too, and JSON-RPC refusals carry the caller's id where readable.
/**
 * HTTP request -> what it is, in a positive model (design section 2): an A2A call (JSON-RPC on any
 * path, or a REST route below the agent's REST base), the agent card, an operator-listed passthrough
 * route, or a refusal. Whatever cannot be read with certainty is refused, never relayed; the proxy
 * forwards only requests it rebuilds from what it classified (a2a/rebuild.ts). Pure apart from
 * minting ids for REST calls.
 */
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { type Operation, operationForLooseMethod, operationForMethod } from '../../../src/a2a/operations';
import { caseFolded, isLegacyVersion, looksLikeRest, matchRest, restHasBody, restToJsonRpc, type RestMatch } from './rest';
import { encodePath, encodeQuery, isUnder, parseTarget, type Target } from './target';
import type { AgentEndpoints } from '../../../src/a2a/endpoints';
import { isObject, type JsonObject, type JsonRpcId } from '../../../src/core/json';
import { A2A_FREE_FORM_MEMBERS, A2A_MEMBER_NAMES } from '../../../src/a2a/fields';
import { echoableId, refusalId } from '../../../src/a2a/rpc-id';
import { proxyError, type ProxyError, type ProxyErrorKind } from '../../../src/core/errors';

export interface HttpRequestFacts {
  readonly verb: string;
  /** Path and query as received. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** Decoded body, or null when the request has none. */
  readonly body: Buffer | null;
}

export interface ClassifyOptions {
  readonly endpoints: AgentEndpoints;
  /** Whether the agent's card has been read (otherwise REST bases are unknown). */
  readonly cardKnown: boolean;
  /** Path prefixes (decoded segments) of non-A2A routes forwarded unjudged. */
  readonly passthrough: readonly (readonly string[])[];
  /** NON_A2A=forward: the escape hatch that forwards every non-A2A request unjudged. */
  readonly forwardNonA2A: boolean;
}

export interface RestCall {
  readonly match: RestMatch;
  /** The REST base (decoded segments) the route sits below. */
  readonly base: readonly string[];
}

export type Binding = 'jsonrpc' | 'rest';

export type Classified =
  | {
      readonly kind: 'a2a';
      readonly binding: Binding;
      readonly op: Operation;
      /** The JSON-RPC request (REST: its JSON-RPC equivalent), as the guardian will see it. */
      readonly request: JsonObject;
      /** The caller's JSON-RPC id (REST: the minted id of the equivalent request). */
      readonly id: JsonRpcId | null;
      /** The A2A-Version the call is read under (absent = 0.3), forwarded exactly so. */
      readonly version: string | undefined;
      /** JSON-RPC: the canonical path (and query) to forward to. */
      readonly target: string;
      readonly rest?: RestCall;
    }
  | { readonly kind: 'card'; readonly target: string }
  /** Not A2A and allowed through unjudged (PASSTHROUGH_PATHS, or NON_A2A=forward). */
  | { readonly kind: 'other'; readonly target: string; readonly body: Buffer | null; readonly why: 'passthrough' | 'non-a2a'; readonly method?: string }
  | { readonly kind: 'reject'; readonly error: ProxyError; readonly id: JsonRpcId | null; readonly binding: Binding };

/** Headers whose meaning classification reads: a hop-by-hop removal would change the call behind the guardian's back. */
export const CLASSIFYING_HEADERS = [
  'a2a-version',
  'content-type',
  'content-encoding',
  'content-length',
  'transfer-encoding',
  'host',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  // Service parameters the guardian is shown: `A2A_Extensions` is the same header to CGI-style servers.
  'a2a-extensions',
  'x-a2a-extensions',
];
const CLASSIFYING = new Set(CLASSIFYING_HEADERS);
const OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'];

type ParsedBody =
  | { readonly kind: 'none' }
  | { readonly kind: 'json'; readonly value: unknown }
  | { readonly kind: 'opaque' }
  | { readonly kind: 'bad'; readonly why: string }
  | { readonly kind: 'tooComplex'; readonly why: string };

/**
 * Bounds on a JSON body's shape, checked on the bytes before JSON.parse: parsing (and walking) a
 * 10 MiB body of 300,000 keys or 500,000 nested arrays holds the event loop for seconds. A2A
 * requests are far below both.
 */
export const MAX_JSON_DEPTH = 64;
export const MAX_JSON_VALUES = 100_000;

/** Depth and value count of JSON text, read byte by byte (strings skipped); undefined when within bounds. */
function jsonTooComplex(b: Buffer): string | undefined {
  let depth = 0;
  let values = 0;
  let inString = false;
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) return `JSON nested deeper than ${MAX_JSON_DEPTH}`;
      values++;
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c || c === 0x3a) {
      if (++values > MAX_JSON_VALUES) return `JSON with more than ${MAX_JSON_VALUES} members or elements`;
    }
  }
  return undefined;
}

function reject(kind: ProxyErrorKind, message: string, binding: Binding, id: JsonRpcId | null = null): Classified {
  return { kind: 'reject', error: proxyError(kind, message), id, binding };
}

export function classify(req: HttpRequestFacts, opts: ClassifyOptions): Classified {
  let c: Classified;
  try {
    c = contentTypeFirst(req, classifyUnsafe(req, opts));
  } catch (err) {
    // JSON nested deeper than the engine's stack (or similar hostile input): refuse, never crash.
    c = reject('rejected', `Request could not be processed: ${(err as Error).name}`, 'jsonrpc');
  }
  return c.kind === 'reject' && c.binding === 'jsonrpc' && c.id === null ? { ...c, id: readableId(req) } : c;
}

/** The caller's id as a refusal carries it: from the parsed body, or from the top level of one too complex to parse; none for a body that is not JSON. */
function readableId(req: HttpRequestFacts): JsonRpcId | null {
  if (req.body === null) return null;
  const body = parseBody(req);
  if (body.kind === 'json') return isObject(body.value) ? echoableId(body.value.id) : null;
  return body.kind === 'tooComplex' ? refusalId(req.body) : null;
}

function classifyUnsafe(req: HttpRequestFacts, opts: ClassifyOptions): Classified {
  const parsed = parseTarget(req.path);
  if (!parsed.ok) return reject('rejected', `Request target refused: ${parsed.why}`, 'rest');
  const t = parsed.target;
  const headerProblem = checkHeaders(req.headers);
  if (headerProblem !== undefined) return reject('rejected', headerProblem, flavour(req, t, opts, undefined));
  const version = a2aVersion(req.headers, t);
  if ('problem' in version) return reject('rejected', version.problem, flavour(req, t, opts, undefined));
  const verb = req.verb.toUpperCase();

  if ((verb === 'GET' || verb === 'HEAD') && isCardPath(t.segments)) {
    // The card path the agent gets is the canonical one, whatever case it was asked in.
    const n = t.segments.length;
    return { kind: 'card', target: encodePath([...t.segments.slice(0, n - 2), '.well-known', (t.segments[n - 1] as string).toLowerCase()]) };
  }

  const body = parseBody(req);
  const rpc = body.kind === 'json' && isObject(body.value) && looksLikeRpc(body.value) ? body.value : undefined;

  const underRest = opts.endpoints.rest.filter((b) => isUnder(t.segments, b));
  for (const base of underRest.sort((a, b) => b.length - a.length)) {
    const m = matchRest(verb, t.segments.slice(base.length), version.value);
    if (m === undefined) continue;
    if ('ambiguous' in m) return reject('rejected', `Ambiguous A2A REST path: ${m.ambiguous}`, 'rest');
    if (rpc !== undefined) return reject('rejected', 'A JSON-RPC body on an A2A REST route is ambiguous', 'rest');
    return classifyRest(req, t, base, m, body, version.value);
  }

  // A JSON-RPC call below a REST base is fine where no route (strict or loose) reads the path.
  if (rpc !== undefined) return classifyJsonRpc(req, t, opts, rpc, version.value);
  const restOnly = underRest.length > 0 && !isJsonRpcEndpoint(t, opts);
  if (body.kind === 'bad') return reject('parseError', body.why, flavour(req, t, opts, body));
  if (body.kind === 'tooComplex') return reject('rejected', body.why, flavour(req, t, opts, body));
  // A batch is never relayed, under any NON_A2A: one judged call could hide others behind it.
  if (body.kind === 'json' && Array.isArray(body.value) && body.value.some((e) => typeof e === 'object' && e !== null)) {
    return reject(malformed(version.value), 'JSON-RPC batches are not accepted', flavour(req, t, opts, body));
  }

  if (passthrough(t, opts)) return other(req, t, body, 'passthrough');
  if (looksLikeRest(t.segments)) {
    if (!opts.cardKnown) return reject('upstreamUnavailable', 'A2A REST call, but the agent card (which names its REST endpoint) could not be read', 'rest');
    return reject('notFound', restOnly ? 'No A2A REST route matches this path' : 'Not an A2A REST endpoint of this agent', 'rest');
  }
  if (grpcMethodPath(t.segments)) return reject('notFound', 'A2A gRPC methods are served on the gRPC port only (gRPC-Web and Connect are not carried)', 'rest');
  if (opts.forwardNonA2A) return other(req, t, body, 'non-a2a');
  if (restOnly) return reject('notFound', 'No A2A REST route matches this path', 'rest');
  const f = flavour(req, t, opts, body);
  if (f === 'jsonrpc') {
    if (body.kind === 'none' || body.kind === 'opaque') {
      if (!isMediaType(req.headers, JSON_RPC_TYPES))
        return reject('contentTypeNotSupported', 'Content type not supported; expected application/json or application/a2a+json', 'jsonrpc');
      return reject('parseError', 'Request body is not JSON', 'jsonrpc');
    }
    // A top-level JSON scalar is a parse error to a strict JSON body parser (the SDK's express.json()).
    if (body.kind === 'json' && (typeof body.value !== 'object' || body.value === null))
      return reject('parseError', 'Request body is not a JSON object', 'jsonrpc');
    return reject(malformed(version.value), 'Request is not a JSON-RPC 2.0 request object', 'jsonrpc');
  }
  return reject('notFound', 'Not an A2A endpoint; other routes must be listed in PASSTHROUGH_PATHS', 'rest');
}

function other(req: HttpRequestFacts, t: Target, body: ParsedBody, why: 'passthrough' | 'non-a2a', method?: string): Classified {
  const forwarded = body.kind === 'json' ? canonical(body.value) : req.body;
  const target = encodePath(t.segments, t.trailingSlash) + encodeQuery(t.query);
  return { kind: 'other', target, body: forwarded, why, ...(method === undefined ? {} : { method }) };
}

function passthrough(t: Target, opts: ClassifyOptions): boolean {
  if (!opts.passthrough.some((p) => isUnder(t.segments, p))) return false;
  // A listed prefix never opens an A2A endpoint of the agent, nor anything a router could read as one.
  if (opts.endpoints.rest.some((b) => isUnder(t.segments, b)) || opts.endpoints.jsonrpc.some((j) => isUnder(t.segments, j))) return false;
  return !looksLikeRest(t.segments) && !grpcMethodPath(t.segments);
}

/** The RPCs of the A2A gRPC services (v1.0 `lf.a2a.v1.A2AService`, v0.3 `a2a.v1.A2AService`). */
const GRPC_RPCS = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
  'TaskSubscription',
  'GetAgentCard',
  'ListTaskPushNotificationConfig',
].map((m) => m.toLowerCase());

/** A path ending in an A2A gRPC service (`lf.a2a.v1.A2AService`, any case, Unicode folds too) and one of its RPCs. */
function grpcMethodPath(segments: readonly string[]): boolean {
  const n = segments.length;
  return n >= 2 && GRPC_RPCS.includes(caseFolded(segments[n - 1] as string)) && caseFolded(segments[n - 2] as string).endsWith('a2aservice');
}

function isJsonRpcEndpoint(t: Target, opts: ClassifyOptions): boolean {
  return opts.endpoints.jsonrpc.some((j) => j.length === t.segments.length && isUnder(t.segments, j));
}

/** Which binding's terms a refusal uses: JSON-RPC at the agent's JSON-RPC endpoints and for JSON-RPC-looking bodies. */
function flavour(req: HttpRequestFacts, t: Target, opts: ClassifyOptions, body: ParsedBody | undefined): Binding {
  if (isJsonRpcEndpoint(t, opts)) return 'jsonrpc';
  if (opts.endpoints.rest.some((b) => isUnder(t.segments, b)) || looksLikeRest(t.segments)) return 'rest';
  if (body?.kind === 'json' && (isObject(body.value) || Array.isArray(body.value))) return 'jsonrpc';
  return req.verb.toUpperCase() === 'POST' && isMediaType(req.headers, ['application/json']) ? 'jsonrpc' : 'rest';
}

function checkHeaders(h: IncomingHttpHeaders): string | undefined {
  for (const o of OVERRIDE_HEADERS) {
    // A method override turns a harmless-looking verb into a POST for some servers.
    if (h[o] !== undefined) return `${o} is not accepted by this proxy`;
  }
  for (const name in h) {
    // `A2A_Version` is A2A-Version to CGI-style servers: one header, two spellings, two meanings.
    if (name.includes('_') && CLASSIFYING.has(name.replace(/_/g, '-')))
      return `Header ${name} is ambiguous (underscore spelling of ${name.replace(/_/g, '-')})`;
  }
  const conn = h.connection;
  if (conn !== undefined) {
    for (const token of conn.split(',')) {
      const n = token.trim().toLowerCase();
      if (CLASSIFYING.has(n)) return `Connection names ${n}, which this proxy reads to classify the request`;
    }
  }
  const ct = h['content-type'];
  // A charset is a parameter: none without a ';'.
  if (ct !== undefined && ct.includes(';')) {
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/gi;
    for (const m of ct.matchAll(charset)) {
      // The agent's body parser would decode another charset (UTF-7, UTF-16...) into other text than the guardian saw.
      if ((m[1] ?? '').toLowerCase() !== 'utf-8' && (m[1] ?? '').toLowerCase() !== 'utf8')
        return `Charset "${(m[1] ?? '').slice(0, 32)}" is not accepted; requests must be UTF-8`;
    }
  }
  return undefined;
}

/** The A2A-Version the call is read under: one header value, and a query parameter that does not contradict it. */
function a2aVersion(h: IncomingHttpHeaders, t: Target): { value: string | undefined } | { problem: string } {
  const raw = h['a2a-version'];
  const header = Array.isArray(raw) ? raw.join(',') : raw;
  if (header !== undefined && (header.includes(',') || !/^[\x21-\x7e ]*$/.test(header))) return { problem: 'A2A-Version must be one value' };
  const value = header === undefined || header.trim() === '' ? undefined : header.trim();
  const fromQuery = t.query.filter(([k]) => k.toLowerCase() === 'a2a-version').map(([, v]) => v.trim());
  if (fromQuery.some((q) => q !== (value ?? q) || q !== fromQuery[0])) return { problem: 'A2A-Version query parameter contradicts the header' };
  return { value };
}

function isCardPath(segs: readonly string[]): boolean {
  const n = segs.length;
  if (n < 2 || (segs[n - 2] as string).toLowerCase() !== '.well-known') return false;
  const last = (segs[n - 1] as string).toLowerCase();
  return last === 'agent-card.json' || last === 'agent.json';
}

// ---- bodies ----

/** Could a lenient parser (JSON5, comments, BOM, NaN...) read JSON out of these bytes? */
function mightBeJson(text: string): boolean {
  const s = text.replace(/^[\s\uFEFF]+/, '');
  return /^[[{/]/.test(s) || /jsonrpc|"method"|'method'|\bmethod\s*:/i.test(text);
}

function parseBody(req: HttpRequestFacts): ParsedBody {
  if (req.body === null || req.body.length === 0) return { kind: 'none' };
  if (!isUtf8(req.body)) {
    const alt = wideDecode(req.body) ?? req.body.toString('latin1');
    return looksTextual(req) || mightBeJson(alt) || mightBeJson(req.body.toString('utf8'))
      ? { kind: 'bad', why: 'Request body is not valid UTF-8' }
      : { kind: 'opaque' };
  }
  const complex = jsonTooComplex(req.body);
  if (complex !== undefined) return { kind: 'tooComplex', why: `Request body refused: ${complex}` };
  const text = req.body.toString('utf8'); // keeps a BOM, which JSON.parse then refuses
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch {
    const suspicious = mightBeJson(text) || (text.includes('\0') && mightBeJson(text.replace(/\0/g, '')));
    return suspicious || isMediaType(req.headers, ['application/json', 'application/a2a+json'])
      ? { kind: 'bad', why: 'Request body is not strict JSON' }
      : { kind: 'opaque' };
  }
}

/** UTF-16/32 text by BOM or by the RFC 4627 NUL pattern of its first bytes, decoded; else undefined. */
function wideDecode(b: Buffer): string | undefined {
  if (b.length < 4) return undefined;
  const [b0, b1, b2, b3] = [b[0], b[1], b[2], b[3]];
  let enc: 'utf-16le' | 'utf-16be' | undefined;
  if ((b0 === 0xff && b1 === 0xfe) || (b0 !== 0 && b1 === 0 && b3 === 0)) enc = 'utf-16le';
  else if ((b0 === 0xfe && b1 === 0xff) || (b0 === 0 && b2 === 0 && b1 !== 0)) enc = 'utf-16be';
  else if (b0 === 0 && b1 === 0 && b2 === 0) return b.toString('latin1').replace(/\0/g, '');
  if (enc === undefined) return undefined;
  return new TextDecoder(enc).decode(b).replace(/\0/g, '');
}

function looksTextual(req: HttpRequestFacts): boolean {
  const ct = String(req.headers['content-type'] ?? '').toLowerCase();
  return ct === '' || ct.includes('json') || ct.startsWith('text/');
}

function mediaType(h: IncomingHttpHeaders): string | undefined {
  const ct = h['content-type'];
  return ct === undefined ? undefined : (ct.split(';', 1)[0] as string).trim().toLowerCase();
}

function isMediaType(h: IncomingHttpHeaders, accepted: readonly string[]): boolean {
  const m = mediaType(h);
  return m !== undefined && accepted.includes(m);
}

/** A Content-Type is given and is not one of `accepted` (the SDK's content-type guards pass a missing one on). */
function refusedMediaType(h: IncomingHttpHeaders, accepted: readonly string[]): boolean {
  const m = mediaType(h);
  return m !== undefined && !accepted.includes(m);
}

// ---- JSON-RPC ----

const RPC_MEMBERS = new Set(['jsonrpc', 'method', 'params', 'id']);
const JSON_RPC_TYPES = ['application/json', 'application/a2a+json'];
/** Unicode-aware case fold (ſ -> s, K (Kelvin) -> k), as case-insensitive JSON decoders do. */
const fold = (k: string): string => k.toUpperCase().toLowerCase();
/** ASCII letters and digits: folding is lower-casing, and there is no separator to drop. */
const ALNUM = /^[A-Za-z0-9]*$/;
/**
 * Spellings one decoder or another takes for the same field: case, snake_case, kebab-case. Keys of
 * letters and digits (nearly all) skip the Unicode fold: every member name of every call goes
 * through here (test/unit/a2a/classify-keys.test.ts checks the shortcut).
 */
export const fieldKey = (k: string): string => (ALNUM.test(k) ? k.toLowerCase() : fold(k).replace(/[_-]/g, ''));

/**
 * A member name that folds onto an A2A member name without being one of its spellings, outside
 * free-form members (`metadata`, `data`...); the first in the order the walk below meets them.
 */
function misspelledField(root: unknown): string | undefined {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) stack.push(...v.filter((e) => typeof e === 'object' && e !== null));
    else if (typeof v === 'object' && v !== null) {
      for (const [k, child] of Object.entries(v)) {
        if (A2A_FREE_FORM_MEMBERS.includes(k)) continue;
        if (!A2A_MEMBER_NAMES.includes(k) && A2A_MEMBER_NAMES.some((n) => fieldKey(n) === fieldKey(k))) return k;
        if (typeof child === 'object' && child !== null) stack.push(child);
      }
    }
  }
  return undefined;
}

/** Does some member name read as `method` or `jsonrpc` to a case-insensitive decoder? (The exact names answer at once.) */
function looksLikeRpc(v: JsonObject): boolean {
  if (Object.hasOwn(v, 'method') || Object.hasOwn(v, 'jsonrpc')) return true;
  return Object.keys(v).some((k) => fold(k) === 'method' || fold(k) === 'jsonrpc');
}

/** JSON-RPC ids the SDK accepts: a string, an integer or null (1.5 is an invalid request there). */
function validId(v: unknown): v is JsonRpcId | null | undefined {
  return v === undefined || v === null || typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));
}

/** The SDK answers a malformed JSON-RPC request with -32600 on its v0.3 dispatcher and -32602 on its v1.0 one. */
function malformed(version: string | undefined): ProxyErrorKind {
  return isLegacyVersion(version) ? 'invalidRequest' : 'invalidParams';
}

/**
 * Two keys of one object that some decoder reads as the same field (`taskId` and `task_id`,
 * `Method` and `method`): the guardian could judge one value while the agent uses the other.
 * Walks the whole value without recursion (hostile nesting cannot blow the stack).
 */
export function ambiguousKey(root: unknown): string | undefined {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const e of v) if (typeof e === 'object' && e !== null) stack.push(e);
    } else if (typeof v === 'object' && v !== null) {
      const seen = new Set<string>();
      for (const [k, child] of Object.entries(v)) {
        const f = fieldKey(k);
        if (seen.has(f)) return k;
        seen.add(f);
        if (typeof child === 'object' && child !== null) stack.push(child);
      }
    }
  }
  return undefined;
}

/** Standard JSON-RPC refusals that the SDK's router only reaches past its content-type guard. */
const AFTER_CONTENT_TYPE: ReadonlySet<ProxyErrorKind> = new Set<ProxyErrorKind>(['parseError', 'invalidRequest', 'invalidParams', 'methodNotFound']);

/**
 * The SDK's JSON-RPC router refuses a given Content-Type other than application/json before it reads the body, so
 * a body it would refuse too is answered -32005 there (the proxy's own refusals, -31400, keep their code).
 */
function contentTypeFirst(req: HttpRequestFacts, c: Classified): Classified {
  if (c.kind !== 'reject' || c.binding !== 'jsonrpc' || !AFTER_CONTENT_TYPE.has(c.error.kind) || !refusedMediaType(req.headers, JSON_RPC_TYPES)) return c;
  return reject('contentTypeNotSupported', 'Content type not supported; expected application/json or application/a2a+json', 'jsonrpc', c.id);
}

function classifyJsonRpc(req: HttpRequestFacts, t: Target, opts: ClassifyOptions, v: JsonObject, version: string | undefined): Classified {
  const id = v.id;
  const safeId: JsonRpcId | null = typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
  for (const k of Object.keys(v)) {
    // Some decoders (Go's encoding/json) match member names without regard to case (or separators).
    if (RPC_MEMBERS.has(k)) continue;
    if (RPC_MEMBERS.has(fieldKey(k))) return reject('rejected', `JSON-RPC member names must be exact (${k.slice(0, 32)})`, 'jsonrpc', safeId);
    if (fieldKey(k) === 'result' || fieldKey(k) === 'error')
      return reject('rejected', `A JSON-RPC request carries no ${k.slice(0, 32)} member`, 'jsonrpc', safeId);
    if (k === '__proto__')
      return reject('rejected', 'Member __proto__ is not accepted (a JavaScript agent copying the request reads it as the prototype)', 'jsonrpc', safeId);
  }
  const method = v.method;
  if (v.jsonrpc !== '2.0') return reject(malformed(version), 'JSON-RPC version must be "2.0"', 'jsonrpc', safeId);
  if (!validId(id)) return reject(malformed(version), 'JSON-RPC id must be a string, an integer or null', 'jsonrpc', typeof id === 'number' ? id : null);
  if (typeof method !== 'string' || method === '') return reject(malformed(version), 'JSON-RPC method must be a non-empty string', 'jsonrpc', safeId);
  const op = operationForMethod(method);
  if (op === undefined) {
    if (operationForLooseMethod(method) === undefined) {
      if (passthrough(t, opts)) return other(req, t, { kind: 'json', value: v }, 'passthrough', method);
      // As for other bodies: NON_A2A=forward never forwards to a path a router could read as an A2A route.
      if (opts.forwardNonA2A && !looksLikeRest(t.segments) && !grpcMethodPath(t.segments)) return other(req, t, { kind: 'json', value: v }, 'non-a2a', method);
    }
    return reject('methodNotFound', `Method not found: ${method.slice(0, 64)} is not an A2A operation`, 'jsonrpc', safeId);
  }
  if (req.verb.toUpperCase() !== 'POST') return reject('invalidRequest', `A2A JSON-RPC calls must use POST, not ${req.verb.slice(0, 16)}`, 'jsonrpc', safeId);
  if (looksLikeRest(t.segments)) return reject('rejected', 'A JSON-RPC call on a path that reads as an A2A REST route is ambiguous', 'jsonrpc', safeId);
  if (grpcMethodPath(t.segments)) return reject('rejected', 'A JSON-RPC call on a path that reads as an A2A gRPC method is ambiguous', 'jsonrpc', safeId);
  if (!isMediaType(req.headers, JSON_RPC_TYPES)) {
    return reject(
      'contentTypeNotSupported',
      `Content type not supported: ${String(req.headers['content-type'] ?? '(none)').slice(0, 64)}; expected application/json or application/a2a+json`,
      'jsonrpc',
      safeId,
    );
  }
  const params = v.params;
  // As the SDK: params is an object without empty member names (the extended-card call may omit it).
  const paramsOk = isObject(params) ? !Object.keys(params).includes('') : params === undefined && op.returnsCard;
  if (!paramsOk) return reject('invalidParams', 'JSON-RPC params must be an object (without empty member names)', 'jsonrpc', safeId);
  const amb = ambiguousKey(params);
  if (amb !== undefined) return reject('rejected', `Ambiguous member names in params (${amb.slice(0, 32)})`, 'jsonrpc', safeId);
  const miss = misspelledField(params);
  if (miss !== undefined) return reject('rejected', `Member ${miss.slice(0, 32)} is not spelled as A2A spells it`, 'jsonrpc', safeId);
  const foreign = foreignMessageShape(isObject(params) ? params : undefined, false);
  if (foreign !== undefined) return reject('invalidParams', foreign, 'jsonrpc', safeId);
  for (const k of Object.keys(v)) {
    if (RPC_MEMBERS.has(k)) continue;
    const extraAmb = ambiguousKey(v[k]);
    if (extraAmb !== undefined) return reject('rejected', `Ambiguous member names in ${k.slice(0, 32)} (${extraAmb.slice(0, 32)})`, 'jsonrpc', safeId);
  }
  // What the guardian sees is what the agent gets: the whole request, in the caller's member order.
  const request: JsonObject = v;
  // A JSON-RPC call is its body: query parameters would reach the agent unjudged (a framework may read
  // `?access_token=` or `?tenant=`), and the envelope has no place for them. A2A-Version is read above.
  // The one exception: exactly the query the agent's card publishes for its JSON-RPC endpoint.
  const kept = t.query.filter(([k]) => k.toLowerCase() !== 'a2a-version');
  const query = kept.length === 0 ? '' : encodeQuery(kept);
  if (query !== '' && opts.endpoints.jsonrpcQueries?.includes(query) !== true) {
    const names = [...new Set(kept.map(([k]) => k.slice(0, 32)))];
    const named = names.length > 3 ? `${names.slice(0, 3).join(', ')}, ...` : names.join(', ');
    return reject('invalidRequest', `A2A JSON-RPC calls take no query parameters (${named}): the guardian would not see them`, 'jsonrpc', safeId);
  }
  return { kind: 'a2a', binding: 'jsonrpc', op, request, id: safeId, version, target: encodePath(t.segments, t.trailingSlash) + query };
}

// ---- REST ----

function classifyRest(req: HttpRequestFacts, t: Target, base: readonly string[], m: RestMatch, body: ParsedBody, version: string | undefined): Classified {
  let params: JsonObject | undefined;
  const accepted = m.version === '0.3' ? ['application/json'] : ['application/json', 'application/a2a+json'];
  // As the SDK's v1.0 REST router: a media type it refuses is refused before the body is parsed.
  if (body.kind === 'bad' && m.version !== '0.3' && refusedMediaType(req.headers, accepted))
    return reject('contentTypeNotSupported', `Content type not supported; expected ${accepted.join(' or ')}`, 'rest');
  if (body.kind === 'bad') return reject('parseError', body.why, 'rest');
  if (body.kind === 'tooComplex') return reject('rejected', body.why, 'rest');
  if (body.kind === 'opaque') return reject('contentTypeNotSupported', 'A2A REST calls carry JSON bodies', 'rest');
  if (body.kind === 'json') {
    // GET/DELETE routes take no body: one a lenient server might read would bypass the guardian.
    if (!restHasBody(m)) return reject('rejected', `${m.route.verb} ${m.op.v1Method} takes no request body`, 'rest');
    if (!isMediaType(req.headers, accepted)) return reject('contentTypeNotSupported', `Content type not supported; expected ${accepted.join(' or ')}`, 'rest');
    if (!isObject(body.value)) return reject('invalidRequest', 'A2A REST request body must be a JSON object', 'rest');
    params = body.value;
  }
  const query = t.query.filter(([k]) => k.toLowerCase() !== 'a2a-version');
  const keys = query.map(([k]) => k);
  // Parsers disagree on repeated parameters (first or last wins): the guardian must see the one the agent reads.
  if (new Set(keys.map(fieldKey)).size !== keys.length) return reject('rejected', 'Repeated query parameters are not accepted on A2A REST routes', 'rest');
  const amb = ambiguousKey(params);
  if (amb !== undefined) return reject('rejected', `Ambiguous member names in the body (${amb.slice(0, 32)})`, 'rest');
  const foreign = foreignMessageShape(params, m.version === '0.3');
  if (foreign !== undefined) return reject('invalidParams', foreign, 'rest');
  const request = restToJsonRpc(m, query, params, randomUUID());
  if (typeof request === 'string') return reject('rejected', request, 'rest');
  // After the mapping: the query's members (`?ContextId=`) are params too.
  const miss = misspelledField(request.params);
  if (miss !== undefined) return reject('rejected', `Member ${miss.slice(0, 32)} is not spelled as A2A spells it`, 'rest');
  return { kind: 'a2a', binding: 'rest', op: m.op, request, id: request.id as string, version, target: encodePath(base), rest: { match: m, base } };
}

/**
 * A message in the other version's shape: v0.3 REST (proto) messages carry `content`, every other
 * form carries `parts`. The agent's decoder drops the field it does not know, so the guardian would
 * judge text the agent never sees (and the agent act on a message the guardian did not read).
 */
function foreignMessageShape(params: JsonObject | undefined, restV03: boolean): string | undefined {
  const message = params?.message;
  if (!isObject(message)) return undefined;
  const foreign = restV03 ? ['parts'] : ['content'];
  const k = Object.keys(message).find((key) => foreign.includes(fieldKey(key)));
  return k === undefined ? undefined : `message field "${k}" belongs to the other A2A version's shape (${restV03 ? 'v0.3 REST uses content' : 'use parts'})`;
}

/**
 * Forward what was parsed, not the raw bytes: duplicate keys, odd escapes and whitespace tricks then
 * mean the same thing to every parser downstream.
 */
function canonical(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v), 'utf8');
}
