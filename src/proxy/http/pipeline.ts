/**
 * The HTTP inbound adapter (JSON-RPC and REST over node:http) and the stage lists it runs:
 *
 *   arrival:  admit -> body -> route            (route: refusal | card | unjudged passthrough | A2A call)
 *   A2A call: [ownership] -> request hooks -> [ownership of a modified call] -> rebuild -> forward
 *
 * then the agent's answer goes back plain, through the unary response hooks, or event by event
 * (responses.ts, relay/stream.ts). The binding-neutral stages are in stages.ts (gRPC runs the same
 * ones); the call's facts are frozen once classified (call.ts). I/O lives in forward.ts,
 * aos/guardian.ts and a2a/card.ts.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { ProxyDeps } from './deps';
import { classify, type Classified, type ClassifyOptions } from '../../a2a/classify';
import { leadingId } from '../../a2a/rpc-id';
import type { CardJson } from '../../a2a/card';
import type { ErrorShape, SseCodec } from '../../a2a/binding';
import { CODECS, jsonRpcCodec, restCodec } from '../../a2a/bindings';
import { endpointsFromCard, withRestBases } from '../../a2a/endpoints';
import { rebuildRequest } from '../../a2a/rebuild';
import { looksLikeRest } from '../../a2a/rest';
import { isUnder, parseTarget } from '../../a2a/target';
import { HOOK_ORDER } from '../../aos/hook-points';
import type { JsonRpcId } from '../../aos/schemas';
import { decodeBody, hasBody, readBody } from './body';
import { holdDecoded, type BodyLease } from '../budget';
import { proxyError, type ProxyError } from '../../core/errors';
import { abortOnClientClose, callUpstream, type UpstreamAnswer, type UpstreamHandle } from './forward';
import { forwardRequestHeaders, headerText } from '../headers';
import { createHookRunner } from '../hooks';
import { unreadableAnswer } from '../enforce';
import type { AnswerHook } from '../ownership';
import { isEventStream, relayPlain, relayStreamInspected, relayUnaryInspected, sendError, type RelayContext } from './responses';
import { cardRewrite, serveCard, serveCardJwks } from './card-route';
import { readableCodings, relayPassthrough } from './passthrough-answer';
import { Cancellation } from '../../cancel';
import { spent, type CallerResult } from '../../identity/caller';
import { describeConnectError } from '../../tls';
import { ANONYMOUS, ownerKey } from '../../ownership/principal';
import { callerKey, type Admission } from '../callers';
import { claimedCallerKey, responseClosing, takeTurn, turnsFull, turnStage } from '../fair';
import { callerTrace } from '../../observe/tracing';
import { finishCall, openExchange, type Exchange } from '../call';
import { allowListRefusal, readServiceParameters, type ServiceParameters } from '../../a2a/service-parameters';
import { callStages, END, runStages, type CallerPort, type CallFlow, type Stage, type Step } from '../stages';

type A2ACall = Extract<Classified, { kind: 'a2a' }>;

/**
 * Copies of a request's size a call holds at once while it is judged. Counted so, 20 concurrent 9 MiB
 * calls peaked at 1.6 bytes of RSS per budget byte (npm run bench:hostile; 5.2 when only the JSON text counted).
 */
const HELD_COPIES = 3;

/** A request before it is classified. */
interface Arrival {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly lease: BodyLease;
  /**
   * The caller's identity. A request with a body is verified before its body is read (admission before
   * cost); one without (a card, a GET) only once it routes to an A2A operation or a forwarded route.
   * Either way an assertion is spent (its id recorded, in its signer's own share of the replay cache:
   * identity/replay.ts) only once the request routes there: a refused request records nothing.
   */
  who: Promise<CallerResult> | undefined;
  /** This proxy's assertion (undefined: no signing key), signed while the body arrives. */
  readonly assertion: Promise<string | undefined> | undefined;
  /** Set by the body stage: the decoded body, or null. */
  body: Buffer | null;
  /** Set by an A2A call: its end, run by the request's one close listener. */
  onClose: (() => void) | undefined;
  /** Set by admission: gives the caller's place back (its calls in flight). */
  leave: (() => void) | undefined;
  /** The request closed (the caller left, or its answer ended). */
  closed: boolean;
  /** Set by admission: the key the caller's shares and turns are counted under. */
  key?: string;
}

/** An A2A call over HTTP: the binding-neutral flow plus the HTTP exchange and what the HTTP stages make. */
interface HttpFlow extends CallFlow {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly lease: BodyLease;
  readonly classified: A2ACall;
  readonly codec: SseCodec;
  readonly assertion: Promise<string | undefined> | undefined;
  /** Set by the rebuild stage. */
  upstreamRequest: UpstreamRequest | undefined;
  /** Set by the forward stage: what the upstream call's callbacks keep of the call. */
  tie: UpstreamTie | undefined;
}

/**
 * What the callbacks of the upstream request keep of an A2A call: the exchange, its codec and answer
 * checks, never the flow's payloads. undici keeps a finished request (and so its callbacks) in its
 * queue until some 256 later requests on the connection: whatever they reference outlives the call
 * and is promoted to the old generation (keeping the flow there made GC cost 4x per call).
 */
interface UpstreamTie {
  readonly ex: Exchange;
  readonly codec: SseCodec;
  readonly answerHook: AnswerHook | undefined;
  upReq: UpstreamHandle | undefined;
  upAnswer: UpstreamAnswer | undefined;
}

interface UpstreamRequest {
  readonly verb: string;
  /** Path and query below the upstream base, encoded by the proxy. */
  readonly path: string;
  readonly body: Buffer | null;
  readonly unchecked: boolean;
  readonly rebuilt: { readonly version: string | undefined; readonly json: boolean } | undefined;
  /** A judged call's approved service parameters (undefined for unjudged traffic). */
  readonly serviceParameters?: ServiceParameters | undefined;
}

/** The request handler, and the classifier options it routes with (the upgrade route classifies with the same). */
export type ProxyHandler = RequestListener & { readonly classifyOptions: () => ClassifyOptions };

export function createProxyHandler(deps: ProxyDeps): ProxyHandler {
  const { config, logger, metrics } = deps;
  const runHooks = createHookRunner(deps);
  const bodyPace = { timeoutMs: config.bodyTimeoutMs, minBytesPerSecond: config.perCaller.bodyMinBytesPerSecond };
  const sides = HOOK_ORDER[config.role];

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
  function options(): ClassifyOptions {
    const card = deps.upstreamCard.current();
    if (card !== endpointsFor) {
      endpointsFor = card;
      // Frozen: classify remembers what it read of recent paths under this object (a change is a new object).
      classifyOptions = Object.freeze({
        endpoints: Object.freeze(withRestBases(endpointsFromCard(card, deps.upstream.basePath), config.restBasePaths)),
        cardKnown: card !== undefined || config.restBasePaths !== undefined,
        passthrough: config.passthroughPaths,
        forwardNonA2A: config.nonA2A === 'forward',
        cardPaths: config.cardPaths,
      });
    }
    return classifyOptions;
  }

  // ---- arrival stages ----

  /** Before the first card arrives, wait briefly for it: it names the agent's REST and JSON-RPC endpoints. */
  const cardKnown: Stage<Arrival> = {
    name: 'card',
    run: () => (deps.upstreamCard.current() === undefined ? deps.upstreamCard.pending(2000).then(() => undefined) : undefined),
  };

  /**
   * Admission before cost: the caller's identity (headers, client certificate) is verified before a
   * byte of its body is read or held, and the caller is admitted within its own shares (calls in
   * flight, rate; proxy/callers.ts). A body-carrying request of a caller that will be refused is
   * refused now, unread. Bodiless requests (cards) stay public.
   */
  const admit: Stage<Arrival> = {
    name: 'admit',
    run: (a) => {
      // Without a body there is no cost to protect before routing: admitted by its address.
      if (!hasBody(a.req)) return admitCaller(a, undefined);
      a.who = identifyCaller(a.req);
      return a.who.then((known) => admitCaller(a, known));
    },
  };
  function admitCaller(a: Arrival, known: CallerResult | undefined): Step | Promise<Step> {
    const { req, res } = a;
    const hint = () => refusalCodec(req.url ?? '/', options());
    if (known?.ok === false) return refuse(res, proxyError('unauthenticated', known.message, { ...known.metadata }), null, hint());
    const key = callerKey(known?.ok === true ? ownerKey(known.identity) : ANONYMOUS, req.socket.remoteAddress);
    a.key = key;
    a.lease.charge(key);
    const limits = deps.callerLimits;
    if (limits === undefined) return undefined;
    const admitted = limits.admit(key);
    const after = (r: Admission): Step => {
      if (!r.ok) return refuse(res, r.error, null, hint());
      if (a.closed) {
        r.leave();
        return END;
      }
      a.leave = r.leave;
      return undefined;
    };
    return admitted instanceof Promise ? admitted.then(after) : after(admitted);
  }

  /** The body, bounded in size and time, decoded (gzip...) and held against the in-flight budget. */
  const body: Stage<Arrival> = {
    name: 'body',
    run: (a) => (hasBody(a.req) ? readDecoded(a) : undefined),
  };
  async function readDecoded(a: Arrival): Promise<Step> {
    const { req, res, lease } = a;
    // Refusals before classification answer in the form of the binding the path belongs to.
    const hint = () => refusalCodec(req.url ?? '/', options());
    const read = await readBody(req, config.maxBodyBytes, bodyPace, lease);
    if (!read.ok) {
      if (read.error.kind === 'limited') metrics.callerLimited.inc({ resource: 'bytes' });
      // A body cut at the size limit, its deadline or a budget may have named its id already.
      const codec = hint();
      return refuse(res, read.error, codec === jsonRpcCodec && read.partial !== undefined ? leadingId(read.partial) : null, codec);
    }
    const coding = headerText(req.headers['content-encoding']);
    // Nearly every body comes unencoded: no promise to wait for.
    const decoded = coding === undefined ? read : await decodeBody(read.body, coding, config.maxBodyBytes);
    if (!decoded.ok) return refuse(res, decoded.error, null, hint());
    // The raw bytes are dropped once decoded: hold what is kept (a decoded body must fit the budget too).
    const over = holdDecoded(lease, read.body.length, decoded.body.length);
    if (over !== undefined) {
      // The whole body is here: a JSON-RPC refusal carries the caller's id.
      const codec = hint();
      return refuse(res, over, codec === jsonRpcCodec ? leadingId(decoded.body) : null, codec);
    }
    a.body = decoded.body;
    return undefined;
  }

  /** What the request is (positive model: a2a/classify.ts), and where it goes. */
  const route: Stage<Arrival> = {
    name: 'route',
    run(a) {
      const { req, res } = a;
      const c = classify({ verb: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body: a.body }, options());
      a.body = null;
      switch (c.kind) {
        case 'reject':
          return refuse(res, c.error, c.id, CODECS[c.binding]);
        case 'card':
          // Discovery stays public: the card is what a caller needs to learn how to authenticate.
          serveCard(deps, req, res, c.target);
          return END;
        case 'other':
          return passUnjudged(a, c);
        case 'a2a':
          return startCall(a, c);
      }
    },
  };

  /** The public keys of the proxy's card signatures (CARD_SIGNING_KEY_FILE), before any A2A route. */
  const jwks: Stage<Arrival> = {
    name: 'jwks',
    run: (a) => (deps.cardSigning !== undefined && serveCardJwks(deps.cardSigning, a.req, a.res) ? END : undefined),
  };
  // Verifying a credential and classifying a body take turns per caller (proxy/fair.ts).
  const turnBy = (keyOf: (a: Arrival) => string): Stage<Arrival> => ({
    name: 'turn',
    run: (a) => takeTurn(deps.fair, keyOf(a), responseClosing(a.res), () => {
      metrics.callerLimited.inc({ resource: 'turns' });
      return refuse(a.res, turnsFull(config.perCaller.fairQueue), null, refusalCodec(a.req.url ?? '/', options()));
    }),
  });
  const arrival: readonly Stage<Arrival>[] = [jwks, cardKnown, turnBy((a) => claimedCallerKey(a.req)), admit, body, turnBy((a) => a.key ?? claimedCallerKey(a.req)), route];

  // ---- A2A call stages (after the binding-neutral ones) ----

  /** The request the agent receives, built from the approved call (a2a/rebuild.ts): never the caller's bytes. */
  const rebuild: Stage<HttpFlow> = {
    name: 'rebuild',
    run(f) {
      const run = f.approved as NonNullable<HttpFlow['approved']>;
      const c = f.classified;
      const rebuilt = rebuildRequest(c, f.req.method ?? 'POST', run.payload, run.payloadJson, run.payloadBytes);
      if (typeof rebuilt === 'string') {
        // The unmodified call was checked when classified; only a modify can get here, and it was validated.
        f.ex.log.decision = 'error';
        f.port.fail(proxyError('rejected', `Request cannot be rebuilt: ${rebuilt}`));
        return END;
      }
      f.upstreamRequest = {
        verb: rebuilt.verb, path: rebuilt.path, body: rebuilt.body, unchecked: run.unchecked, rebuilt: { version: rebuilt.version, json: true }, serviceParameters: run.serviceParameters,
      };
      return undefined;
    },
  };

  const forwardCall: Stage<HttpFlow> = {
    name: 'forward',
    run(f) {
      // Without a signing key there is nothing to wait for.
      if (f.assertion === undefined) return forwardSigned(f, undefined);
      return f.assertion.then((signed) => (f.res.destroyed ? END : forwardSigned(f, signed)));
    },
  };
  function forwardSigned(f: HttpFlow, signed: string | undefined): Step {
    const tie: UpstreamTie = { ex: f.ex, codec: f.codec, answerHook: f.answerHook, upReq: undefined, upAnswer: undefined };
    f.tie = tie;
    forward(f.req, f.res, f.upstreamRequest as UpstreamRequest, signed, f.lease, tie);
    // Forwarded: the approved payload and the rebuilt request are the agent's now.
    f.approved = undefined;
    f.upstreamRequest = undefined;
    return undefined;
  }

  const approvedTurn: readonly Stage<HttpFlow>[] = deps.fair === undefined ? [] : [turnStage(deps.fair, metrics, config.perCaller.fairQueue)];
  const callStageList: readonly Stage<HttpFlow>[] = [...callStages({ config, ownership: deps.ownership, runHooks, requestSides: sides.request, push: deps.push }), ...approvedTurn, rebuild, forwardCall];

  const listener: RequestListener = (req, res) => {
    handle(req, res).catch((err: unknown) => {
      // Nothing may escape a request handler: answer what can still be answered, then log.
      logger.error({ err }, 'internal error while handling a request');
      if (!res.headersSent) sendError(res, jsonRpcCodec, proxyError('rejected', 'Internal proxy error'), null);
      else res.destroy();
    });
  };
  return Object.assign(listener, { classifyOptions: options });

  function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (deps.draining()) res.setHeader('connection', 'close');
    const lease = deps.bodyBudget.lease();
    // Identity checks and signing start now; admission waits for the first, the forward for the second.
    const a: Arrival = { req, res, lease, who: undefined, assertion: signFor(), body: null, onClose: undefined, leave: undefined, closed: false };
    // One close listener per request ('close' comes once): the body budget, the caller's place, then the call's end.
    res.on('close', () => {
      a.closed = true;
      lease.release();
      a.leave?.();
      a.onClose?.();
    });
    return runStages(arrival, a);
  }

  /** PASSTHROUGH_PATHS or NON_A2A=forward: forwarded unjudged, counted and logged, to a verified caller where one is required. */
  async function passUnjudged(a: Arrival, c: Extract<Classified, { kind: 'other' }>): Promise<Step> {
    // Routed: the caller's one-use credentials (an assertion) are used up now.
    const known = await spent(await (a.who ?? identifyCaller(a.req)));
    if (!known.ok) return refuse(a.res, proxyError('unauthenticated', known.message, { ...known.metadata }), null, c.method === undefined ? restCodec : jsonRpcCodec);
    const verb = a.req.method ?? 'GET';
    metrics.call(c.why === 'passthrough' ? 'passthrough' : 'other', 'forwarded');
    logger.info({ path: c.target.split('?')[0], verb, why: c.why, ...(c.method === undefined ? {} : { method: c.method.slice(0, 64) }) }, c.why === 'passthrough' ? 'passthrough forwarded unjudged' : 'non-A2A request forwarded unjudged (NON_A2A=forward)');
    forward(a.req, a.res, { verb, path: c.target, body: c.body, unchecked: false, rebuilt: undefined }, a.assertion === undefined ? undefined : await a.assertion, a.lease, undefined);
    return END;
  }

  /** An A2A call: its caller verified, its facts frozen, then the call stages. */
  async function startCall(a: Arrival, c: A2ACall): Promise<Step> {
    const { req, res } = a;
    const codec = CODECS[c.binding];
    // Routed: the caller's one-use credentials (an assertion) are used up now.
    const known = await spent(await (a.who ?? identifyCaller(a.req)));
    if (!known.ok) return refuse(res, proxyError('unauthenticated', known.message, { ...known.metadata }), c.id, codec);
    const serviceParameters = readServiceParameters(req.headers, c.version);
    if ('problem' in serviceParameters) return refuse(res, proxyError('rejected', serviceParameters.problem), c.id, codec);
    const notAllowed = allowListRefusal(serviceParameters, config.a2aVersions, config.a2aExtensions);
    if (notAllowed !== undefined) return refuse(res, notAllowed, c.id, codec);
    // What the call holds while it is judged and forwarded (the parsed request, its JSON text, the guardian's
    // envelope, the rebuilt body: each about the request's size) is counted, so the budget bounds memory.
    const requestJson = JSON.stringify(c.request);
    a.lease.resize(requestJson.length);
    if (!a.lease.take(requestJson.length * (HELD_COPIES - 1))) {
      const err = a.lease.refusal();
      if (err.kind === 'limited') metrics.callerLimited.inc({ resource: 'bytes' });
      return refuse(res, err, c.id, codec);
    }
    const wireMethod = String(c.request.method);
    const remoteAddress = req.socket.remoteAddress;
    const span = deps.tracer.startCall(req.headers, {
      method: c.op.aosMethod, wireMethod, binding: c.binding, role: config.role, httpMethod: req.method ?? 'POST', path: pathOnly(req.url ?? '/'), remoteAddress,
    });
    const ex = openExchange({
      started: performance.now(), codec, op: c.op, wireMethod, id: c.id, shape: errorShape(c), caller: new Cancellation(),
      identity: known.identity, callerPeer: known.peer, owner: ownerKey(known.identity), span, remoteAddress, serviceParameters,
    });
    const flow: HttpFlow = {
      ex, req, res, lease: a.lease, classified: c, codec, assertion: a.assertion,
      port: new HttpPort(res, ex),
      request: c.request, requestJson: undefined,
      reasoning: headerText(req.headers[config.reasoningHeader]),
      // A modify must still rebuild to a request with one meaning (same route, same path parameters).
      validateModified: (p) => {
        const r = rebuildRequest(c, req.method ?? 'POST', p, '');
        return typeof r === 'string' ? r : undefined;
      },
      answerHook: undefined, approved: undefined, upstreamRequest: undefined, tie: undefined,
    };
    // When the request closes: cancel guardian calls and the upstream request, then log.
    a.onClose = () => {
      if (!res.writableFinished) {
        ex.call.caller.cancel();
        flow.tie?.upReq?.abort();
      }
      endUpstream(flow);
      finishCall(deps, ex, res.writableFinished);
    };
    flow.requestJson = requestJson;
    await runStages(callStageList, flow);
    return END;
  }

  /** Who is calling: every credential presented checked (one-use ones not spent yet: see `who`). */
  function identifyCaller(req: IncomingMessage): Promise<CallerResult> {
    return deps.identify(req.headers, req.socket).catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'caller identity could not be checked');
      return { ok: false as const, message: 'Caller identity could not be checked', metadata: {} };
    });
  }

  /** A signed assertion for the upstream, or undefined (no signing key, or signing failed: the server side decides). */
  function signFor(): Promise<string | undefined> | undefined {
    const sign = deps.signAssertion;
    if (sign === undefined) return undefined;
    // The first calls after start wait (bounded) for the card that names the observed agent.
    const cards = deps.identities.pending;
    return (cards === undefined ? sign() : cards.then(sign)).catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'could not sign the identity assertion; forwarding without it');
      return undefined;
    });
  }

  /** The request to the agent, and its answer handed to the relay; `f` is the A2A call, undefined for unjudged traffic. */
  function forward(req: IncomingMessage, res: ServerResponse, up: UpstreamRequest, assertion: string | undefined, lease: BodyLease, f: UpstreamTie | undefined): void {
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
    const log = f?.ex.log;
    // Answers that will be read (response hooks, card results) must come uncompressed.
    if (f !== undefined && (config.inspectResponses || f.ex.call.op.returnsCard || f.answerHook !== undefined)) headers['accept-encoding'] = 'identity';
    // An unjudged answer is read for an agent card: only in codings the proxy can read.
    if (f === undefined && headers['accept-encoding'] !== undefined) headers['accept-encoding'] = readableCodings(headers['accept-encoding']);
    const upSpan = f?.ex.call.span.upstream(up.verb, deps.upstream.url);
    if (upSpan?.headers !== undefined) {
      // The agent's span becomes a child of the proxy's upstream span.
      headers.traceparent = upSpan.headers.traceparent;
      if (upSpan.headers.tracestate === undefined) delete headers.tracestate;
      else headers.tracestate = upSpan.headers.tracestate;
    }
    if (log !== undefined) {
      log.upstreamSentAt = performance.now();
      if (upSpan !== undefined) log.upSpan = upSpan;
    }
    const codec = f?.codec ?? restCodec;
    const id = f?.ex.call.id ?? null;
    const upPath = up.path;
    const upReq = callUpstream(
      deps.upstream,
      { verb: up.verb, path: up.path, headers, body: up.body },
      (upRes) => {
        // The request body has left: its bytes no longer count against the in-flight budget.
        lease.release();
        if (f !== undefined && log !== undefined) {
          log.upstreamStatus = upRes.statusCode;
          f.upAnswer = upRes;
          metrics.upstreamCall(f.ex.call.op.aosMethod, (performance.now() - (log.upstreamSentAt as number)) / 1000);
        }
        try {
          respond(req, res, upRes, upReq, f, lease);
        } catch (err) {
          // Thrown inside undici's callback it would be swallowed and the caller left hanging: end both sides here.
          logger.error({ err }, 'internal error while relaying the agent answer');
          upReq.abort();
          if (!res.headersSent) sendError(res, codec, proxyError('upstreamUnavailable', 'Internal proxy error while relaying the answer'), id);
          else res.destroy();
        }
      },
      (err) => {
        lease.release();
        metrics.upstreamErrors.inc();
        if (log !== undefined) {
          log.error = err.message;
          log.upstreamEndedAt = performance.now();
          log.upSpan?.end(undefined, (err as NodeJS.ErrnoException).code ?? 'error');
          log.upSpan = undefined;
        }
        if (res.destroyed) return;
        // With the reason and, for certificate problems, the variable to change.
        logger.warn({ err: err.message, ...describeConnectError(err, 'UPSTREAM', deps.upstream.url.protocol === 'https:'), path: pathOnly(upPath) }, 'upstream agent unreachable');
        const e = proxyError('upstreamUnavailable', 'Upstream agent unreachable', { cause: (err as NodeJS.ErrnoException).code ?? 'error' });
        // Traffic that is not A2A gets a plain HTTP 502 (REST form), not a JSON-RPC body.
        if (!res.headersSent) sendError(res, codec, e, id);
        else res.destroy();
      },
    );
    if (f === undefined) abortOnClientClose(res, upReq);
    else f.upReq = upReq;
  }

  /** Choose how the answer goes back: plain, through the unary response hooks, or event by event. */
  function respond(req: IncomingMessage, res: ServerResponse, upRes: UpstreamAnswer, upReq: UpstreamHandle, f: UpstreamTie | undefined, lease: BodyLease): void {
    if (res.destroyed) return upReq.abort();
    const ex = f?.ex;
    if (f !== undefined && upRes.statusCode >= 300 && upRes.statusCode < 400 && upRes.statusCode !== 304) {
      // A2A defines no redirects. Relayed, a client's fetch follows it: the approved request goes to a URL
      // the guardian never judged, and the answer it acts on comes from there, past the response hooks.
      upReq.abort();
      metrics.upstreamErrors.inc();
      f.ex.log.error = `agent answered HTTP ${upRes.statusCode} (a redirect)`;
      return sendError(res, f.codec, proxyError('upstreamUnavailable', 'Upstream agent answered with a redirect, which A2A does not define'), f.ex.call.id);
    }
    const ctx: RelayContext = {
      codec: f?.codec ?? jsonRpcCodec,
      id: ex?.call.id ?? null,
      ex,
      res, upRes, upReq,
      inspect: ex !== undefined && config.inspectResponses
        ? (payload, payloadJson, budget) => runHooks({ ex, sides: sides.response, phase: 'response', payload, payloadJson, reasoning: undefined, ...(budget === undefined ? {} : { budget }) })
        : undefined,
      rewriteCard: ex?.call.op.returnsCard === true ? cardRewrite(deps, req) : undefined,
      maxBodyBytes: config.maxBodyBytes,
      // The call's lease (its request bytes already returned) holds the answer bytes read for inspection; released when the call ends.
      lease,
      answerHook: f?.answerHook,
      onUpstreamFailure: (why) => {
        metrics.upstreamErrors.inc();
        if (ex !== undefined) ex.log.error = why;
      },
      trackStream,
      streamWindow: config.streamInspectWindow,
      streamLine: deps.streamLine,
      onUninspectable: (why) => {
        const action = unreadableAnswer(why, config.failMode, config.shadowMode);
        if (action.type === 'refuse') {
          if (ex !== undefined) ex.log.outcome = 'answer_refused';
          logger.warn({ method: ex?.call.op.aosMethod, why }, 'agent answer cannot be inspected; refused (FAIL_MODE=closed)');
          return action.error;
        }
        if (ex !== undefined) ex.log.outcome = 'forwarded_unchecked';
        metrics.failOpenPasses.inc();
        logger.warn({ method: ex?.call.op.aosMethod, why }, 'agent answer cannot be inspected; passed (FAIL_MODE=open)');
        return undefined;
      },
    };
    // Unjudged traffic: an answer that is an agent card is rewritten like the card, or refused.
    if (f === undefined) return relayPassthrough(ctx, { method: req.method ?? 'GET', rewrite: () => cardRewrite(deps, req), hostBound: config.publicUrl === undefined, path: pathOnly(req.url ?? '/'), logger });
    if (ex === undefined || (ctx.inspect === undefined && ctx.rewriteCard === undefined && ctx.answerHook === undefined)) return relayPlain(ctx);
    // The operation, not the agent's label, says whether the answer is a stream: a unary answer labelled
    // text/event-stream is never read event by event (an SDK caller reads its JSON); relayUnaryInspected refuses it.
    if (ex.call.op.streaming && isEventStream(upRes)) return relayStreamInspected(ctx);
    return relayUnaryInspected(ctx);
  }

  function refuse(res: ServerResponse, err: ProxyError, id: JsonRpcId | null, codec: SseCodec): typeof END {
    metrics.call('refused', 'refused');
    const req = res.req;
    logger.info({ outcome: 'refused', reason: err.message, remoteAddress: req.socket.remoteAddress, traceId: callerTrace(req.headers)?.traceId }, 'request refused');
    sendError(res, codec, err, id);
    return END;
  }
}

/** The caller's side of an A2A call over HTTP: answers in the call's binding, in the agent's own form where it is one the agent gives. */
class HttpPort implements CallerPort {
  constructor(private readonly res: ServerResponse, private readonly ex: Exchange) {}

  get open(): boolean {
    return !this.res.destroyed;
  }

  fail(err: ProxyError): void {
    const { codec, id, shape } = this.ex.call;
    sendError(this.res, codec as SseCodec, err, id, shape);
  }
}

/** The upstream part of a call that is over: until its answer ended, or until now when the caller left first. */
function endUpstream(f: HttpFlow): void {
  const log = f.ex.log;
  if (log.upstreamSentAt === undefined || log.upstreamEndedAt !== undefined) return;
  const answer = f.tie?.upAnswer;
  log.upstreamEndedAt = answer?.endedAt ?? performance.now();
  log.upSpan?.end(answer?.statusCode, answer === undefined ? 'caller went away' : answer.endedComplete === true ? undefined : 'incomplete answer', answer?.endedAt);
}

/** The form of the agent's own error answers to this call (task ownership answers "not found" exactly so). */
function errorShape(c: A2ACall): ErrorShape {
  const v03 = c.rest === undefined ? c.request.method === c.op.v03Method && c.op.v03Method !== c.op.v1Method : c.rest.match.version === '0.3';
  return { v03, errorAsEvent: v03 && c.rest === undefined && c.op.aosMethod === 'tasks/resubscribe' };
}

/** Before classification (a body too large, undecodable): the binding the path most likely belongs to. */
function refusalCodec(path: string, opts: ClassifyOptions): SseCodec {
  const t = parseTarget(path);
  if (!t.ok) return restCodec;
  const segs = t.target.segments;
  if (opts.endpoints.jsonrpc.some((j) => j.length === segs.length && isUnder(segs, j))) return jsonRpcCodec;
  return looksLikeRest(segs) || opts.endpoints.rest.some((b) => isUnder(segs, b)) ? restCodec : jsonRpcCodec;
}

function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
