/**
 * Where the agent serves A2A, learned from its card: the REST bases (below which the rest of the
 * path is a route, so the proxy knows which segment is a tenant) and the JSON-RPC endpoints (where
 * refusals answer in JSON-RPC terms). Paths are in the proxy's request space: the card URL's path
 * without the upstream base path (which the proxy puts back when it forwards). Pure.
 */
import type { CardJson } from './card';
import { encodeQuery, parseGeneral, pathSegments } from './target';
import { asObject } from '../core/json';

export interface AgentEndpoints {
  readonly rest: readonly (readonly string[])[];
  readonly jsonrpc: readonly (readonly string[])[];
  /**
   * The queries the card's JSON-RPC URLs carry (`?code=…`, as function hosts publish), canonically
   * encoded: the one query a JSON-RPC call may have, being the agent's own value, not a caller's.
   */
  readonly jsonrpcQueries?: readonly string[];
}

export const NO_ENDPOINTS: AgentEndpoints = { rest: [], jsonrpc: [] };

/** Endpoint paths of a card (v1.0 supportedInterfaces, v0.3 url/preferredTransport and additionalInterfaces). */
export function endpointsFromCard(card: CardJson | undefined, upstreamBasePath: string): AgentEndpoints {
  if (card === undefined) return NO_ENDPOINTS;
  const entries: { url: unknown; binding: unknown }[] = [];
  for (const key of ['supportedInterfaces', 'additionalInterfaces'] as const) {
    const list = card[key];
    if (!Array.isArray(list)) continue;
    for (const e of list.map(asObject)) if (e !== undefined) entries.push({ url: e.url, binding: e.protocolBinding ?? e.transport });
  }
  entries.push({ url: card.url, binding: card.preferredTransport ?? 'JSONRPC' });
  const rest = new Map<string, string[]>();
  const jsonrpc = new Map<string, string[]>();
  const queries = new Set<string>();
  const prefix = pathSegments(upstreamBasePath) ?? [];
  for (const { url, binding } of entries) {
    if (typeof url !== 'string' || !URL.canParse(url)) continue;
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') continue;
    let segs = pathSegments(u.pathname);
    if (segs === undefined) continue;
    if (prefix.length > 0 && prefix.every((p, i) => segs?.[i] === p)) segs = segs.slice(prefix.length);
    const b = String(binding).toUpperCase();
    const into = b === 'HTTP+JSON' || b === 'REST' ? rest : b === 'JSONRPC' ? jsonrpc : undefined;
    into?.set(segs.join('/').toLowerCase(), segs);
    if (into === jsonrpc && u.search.length > 1) {
      const parsed = parseGeneral(`/${u.search}`);
      if (parsed.ok && parsed.target.query.length > 0) queries.add(encodeQuery(parsed.target.query));
    }
  }
  return { rest: [...rest.values()], jsonrpc: [...jsonrpc.values()], ...(queries.size > 0 && { jsonrpcQueries: [...queries] }) };
}

/** REST bases from configuration (REST_BASE_PATHS) override the card's. */
export function withRestBases(e: AgentEndpoints, configured: readonly (readonly string[])[] | undefined): AgentEndpoints {
  return configured === undefined || configured.length === 0 ? e : { ...e, rest: configured };
}
