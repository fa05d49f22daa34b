/**
 * The gRPC interface of an agent card: where the agent serves gRPC (the proxy's upstream when
 * GRPC_UPSTREAM_URL is unset). Card gRPC URLs are `host:port` without a scheme [sdk sample]; the
 * scheme (h2c or TLS) is then the one of the agent's HTTP URL. Pure.
 */

/** Interfaces the proxy carries as gRPC: binding GRPC, protocol v1.x (`lf.a2a.v1`) or v0.3.x (`a2a.v1`). */
export function isCarriedGrpcInterface(entry: {
  readonly protocolBinding?: unknown;
  readonly transport?: unknown;
  readonly protocolVersion?: unknown;
}): boolean {
  if (!/^grpc$/i.test(String(entry.protocolBinding ?? entry.transport ?? ''))) return false;
  return entry.protocolVersion === undefined || /^(1|0\.3)(\.|$)/.test(String(entry.protocolVersion));
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

export type GrpcVersion = '1.0' | '0.3';

/** The service version an interface names (none given: the v1.0 card form). */
function versionOf(entry: Readonly<Record<string, unknown>>): GrpcVersion {
  return /^0\.3(\.|$)/.test(String(entry.protocolVersion ?? '')) ? '0.3' : '1.0';
}

/** A card's gRPC interfaces: v1.0 `supportedInterfaces`, v0.3 `url` with `preferredTransport` GRPC and `additionalInterfaces` (the card's version). */
function grpcEntries(card: Readonly<Record<string, unknown>>): Record<string, unknown>[] {
  const v03 = card.protocolVersion === undefined ? {} : { protocolVersion: card.protocolVersion };
  const main = /^grpc$/i.test(String(card.preferredTransport ?? '')) ? [{ url: card.url, transport: 'GRPC', ...v03 }] : [];
  const listed = (key: string) =>
    (Array.isArray(card[key]) ? (card[key] as unknown[]) : []).filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null);
  return [...listed('supportedInterfaces'), ...main, ...listed('additionalInterfaces').map((e) => ({ ...v03, ...e }))];
}

/**
 * The agent's gRPC endpoint from its card, or undefined when it names none. With `sameOriginOnly` (a remote
 * agent's card, ROLE=client) only an endpoint at UPSTREAM_URL's own host and port is taken: an untrusted card must
 * not send the proxy's approved calls, its signed assertion and its client certificate anywhere else (another
 * service on the same host, a metadata address); GRPC_UPSTREAM_URL names another endpoint explicitly.
 */
export function grpcTargetFromCard(
  card: Readonly<Record<string, unknown>> | undefined,
  agentUrl: URL,
  sameOriginOnly = false,
  version?: GrpcVersion,
): URL | undefined {
  if (card === undefined) return undefined;
  const carried = grpcEntries(card).filter((e) => typeof e.url === 'string' && isCarriedGrpcInterface(e));
  // The interface of the call's protocol version first; else any (one endpoint often serves both services).
  const ordered = version === undefined ? carried : [...carried.filter((e) => versionOf(e) === version), ...carried.filter((e) => versionOf(e) !== version)];
  for (const entry of ordered) {
    const u = grpcUrl(entry.url as string, agentUrl.protocol === 'https:' ? 'https:' : 'http:');
    if (u !== undefined && (!sameOriginOnly || u.origin === agentUrl.origin)) return u;
  }
  return undefined;
}

/** host:port served cards give for the proxy's gRPC listener: GRPC_PUBLIC_ADDRESS, else the card's host with the listener's port. */
export function grpcPublicAddress(
  grpc: { readonly port: number; readonly publicAddress: string | undefined } | undefined,
  hostname: string,
): string | undefined {
  if (grpc === undefined) return undefined;
  return grpc.publicAddress ?? `${hostname}:${grpc.port}`;
}
