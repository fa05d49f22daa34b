// Reference copy, verbatim but for import paths, of src/a2a/rest.ts as of main 8de3f8d (before the
// classify fast-path work): test/unit/a2a/classify-reference.test.ts holds the current code to it.
/**
 * A2A HTTP+JSON (REST) binding: route -> operation, the equivalent JSON-RPC request a guardian sees
 * (so a guardian sees one shape for both bindings), and the REST request rebuilt from the approved
 * JSON-RPC form. Pure.
 *
 * Routes are matched on the path BELOW the agent's REST base (learned from its card), so the
 * proxy knows which segment is the tenant. A path has one meaning or it is refused: every route of
 * the table that matches must agree on the operation, the parameters and the tenant (routers
 * differ in the order they try routes, so "first match" would be one router's answer only). The
 * one precedence all routers share: a custom verb (`{id}:cancel`) wins over a bare `{id}`.
 * Version fall-through follows the SDK: no A2A-Version (or 0.3 <= v < 1.0) tries the v0.3 `/v1/...`
 * routes first, then the v1.0 routes.
 */
import { OPERATIONS, type Operation, type RestRoute } from '../../../src/a2a/operations';
import type { JsonObject } from '../../../src/core/json';
import { encodePath, encodeQuery } from './target';

export type RestVersion = '1.0' | '0.3';

export interface RestMatch {
  readonly op: Operation;
  readonly version: RestVersion;
  readonly route: RestRoute;
  /** Values of `{name}` path segments, decoded. */
  readonly pathParams: Readonly<Record<string, string>>;
  /** The `/{tenant}` segment of a v1.0 route, when the path has one. */
  readonly tenant: string | undefined;
}

type Segment = { readonly literal: string } | { readonly param: string; readonly suffix: string };

interface CompiledRoute {
  readonly op: Operation;
  readonly version: RestVersion;
  readonly route: RestRoute;
  readonly tenant: boolean;
  readonly segments: readonly Segment[];
}

function compile(op: Operation, version: RestVersion, route: RestRoute, tenant: boolean): CompiledRoute {
  const segs = route.path
    .split('/')
    .filter((s) => s !== '')
    .map((s): Segment => {
      const m = /^\{(\w+)\}(.*)$/.exec(s);
      return m === null ? { literal: s.toLowerCase() } : { param: m[1] as string, suffix: (m[2] as string).toLowerCase() };
    });
  return { op, version, route, tenant, segments: tenant ? [{ param: 'tenant', suffix: '' }, ...segs] : segs };
}

const V03_ROUTES = OPERATIONS.flatMap((op) => op.restV03.map((r) => compile(op, '0.3', r, false)));
// Every v1.0 route also exists under a leading `/{tenant}` segment.
const V1_ROUTES = OPERATIONS.flatMap((op) => op.restV1.flatMap((r) => [compile(op, '1.0', r, false), compile(op, '1.0', r, true)]));

/** Custom verbs of the tables: a bare `{id}` whose value ends in one is not that id (it is the verb's route). */
const CUSTOM_VERB = /:(cancel|subscribe|send|stream)$/i;

export type RestClassification = RestMatch | { readonly ambiguous: string } | undefined;

/**
 * The SDK's version rule (isLegacyVersion): absent, empty, or a parseable version in [0.3, 1.0).
 * Unparseable values are not legacy (the agent then refuses them as unsupported).
 */
export function isLegacyVersion(v: string | undefined): boolean {
  if (v === undefined || v.trim() === '') return true;
  const [maj, min] = v.trim().split('.');
  const major = Number.parseInt(maj ?? '', 10);
  const minor = min === undefined ? 0 : Number.parseInt(min, 10);
  if (!Number.isFinite(major) || major < 0 || !Number.isFinite(minor) || minor < 0) return false;
  return major === 0 && minor >= 3;
}

/**
 * Match the path below a REST base (`segments` already decoded). HEAD is the GET route (Express
 * answers HEAD with it). Returns undefined when no route matches.
 */
export function matchRest(verb: string, segments: readonly string[], a2aVersion: string | undefined): RestClassification {
  const upperVerb = verb.toUpperCase() === 'HEAD' ? 'GET' : verb.toUpperCase();
  const tables = isLegacyVersion(a2aVersion) ? [V03_ROUTES, V1_ROUTES] : [V1_ROUTES];
  for (const table of tables) {
    const found: RestMatch[] = [];
    for (const r of table) {
      if (r.route.verb !== upperVerb) continue;
      const m = matchExact(r, segments);
      if (m !== undefined) found.push(m);
    }
    if (found.length === 0) continue;
    const first = found[0] as RestMatch;
    for (const other of found.slice(1)) {
      if (!sameCall(first, other)) return { ambiguous: `path matches both ${first.op.v1Method} and ${other.op.v1Method}` };
    }
    return first;
  }
  return undefined;
}

function matchExact(r: CompiledRoute, segs: readonly string[]): RestMatch | undefined {
  if (segs.length !== r.segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < r.segments.length; i++) {
    const t = r.segments[i] as Segment;
    const s = segs[i] as string;
    const lower = s.toLowerCase();
    if ('literal' in t) {
      if (lower !== t.literal) return undefined;
      continue;
    }
    if (!lower.endsWith(t.suffix) || s.length === t.suffix.length) return undefined;
    const value = s.slice(0, s.length - t.suffix.length);
    // Only the last segment can carry a verb (`/tasks/{id}:cancel`); an id further left may hold ':cancel'.
    if (t.suffix === '' && i === r.segments.length - 1 && CUSTOM_VERB.test(value)) return undefined;
    params[t.param] = value;
  }
  const { tenant, ...pathParams } = params;
  return { op: r.op, version: r.version, route: r.route, pathParams, tenant };
}

function sameCall(a: RestMatch, b: RestMatch): boolean {
  if (a.op !== b.op || a.version !== b.version || a.tenant !== b.tenant) return false;
  const ka = Object.keys(a.pathParams);
  return ka.length === Object.keys(b.pathParams).length && ka.every((k) => a.pathParams[k] === b.pathParams[k]);
}

/**
 * Does any part of the path look like an A2A REST route, under any base, version or letter case?
 * Used to refuse (never to forward) requests that some router could read as an A2A operation.
 */
export function looksLikeRest(segments: readonly string[]): boolean {
  for (let start = 0; start < segments.length; start++) {
    // Only routes as long as the tail can match it: most paths are shorter than every route.
    const routes = LOOSE_ROUTES_BY_LENGTH.get(segments.length - start);
    if (routes === undefined) continue;
    const tail = segments.slice(start);
    for (const r of routes) if (matchLoose(r, tail)) return true;
  }
  return false;
}

/** The untenanted routes of both versions, by segment count (looksLikeRest runs for every JSON-RPC call). */
const LOOSE_ROUTES_BY_LENGTH = new Map<number, CompiledRoute[]>();
for (const r of [...V03_ROUTES, ...V1_ROUTES]) {
  if (r.tenant) continue;
  const list = LOOSE_ROUTES_BY_LENGTH.get(r.segments.length) ?? [];
  list.push(r);
  LOOSE_ROUTES_BY_LENGTH.set(r.segments.length, list);
}

function matchLoose(r: CompiledRoute, segs: readonly string[]): boolean {
  if (segs.length !== r.segments.length) return false;
  return r.segments.every((t, i) => {
    // Unicode folds too (`taſks` is `tasks` to a router comparing so).
    const s = caseFolded(segs[i] as string);
    return 'literal' in t ? s === t.literal : s.endsWith(t.suffix) && s.length > t.suffix.length;
  });
}

/** Operations whose REST request carries a JSON body (the rest carry query parameters). */
export function restHasBody(m: RestMatch): boolean {
  return m.route.verb === 'POST';
}

const NUMERIC_QUERY = new Set(['historyLength', 'history_length', 'pageSize', 'page_size']);
const BOOLEAN_QUERY = new Set(['includeArtifacts', 'include_artifacts']);

function queryToParams(query: readonly (readonly [string, string])[]): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of query) {
    if (NUMERIC_QUERY.has(k) && /^\d{1,15}$/.test(v)) out[k] = Number(v);
    else if (BOOLEAN_QUERY.has(k) && (v === 'true' || v === 'false')) out[k] = v === 'true';
    else out[k] = v;
  }
  return out;
}

/**
 * The JSON-RPC request equivalent to a REST call: what the guardian sees as `payload`. `query` is
 * without A2A-Version. Returns a reason string when the call is contradictory (a body or query
 * field naming another task or tenant than the path).
 */
export function restToJsonRpc(m: RestMatch, query: readonly (readonly [string, string])[], body: JsonObject | undefined, id: string): JsonObject | string {
  if (restHasBody(m) && query.length > 0)
    return `query parameter ${(query[0] as readonly [string, string])[0].slice(0, 32)} is not accepted on A2A REST routes that carry a body (the guardian would not see it)`;
  if ((body !== undefined && Object.keys(body).includes('__proto__')) || query.some(([k]) => k === '__proto__'))
    return 'member __proto__ is not accepted (a JavaScript agent reads it as the prototype)';
  const extra: JsonObject = restHasBody(m) ? { ...(body ?? {}) } : queryToParams(query);
  for (const [k, v] of Object.entries(m.pathParams)) {
    if (k in extra && extra[k] !== v) return `${restHasBody(m) ? 'body' : 'query'} field "${k}" contradicts the request path`;
  }
  // The SDK's v0.3 router takes the task of a push config from the body's `name` (tasks/{t}/pushNotificationConfigs/{id}), not the path.
  if (m.version === '0.3' && m.op.aosMethod === 'tasks/pushNotificationConfig/set' && 'name' in extra) {
    const name = String(extra.name);
    if (!name.startsWith(`tasks/${m.pathParams.taskId ?? ''}/pushNotificationConfigs`)) return 'body field "name" names another task than the request path';
  }
  if ('tenant' in extra) {
    if (m.version === '0.3') return 'v0.3 REST routes take no tenant';
    // Load-bearing: the SDK's Express 5 routes read `tenant` from the query (req.query is re-parsed on every
    // read, so its middleware cannot set it from the path); a path and a query tenant must never differ.
    if (m.tenant !== undefined && extra.tenant !== m.tenant) return `tenant "${String(extra.tenant).slice(0, 64)}" contradicts the path tenant`;
    // Without a path tenant the SDK puts a body or query tenant in the request but not in the call's context:
    // two tenants for one call. The HTTP+JSON binding carries the tenant in the path (`/{tenant}/...`).
    if (m.tenant === undefined) return `${m.route.verb} ${m.route.path} takes its tenant from the path only (/{tenant}${m.route.path})`;
  }
  const params: JsonObject = { ...extra, ...m.pathParams };
  if (m.tenant !== undefined) params.tenant = m.tenant;
  const method = m.version === '0.3' ? (m.op.v03Method ?? m.op.aosMethod) : m.op.v1Method;
  return { jsonrpc: '2.0', id, method, params };
}

export interface RestRequestParts {
  /** Path below the REST base, encoded ('/tasks/abc:cancel'), and the query ('?historyLength=2' or ''). */
  readonly path: string;
  readonly search: string;
  /** New JSON body for POST routes (null: none). */
  readonly body: Buffer | null;
}

/**
 * Rebuild the REST request from an approved (or modified) JSON-RPC equivalent. Path parameters and
 * the path tenant must be unchanged: a guardian may rewrite content, not re-target the call. The
 * rebuilt path is matched again and must mean the same call, or it is refused.
 */
export function jsonRpcToRest(m: RestMatch, payload: JsonObject, a2aVersion: string | undefined): RestRequestParts | string {
  const params = payload.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return 'request has no params object';
  const p = params as JsonObject;
  for (const [k, v] of Object.entries(m.pathParams)) {
    if (p[k] !== v) return `modify changed the path parameter ${k}`;
  }
  if (m.tenant !== undefined && p.tenant !== m.tenant) return 'modify changed the path tenant';
  const rest: JsonObject = {};
  for (const [k, v] of Object.entries(p)) {
    if (k in m.pathParams) continue;
    if (k === 'tenant' && m.tenant !== undefined) continue;
    rest[k] = v;
  }
  const segments: string[] = [];
  if (m.tenant !== undefined) segments.push(m.tenant);
  for (const s of m.route.path.split('/').filter((x) => x !== '')) {
    segments.push(s.replace(/\{(\w+)\}/, (_all, name: string) => m.pathParams[name] ?? ''));
  }
  const again = matchRest(m.route.verb, segments, a2aVersion);
  if (again === undefined || 'ambiguous' in again || !sameCall(again, m)) return 'the rebuilt path would mean another call';
  const path = encodePath(segments);
  if (restHasBody(m)) {
    const empty = Object.keys(rest).length === 0;
    return { path, search: '', body: empty && !m.op.messageAt ? null : Buffer.from(JSON.stringify(rest), 'utf8') };
  }
  const q: [string, string][] = [];
  for (const [k, v] of Object.entries(rest)) {
    if (v === undefined || v === null) continue;
    q.push([k, typeof v === 'string' ? v : JSON.stringify(v)]);
  }
  return { path, search: encodeQuery(q), body: null };
}

/** A segment as a case-ignoring router may read it: Unicode upper then lower case, less the dot `İ` leaves. */
export function caseFolded(s: string): string {
  return s
    .toUpperCase()
    .toLowerCase()
    .replace(/\u0307/g, '');
}
