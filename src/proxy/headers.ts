/**
 * The header rules of design section 6 for a request the proxy sends to the agent, whatever the
 * binding: hop-by-hop headers dropped, the proxy's own (X-AOS-*, the reasoning header) written only by
 * it, the approved service parameters, the caller's address in X-Forwarded-*.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Role } from '../aos/hook-points';
import type { PartialAgent } from '../aos/schemas';
import { AGENT_HEADERS, encodeAgentHeader } from '../aos/identity';
import { ASSERTION_HEADER } from '../identity/types';
import { extensionHeaders, type ServiceParameters } from '../a2a/service-parameters';

export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** The headers a Connection value names beyond the standard hop-by-hop ones (RFC 9110 7.6.1); usually none. */
export function namedByConnection(value: string): string[] | undefined {
  // The usual values ("keep-alive", "close") name only a standard hop-by-hop header: nothing to split.
  if (HOP_BY_HOP.has(value.toLowerCase())) return undefined;
  const extra = value
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t !== '' && !HOP_BY_HOP.has(t));
  return extra.length === 0 ? undefined : extra;
}

/** Hop-by-hop headers, including any the Connection header names, are not forwarded. */
function connectionTokens(headers: IncomingHttpHeaders): Set<string> {
  // node joins repeated Connection lines of a request into one value.
  const extra = headers.connection === undefined ? undefined : namedByConnection(headers.connection);
  return extra === undefined ? HOP_BY_HOP : new Set([...HOP_BY_HOP, ...extra]);
}

export interface RequestHeaderRules {
  readonly role: Role;
  readonly reasoningHeader: string;
  /** ROLE=client/both: the observed agent announced to the server side. */
  readonly announce: PartialAgent | undefined;
  /** ROLE=client/both: the signed identity assertion for the upstream (X-AOS-Agent-Assertion). */
  readonly assertion?: string | undefined;
  /** Forwarded under FAIL_MODE=open / shadow without a valid decision. */
  readonly unchecked: boolean;
  /** Length of the body the proxy sends, or null to send none. */
  readonly bodyLength: number | null;
  readonly upstreamHost: string;
  readonly remoteAddress: string | undefined;
  readonly encrypted: boolean;
  /**
   * A request the proxy rebuilt (an A2A call): Content-Type and A2A-Version are the proxy's, not
   * the caller's. Undefined for passthrough traffic, whose Content-Type is kept.
   */
  readonly rebuilt?: { readonly version: string | undefined; readonly json: boolean };
  /** A judged call: the approved extensions replace the caller's extension headers (both spellings). */
  readonly serviceParameters?: ServiceParameters | undefined;
}

/** A header name as CGI-style servers read it: `X_AOS_Reasoning` is X-AOS-Reasoning to them. */
function dashed(name: string): string {
  // Nearly every name has no underscore: no regex replace per forwarded header.
  return name.includes('_') ? name.replace(/_/g, '-') : name;
}

/** Headers only the proxy writes (or reads and removes), in any spelling; names are lower case (node's, and the configured one). */
export function proxyOwned(name: string, reasoningHeader: string): boolean {
  const n = dashed(name);
  return n.startsWith('x-aos-') || n === dashed(reasoningHeader);
}

/** Request headers as the proxy sends them: text values only, so the dispatcher takes this object as it is. */
export type ForwardHeaders = Record<string, string | string[]>;

export function forwardRequestHeaders(incoming: IncomingHttpHeaders, rules: RequestHeaderRules): ForwardHeaders {
  const drop = connectionTokens(incoming);
  const out: ForwardHeaders = {};
  for (const name in incoming) {
    if (drop.has(name)) continue;
    switch (name) {
      case 'host':
      case 'content-length':
      case 'content-encoding': // the body was decoded for inspection and is sent as identity
      case 'expect': // the whole body is already here
        continue;
      case 'content-type':
      case 'a2a-version':
        if (rules.rebuilt !== undefined) continue;
        break;
      case 'a2a-extensions':
      case 'x-a2a-extensions':
        if (rules.serviceParameters !== undefined) continue;
        break;
      default:
        if (proxyOwned(name, rules.reasoningHeader)) continue; // reasoning never leaks to the remote agent
    }
    const value = incoming[name];
    if (value !== undefined) out[name] = value;
  }
  out.host = rules.upstreamHost;
  if (rules.bodyLength !== null) out['content-length'] = String(rules.bodyLength);
  if (rules.rebuilt !== undefined) {
    if (rules.rebuilt.json && rules.bodyLength !== null && rules.bodyLength > 0) out['content-type'] = 'application/json';
    if (rules.rebuilt.version !== undefined) out['a2a-version'] = rules.rebuilt.version;
  }
  if (rules.serviceParameters !== undefined) Object.assign(out, extensionHeaders(rules.serviceParameters));
  if (rules.announce !== undefined) {
    out[AGENT_HEADERS.name] = encodeAgentHeader(rules.announce.name);
    out[AGENT_HEADERS.url] = encodeAgentHeader(rules.announce.url);
    out[AGENT_HEADERS.version] = encodeAgentHeader(rules.announce.version);
  }
  if (rules.assertion !== undefined) out[ASSERTION_HEADER] = rules.assertion;
  if (rules.unchecked) out['x-aos-unchecked'] = 'true';
  if (rules.remoteAddress !== undefined) {
    const prior = incoming['x-forwarded-for'];
    out['x-forwarded-for'] = prior === undefined ? rules.remoteAddress : `${String(prior)}, ${rules.remoteAddress}`;
  }
  if (incoming['x-forwarded-proto'] === undefined) out['x-forwarded-proto'] = rules.encrypted ? 'https' : 'http';
  if (incoming['x-forwarded-host'] === undefined && incoming.host !== undefined) out['x-forwarded-host'] = incoming.host;
  return out;
}

/** One header's value as text (repeated headers joined with ", "), or undefined when absent. */
export function headerText(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}
