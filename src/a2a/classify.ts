/**
 * HTTP request -> what it is, in a positive model (design section 2): an A2A call (JSON-RPC on any
 * path, or a REST route below the agent's REST base), the agent card, an operator-listed passthrough
 * route, or a refusal. Whatever cannot be read with certainty is refused, never relayed; the proxy
 * forwards only requests it rebuilds from what it classified (a2a/rebuild.ts). Pure apart from
 * minting ids for REST calls (and remembering what it read of recent paths: readTarget).
 */
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { type Operation, operationForLooseMethod, operationForMethod } from './operations';
import { isLegacyVersion, looksLikeRest, matchRest, restHasBody, restToJsonRpc, type RestMatch } from './rest';
import { encodePath, encodeParsedPath, encodeQuery, isUnder, parseTarget, type Target } from './target';
import type { AgentEndpoints } from './endpoints';
import { misspelledField } from './fields';
import { echoableId, refusalId } from './rpc-id';
import { looksLikeGrpc } from './bindings/grpc/methods';
import { fieldKey, findInObjects, fold, isObject, type JsonObject, type JsonRpcId } from '../core/json';
import { proxyError, type ProxyError, type ProxyErrorKind } from '../core/errors';
import { parseJsonInPieces, withoutJsonSpace, type LongString } from '../core/json-pieces';
import { DEFAULT_JSON_LIMITS, JsonShapeScan, jsonTooComplex, surelyWithinBounds, type JsonLimits } from './json-shape';

export interface HttpRequestFacts {
  readonly verb: string;
  /** Path and query as received. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** Decoded body, or null when the request has none (or when `parsed` read it and its bytes are held elsewhere). */
  readonly body: Buffer | null;
  /** The body already read (parseBodyInTurns: a large one), in place of reading it here. */
  readonly parsed?: PreparedBody;
}

/** Never changed once classify has seen it (classify keeps what it read of a path under these options): new options are a new object. */
export interface ClassifyOptions {
  readonly endpoints: AgentEndpoints;
  /** Whether the agent's card has been read (otherwise REST bases are unknown). */
  readonly cardKnown: boolean;
  /** Path prefixes (decoded segments) of non-A2A routes forwarded unjudged. */
  readonly passthrough: readonly (readonly string[])[];
  /** NON_A2A=forward: the escape hatch that forwards every non-A2A request unjudged. */
  readonly forwardNonA2A: boolean;
  /** CARD_PATHS (decoded segments): more paths the agent serves its card at, served as the standard card. */
  readonly cardPaths?: readonly (readonly string[])[];
  /** Bounds on a JSON body's shape (JSON_MAX_*; default DEFAULT_JSON_LIMITS). */
  readonly jsonLimits?: JsonLimits;
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

type ParsedBody =
  | { readonly kind: 'none' }
  | { readonly kind: 'json'; readonly value: unknown; readonly longStrings?: readonly LongString[] }
  | { readonly kind: 'opaque' }
  | { readonly kind: 'bad'; readonly why: string }
  | { readonly kind: 'tooComplex'; readonly why: string };

/** A body read ahead of classification (parseBodyInTurns). */
export type PreparedBody = ParsedBody;

/** The default bounds on a JSON body's shape (JSON_MAX_DEPTH, JSON_MAX_VALUES: a2a/json-shape.ts). */
export const MAX_JSON_DEPTH = DEFAULT_JSON_LIMITS.depth;
export const MAX_JSON_VALUES = DEFAULT_JSON_LIMITS.values;

function reject(kind: ProxyErrorKind, message: string, binding: Binding, id: JsonRpcId | null = null): Classified {
  return { kind: 'reject', error: proxyError(kind, message), id, binding };
}

/** The body as parsed, once per request (a refusal reads the caller's id from it). */
interface BodyMemo {
  parsed?: ParsedBody;
}

export function classify(req: HttpRequestFacts, opts: ClassifyOptions): Classified {
  const memo: BodyMemo = {};
  let c: Classified;
  try {
    c = contentTypeFirst(req, classifyUnsafe(req, opts, memo));
  } catch (err) {
    // JSON nested deeper than the engine's stack (or similar hostile input): refuse, never crash.
    c = reject('rejected', `Request could not be processed: ${(err as Error).name}`, 'jsonrpc');
  }
  try {
    return withCallerId(req, opts, memo, c);
  } catch {
    return c;
  }
}

function parsedBody(req: HttpRequestFacts, opts: ClassifyOptions, memo: BodyMemo): ParsedBody {
  return (memo.parsed ??= req.parsed ?? parseBody(req, opts.jsonLimits ?? DEFAULT_JSON_LIMITS));
}

/**
 * A JSON-RPC refusal carries the caller's id wherever the body could be read far enough to find it: a header,
 * media type or version refusal comes before the body is parsed, and a body over the depth or value bounds is
 * never parsed (its id is read from its top level). A body that is not JSON answers `"id": null`, as JSON-RPC asks.
 */
function withCallerId(req: HttpRequestFacts, opts: ClassifyOptions, memo: BodyMemo, c: Classified): Classified {
  if (c.kind !== 'reject' || c.binding !== 'jsonrpc' || c.id !== null || (req.body === null && req.parsed === undefined)) return c;
  const body = parsedBody(req, opts, memo);
  let id: JsonRpcId | null = null;
  if (body.kind === 'json') id = isObject(body.value) ? echoableId(body.value.id) : null;
  // Too complex to parse: its top level, read without parsing the rest.
  else if (body.kind === 'tooComplex' && req.body !== null) id = refusalId(req.body);
  return id === null ? c : { ...c, id };
}

/** A readable request target, and answers classification asks of it: they follow from the path and the options alone. */
interface Route extends Target {
  /** looksLikeRest(segments), once asked. */
  restShaped?: boolean;
  /** looksLikeGrpc(segments), once asked. */
  grpcShaped?: boolean;
  /** The REST bases the path is at or below, longest first, once asked. */
  restBases?: readonly (readonly string[])[];
}

type ReadTarget = { readonly ok: true; readonly route: Route } | { readonly ok: false; readonly why: string };

/**
 * The last few targets read, under the options `routesFor`: a path (one JSON-RPC endpoint takes
 * nearly every call) is parsed and set against the REST bases and routes once, not on every call:
 * ~2,400 of a unary JSON-RPC call's ~27,000 instructions in classify() (callgrind). Only what
 * follows from the path and the options is kept, never anything of a request; new options start
 * afresh. A handful of slots, each taken in turn: a path not among them costs a few string
 * compares (a Map cost ~1,400 instructions a call on a stream of distinct paths, `GET /tasks/{id}`).
 */
const RECENT = 4;
const MAX_RECENT_PATH = 512;
const recentPaths: (string | undefined)[] = new Array<string | undefined>(RECENT).fill(undefined);
const recentReads: (ReadTarget | undefined)[] = new Array<ReadTarget | undefined>(RECENT).fill(undefined);
let nextSlot = 0;
let routesFor: ClassifyOptions | undefined;

function readTarget(path: string, opts: ClassifyOptions): ReadTarget {
  if (opts !== routesFor) {
    recentPaths.fill(undefined);
    recentReads.fill(undefined);
    routesFor = opts;
  }
  for (let i = 0; i < RECENT; i++) {
    if (recentPaths[i] === path) return recentReads[i] as ReadTarget;
  }
  const parsed = parseTarget(path);
  // Shared by every call of this path until it leaves the slots: frozen, so no later stage can change what another call reads.
  const read: ReadTarget = parsed.ok ? { ok: true, route: frozenRoute(parsed.target) } : parsed;
  if (path.length <= MAX_RECENT_PATH) {
    recentPaths[nextSlot] = path;
    recentReads[nextSlot] = read;
    nextSlot = (nextSlot + 1) % RECENT;
  }
  return read;
}

function frozenRoute(t: Target): Route {
  for (const pair of t.query) Object.freeze(pair);
  return { segments: Object.freeze(t.segments), trailingSlash: t.trailingSlash, query: Object.freeze(t.query) };
}

function restShaped(t: Route): boolean {
  return (t.restShaped ??= looksLikeRest(t.segments));
}

function grpcShaped(t: Route): boolean {
  return (t.grpcShaped ??= looksLikeGrpc(t.segments));
}

const GRPC_PATH = 'A2A gRPC methods are served on the gRPC port only (gRPC-Web and Connect are not carried)';

function classifyUnsafe(req: HttpRequestFacts, opts: ClassifyOptions, memo: BodyMemo): Classified {
  const read = readTarget(req.path, opts);
  if (!read.ok) return reject('rejected', `Request target refused: ${read.why}`, 'rest');
  const t = read.route;
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
  const cardPath = (verb === 'GET' || verb === 'HEAD') && opts.cardPaths !== undefined ? configuredCardPath(t, opts.cardPaths) : undefined;
  // As configured, whatever case it was asked in (CARD_PATHS never reads as an A2A route: checked at start).
  if (cardPath !== undefined) return { kind: 'card', target: encodePath(cardPath) };

  const body = parsedBody(req, opts, memo);
  const rpc = body.kind === 'json' && isObject(body.value) && looksLikeRpc(body.value) ? body.value : undefined;

  const underRest = (t.restBases ??= restBasesAbove(t, opts));
  for (const base of underRest) {
    const m = matchRest(verb, t.segments.slice(base.length), version.value);
    if (m === undefined) continue;
    if ('ambiguous' in m) return reject('rejected', `Ambiguous A2A REST path: ${m.ambiguous}`, 'rest');
    if (rpc !== undefined) return reject('rejected', 'A JSON-RPC body on an A2A REST route is ambiguous', 'rest');
    return classifyRest(req, t, base, m, body, version.value);
  }

  // A JSON-RPC call below a REST base is fine where no route (strict or loose) reads the path.
  if (rpc !== undefined) return classifyJsonRpc(req, verb, t, opts, rpc, version.value);
  const restOnly = underRest.length > 0 && !isJsonRpcEndpoint(t, opts);
  if (body.kind === 'bad') return reject('parseError', body.why, flavour(req, t, opts, body));
  if (body.kind === 'tooComplex') return reject('rejected', body.why, flavour(req, t, opts, body));
  // A batch is never relayed, under any NON_A2A: one judged call could hide others behind it.
  if (body.kind === 'json' && Array.isArray(body.value) && body.value.some((e) => typeof e === 'object' && e !== null)) {
    return reject(malformed(version.value), 'JSON-RPC batches are not accepted', flavour(req, t, opts, body));
  }

  if (passthrough(t, opts)) return other(req, t, body, 'passthrough');
  if (restShaped(t)) {
    if (!opts.cardKnown) return reject('upstreamUnavailable', 'A2A REST call, but the agent card (which names its REST endpoint) could not be read', 'rest');
    return reject('notFound', restOnly ? 'No A2A REST route matches this path' : 'Not an A2A REST endpoint of this agent', 'rest');
  }
  if (grpcShaped(t)) return reject('notFound', GRPC_PATH, 'rest');
  if (opts.forwardNonA2A) return other(req, t, body, 'non-a2a');
  if (restOnly) return reject('notFound', 'No A2A REST route matches this path', 'rest');
  const f = flavour(req, t, opts, body);
  if (f === 'jsonrpc') {
    if (body.kind === 'none' || body.kind === 'opaque') {
      if (!isMediaType(req.headers, JSON_RPC_TYPES))
        return reject('contentTypeNotSupported', `Content type not supported; expected ${JSON_RPC_TYPES.join(' or ')}`, 'jsonrpc');
      return reject('parseError', 'Request body is not JSON', 'jsonrpc');
    }
    // A top-level JSON scalar is a parse error to a strict JSON body parser (the SDK's express.json()).
    if (body.kind === 'json' && (typeof body.value !== 'object' || body.value === null))
      return reject('parseError', 'Request body is not a JSON object', 'jsonrpc');
    return reject(malformed(version.value), 'Request is not a JSON-RPC 2.0 request object', 'jsonrpc');
  }
  if ((verb === 'GET' || verb === 'HEAD') && cardShaped(t.segments)) return reject('notFound', CARD_PATH_UNLISTED, 'rest');
  return reject('notFound', 'Not an A2A endpoint; other routes must be listed in PASSTHROUGH_PATHS', 'rest');
}

function other(req: HttpRequestFacts, t: Route, body: ParsedBody, why: 'passthrough' | 'non-a2a', method?: string): Classified {
  const forwarded = body.kind === 'json' ? canonical(body.value) : req.body;
  const target = encodeParsedPath(req.path, t) + encodeQuery(t.query);
  return { kind: 'other', target, body: forwarded, why, ...(method === undefined ? {} : { method }) };
}

function passthrough(t: Route, opts: ClassifyOptions): boolean {
  if (!opts.passthrough.some((p) => isUnder(t.segments, p))) return false;
  // A listed prefix never opens an A2A endpoint of the agent, nor anything a router could read as one.
  if (opts.endpoints.rest.some((b) => isUnder(t.segments, b)) || opts.endpoints.jsonrpc.some((j) => isUnder(t.segments, j))) return false;
  return !restShaped(t) && !grpcShaped(t);
}

const NO_BASES: readonly (readonly string[])[] = [];
const longestFirst = (a: readonly string[], b: readonly string[]): number => b.length - a.length;

/** The REST bases the path is at or below, longest first (a stable sort: equal lengths keep the card's order). */
function restBasesAbove(t: Route, opts: ClassifyOptions): readonly (readonly string[])[] {
  let found: (readonly string[])[] | undefined;
  for (const b of opts.endpoints.rest) if (isUnder(t.segments, b)) (found ??= []).push(b);
  return found === undefined ? NO_BASES : found.length === 1 ? found : found.sort(longestFirst);
}

function isJsonRpcEndpoint(t: Route, opts: ClassifyOptions): boolean {
  return opts.endpoints.jsonrpc.some((j) => j.length === t.segments.length && isUnder(t.segments, j));
}

/** Which binding's terms a refusal uses: JSON-RPC at the agent's JSON-RPC endpoints and for JSON-RPC-looking bodies. */
function flavour(req: HttpRequestFacts, t: Route, opts: ClassifyOptions, body: ParsedBody | undefined): Binding {
  if (isJsonRpcEndpoint(t, opts)) return 'jsonrpc';
  if ((t.restBases ??= restBasesAbove(t, opts)).length > 0 || restShaped(t)) return 'rest';
  if (body?.kind === 'json' && (isObject(body.value) || Array.isArray(body.value))) return 'jsonrpc';
  return req.verb.toUpperCase() === 'POST' && isMediaType(req.headers, JSON_ONLY) ? 'jsonrpc' : 'rest';
}

function checkHeaders(h: IncomingHttpHeaders): string | undefined {
  // A method override turns a harmless-looking verb into a POST for some servers. (Three plain reads,
  // not a loop over the names: one read site per name stays monomorphic, ~200 instructions less.)
  const override =
    h['x-http-method-override'] !== undefined
      ? 'x-http-method-override'
      : h['x-http-method'] !== undefined
        ? 'x-http-method'
        : h['x-method-override'] !== undefined
          ? 'x-method-override'
          : undefined;
  if (override !== undefined) return `${override} is not accepted by this proxy`;
  for (const name in h) {
    // `A2A_Version` is A2A-Version to CGI-style servers: one header, two spellings, two meanings.
    if (name.includes('_') && CLASSIFYING.has(name.replace(/_/g, '-')))
      return `Header ${name} is ambiguous (underscore spelling of ${name.replace(/_/g, '-')})`;
  }
  const conn = h.connection;
  // (The usual values name no header: nothing to split.)
  if (conn !== undefined && conn !== 'keep-alive' && conn !== 'close') {
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
function a2aVersion(h: IncomingHttpHeaders, t: Route): { value: string | undefined } | { problem: string } {
  const raw = h['a2a-version'];
  const header = Array.isArray(raw) ? raw.join(',') : raw;
  if (header !== undefined && (header.includes(',') || !printable(header))) return { problem: 'A2A-Version must be one value' };
  const trimmed = header?.trim();
  const value = trimmed === '' ? undefined : trimmed;
  if (t.query.length === 0) return { value };
  const fromQuery = t.query.filter(([k]) => k.toLowerCase() === 'a2a-version').map(([, v]) => v.trim());
  if (fromQuery.some((q) => q !== (value ?? q) || q !== fromQuery[0])) return { problem: 'A2A-Version query parameter contradicts the header' };
  return { value };
}

/** Only printable ASCII and spaces (/^[\x21-\x7e ]*$/, as a loop: a regex call costs more than reading '1.0'). */
function printable(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

/** The listed card path `t` is (letter case aside, as lenient routers match), or undefined. */
function configuredCardPath(t: Route, paths: readonly (readonly string[])[]): readonly string[] | undefined {
  for (const p of paths) if (p.length === t.segments.length && isUnder(t.segments, p)) return p;
  return undefined;
}

const CARD_PATH_UNLISTED = 'Not an A2A endpoint; an agent card served at this path must be listed in CARD_PATHS (it is then rewritten to point at the proxy)';

/** A path an agent card could be served at besides the standard one (`/.well-known/my-agent/agent-card.json`). */
function cardShaped(segs: readonly string[]): boolean {
  const last = (segs[segs.length - 1] ?? '').toLowerCase();
  return last.endsWith('agent-card.json') || last.endsWith('agent.json');
}

function isCardPath(segs: readonly string[]): boolean {
  const n = segs.length;
  if (n < 2 || (segs[n - 2] as string).toLowerCase() !== '.well-known') return false;
  const last = (segs[n - 1] as string).toLowerCase();
  return last === 'agent-card.json' || last === 'agent.json';
}

// ---- bodies ----

const JSON_TYPE = 'application/json';
const JSON_ONLY: readonly string[] = [JSON_TYPE];
const JSON_OR_A2A: readonly string[] = [JSON_TYPE, 'application/a2a+json'];
/**
 * JSON-RPC bodies: A2A specifies application/json; application/a2a+json is the A2A media type, and the Python SDK's
 * server reads either (any, in fact). The agent gets application/json whichever came (the JS SDK takes only that).
 */
const JSON_RPC_TYPES = JSON_OR_A2A;

/** Could a lenient parser (JSON5, comments, BOM, NaN...) read JSON out of these bytes? */
function mightBeJson(text: string): boolean {
  const s = text.replace(/^[\s\uFEFF]+/, '');
  return /^[[{/]/.test(s) || /jsonrpc|"method"|'method'|\bmethod\s*:/i.test(text);
}

function parseBody(req: HttpRequestFacts, limits: JsonLimits): ParsedBody {
  if (req.body === null || req.body.length === 0) return { kind: 'none' };
  if (!isUtf8(req.body)) return notUtf8(req, req.body);
  // toString() without arguments is the UTF-8 decoding without Buffer's argument checks (~900 instructions a call).
  const text = req.body.toString(); // keeps a BOM, which JSON.parse then refuses
  const complex = surelyWithinBounds(text, req.body.length, limits) ? undefined : jsonTooComplex(req.body, limits);
  if (complex !== undefined) return tooComplex(complex);
  return parseText(req, text);
}

/** Bytes of a large body read at once: each step of parseBodyInTurns holds the event loop about as long as this many bytes cost (~1 ms). */
export const BODY_SLICE = 1024 * 1024;

/**
 * What classify reads of a large body, in turns of the event loop (`turn` resolves on the next one): its shape
 * scanned a slice per turn, then decoded and parsed a piece per turn (core/json-pieces.ts). The same reading as
 * classify's own: the same value, or the same refusal.
 */
export async function parseBodyInTurns(req: HttpRequestFacts, limits: JsonLimits, turn: () => Promise<void>): Promise<PreparedBody> {
  const body = req.body;
  if (body === null || body.length === 0) return { kind: 'none' };
  if (!isUtf8(body)) return notUtf8(req, body);
  const scan = new JsonShapeScan(limits);
  for (let at = 0; at < body.length;) {
    const r = scan.run(body, at + BODY_SLICE);
    if (typeof r === 'string') return tooComplex(r);
    at = r;
    await turn();
  }
  // The long strings stay with the value: the canonical check skips those the parser compared already.
  const pieces = await parseJsonInPieces(body, turn);
  // What parseText says of a text JSON.parse refuses that begins with `[` or `{`.
  if (pieces === 'not json') return { kind: 'bad', why: 'Request body is not strict JSON' };
  if (pieces !== undefined) return { kind: 'json', value: pieces.value, longStrings: pieces.longStrings };
  // Not parsed in pieces (a BOM, a value that is not an array or object, a number longer than a piece): read whole, as a small
  // body is, without the JSON whitespace around it (read the same, and a body of spaces decodes to no text).
  const [from, to] = await withoutJsonSpace(body, turn);
  const text = body.toString('utf8', from, to);
  await turn();
  const parsed = parseText(req, text);
  await turn();
  return parsed.kind === 'json' ? { ...parsed, longStrings: [] } : parsed;
}

const tooComplex = (why: string): ParsedBody => ({ kind: 'tooComplex', why: `Request body refused: ${why}` });

function notUtf8(req: HttpRequestFacts, body: Buffer): ParsedBody {
  const alt = wideDecode(body) ?? body.toString('latin1');
  return looksTextual(req) || mightBeJson(alt) || mightBeJson(body.toString('utf8'))
    ? { kind: 'bad', why: 'Request body is not valid UTF-8' }
    : { kind: 'opaque' };
}

function parseText(req: HttpRequestFacts, text: string): ParsedBody {
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch {
    const suspicious = mightBeJson(text) || (text.includes('\0') && mightBeJson(text.replace(/\0/g, '')));
    return suspicious || isMediaType(req.headers, JSON_OR_A2A) ? { kind: 'bad', why: 'Request body is not strict JSON' } : { kind: 'opaque' };
  }
}

/** UTF-16/32 text by BOM or by the RFC 4627 NUL pattern of its first bytes, decoded; else undefined. */
export function wideDecode(b: Buffer): string | undefined {
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
  if (ct === JSON_TYPE) return ct; // nearly every call: its own media type, nothing to cut or fold
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
/**
 * fieldKey(k) === name, for a `name` of lower-case letters: a key of ASCII letters and digits of
 * another length cannot fold onto it, so it is not folded (`messageId` is not `content`).
 */
function isField(k: string, name: string): boolean {
  if (k.length !== name.length) {
    for (let i = 0; i < k.length; i++) {
      const c = k.charCodeAt(i);
      if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39))) return fieldKey(k) === name;
    }
    return false;
  }
  return fieldKey(k) === name;
}

/** Does some member name read as `method` or `jsonrpc` to a case-insensitive decoder? (The exact names answer at once.) */
function looksLikeRpc(v: JsonObject): boolean {
  if (Object.hasOwn(v, 'method') || Object.hasOwn(v, 'jsonrpc')) return true;
  for (const k of Object.keys(v)) {
    const f = fold(k);
    if (f === 'method' || f === 'jsonrpc') return true;
  }
  return false;
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
  return findInObjects(root, collidingKey);
}

/** The first name of `keys` that folds as an earlier one does. */
function collidingKey(_o: JsonObject, keys: string[]): string | undefined {
  // One member cannot collide with another: most objects of a call (`{ message }`, `{ text }`) skip the folding.
  const dup = keys.length < 2 ? -1 : keys.length <= SMALL_OBJECT ? collidingSmall(keys) : collidingLarge(keys);
  return dup === -1 ? undefined : keys[dup];
}

/** Up to this many members, comparing folded names pairwise costs less than a Set. */
const SMALL_OBJECT = 8;

/** Index of the first name that folds as an earlier one does, or -1. */
function collidingSmall(keys: readonly string[]): number {
  const folded: string[] = [];
  for (let i = 0; i < keys.length; i++) {
    const f = fieldKey(keys[i] as string);
    for (let j = 0; j < i; j++) if (folded[j] === f) return i;
    folded.push(f);
  }
  return -1;
}

function collidingLarge(keys: readonly string[]): number {
  const seen = new Set<string>();
  for (let i = 0; i < keys.length; i++) {
    const f = fieldKey(keys[i] as string);
    if (seen.has(f)) return i;
    seen.add(f);
  }
  return -1;
}

/** Standard JSON-RPC refusals that the SDK's router only reaches past its content-type guard. */
const AFTER_CONTENT_TYPE: ReadonlySet<ProxyErrorKind> = new Set<ProxyErrorKind>(['parseError', 'invalidRequest', 'invalidParams', 'methodNotFound']);

/**
 * The SDK's JSON-RPC router refuses a given Content-Type other than application/json before it reads the body, so
 * a body it would refuse too is answered -32005 there (the proxy's own refusals, -31400, keep their code).
 */
function contentTypeFirst(req: HttpRequestFacts, c: Classified): Classified {
  if (c.kind !== 'reject' || c.binding !== 'jsonrpc' || !AFTER_CONTENT_TYPE.has(c.error.kind) || !refusedMediaType(req.headers, JSON_RPC_TYPES)) return c;
  return reject('contentTypeNotSupported', `Content type not supported; expected ${JSON_RPC_TYPES.join(' or ')}`, 'jsonrpc', c.id);
}

/** `verb`: req.verb upper-cased. */
function classifyJsonRpc(req: HttpRequestFacts, verb: string, t: Route, opts: ClassifyOptions, v: JsonObject, version: string | undefined): Classified {
  const id = v.id;
  const safeId = echoableId(id);
  const keys = Object.keys(v);
  const named = rpcMemberProblem(keys);
  if (named !== undefined) return reject('rejected', named, 'jsonrpc', safeId);
  const method = v.method;
  if (v.jsonrpc !== '2.0') return reject(malformed(version), 'JSON-RPC version must be "2.0"', 'jsonrpc', safeId);
  if (!validId(id)) return reject(malformed(version), 'JSON-RPC id must be a string, an integer or null', 'jsonrpc', typeof id === 'number' ? id : null);
  if (typeof method !== 'string' || method === '') return reject(malformed(version), 'JSON-RPC method must be a non-empty string', 'jsonrpc', safeId);
  const op = operationForMethod(method);
  if (op === undefined) {
    if (operationForLooseMethod(method) === undefined) {
      if (passthrough(t, opts)) return other(req, t, { kind: 'json', value: v }, 'passthrough', method);
      // As for other bodies: NON_A2A=forward never forwards to a path a router could read as an A2A route.
      if (opts.forwardNonA2A && !restShaped(t) && !grpcShaped(t)) return other(req, t, { kind: 'json', value: v }, 'non-a2a', method);
    }
    return reject('methodNotFound', `Method not found: ${method.slice(0, 64)} is not an A2A operation`, 'jsonrpc', safeId);
  }
  if (verb !== 'POST') return reject('invalidRequest', `A2A JSON-RPC calls must use POST, not ${req.verb.slice(0, 16)}`, 'jsonrpc', safeId);
  if (restShaped(t)) return reject('rejected', 'A JSON-RPC call on a path that reads as an A2A REST route is ambiguous', 'jsonrpc', safeId);
  if (grpcShaped(t)) return reject('rejected', 'A JSON-RPC call on a path that reads as an A2A gRPC method is ambiguous', 'jsonrpc', safeId);
  if (!isMediaType(req.headers, JSON_RPC_TYPES)) {
    return reject(
      'contentTypeNotSupported',
      `Content type not supported: ${String(req.headers['content-type'] ?? '(none)').slice(0, 64)}; expected ${JSON_RPC_TYPES.join(' or ')}`,
      'jsonrpc',
      safeId,
    );
  }
  const params = v.params;
  // As the SDK: params is an object without empty member names (the extended-card call may omit it).
  // (Parsed JSON: every member is an own enumerable one, so hasOwn answers as Object.keys(params).includes('') did.)
  const paramsOk = isObject(params) ? !Object.hasOwn(params, '') : params === undefined && op.returnsCard;
  if (!paramsOk) return reject('invalidParams', 'JSON-RPC params must be an object (without empty member names)', 'jsonrpc', safeId);
  const amb = ambiguousKey(params);
  if (amb !== undefined) return reject('rejected', `Ambiguous member names in params (${amb.slice(0, 32)})`, 'jsonrpc', safeId);
  const miss = misspelledField(params);
  if (miss !== undefined) return reject('rejected', `Member ${miss.slice(0, 32)} is not spelled as A2A spells it`, 'jsonrpc', safeId);
  const foreign = foreignMessageShape(isObject(params) ? params : undefined, false);
  if (foreign !== undefined) return reject('invalidParams', foreign, 'jsonrpc', safeId);
  const extra = keys.length > 4 || !keys.every(isRpcMember) ? extraMemberProblem(v, keys) : undefined;
  if (extra !== undefined) return reject('rejected', extra, 'jsonrpc', safeId);
  // A JSON-RPC call is its body: query parameters would reach the agent unjudged (a framework may read
  // `?access_token=` or `?tenant=`), and the envelope has no place for them. A2A-Version is read above.
  // The one exception: exactly the query the agent's card publishes for its JSON-RPC endpoint.
  const kept = t.query.length === 0 ? t.query : t.query.filter(([k]) => k.toLowerCase() !== 'a2a-version');
  const query = kept.length === 0 ? '' : encodeQuery(kept);
  if (query !== '' && opts.endpoints.jsonrpcQueries?.includes(query) !== true) {
    return reject('invalidRequest', `A2A JSON-RPC calls take no query parameters (${queryNames(kept)}): the guardian would not see them`, 'jsonrpc', safeId);
  }
  // What the guardian sees is what the agent gets: the whole request, members beside the four included (in the
  // caller's member order, so a canonical request is forwarded byte for byte).
  return { kind: 'a2a', binding: 'jsonrpc', op, request: v, id: safeId, version, target: encodeParsedPath(req.path, t) + query };
}

/** The names of query parameters, for an error message. */
function queryNames(query: readonly (readonly [string, string])[]): string {
  const names = [...new Set(query.map(([k]) => k.slice(0, 32)))];
  return names.length > 3 ? `${names.slice(0, 3).join(', ')}, ...` : names.join(', ');
}

const isRpcMember = (k: string): boolean => RPC_MEMBERS.has(k);

/** Members that make a JSON-RPC message a response: a request carrying one reads as an answer to some routers. */
const RESPONSE_MEMBERS: ReadonlySet<string> = new Set(['result', 'error']);

/**
 * Why the top-level member names of a JSON-RPC request cannot be carried to the agent, or undefined. Members
 * beside the four (VoltAgent reads `context`) are carried as sent. A name that folds onto one of the four without
 * being it (`Params`, `ID`, `i_d`) is that member to a decoder matching names loosely (Go's encoding/json);
 * `result` and `error` make a response of it; `__proto__` is the prototype to a JavaScript agent copying the request.
 */
export function rpcMemberProblem(keys: readonly string[]): string | undefined {
  for (const k of keys) {
    if (RPC_MEMBERS.has(k)) continue;
    const f = fieldKey(k);
    if (RPC_MEMBERS.has(f)) return `JSON-RPC member names must be exact (${k.slice(0, 32)})`;
    if (RESPONSE_MEMBERS.has(f)) return `A JSON-RPC request carries no ${k.slice(0, 32)} member`;
    if (k === '__proto__') return 'Member __proto__ is not accepted (a JavaScript agent copying the request reads it as the prototype)';
  }
  return undefined;
}

/**
 * Why a member beside the four cannot be carried: two names in it that one decoder or another reads as the same
 * (`userId` and `UserId`), as in params. The guardian sees the whole member; the agent must read one value.
 */
function extraMemberProblem(v: JsonObject, keys: readonly string[]): string | undefined {
  for (const k of keys) {
    if (RPC_MEMBERS.has(k)) continue;
    const amb = ambiguousKey(v[k]);
    if (amb !== undefined) return `Ambiguous member names in ${k.slice(0, 32)} (${amb.slice(0, 32)})`;
  }
  return undefined;
}

/** Why a JSON-RPC request (a guardian's modify) cannot be forwarded as it is: the rules classification applies to the caller's. */
export function rpcRequestProblem(v: JsonObject): string | undefined {
  const keys = Object.keys(v);
  return rpcMemberProblem(keys) ?? extraMemberProblem(v, keys);
}

/** A member beside the four in a guardian's modify of a call whose binding carries only `params` (REST, gRPC), which would drop it. */
export function uncarriedMember(v: JsonObject, binding: string): string | undefined {
  const k = Object.keys(v).find((name) => !RPC_MEMBERS.has(name));
  return k === undefined ? undefined : `member ${k.slice(0, 32)} cannot be carried by an A2A ${binding} call (only params)`;
}

// ---- REST ----

function classifyRest(req: HttpRequestFacts, t: Route, base: readonly string[], m: RestMatch, body: ParsedBody, version: string | undefined): Classified {
  let params: JsonObject | undefined;
  const accepted = m.version === '0.3' ? JSON_ONLY : JSON_OR_A2A;
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
  const query = t.query.length === 0 ? t.query : t.query.filter(([k]) => k.toLowerCase() !== 'a2a-version');
  const keys = query.map(([k]) => k);
  // Parsers disagree on repeated parameters (first or last wins): the guardian must see the one the agent reads.
  if (keys.length > 1 && new Set(keys.map(fieldKey)).size !== keys.length)
    return reject('rejected', 'Repeated query parameters are not accepted on A2A REST routes', 'rest');
  const amb = ambiguousKey(params);
  if (amb !== undefined) return reject('rejected', `Ambiguous member names in the body (${amb.slice(0, 32)})`, 'rest');
  const foreign = foreignMessageShape(params, m.version === '0.3');
  if (foreign !== undefined) return reject('invalidParams', foreign, 'rest');
  const request = restToJsonRpc(m, query, params, randomUUID());
  if (typeof request === 'string') return reject('rejected', request, 'rest');
  // After the mapping: the query's members (`?ContextId=`) are params too.
  const miss = misspelledField(request.params);
  if (miss !== undefined) return reject('rejected', `Member ${miss.slice(0, 32)} is not spelled as A2A spells it`, 'rest');
  return { kind: 'a2a', binding: 'rest', op: m.op, request, id: request.id as string, version, target: baseTarget(base), rest: { match: m, base } };
}

/** encodePath(base) of the REST bases met (options, so never changed): ~100 instructions a call instead of ~550. */
const BASE_TARGETS = new WeakMap<readonly string[], string>();

function baseTarget(base: readonly string[]): string {
  let target = BASE_TARGETS.get(base);
  if (target === undefined) BASE_TARGETS.set(base, (target = encodePath(base)));
  return target;
}

/**
 * A message in the other version's shape: v0.3 REST (proto) messages carry `content`, every other
 * form carries `parts`. The agent's decoder drops the field it does not know, so the guardian would
 * judge text the agent never sees (and the agent act on a message the guardian did not read).
 */
function foreignMessageShape(params: JsonObject | undefined, restV03: boolean): string | undefined {
  const message = params?.message;
  if (!isObject(message)) return undefined;
  const foreign = restV03 ? 'parts' : 'content';
  let k: string | undefined;
  for (const key of Object.keys(message)) {
    if (isField(key, foreign)) {
      k = key;
      break;
    }
  }
  return k === undefined ? undefined : `message field "${k}" belongs to the other A2A version's shape (${restV03 ? 'v0.3 REST uses content' : 'use parts'})`;
}

/**
 * Forward what was parsed, not the raw bytes: duplicate keys, odd escapes and whitespace tricks then
 * mean the same thing to every parser downstream.
 */
function canonical(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v), 'utf8');
}
