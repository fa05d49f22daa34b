/**
 * Upstream I/O: one keep-alive connection pool to the agent, header rules of design section 6,
 * and relaying the agent's answer back (streams piped chunk by chunk, never buffered).
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { PartialAgent } from '../aos/schemas';
import { AGENT_HEADERS } from '../aos/identity';

export interface Upstream {
  readonly url: URL;
  /** Path prefix of UPSTREAM_URL, prepended to every forwarded path ('' for none). */
  readonly basePath: string;
  readonly agent: http.Agent;
  request(options: http.RequestOptions, cb: (res: IncomingMessage) => void): http.ClientRequest;
}

export function createUpstream(url: URL): Upstream {
  const isHttps = url.protocol === 'https:';
  const mod = isHttps ? https : http;
  // Agents close idle sockets after ~5 s (Node default); free sockets are dropped a little sooner.
  const agent = new mod.Agent({ keepAlive: true, keepAliveMsecs: 1000, maxSockets: Infinity, maxFreeSockets: 256, timeout: 4000, scheduling: 'lifo' });
  return { url, basePath: url.pathname.replace(/\/+$/, ''), agent, request: (o, cb) => mod.request(o, cb) };
}

const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade',
]);

/** Hop-by-hop headers, including any the Connection header names, are not forwarded (RFC 9110 7.6.1). */
function connectionTokens(headers: IncomingHttpHeaders): Set<string> {
  const c = headers.connection;
  // The usual values name only standard hop-by-hop headers: no new set per message.
  if (c === undefined || HOP_BY_HOP.has(c.toLowerCase())) return HOP_BY_HOP;
  const extra = c.split(',').map((t) => t.trim().toLowerCase()).filter((t) => t !== '');
  return extra.length === 0 ? HOP_BY_HOP : new Set([...HOP_BY_HOP, ...extra]);
}

export interface RequestHeaderRules {
  readonly role: 'client' | 'server' | 'both';
  readonly reasoningHeader: string;
  /** ROLE=client/both: the observed agent announced to the server side. */
  readonly announce: PartialAgent | undefined;
  /** Forwarded under FAIL_MODE=open / shadow without a valid decision. */
  readonly unchecked: boolean;
  /** Length of the body the proxy sends, or null to send none. */
  readonly bodyLength: number | null;
  readonly upstreamHost: string;
  readonly remoteAddress: string | undefined;
  readonly encrypted: boolean;
}

export function forwardRequestHeaders(incoming: IncomingHttpHeaders, rules: RequestHeaderRules): OutgoingHttpHeaders {
  const drop = connectionTokens(incoming);
  const out: OutgoingHttpHeaders = {};
  for (const name in incoming) {
    if (drop.has(name)) continue;
    switch (name) {
      case 'host':
      case 'content-length':
      case 'content-encoding': // the body was decoded for inspection and is sent as identity
      case 'expect': // the whole body is already here
      case 'x-aos-unchecked': // only this proxy may set it
      case AGENT_HEADERS.name:
      case AGENT_HEADERS.url:
      case AGENT_HEADERS.version:
      case rules.reasoningHeader: // reasoning never leaks to the remote agent
        continue;
      default:
        out[name] = incoming[name];
    }
  }
  out.host = rules.upstreamHost;
  if (rules.bodyLength !== null) out['content-length'] = rules.bodyLength;
  if (rules.announce !== undefined) {
    out[AGENT_HEADERS.name] = rules.announce.name;
    out[AGENT_HEADERS.url] = rules.announce.url;
    out[AGENT_HEADERS.version] = rules.announce.version;
  }
  if (rules.unchecked) out['x-aos-unchecked'] = 'true';
  if (rules.remoteAddress !== undefined) {
    const prior = incoming['x-forwarded-for'];
    out['x-forwarded-for'] = prior === undefined ? rules.remoteAddress : `${String(prior)}, ${rules.remoteAddress}`;
  }
  if (incoming['x-forwarded-proto'] === undefined) out['x-forwarded-proto'] = rules.encrypted ? 'https' : 'http';
  if (incoming['x-forwarded-host'] === undefined && incoming.host !== undefined) out['x-forwarded-host'] = incoming.host;
  return out;
}

/** Response headers for the caller: everything but hop-by-hop ones. */
export function relayResponseHeaders(upstream: IncomingHttpHeaders): OutgoingHttpHeaders {
  const drop = connectionTokens(upstream);
  const out: OutgoingHttpHeaders = {};
  for (const name in upstream) if (!drop.has(name)) out[name] = upstream[name];
  return out;
}

export interface UpstreamCall {
  readonly verb: string;
  /** Path and query as received; the upstream base path is prepended. */
  readonly path: string;
  readonly headers: OutgoingHttpHeaders;
  readonly body: Buffer | null;
}

/**
 * Send one request upstream. The callbacks fire at most once in total. A caller that disconnects
 * before the answer is complete aborts the upstream request (see `abortOnClientClose`).
 */
export function callUpstream(up: Upstream, call: UpstreamCall, onResponse: (res: IncomingMessage) => void, onError: (err: Error) => void): http.ClientRequest {
  let settled = false;
  const upReq = up.request(
    {
      protocol: up.url.protocol,
      hostname: up.url.hostname,
      port: up.url.port,
      method: call.verb,
      path: up.basePath + call.path,
      headers: call.headers,
      agent: up.agent,
    },
    (res) => {
      if (settled) return res.resume();
      settled = true;
      onResponse(res);
    },
  );
  upReq.on('error', (err) => {
    if (settled) return;
    settled = true;
    onError(err);
  });
  upReq.end(call.body ?? undefined);
  return upReq;
}

/** When the caller goes away before the answer is complete, stop the upstream work too. */
export function abortOnClientClose(res: ServerResponse, upReq: http.ClientRequest): void {
  res.once('close', () => {
    if (!res.writableFinished) upReq.destroy();
  });
}
