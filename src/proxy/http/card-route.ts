/**
 * GET /.well-known/agent-card.json (and the pre-0.3 agent.json, and CARD_PATHS): fetched from the agent
 * and returned with every endpoint URL pointing at this proxy (design section 7).
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { hostBoundCacheControl, weakEtag, type CardJson } from '../../a2a/card';
import { cardRefusal, cardVerdict, cardViewer, type CardServing, type CardVerdict } from '../card-judge';
import { callerKey } from '../callers';
import { ANONYMOUS } from '../../ownership/principal';
import { grpcPublicAddress } from '../../a2a/bindings/grpc/card';
import { CARD_JWKS_PATH } from '../../a2a/card-signature';
import type { CardSigning } from '../../identity/card-signing';
import { BoundedBytes } from '../../core/bounded';
import { isEncoded } from '../../core/http';
import { isObject } from '../../core/json';
import type { ProxyDeps } from './deps';
import { callUpstream, abortOnClientClose, headersForOwnBody } from './forward';
import { forwardRequestHeaders, headerText } from '../headers';
import { proxyError } from '../../core/errors';
import { sendError } from './responses';
import { restCodec } from '../../a2a/bindings/rest';

const MAX_CARD_BYTES = 1024 * 1024;

/** The URL callers use to reach this proxy: PUBLIC_URL, else the scheme and Host of the request. */
export function publicBase(deps: ProxyDeps, req: IncomingMessage): URL {
  if (deps.config.publicUrl !== undefined) return deps.config.publicUrl;
  const proto = 'encrypted' in req.socket ? 'https' : 'http';
  try {
    return new URL(`${proto}://${req.headers.host ?? `127.0.0.1:${deps.config.port}`}/`);
  } catch {
    return new URL(`${proto}://127.0.0.1:${deps.config.port}/`);
  }
}

/** How served cards (and extended-card answers) are rewritten for this request: its public base and, with GRPC_PORT, the gRPC address. */
export function cardRewrite(deps: ProxyDeps, req: IncomingMessage): CardServing {
  const base = publicBase(deps, req);
  return {
    publicBase: base,
    upstreamBase: deps.upstream.url,
    signatures: deps.config.cardSignatures,
    signing: deps.cardSigning,
    judge: deps.cardJudge,
    grpcAddress: grpcPublicAddress(deps.config.grpc, base.hostname),
  };
}

/** `target` is the canonical card path the proxy classified (or the CARD_PATHS entry); HEAD is answered from the rewritten GET. */
export function serveCard(deps: ProxyDeps, req: IncomingMessage, res: ServerResponse, target: string): void {
  const headers = forwardRequestHeaders(req.headers, {
    role: deps.config.role,
    reasoningHeader: deps.config.reasoningHeader,
    announce: undefined,
    unchecked: false,
    bodyLength: null,
    upstreamHost: deps.upstream.url.host,
    remoteAddress: req.socket.remoteAddress,
    encrypted: 'encrypted' in req.socket,
  });
  // The rewritten card has its own validators and must be readable here: ask for the plain full body.
  headers['accept-encoding'] = 'identity';
  delete headers['if-none-match'];
  delete headers['if-modified-since'];
  const upReq = callUpstream(
    deps.upstream,
    { verb: 'GET', path: target, headers, body: null },
    (upRes) => {
      const kept = new BoundedBytes(MAX_CARD_BYTES);
      upRes.read({
        data: (c) => void kept.push(c),
        end: (complete) => {
          if (res.writableEnded || res.destroyed) return;
          if (!complete) return unavailable('agent card: upstream closed mid-answer');
          // A redirected card would lead the caller's card resolver (fetch follows it) to another card, and
          // from there to another agent, around this proxy.
          if (upRes.statusCode >= 300 && upRes.statusCode < 400 && upRes.statusCode !== 304)
            return unavailable(`agent card: upstream answered HTTP ${upRes.statusCode} (a redirect)`);
          const raw = kept.buffer();
          // Any 2xx is a card to a caller's resolver (the SDK takes response.ok: 203, 206, 226 too): rewritten
          // below, so the agent's length, digests and validators do not describe it.
          const card2xx = upRes.statusCode >= 200 && upRes.statusCode < 300;
          const out: OutgoingHttpHeaders = card2xx ? headersForOwnBody(upRes.headers) : { ...upRes.headers };
          if (!card2xx) return send(raw);
          // A card that cannot be rewritten is never relayed: its URLs would lead around the proxy.
          const card = !kept.overflowed && !isEncoded(upRes.headers['content-encoding']) ? parseCard(raw) : undefined;
          if (card === undefined) return unavailable('agent card: not a readable JSON object (too large, encoded or malformed)');
          const verdict = cardVerdict(card, cardRewrite(deps, req), callerKey(ANONYMOUS, req.socket.remoteAddress, deps.config.perCaller.ipv6Prefix), () =>
            cardViewer(deps.identify, req, res, deps.config.perCaller.ipv6Prefix),
          );
          if (!(verdict instanceof Promise)) return served(verdict);
          verdict.then(served, (err: unknown) => unavailable(`agent card: ${(err as Error).message}`));

          function served(v: CardVerdict): void {
            if (res.writableEnded || res.destroyed) return;
            if (v.type === 'refuse') return refuse(v);
            const body = Buffer.from(JSON.stringify(v.card));
            // Passed without a guardian decision (FAIL_MODE=open): marked, as a request forwarded so is.
            if (v.unchecked) out['x-aos-unchecked'] = 'true';
            rewrittenCardHeaders(out, body, deps.config.publicUrl === undefined);
            send(body);
          }
          function send(body: Buffer): void {
            out['content-length'] = body.length;
            res.writeHead(upRes.statusCode, out);
            res.end(req.method === 'HEAD' ? undefined : body);
          }
        },
      });
    },
    (err) => unavailable(`agent card: upstream agent unreachable (${err.message})`),
  );
  abortOnClientClose(res, upReq);

  function refuse(v: Extract<CardVerdict, { type: 'refuse' }>): void {
    if (v.cause === 'signature') return unavailable(v.why);
    deps.logger.warn({ why: v.why }, 'agent card not served');
    sendError(res, restCodec, cardRefusal(v), null);
  }

  function unavailable(why: string): void {
    deps.metrics.upstreamErrors.inc();
    deps.logger.warn({ why }, 'agent card not served');
    if (res.headersSent) return void res.destroy();
    sendError(res, restCodec, proxyError('upstreamUnavailable', 'Agent card unavailable'), null);
  }
}

/**
 * The agent's headers (a copy without its length, digests and validators) made right for a card the proxy
 * rewrote into `body`: its own ETag, no coding, and with `hostBound` (PUBLIC_URL unset) kept out of shared caches.
 */
export function rewrittenCardHeaders(out: OutgoingHttpHeaders, body: Buffer, hostBound: boolean): void {
  out.etag = weakEtag(body);
  delete out['content-encoding'];
  if (hostBound) {
    // Rewritten from this request's Host: another Host gets other URLs, so no shared cache may keep it.
    out['cache-control'] = hostBoundCacheControl(out['cache-control'] as string | string[] | undefined);
    out.vary = [headerText(out.vary as string | string[] | undefined), 'Host'].filter((v) => v !== undefined && v !== '').join(', ');
  }
}

/** GET/HEAD of CARD_JWKS_PATH (below PUBLIC_URL's path too): the JWKS of the proxy's card signatures. False: not that path. */
export function serveCardJwks(signing: CardSigning, req: IncomingMessage, res: ServerResponse): boolean {
  const path = (req.url ?? '/').split('?')[0] as string;
  if (!path.endsWith(CARD_JWKS_PATH) || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
  const body = Buffer.from(JSON.stringify(signing.jwks()));
  // Short-lived: after a key rotation callers find the new key soon (the previous one stays published).
  res.writeHead(200, {
    'content-type': 'application/jwk-set+json',
    'content-length': body.length,
    'cache-control': 'public, max-age=300',
    etag: weakEtag(body),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}

function parseCard(raw: Buffer): CardJson | undefined {
  try {
    const v: unknown = JSON.parse(raw.toString('utf8'));
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
