/**
 * Unjudged traffic (PASSTHROUGH_PATHS, NON_A2A=forward): forwarded without the guardian, counted and
 * logged, to a verified caller where one is required. Its answer comes back as passthrough-answer.ts
 * relays it (an agent card in it rewritten, or refused). Everything unjudged traffic does differently
 * from an A2A call is here: the pipeline only routes to it.
 */
import type { Classified } from '../../a2a/classify';
import { jsonRpcCodec, restCodec } from '../../a2a/bindings';
import { proxyError } from '../../core/errors';
import { END, type Step } from '../stages';
import { cardRewrite } from './card-route';
import type { Arrival, HttpParts } from './deps';
import { abortOnClientClose } from './forward';
import { readableCodings, relayPassthrough } from './passthrough-answer';
import { uninspectable, type RelayContext } from './relay/context';
import { pathOnly, send, type Leg } from './send';
import { claimedCallerKey } from '../fair';

type Other = Extract<Classified, { kind: 'other' }>;

export async function passUnjudged(h: HttpParts, a: Arrival, c: Other): Promise<Step> {
  const { deps } = h;
  const known = await h.routedCaller(a);
  if (!known.ok)
    return h.refuse(a.res, proxyError('unauthenticated', known.message, { ...known.metadata }), null, c.method === undefined ? restCodec : jsonRpcCodec);
  const verb = a.req.method ?? 'GET';
  deps.metrics.call(c.why === 'passthrough' ? 'passthrough' : 'other', 'forwarded');
  deps.logger.info(
    { path: c.target.split('?')[0], verb, why: c.why, ...(c.method === undefined ? {} : { method: c.method.slice(0, 64) }) },
    c.why === 'passthrough' ? 'passthrough forwarded unjudged' : 'non-A2A request forwarded unjudged (NON_A2A=forward)',
  );
  send(
    deps,
    a.req,
    a.res,
    { verb, path: c.target, body: c.body, unchecked: false, rebuilt: undefined, caller: a.key ?? claimedCallerKey(a.req, deps.config.perCaller.ipv6Prefix) },
    await a.assertion?.(),
    a.lease,
    unjudgedLeg(h, a),
  );
  return END;
}

function unjudgedLeg(h: HttpParts, a: Arrival): Leg {
  const { deps } = h;
  const { req, res } = a;
  return {
    // Traffic that is not A2A gets a plain HTTP 502 (REST form), not a JSON-RPC body.
    codec: restCodec,
    id: null,
    prepare(headers) {
      // An unjudged answer is read for an agent card: only in codings the proxy can read.
      if (headers['accept-encoding'] !== undefined) headers['accept-encoding'] = readableCodings(headers['accept-encoding']);
    },
    started: (upReq) => abortOnClientClose(res, upReq),
    answered: () => undefined,
    failed: () => undefined,
    relay(upRes, upReq) {
      const ctx: RelayContext = {
        codec: jsonRpcCodec,
        id: null,
        ex: undefined,
        res,
        upRes,
        upReq,
        inspect: undefined,
        rewriteCard: undefined,
        maxBodyBytes: deps.config.maxBodyBytes,
        lease: a.lease,
        onUpstreamFailure: () => deps.metrics.upstreamErrors.inc(),
        trackStream: h.admit.trackStream,
        streamWindow: deps.config.streamInspectWindow,
        streamLine: deps.streamLine,
        onUninspectable: uninspectable(deps, undefined, () => undefined),
      };
      // An answer that is an agent card is rewritten like the card, or refused.
      relayPassthrough(ctx, {
        method: req.method ?? 'GET',
        rewrite: () => cardRewrite(deps, req),
        hostBound: deps.config.publicUrl === undefined,
        path: pathOnly(req.url ?? '/'),
        logger: deps.logger,
      });
    },
  };
}
