/**
 * One exchange, in order: parse -> classify -> request hooks (envelope -> guardian -> enforce) ->
 * forward -> response hooks -> relay. Each stage is a small function in its own module; this one
 * only sequences them. I/O lives in forward.ts, aos/guardian.ts and a2a/card.ts.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Metrics } from '../admin/metrics';
import { classify, type Classified } from '../a2a/classify';
import { isCardPath } from '../a2a/card';
import { jsonRpcToRest, matchRest } from '../a2a/rest';
import type { Guardian } from '../aos/guardian';
import type { Identities, Side } from '../aos/identity';
import type { JsonObject, JsonRpcId } from '../aos/schemas';
import { decodeBody, hasBody, readBody } from './body';
import { proxyError, type ProxyError } from './errors';
import { abortOnClientClose, callUpstream, forwardRequestHeaders, headerText, type Upstream, type UpstreamAnswer, type UpstreamHandle } from './forward';
import { createHookRunner, summarize, type Exchange, type HookRun } from './hooks';
import { isEventStream, relayPlain, relayStreamInspected, relayUnaryInspected, sendError, type RelayContext } from './responses';
import { publicBase, serveCard } from './card-route';
import { Cancellation } from '../cancel';
import type { CallerIdentifier, CallerResult } from '../identity/caller';
import { describeConnectError } from '../tls';

export interface ProxyDeps {
  readonly config: Config;
  readonly guardian: Guardian;
  readonly identities: Identities;
  readonly upstream: Upstream;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Open streams, ended with an error event when the proxy shuts down. */
  readonly streams: Set<() => void>;
  /** True once shutdown began: answers carry Connection: close. */
  readonly draining: () => boolean;
  /** Who is calling (verified sources, then IDENTITY_POLICY); see src/identity/caller.ts. */
  readonly identify: CallerIdentifier;
  /** ROLE=client/both with a signing key: a fresh identity assertion for the upstream. */
  readonly signAssertion: (() => Promise<string>) | undefined;
}

/** Request hooks run client side first; responses travel back, so server side first. */
const REQUEST_SIDES: Record<Config['role'], readonly Side[]> = { client: ['client'], server: ['server'], both: ['client', 'server'] };
const RESPONSE_SIDES: Record<Config['role'], readonly Side[]> = { client: ['client'], server: ['server'], both: ['server', 'client'] };

type A2ACall = Extract<Classified, { kind: 'a2a' }>;

export function createProxyHandler(deps: ProxyDeps): RequestListener {
  const { config, logger, metrics } = deps;
  const runHooks = createHookRunner(deps);

  /** An open stream: counted in the gauge and ended with an error event by a shutdown; returns the untrack function. */
  const trackStream = (terminate: () => void): (() => void) => {
    deps.streams.add(terminate);
    metrics.openStreams.inc();
    return () => {
      if (deps.streams.delete(terminate)) metrics.openStreams.dec();
    };
  };

  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      // Nothing may escape a request handler: answer what can still be answered, then log.
      logger.error({ err }, 'internal error while handling a request');
      if (!res.headersSent) sendError(res, 'jsonrpc', proxyError('rejected', 'Internal proxy error'), null);
      else res.destroy();
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (deps.draining()) res.setHeader('connection', 'close');
    const verb = req.method ?? 'GET';
    const path = req.url ?? '/';
    if ((verb === 'GET' || verb === 'HEAD') && isCardPath(pathOnly(path))) return serveCard(deps, req, res);

    // Identity checks and signing start now and run while the body arrives and the guardian is asked.
    const who = identifyCaller(req);
    const assertion = signFor();
    let body: Buffer | null = null;
    if (hasBody(req)) {
      // Refusals before classification answer in the form of the binding the path belongs to.
      const hint = () => (matchRest(verb, pathOnly(path), headerText(req.headers['a2a-version'])) === undefined ? 'jsonrpc' : 'rest');
      const read = await readBody(req, config.maxBodyBytes, config.bodyTimeoutMs);
      if (!read.ok) return refuse(res, read.error, null, hint());
      const decoded = decodeBody(read.body, headerText(req.headers['content-encoding']), config.maxBodyBytes);
      if (!decoded.ok) return refuse(res, decoded.error, null, hint());
      body = decoded.body;
    }

    const c = classify({ verb, path, headers: req.headers, body });
    if (c.kind === 'reject') return refuse(res, c.error, c.id, c.binding);
    if (c.kind === 'other') {
      if (c.unknownMethod !== undefined && config.unknownMethods === 'deny') {
        return refuse(res, proxyError('rejected', 'Method is not an A2A operation (UNKNOWN_METHODS=deny)'), c.id ?? null, 'jsonrpc');
      }
      const known = await who;
      if (!known.ok) return refuse(res, proxyError('unauthenticated', known.message, { ...known.metadata }), c.id ?? null, c.unknownMethod === undefined ? 'rest' : 'jsonrpc');
      metrics.call(c.unknownMethod === undefined ? 'other' : 'unknown', 'forwarded');
      return forward(req, res, { verb, path, body: c.body, unchecked: false, assertion: await assertion }, undefined);
    }
    const known = await who;
    if (!known.ok) return refuse(res, proxyError('unauthenticated', known.message, { ...known.metadata }), c.id, c.binding);
    return handleA2A(req, res, c, known, assertion);
  }

  function identifyCaller(req: IncomingMessage): Promise<CallerResult> {
    return deps.identify(req.headers, req.socket).catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'caller identity could not be checked');
      return { ok: false as const, message: 'Caller identity could not be checked', metadata: {} };
    });
  }

  /** A signed assertion for the upstream, or undefined (no signing key, or signing failed: the server side decides). */
  function signFor(): Promise<string | undefined> {
    if (deps.signAssertion === undefined) return Promise.resolve(undefined);
    return deps.signAssertion().catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'could not sign the identity assertion; forwarding without it');
      return undefined;
    });
  }

  async function handleA2A(req: IncomingMessage, res: ServerResponse, c: A2ACall, known: Extract<CallerResult, { ok: true }>, assertion: Promise<string | undefined>): Promise<void> {
    // The caller going away cancels the guardian calls and everything after them.
    const ex: Exchange = {
      started: performance.now(), op: c.op, binding: c.binding, wireMethod: String(c.request.method), id: c.id, req, caller: new Cancellation(),
      identity: known.identity, callerPeer: known.peer, hooks: [], peers: {}, decision: 'allow', upstreamStatus: null, events: 0,
    };
    // One close listener per call: cancel guardian calls and the upstream request, then log.
    res.once('close', () => {
      if (!res.writableFinished) {
        ex.caller.cancel();
        ex.upReq?.abort();
      }
      logExchange(ex);
    });

    const rest = c.rest;
    const run = await runHooks({
      ex, sides: REQUEST_SIDES[config.role], phase: 'request', payload: c.request, payloadJson: JSON.stringify(c.request),
      reasoning: headerText(req.headers[config.reasoningHeader]),
      ...(rest === undefined ? {} : { validateModified: (p: JsonObject) => { const r = jsonRpcToRest(rest.match, p); return typeof r === 'string' ? r : undefined; } }),
    });
    if (res.destroyed) return;
    if (run.type === 'block') {
      ex.decision = run.decision;
      return sendError(res, c.binding, run.error, c.id);
    }
    ex.decision = summarize(ex.hooks, 'request');
    const signed = await assertion;
    if (res.destroyed) return;
    metrics.call(c.op.aosMethod, 'forwarded');
    forward(req, res, { ...upstreamRequest(req, c, run), assertion: signed }, ex);
  }

  /** What goes upstream after the request hooks: the approved JSON-RPC text, or the REST call it maps to. */
  function upstreamRequest(req: IncomingMessage, c: A2ACall, run: Extract<HookRun, { type: 'pass' }>): UpstreamRequest {
    const verb = req.method ?? 'POST';
    if (c.rest === undefined) return { verb, path: req.url ?? '/', body: Buffer.from(run.payloadJson, 'utf8'), unchecked: run.unchecked };
    if (!run.modified) return { verb, path: req.url ?? '/', body: c.rest.body, unchecked: run.unchecked };
    const parts = jsonRpcToRest(c.rest.match, run.payload);
    // Validated in enforce; a string here would be a bug, and then nothing unapproved goes out.
    if (typeof parts === 'string') throw new Error(parts);
    return { verb, path: c.rest.pathname + (c.rest.match.route.verb === 'POST' ? c.rest.search : parts.search), body: parts.body, unchecked: run.unchecked };
  }

  function forward(req: IncomingMessage, res: ServerResponse, up: UpstreamRequest, ex: Exchange | undefined): void {
    const headers = forwardRequestHeaders(req.headers, {
      role: config.role,
      reasoningHeader: config.reasoningHeader,
      announce: config.role === 'server' ? undefined : deps.identities.clientAsPeer(),
      assertion: up.assertion,
      unchecked: up.unchecked,
      bodyLength: up.body === null ? (hasBody(req) ? 0 : null) : up.body.length,
      upstreamHost: deps.upstream.url.host,
      remoteAddress: req.socket.remoteAddress,
      encrypted: 'encrypted' in req.socket,
    });
    // Answers that will be read (response hooks, card results) must come uncompressed.
    if (ex !== undefined && (config.inspectResponses || ex.op.returnsCard)) headers['accept-encoding'] = 'identity';
    const upReq = callUpstream(
      deps.upstream,
      { verb: up.verb, path: up.path, headers, body: up.body },
      (upRes) => {
        if (ex !== undefined) ex.upstreamStatus = upRes.statusCode;
        try {
          respond(req, res, upRes, upReq, ex);
        } catch (err) {
          // Thrown inside undici's callback it would be swallowed and the caller left hanging: end both sides here.
          logger.error({ err }, 'internal error while relaying the agent answer');
          upReq.abort();
          if (!res.headersSent) sendError(res, ex?.binding ?? 'rest', proxyError('upstreamUnavailable', 'Internal proxy error while relaying the answer'), ex?.id ?? null);
          else res.destroy();
        }
      },
      (err) => {
        metrics.upstreamErrors.inc();
        if (ex !== undefined) ex.error = err.message;
        if (res.destroyed) return;
        // With the reason and, for certificate problems, the variable to change.
        logger.warn({ err: err.message, ...describeConnectError(err, 'UPSTREAM', deps.upstream.url.protocol === 'https:'), path: pathOnly(req.url ?? '/') }, 'upstream agent unreachable');
        const e = proxyError('upstreamUnavailable', 'Upstream agent unreachable', { cause: (err as NodeJS.ErrnoException).code ?? 'error' });
        // Traffic that is not A2A gets a plain HTTP 502 (REST form), not a JSON-RPC body.
        if (!res.headersSent) sendError(res, ex?.binding ?? 'rest', e, ex?.id ?? null);
        else res.destroy();
      },
    );
    if (ex === undefined) abortOnClientClose(res, upReq);
    else ex.upReq = upReq;
  }

  /** Choose how the answer goes back: plain, through the unary response hooks, or event by event. */
  function respond(req: IncomingMessage, res: ServerResponse, upRes: UpstreamAnswer, upReq: UpstreamHandle, ex: Exchange | undefined): void {
    if (res.destroyed) return upReq.abort();
    const ctx: RelayContext = {
      binding: ex?.binding ?? 'jsonrpc',
      id: ex?.id ?? null,
      ex,
      res, upRes, upReq,
      inspect: ex !== undefined && config.inspectResponses
        ? (payload, payloadJson) => runHooks({ ex, sides: RESPONSE_SIDES[config.role], phase: 'response', payload, payloadJson, reasoning: undefined })
        : undefined,
      rewriteCard: ex?.op.returnsCard === true ? { publicBase: publicBase(deps, req), upstreamBase: deps.upstream.url, signatures: config.cardSignatures } : undefined,
      maxBodyBytes: config.maxBodyBytes,
      onUpstreamFailure: (why) => {
        metrics.upstreamErrors.inc();
        if (ex !== undefined) ex.error = why;
      },
      trackStream,
      onUninspectable: (why) => {
        metrics.call(ex?.op.aosMethod ?? 'other', 'response_uninspectable');
        if (config.failMode === 'closed' && !config.shadowMode) {
          logger.warn({ method: ex?.op.aosMethod, why }, 'agent answer cannot be inspected; refused (FAIL_MODE=closed)');
          return proxyError('upstreamUnavailable', `Agent answer cannot be inspected: ${why}`);
        }
        metrics.failOpenPasses.inc();
        logger.warn({ method: ex?.op.aosMethod, why }, 'agent answer cannot be inspected; passed (FAIL_MODE=open)');
        return undefined;
      },
    };
    if (ex === undefined || (ctx.inspect === undefined && ctx.rewriteCard === undefined)) return relayPlain(ctx);
    if (isEventStream(upRes)) return relayStreamInspected(ctx);
    return relayUnaryInspected(ctx);
  }

  function refuse(res: ServerResponse, err: ProxyError, id: JsonRpcId | null, binding: 'jsonrpc' | 'rest'): void {
    metrics.call('refused', 'refused');
    logger.info({ reason: err.message }, 'request refused');
    sendError(res, binding, err, id);
  }

  function logExchange(ex: Exchange): void {
    const first = ex.hooks[0];
    logger.info({
      method: ex.op.aosMethod,
      wireMethod: ex.wireMethod,
      binding: ex.binding,
      role: config.role,
      decision: ex.decision,
      guardianMs: round(ex.hooks.reduce((s, h) => s + h.guardianMs, 0)),
      upstreamStatus: ex.upstreamStatus,
      totalMs: round(performance.now() - ex.started),
      a2aId: ex.id,
      envelopeId: first?.envelopeId,
      // Who called, when verified (the subject names an agent or workload; it is not a secret).
      ...(ex.identity === undefined || ex.identity.source === 'local' ? {} : { caller: ex.identity.subject, callerSource: ex.identity.source }),
      // The per-hook list only when it says more than the fields above (several hooks, or a failure).
      ...(ex.hooks.length > 1 || first?.failure !== undefined
        ? { hooks: ex.hooks.map((h) => ({ side: h.side, phase: h.phase, decision: h.decision, envelopeId: h.envelopeId, ms: round(h.guardianMs), failure: h.failure })) }
        : {}),
      ...(ex.events > 0 ? { events: ex.events } : {}),
      ...(ex.error === undefined ? {} : { error: ex.error }),
    }, 'a2a call');
  }
}

interface UpstreamRequest {
  readonly verb: string;
  readonly path: string;
  readonly body: Buffer | null;
  readonly unchecked: boolean;
  readonly assertion?: string | undefined;
}

function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

const round = (ms: number) => Math.round(ms * 100) / 100;
