/**
 * A2A HTTP+JSON (REST) binding: route -> operation, and the equivalent JSON-RPC request a guardian
 * sees (so a guardian sees one shape for both bindings), plus the way back for a `modify`. Pure.
 *
 * Matching is deliberately as lenient as the most lenient server in front of which the proxy may
 * stand (Express routes case-insensitively and ignores one trailing slash): a route that some
 * server would run is never forwarded uninspected.
 */
import { OPERATIONS, type Operation, type RestRoute } from './operations';
import type { JsonObject } from '../aos/schemas';

export type RestVersion = '1.0' | '0.3';

export interface RestMatch {
  readonly op: Operation;
  readonly version: RestVersion;
  readonly route: RestRoute;
  /** Values of `{name}` path segments, percent-decoded. */
  readonly pathParams: Readonly<Record<string, string>>;
}

interface CompiledRoute {
  readonly op: Operation;
  readonly version: RestVersion;
  readonly route: RestRoute;
  readonly segments: readonly Segment[];
}

type Segment = { readonly literal: string } | { readonly param: string; readonly suffix: string };

function compile(op: Operation, version: RestVersion, route: RestRoute): CompiledRoute {
  const segments = route.path.split('/').filter((s) => s !== '').map((s): Segment => {
    const m = /^\{(\w+)\}(.*)$/.exec(s);
    return m === null ? { literal: s.toLowerCase() } : { param: m[1] as string, suffix: (m[2] as string).toLowerCase() };
  });
  return { op, version, route, segments };
}

/** Most specific first: longer routes, then literal suffixes (`{id}:cancel`) before bare `{id}`. */
function specificity(r: CompiledRoute): number {
  return r.segments.length * 10 + r.segments.filter((s) => 'literal' in s || s.suffix !== '').length;
}

const byVersion = (version: RestVersion): CompiledRoute[] =>
  OPERATIONS.flatMap((op) => (version === '1.0' ? op.restV1 : op.restV03).map((r) => compile(op, version, r))).sort((a, b) => specificity(b) - specificity(a));

const V1_ROUTES = byVersion('1.0');
const V03_ROUTES = byVersion('0.3');

export type RestClassification = RestMatch | { readonly ambiguous: string } | undefined;

/**
 * Match the tail of a path (any base path or tenant may precede the route). `a2aVersion` is the
 * A2A-Version header: absent or 0.x tries the v0.3 `/v1/...` routes first, as the SDK server does.
 */
export function matchRest(verb: string, pathname: string, a2aVersion: string | undefined): RestClassification {
  // Every route ends in a segment naming message, tasks, card or pushNotificationConfigs; a path
  // without them (and without escapes that could spell them) cannot match.
  if (!pathname.includes('%') && !/message|tasks|card|pushnotificationconfigs/i.test(pathname)) return undefined;
  const raw = pathname.split('/');
  const segs: string[] = [];
  let semicolon = false;
  for (const s of raw) {
    if (s === '') continue;
    let d: string;
    try {
      d = decodeURIComponent(s);
    } catch {
      d = s; // malformed escapes: servers keep them literally (no route can match on them)
    }
    // Encoded slashes and dot segments mean different paths to different servers.
    if (d.includes('/') || d === '.' || d === '..') return { ambiguous: 'encoded slash or dot segment in path' };
    // Some servers cut ";params" off a segment (matrix parameters), others keep it.
    const semi = d.indexOf(';');
    if (semi !== -1) {
      semicolon = true;
      d = d.slice(0, semi);
    }
    segs.push(d);
  }
  const legacyFirst = a2aVersion === undefined || a2aVersion.trim() === '' || a2aVersion.trim().startsWith('0.');
  const tables = legacyFirst ? [V03_ROUTES, V1_ROUTES] : [V1_ROUTES];
  // Servers answer HEAD with their GET route (Express does): it is that operation.
  const upperVerb = verb.toUpperCase() === 'HEAD' ? 'GET' : verb.toUpperCase();
  for (const table of tables) {
    for (const r of table) {
      if (r.route.verb !== upperVerb) continue;
      const params = matchTail(r.segments, segs);
      if (params !== undefined) {
        if (semicolon) return { ambiguous: 'matrix parameters (";") in an A2A REST path' };
        return { op: r.op, version: r.version, route: r.route, pathParams: params };
      }
    }
  }
  return undefined;
}

function matchTail(template: readonly Segment[], segs: readonly string[]): Record<string, string> | undefined {
  if (segs.length < template.length) return undefined;
  const offset = segs.length - template.length;
  const params: Record<string, string> = {};
  for (let i = 0; i < template.length; i++) {
    const t = template[i] as Segment;
    const s = segs[offset + i] as string;
    const lower = s.toLowerCase();
    if ('literal' in t) {
      if (lower !== t.literal) return undefined;
    } else {
      if (!lower.endsWith(t.suffix) || s.length === t.suffix.length) return undefined;
      const value = s.slice(0, s.length - t.suffix.length);
      // A bare `{id}` never swallows a custom verb: `abc:cancel` is not a task id here.
      if (t.suffix === '' && /:(cancel|subscribe)$/i.test(value)) return undefined;
      params[t.param] = value;
    }
  }
  return params;
}

const NUMERIC_QUERY = new Set(['historyLength', 'pageSize']);
const BOOLEAN_QUERY = new Set(['includeArtifacts']);

function queryToParams(query: URLSearchParams): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of query) {
    if (k.toLowerCase() === 'a2a-version') continue;
    if (NUMERIC_QUERY.has(k) && /^\d+$/.test(v)) out[k] = Number(v);
    else if (BOOLEAN_QUERY.has(k) && (v === 'true' || v === 'false')) out[k] = v === 'true';
    else out[k] = v;
  }
  return out;
}

/** Operations whose REST request carries a JSON body (the rest carry query parameters). */
export function restHasBody(m: RestMatch): boolean {
  return m.route.verb === 'POST';
}

/** The JSON-RPC request equivalent to a REST call: what the guardian sees as `payload`. */
export function restToJsonRpc(m: RestMatch, query: URLSearchParams, body: JsonObject | undefined, id: string): JsonObject {
  const method = m.version === '0.3' ? (m.op.v03Method ?? m.op.aosMethod) : m.op.v1Method;
  const params: JsonObject = restHasBody(m) ? { ...m.pathParams, ...(body ?? {}) } : { ...queryToParams(query), ...m.pathParams };
  return { jsonrpc: '2.0', id, method, params };
}

export interface RestRequestParts {
  /** New query string (with leading `?`, or '') for GET/DELETE routes. */
  readonly search: string;
  /** New JSON body for POST routes (null: none). */
  readonly body: Buffer | null;
}

/**
 * Map a (modified) JSON-RPC equivalent back onto the REST request. The path parameters must be
 * unchanged: a guardian may rewrite content, not re-target the call.
 */
export function jsonRpcToRest(m: RestMatch, payload: JsonObject): RestRequestParts | string {
  const params = payload.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return 'modified request has no params object';
  const p = params as JsonObject;
  for (const [k, v] of Object.entries(m.pathParams)) {
    if (p[k] !== v) return `modify changed the path parameter ${k}`;
  }
  const rest: JsonObject = {};
  for (const [k, v] of Object.entries(p)) if (!(k in m.pathParams)) rest[k] = v;
  if (restHasBody(m)) return { search: '', body: Buffer.from(JSON.stringify(rest), 'utf8') };
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(rest)) {
    if (v === undefined || v === null) continue;
    q.append(k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  const s = q.toString();
  return { search: s === '' ? '' : `?${s}`, body: null };
}
