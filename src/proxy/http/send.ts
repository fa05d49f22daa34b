/**
 * One request to the agent over HTTP, whoever asked for it: the header rules applied, the request
 * sent, its answer handed to the leg that asked (a judged A2A call: a2a-call.ts; unjudged traffic:
 * unjudged.ts), an unreachable agent answered in the leg's binding. A leg is the only place the two
 * kinds of traffic differ.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SseCodec } from '../../a2a/binding';
import type { JsonRpcId } from '../../aos/schemas';
import { proxyError } from '../../core/errors';
import { describeConnectError } from '../../credentials/tls';
import type { ServiceParameters } from '../../a2a/service-parameters';
import type { BodyLease } from '../budget';
import type { WireBytes } from '../../core/turns';
import { forwardRequestHeaders, type ForwardHeaders } from '../headers';
import { hasBody } from './body';
import type { ProxyDeps } from './deps';
import { callUpstream, type UpstreamAnswer, type UpstreamHandle } from './forward';
import { sendError } from './responses';

export interface UpstreamRequest {
  readonly verb: string;
  /** Path and query below the upstream base, encoded by the proxy. */
  readonly path: string;
  readonly body: WireBytes | null;
  readonly unchecked: boolean;
  readonly rebuilt: { readonly version: string | undefined; readonly json: boolean } | undefined;
  /** A judged call's approved service parameters (undefined for unjudged traffic). */
  readonly serviceParameters?: ServiceParameters | undefined;
  /** Whose connections to the agent carry it: the caller's key (proxy/callers.ts). */
  readonly caller: string;
}

/** What one kind of traffic does at each point of its request to the agent. */
export interface Leg {
  /** Errors before the answer (the agent unreachable, a relay that threw) are written in this binding, with this id. */
  readonly codec: SseCodec;
  readonly id: JsonRpcId | null;
  /** Last changes to the headers the agent gets. */
  prepare(headers: ForwardHeaders, up: UpstreamRequest): void;
  /** The request is on its way. */
  started(upReq: UpstreamHandle): void;
  /** The agent's answer arrived (whether or not the caller is still there). */
  answered(upRes: UpstreamAnswer): void;
  /** Relay the answer to the caller, who is still there. */
  relay(upRes: UpstreamAnswer, upReq: UpstreamHandle): void;
  /** The agent could not be reached. */
  failed(err: Error): void;
}

export function send(
  deps: ProxyDeps,
  req: IncomingMessage,
  res: ServerResponse,
  up: UpstreamRequest,
  assertion: string | undefined,
  lease: BodyLease,
  leg: Leg,
): void {
  const { config, logger, metrics } = deps;
  const headers = forwardRequestHeaders(req.headers, {
    role: config.role,
    reasoningHeader: config.reasoningHeader,
    announce: config.role === 'server' ? undefined : deps.identities.clientAsPeer(),
    assertion,
    unchecked: up.unchecked,
    bodyLength: up.body === null ? (hasBody(req) || up.verb === 'POST' ? 0 : null) : up.body.length,
    upstreamHost: deps.upstream.url.host,
    remoteAddress: req.socket.remoteAddress,
    encrypted: 'encrypted' in req.socket,
    rebuilt: up.rebuilt,
    serviceParameters: up.serviceParameters,
  });
  leg.prepare(headers, up);
  const upReq = callUpstream(
    deps.upstream,
    { verb: up.verb, path: up.path, headers, body: up.body, caller: up.caller },
    (upRes) => {
      // The request body has left: its bytes no longer count against the in-flight budget.
      lease.release();
      leg.answered(upRes);
      try {
        if (res.destroyed) return upReq.abort();
        leg.relay(upRes, upReq);
      } catch (err) {
        // Thrown inside undici's callback it would be swallowed and the caller left hanging: end both sides here.
        logger.error({ err }, 'internal error while relaying the agent answer');
        upReq.abort();
        if (!res.headersSent) sendError(res, leg.codec, proxyError('upstreamUnavailable', 'Internal proxy error while relaying the answer'), leg.id);
        else res.destroy();
      }
    },
    (err) => {
      lease.release();
      metrics.upstreamErrors.inc();
      leg.failed(err);
      if (res.destroyed) return;
      // With the reason and, for certificate problems, the variable to change.
      logger.warn(
        { err: err.message, ...describeConnectError(err, 'UPSTREAM', deps.upstream.url.protocol === 'https:'), path: pathOnly(up.path) },
        'upstream agent unreachable',
      );
      const e = proxyError('upstreamUnavailable', 'Upstream agent unreachable', { cause: (err as NodeJS.ErrnoException).code ?? 'error' });
      if (!res.headersSent) sendError(res, leg.codec, e, leg.id);
      else res.destroy();
    },
  );
  leg.started(upReq);
}

export function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
