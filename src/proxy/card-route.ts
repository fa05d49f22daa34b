/**
 * GET /.well-known/agent-card.json (and the pre-0.3 agent.json): fetched from the agent and
 * returned with every endpoint URL pointing at this proxy (design section 7).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { rewriteCard, weakEtag, type CardJson } from '../a2a/card';
import type { ProxyDeps } from './pipeline';
import { callUpstream, forwardRequestHeaders, relayResponseHeaders, abortOnClientClose } from './forward';
import { jsonRpcErrorBody, proxyError } from './errors';

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

export function serveCard(deps: ProxyDeps, req: IncomingMessage, res: ServerResponse): void {
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
  delete headers['accept-encoding'];
  delete headers['if-none-match'];
  delete headers['if-modified-since'];
  const upReq = callUpstream(
    deps.upstream,
    { verb: req.method ?? 'GET', path: req.url ?? '/', headers, body: null },
    (upRes) => {
      const chunks: Buffer[] = [];
      let size = 0;
      upRes.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_CARD_BYTES) chunks.push(c);
      });
      upRes.on('error', () => undefined);
      upRes.on('end', () => {
        const raw = Buffer.concat(chunks);
        const out = relayResponseHeaders(upRes.headers);
        let body = raw;
        const card = upRes.statusCode === 200 && size <= MAX_CARD_BYTES ? parseCard(raw) : undefined;
        if (card !== undefined) {
          body = Buffer.from(JSON.stringify(rewriteCard(card, { publicBase: publicBase(deps, req), upstreamBase: deps.upstream.url, signatures: deps.config.cardSignatures })));
          out.etag = weakEtag(body);
          delete out['content-encoding'];
        }
        out['content-length'] = body.length;
        res.writeHead(upRes.statusCode ?? 502, out);
        res.end(req.method === 'HEAD' ? undefined : body);
      });
    },
    (err) => {
      deps.metrics.upstreamErrors.inc();
      deps.logger.warn({ err: err.message }, 'agent card: upstream agent unreachable');
      if (res.headersSent) return void res.destroy();
      const body = jsonRpcErrorBody(proxyError('upstreamUnavailable', 'Upstream agent unreachable'), null);
      res.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    },
  );
  abortOnClientClose(res, upReq);
}

function parseCard(raw: Buffer): CardJson | undefined {
  try {
    const v: unknown = JSON.parse(raw.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as CardJson) : undefined;
  } catch {
    return undefined;
  }
}
