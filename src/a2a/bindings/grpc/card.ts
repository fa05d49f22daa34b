/**
 * The gRPC interface of an agent card: where the agent serves gRPC (the proxy's upstream when
 * GRPC_UPSTREAM_URL is unset). Card gRPC URLs are `host:port` without a scheme [sdk sample]; the
 * scheme (h2c or TLS) is then the one of the agent's HTTP URL. Pure.
 */

/** Interfaces the proxy carries as gRPC: binding GRPC, protocol v1.x (v0.3's `a2a.v1` service is not carried). */
export function isCarriedGrpcInterface(entry: { readonly protocolBinding?: unknown; readonly transport?: unknown; readonly protocolVersion?: unknown }): boolean {
  if (!/^grpc$/i.test(String(entry.protocolBinding ?? entry.transport ?? ''))) return false;
  return entry.protocolVersion === undefined || /^1(\.|$)/.test(String(entry.protocolVersion));
}

/** `host:port`, `grpc://host:port`, `grpcs://...`, `http(s)://...` -> an http(s) URL, or undefined. */
export function grpcUrl(raw: string, defaultProtocol: 'http:' | 'https:'): URL | undefined {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `${defaultProtocol}//${raw}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    return undefined;
  }
  if (u.protocol === 'grpc:') u = new URL(`http://${u.host}`);
  else if (u.protocol === 'grpcs:') u = new URL(`https://${u.host}`);
  return u.protocol === 'http:' || u.protocol === 'https:' ? new URL(u.origin) : undefined;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Both hostnames name the same host: equal, or both loopback. */
function sameHost(a: URL, b: URL): boolean {
  const x = a.hostname.toLowerCase();
  const y = b.hostname.toLowerCase();
  return x === y || (LOOPBACK.has(x) && LOOPBACK.has(y));
}

/**
 * The agent's gRPC endpoint from its (v1.0) card, or undefined when it names none. With `sameHostOnly` (a remote
 * agent's card, ROLE=client) only an endpoint on UPSTREAM_URL's host is taken: an untrusted card must not point the
 * proxy at another host (an internal service, a metadata address); GRPC_UPSTREAM_URL names one explicitly.
 */
export function grpcTargetFromCard(card: Readonly<Record<string, unknown>> | undefined, agentUrl: URL, sameHostOnly = false): URL | undefined {
  const list = card?.supportedInterfaces;
  if (!Array.isArray(list)) return undefined;
  for (const e of list) {
    if (typeof e !== 'object' || e === null) continue;
    const entry = e as Record<string, unknown>;
    if (typeof entry.url !== 'string' || !isCarriedGrpcInterface(entry)) continue;
    const u = grpcUrl(entry.url, agentUrl.protocol === 'https:' ? 'https:' : 'http:');
    if (u !== undefined && (!sameHostOnly || sameHost(u, agentUrl))) return u;
  }
  return undefined;
}

/** host:port served cards give for the proxy's gRPC listener: GRPC_PUBLIC_ADDRESS, else the card's host with the listener's port. */
export function grpcPublicAddress(grpc: { readonly port: number; readonly publicAddress: string | undefined } | undefined, hostname: string): string | undefined {
  if (grpc === undefined) return undefined;
  return grpc.publicAddress ?? `${hostname}:${grpc.port}`;
}
