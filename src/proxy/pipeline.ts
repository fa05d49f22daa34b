/**
 * One exchange, in order: parse -> classify -> request hooks (envelope -> guardian -> enforce) ->
 * forward -> response hooks -> relay. Each stage is a small function in its own module; this one
 * only sequences them. I/O lives in forward.ts, aos/guardian.ts and a2a/card.ts.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { ProxyDeps } from './deps';
import type { Metrics } from '../admin/metrics';
import { classify, type Classified, type ClassifyOptions } from '../a2a/classify';
import type { CardCache, CardJson } from '../a2a/card';
import { endpointsFromCard, withRestBases } from '../a2a/endpoints';
import { rebuildRequest } from '../a2a/rebuild';
import { looksLikeRest } from '../a2a/rest';
import { isUnder, parseTarget } from '../a2a/target';
import type { Guardian } from '../aos/guardian';
import type { Identities, Side } from '../aos/identity';
import type { JsonObject, JsonRpcId } from '../aos/schemas';
import { decodeBody, hasBody, holdDecoded, readBody, type BodyBudget, type BodyLease } from './body';
import { proxyError, type ProxyError } from '../core/errors';
import { abortOnClientClose, callUpstream, forwardRequestHeaders, headerText, type Upstream, type UpstreamAnswer, type UpstreamHandle } from './forward';
import { createHookRunner, summarize, type Exchange, type HookRun } from './hooks';
import { isEventStream, relayPlain, relayStreamInspected, relayUnaryInspected, sendError, type RelayContext } from './responses';
import type { Line } from './relay/window';
import { cardRewrite, serveCard } from './card-route';
import { Cancellation } from '../cancel';
import type { CallerIdentifier, CallerResult } from '../identity/caller';
import { describeConnectError } from '../tls';
import { taskNotFoundAnswer, withTaskOwnership, type TaskOwnership } from './ownership';
import { ownerKey } from '../ownership/principal';
import { callerTrace, type Tracer } from '../observe/tracing';
import type { AuditRecord } from '../observe/audit';
import { writeAuditLine } from './audit-line';
import type { ChainLink } from '../observe/decision-log';


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

  // Where the agent serves A2A, from its card (recomputed only when the cached card object changes).
  let endpointsFor: CardJson | undefined | null = null;
  let classifyOptions: ClassifyOptions;
  const passthrough = config.passthroughPaths;
  function options(): ClassifyOptions {
    const card = deps.upstreamCard.current();
    if (card !== endpointsFor) {
      endpointsFor = card;
      classifyOptions = {
        endpoints: withRestBases(endpointsFromCard(card, deps.upstream.basePath), config.restBasePaths),
        cardKnown: card !== undefined || config.restBasePaths !== undefined,
        passthrough,
        forwardNonA2A: config.nonA2A === 'forward',
      };
    }
    return classifyOptions;
  }

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
    // Before the first card arrives, wait briefly for it: it names the agent's REST and JSON-RPC endpoints.
    if (deps.upstreamCard.current() === undefined) await deps.upstreamCard.pending(2000);
    const opts = options();

    const lease = deps.bodyBudget.lease();
    res.once('close', lease.release);
    // Identity checks and signing start now and run while the body arrives and the guardian is asked.
    const who = identifyCaller(req);
    const assertion = signFor();
    let body: Buffer | null = null;
    if (hasBody(req)) {
      // Refusals before classification answer in the form of the binding the path belongs to.
      const hint = () => refusalBinding(path, opts);
      const read = await readBody(req, config.maxBodyBytes, config.bodyTimeoutMs, lease);
      if (!read.ok) return refuse(res, read.error, null, hint());
      const decoded = await decodeBody(read.body, headerText(req.headers['content-encoding']), config.maxBodyBytes);
      if (!decoded.ok) return refuse(res, decoded.error, null, hint());
      body = decoded.body;
      // The raw bytes are dropped once decoded: hold what is kept (a decoded body must fit the budget too).
      const over = holdDecoded(lease, read.body.length, body.length);
      if (over !== undefined) return refuse(res, over, null, hint());
    }

    const c = classify({ verb, path, headers: req.headers, body }, opts);
    body = null;
    switch (c.kind) {
      case 'reject':
        return refuse(res, c.error, c.id, c.binding);
      case 'card':
        // Discovery stays public: the card is what a caller needs to learn how to authenticate.
        return serveCard(deps, req, res, c.target);
      case 'other': {
        const known = await who;
        if (!known.ok) return refuse(res, proxyError('unauthenticated', known.message, { ...known.metadata }), null, c.method === undefined ? 'rest' : 'jsonrpc');
        metrics.call(c.why === 'passthrough' ? 'passthrough' : 'other', 'forwarded');
        logger.info({ path: c.target.split('?')[0], verb, why: c.why, ...(c.method === undefined ? {} : { method: c.method.slice(0, 64) }) }, c.why === 'passthrough' ? 'passthrough forwarded unjudged' : 'non-A2A request forwarded unjudged (NON_A2A=forward)');
        return forward(req, res, { verb, path: c.target, body: c.body, unchecked: false, rebuilt: undefined, assertion: await assertion }, undefined, lease);
      }
      case 'a2a': {
        const known = await who;
        if (!known.ok) return refuse(res, proxyError('unauthenticated', known.message, { ...known.metadata }), c.id, c.binding);
        return handleA2A(req, res, c, known, assertion, lease);
      }
    }
  }

  function identifyCaller(req: IncomingMessage): Promise<CallerResult> {
    return deps.identify(req.headers, req.socket).catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'caller identity could not be checked');
      return { ok: false as const, message: 'Caller identity could not be checked', metadata: {} };
    });
  }

  /** A signed assertion for the upstream, or undefined (no signing key, or signing failed: the server side decides). */
  function signFor(): Promise<string | undefined> {
    const sign = deps.signAssertion;
    if (sign === undefined) return Promise.resolve(undefined);
    // The first calls after start wait (bounded) for the card that names the observed agent.
    const cards = deps.identities.pending;
    return (cards === undefined ? sign() : cards.then(sign)).catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'could not sign the identity assertion; forwarding without it');
      return undefined;
    });
  }

  async function handleA2A(
    req: IncomingMessage, res: ServerResponse, c: A2ACall, known: Extract<CallerResult, { ok: true }>, assertion: Promise<string | undefined>, lease: BodyLease,
  ): Promise<void> {
    // The caller going away cancels the guardian calls and everything after them.
    const wireMethod = String(c.request.method);
    const span = deps.tracer.startCall(req.headers, {
      method: c.op.aosMethod, wireMethod, binding: c.binding, role: config.role, httpMethod: req.method ?? 'POST', path: pathOnly(req.url ?? '/'), remoteAddress: req.socket.remoteAddress,
    });
    const ex: Exchange = {
      started: performance.now(), op: c.op, binding: c.binding, wireMethod, id: c.id, req, caller: new Cancellation(),
      identity: known.identity, callerPeer: known.peer, hooks: [], peers: {}, decision: 'allow', upstreamStatus: null, events: 0, span,
    };
    // One close listener per call: cancel guardian calls and the upstream request, then log.
    res.once('close', () => {
      if (!res.writableFinished) {
        ex.caller.cancel();
        ex.upReq?.abort();
      }
      logExchange(ex, res.writableFinished);
    });

    // Task ownership: another caller's task is "not found", before the guardian or the agent sees the call.
    const owner = ownerKey(ex.identity);
    if (deps.ownership !== undefined) {
      const owned = await deps.ownership.checkRequest(owner, c.op, c.request);
      if (res.destroyed) return;
      if (owned.type === 'refuse') return refuseOwnership(res, c, ex, owned.error);
      ex.answerHook = deps.ownership.answerHook(owner, c.op, c.binding);
      // A call about existing tasks shows the guardian whose they are (the caller's, or unchecked under FAIL_MODE=open).
      if (config.role !== 'client' && owned.state !== 'none') ex.peers.server = withTaskOwnership(ex.callerPeer, owner, owned.state);
    }

    const verb = req.method ?? 'POST';
    const payloadJson = JSON.stringify(c.request);
    lease.resize(payloadJson.length);
    const run = await runHooks({
      ex, sides: REQUEST_SIDES[config.role], phase: 'request', payload: c.request, payloadJson,
      reasoning: headerText(req.headers[config.reasoningHeader]),
      // A modify must still rebuild to a request with one meaning (same route, same path parameters).
      validateModified: (p: JsonObject) => {
        const r = rebuildRequest(c, verb, p, '');
        return typeof r === 'string' ? r : undefined;
      },
    });
    if (res.destroyed) return;
    if (run.type === 'block') {
      ex.decision = run.decision;
      return sendError(res, c.binding, run.error, c.id);
    }
    if (run.modified && deps.ownership !== undefined) {
      // A modify may not re-target the call at a task the caller does not own.
      const again = await deps.ownership.checkRequest(owner, c.op, run.payload);
      if (res.destroyed) return;
      if (again.type === 'refuse') return refuseOwnership(res, c, ex, again.error);
    }
    const rebuilt = rebuildRequest(c, verb, run.payload, run.payloadJson, run.payloadBytes);
    if (typeof rebuilt === 'string') {
      // The unmodified call was checked when classified; only a modify can get here, and it was validated.
      ex.decision = 'error';
      return sendError(res, c.binding, proxyError('rejected', `Request cannot be rebuilt: ${rebuilt}`), c.id);
    }
    ex.decision = summarize(ex.hooks, 'request');
    const signed = await assertion;
    if (res.destroyed) return;
    forward(req, res, { verb: rebuilt.verb, path: rebuilt.path, body: rebuilt.body, unchecked: run.unchecked, rebuilt: { version: rebuilt.version, json: true }, assertion: signed }, ex, lease);
  }

  function forward(req: IncomingMessage, res: ServerResponse, up: UpstreamRequest, ex: Exchange | undefined, lease: BodyLease): void {
    const headers = forwardRequestHeaders(req.headers, {
      role: config.role,
      reasoningHeader: config.reasoningHeader,
      announce: config.role === 'server' ? undefined : deps.identities.clientAsPeer(),
      assertion: up.assertion,
      unchecked: up.unchecked,
      bodyLength: up.body === null ? (hasBody(req) || up.verb === 'POST' ? 0 : null) : up.body.length,
      upstreamHost: deps.upstream.url.host,
      remoteAddress: req.socket.remoteAddress,
      encrypted: 'encrypted' in req.socket,
      ...(up.rebuilt === undefined ? {} : { rebuilt: up.rebuilt }),
    });
    // Answers that will be read (response hooks, card results) must come uncompressed.
    if (ex !== undefined && (config.inspectResponses || ex.op.returnsCard || ex.answerHook !== undefined)) headers['accept-encoding'] = 'identity';
    const upSpan = ex?.span.upstream(up.verb, deps.upstream.url);
    if (upSpan?.headers !== undefined) {
      // The agent's span becomes a child of the proxy's upstream span.
      headers.traceparent = upSpan.headers.traceparent;
      if (upSpan.headers.tracestate === undefined) delete headers.tracestate;
      else headers.tracestate = upSpan.headers.tracestate;
    }
    if (ex !== undefined) {
      ex.upstreamSentAt = performance.now();
      ex.upSpan = upSpan;
    }
    const upReq = callUpstream(
      deps.upstream,
      { verb: up.verb, path: up.path, headers, body: up.body },
      (upRes) => {
        // The request body has left: its bytes no longer count against the in-flight budget.
        lease.release();
        if (ex !== undefined) {
          ex.upstreamStatus = upRes.statusCode;
          ex.upAnswer = upRes;
          metrics.upstreamCall(ex.op.aosMethod, (performance.now() - (ex.upstreamSentAt as number)) / 1000);
        }
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
        lease.release();
        metrics.upstreamErrors.inc();
        if (ex !== undefined) {
          ex.error = err.message;
          ex.upstreamMs = performance.now() - (ex.upstreamSentAt as number);
          ex.upSpan?.end(undefined, (err as NodeJS.ErrnoException).code ?? 'error');
        }
        if (res.destroyed) return;
        // With the reason and, for certificate problems, the variable to change.
        logger.warn({ err: err.message, ...describeConnectError(err, 'UPSTREAM', deps.upstream.url.protocol === 'https:'), path: pathOnly(up.path) }, 'upstream agent unreachable');
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
    if (ex !== undefined && upRes.statusCode >= 300 && upRes.statusCode < 400 && upRes.statusCode !== 304) {
      // A2A defines no redirects. Relayed, a client's fetch follows it: the approved request goes to a URL
      // the guardian never judged, and the answer it acts on comes from there, past the response hooks.
      upReq.abort();
      metrics.upstreamErrors.inc();
      ex.error = `agent answered HTTP ${upRes.statusCode} (a redirect)`;
      return sendError(res, ex.binding, proxyError('upstreamUnavailable', 'Upstream agent answered with a redirect, which A2A does not define'), ex.id);
    }
    const ctx: RelayContext = {
      binding: ex?.binding ?? 'jsonrpc',
      id: ex?.id ?? null,
      ex,
      res, upRes, upReq,
      inspect: ex !== undefined && config.inspectResponses
        ? (payload, payloadJson, budget) => runHooks({ ex, sides: RESPONSE_SIDES[config.role], phase: 'response', payload, payloadJson, reasoning: undefined, ...(budget === undefined ? {} : { budget }) })
        : undefined,
      rewriteCard: ex?.op.returnsCard === true ? cardRewrite(deps, req) : undefined,
      maxBodyBytes: config.maxBodyBytes,
      answerHook: ex?.answerHook,
      onUpstreamFailure: (why) => {
        metrics.upstreamErrors.inc();
        if (ex !== undefined) ex.error = why;
      },
      trackStream,
      streamWindow: config.streamInspectWindow,
      ...(deps.streamLine === undefined ? {} : { streamLine: deps.streamLine }),
      onUninspectable: (why) => {
        if (config.failMode === 'closed' && !config.shadowMode) {
          if (ex !== undefined) ex.outcome = 'answer_refused';
          logger.warn({ method: ex?.op.aosMethod, why }, 'agent answer cannot be inspected; refused (FAIL_MODE=closed)');
          return proxyError('upstreamUnavailable', `Agent answer cannot be inspected: ${why}`);
        }
        if (ex !== undefined) ex.outcome = 'forwarded_unchecked';
        metrics.failOpenPasses.inc();
        logger.warn({ method: ex?.op.aosMethod, why }, 'agent answer cannot be inspected; passed (FAIL_MODE=open)');
        return undefined;
      },
    };
    if (ex === undefined || (ctx.inspect === undefined && ctx.rewriteCard === undefined && ctx.answerHook === undefined)) return relayPlain(ctx);
    if (isEventStream(upRes)) return relayStreamInspected(ctx);
    return relayUnaryInspected(ctx);
  }

  /** A call task ownership refuses: "task not found" in the agent's own form, or the store's error. */
  function refuseOwnership(res: ServerResponse, c: A2ACall, ex: Exchange, err: ProxyError): void {
    // Counted (outcome refused) with the call's audit line when it closes.
    ex.decision = 'refused';
    if (err.kind !== 'taskNotFound') return sendError(res, c.binding, err, c.id);
    const v03 = c.rest === undefined ? c.request.method === c.op.v03Method && c.op.v03Method !== c.op.v1Method : c.rest.match.version === '0.3';
    const a = taskNotFoundAnswer({ binding: c.binding, id: c.id, v03, op: c.op }, err);
    res.writeHead(a.status, { ...a.headers, 'content-length': Buffer.byteLength(a.body) });
    res.end(a.body);
  }

  function refuse(res: ServerResponse, err: ProxyError, id: JsonRpcId | null, binding: 'jsonrpc' | 'rest'): void {
    metrics.call('refused', 'refused');
    const req = res.req;
    logger.info({ outcome: 'refused', reason: err.message, remoteAddress: req.socket.remoteAddress, traceId: callerTrace(req.headers)?.traceId }, 'request refused');
    sendError(res, binding, err, id);
  }

  /** The call is over: one audit line, its outcome and added latency counted, its span ended. */
  function logExchange(ex: Exchange, finished: boolean): void {
    const now = performance.now();
    const totalMs = now - ex.started;
    if (ex.upstreamSentAt !== undefined && ex.upstreamMs === undefined) {
      // Until the answer ended; or until now, when the caller left before the agent answered.
      const answer = ex.upAnswer;
      ex.upstreamMs = (answer?.endedAt ?? now) - ex.upstreamSentAt;
      ex.upSpan?.end(answer?.statusCode, answer === undefined ? 'caller went away' : answer.endedComplete === true ? undefined : 'incomplete answer', answer?.endedAt);
    }
    const side = ex.hooks[0]?.side;
    const peer = side === undefined ? undefined : ex.peers[side];
    const record = writeAuditLine(deps, {
      method: ex.op.aosMethod, wireMethod: ex.wireMethod, binding: ex.binding, role: config.role, decision: ex.decision, hooks: ex.hooks,
      // The caller (server side) is verified when an identity was proven; a card or a header claim is not.
      peer: peer === undefined ? undefined : { name: peer.name, url: peer.url, version: peer.version, verified: side === 'server' && ex.identity !== undefined && ex.identity.source !== 'local' },
      remoteAddress: ex.req.socket.remoteAddress, traceId: ex.span.traceId, spanId: ex.span.spanId, a2aId: ex.id,
      upstreamStatus: ex.upstreamStatus, forwarded: ex.upstreamSentAt !== undefined, upstreamMs: ex.upstreamMs, totalMs, finished,
      events: ex.events, error: ex.error, outcome: ex.outcome,
    }, ex.identity);
    ex.span.end({ outcome: record.outcome, decision: record.decision, reasonCodes: record.reasonCodes, upstreamStatus: ex.upstreamStatus, error: ex.error });
  }
}

interface UpstreamRequest {
  readonly verb: string;
  /** Path and query below the upstream base, encoded by the proxy. */
  readonly path: string;
  readonly body: Buffer | null;
  readonly unchecked: boolean;
  readonly rebuilt: { readonly version: string | undefined; readonly json: boolean } | undefined;
  /** ROLE=client/both: this proxy's signed identity assertion for the upstream. */
  readonly assertion?: string | undefined;
}

/** Before classification (a body too large, undecodable): the binding the path most likely belongs to. */
function refusalBinding(path: string, opts: ClassifyOptions): 'jsonrpc' | 'rest' {
  const t = parseTarget(path);
  if (!t.ok) return 'rest';
  const segs = t.target.segments;
  if (opts.endpoints.jsonrpc.some((j) => j.length === segs.length && isUnder(segs, j))) return 'jsonrpc';
  return looksLikeRest(segs) || opts.endpoints.rest.some((b) => isUnder(segs, b)) ? 'rest' : 'jsonrpc';
}

function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

