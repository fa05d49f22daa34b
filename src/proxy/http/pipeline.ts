/**
 * The HTTP inbound adapter (JSON-RPC and REST over node:http): the arrival stages every request runs,
 *
 *   arrival:  jwks -> card -> admit -> body -> route   (route: refusal | card | unjudged | A2A call)
 *
 * then an A2A call runs the call stages (a2a-call.ts) and unjudged traffic is forwarded as it is
 * (unjudged.ts). Admission is the middle's (../admit.ts), shared with gRPC; I/O lives in forward.ts,
 * send.ts, aos/guardian.ts and a2a/card.ts.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { classify, parseBodyInTurns, type ClassifyOptions } from '../../a2a/classify';
import { refusalId } from '../../a2a/rpc-id';
import type { CardJson } from '../../a2a/card';
import type { SseCodec } from '../../a2a/binding';
import { CODECS, jsonRpcCodec, restCodec } from '../../a2a/bindings';
import { endpointsFromCard, withRestBases } from '../../a2a/endpoints';
import { looksLikeRest } from '../../a2a/rest';
import { isUnder, parseTarget } from '../../a2a/target';
import { proxyError } from '../../core/errors';
import { isObject } from '../../core/json';
import { LARGE_BODY, OnePerKey, largeTurn } from '../../core/turns';
import { isCanonicalJson } from '../../core/json-canonical';
import { SplicedJson } from '../../core/json-spliced';
import { spent, type CallerResult } from '../../identity/caller';
import { callerTrace } from '../../observe/tracing';
import { admittedKey, createAdmit } from '../admit';
import { claimedCallerKey, responseClosing, takeTurn, turnsOf } from '../fair';
import { HELD_COPIES, giveBack } from '../../core/bounded';
import { headerText } from '../headers';
import { createHookRunner } from '../hooks';
import { END, runStages, type Stage, type Step } from '../stages';
import { createA2ACalls } from './a2a-call';
import { decodeBody, hasBody, readBody } from './body';
import { serveCard, serveCardJwks } from './card-route';
import type { Arrival, HttpParts, ProxyDeps } from './deps';
import { sendError } from './responses';
import { passUnjudged } from './unjudged';

/** The request handler, and the classifier options it routes with (the upgrade route classifies with the same). */
export type ProxyHandler = RequestListener & { readonly classifyOptions: () => ClassifyOptions };

export function createProxyHandler(deps: ProxyDeps): ProxyHandler {
  const admit = createAdmit(deps);
  const h: HttpParts = {
    deps,
    admit,
    runHooks: createHookRunner(deps),
    routedCaller: async (a) => spent(await (a.who ?? admit.identify(a.req.headers, a.req.socket))),
    refuse(res, err, id, codec) {
      const req = res.req;
      admit.refused(err, { remoteAddress: req.socket.remoteAddress, traceId: callerTrace(req.headers)?.traceId });
      sendError(res, codec, err, id);
      return END;
    },
  };
  const options = classifyOptionsOf(deps);
  // Verifying a credential and classifying a body take turns per caller (proxy/fair.ts).
  const turns = turnsOf(deps);
  const { ipv6Prefix } = deps.config.perCaller;
  const turnBy = (keyOf: (a: Arrival) => string): Stage<Arrival> => ({
    name: 'turn',
    run: (a) => takeTurn(turns, keyOf(a), responseClosing(a.res, a.req.socket), (err) => h.refuse(a.res, err, null, refusalCodec(a.req.url ?? '/', options()))),
  });
  const arrival: readonly Stage<Arrival>[] = [
    jwks(deps),
    cardKnown(deps),
    turnBy((a) => claimedCallerKey(a.req, ipv6Prefix)),
    admitStage(h, options),
    bodyStage(h, options),
    turnBy((a) => a.key ?? claimedCallerKey(a.req, ipv6Prefix)),
    route(h, options),
  ];
  const listener: RequestListener = (req, res) => {
    handle(deps, h, arrival, req, res).catch((err: unknown) => {
      // Nothing may escape a request handler: answer what can still be answered, then log.
      deps.logger.error({ err }, 'internal error while handling a request');
      if (!res.headersSent) sendError(res, jsonRpcCodec, proxyError('rejected', 'Internal proxy error'), null);
      else res.destroy();
    });
  };
  return Object.assign(listener, { classifyOptions: options });
}

function handle(deps: ProxyDeps, h: HttpParts, arrival: readonly Stage<Arrival>[], req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (deps.draining()) res.setHeader('connection', 'close');
  const lease = deps.bodyBudget.lease();
  // Identity checks and signing start now; admission waits for the first, the forward for the second.
  const a: Arrival = { req, res, lease, who: undefined, assertion: h.admit.sign(), body: null, onClose: undefined, leave: undefined, closed: false };
  // One close listener per request ('close' comes once): the body budget, the caller's place, then the call's end.
  res.on('close', () => {
    a.closed = true;
    lease.release();
    a.leave?.();
    a.onClose?.();
  });
  return runStages(arrival, a);
}

/** Where the agent serves A2A, from its card (recomputed only when the cached card object changes). */
function classifyOptionsOf(deps: ProxyDeps): () => ClassifyOptions {
  const { config } = deps;
  let endpointsFor: CardJson | undefined | null = null;
  let classifyOptions: ClassifyOptions;
  return () => {
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
        jsonLimits: config.jsonLimits,
      });
    }
    return classifyOptions;
  };
}

// ---- arrival stages ----

/** The public keys of the proxy's card signatures (CARD_SIGNING_KEY_FILE), before any A2A route. */
const jwks = (deps: ProxyDeps): Stage<Arrival> => ({
  name: 'jwks',
  run: (a) => (deps.cardSigning !== undefined && serveCardJwks(deps.cardSigning, a.req, a.res) ? END : undefined),
});

/** Before the first card arrives, wait briefly for it: it names the agent's REST and JSON-RPC endpoints. */
const cardKnown = (deps: ProxyDeps): Stage<Arrival> => ({
  name: 'card',
  run: () => (deps.upstreamCard.current() === undefined ? deps.upstreamCard.pending(2000).then(() => undefined) : undefined),
});

/**
 * Admission before cost: the caller's identity (headers, client certificate) is verified before a
 * byte of its body is read or held, and the caller is admitted within its own shares (calls in
 * flight, rate; proxy/callers.ts). A body-carrying request of a caller that will be refused is
 * refused now, unread. Bodiless requests (cards) stay public.
 */
function admitStage(h: HttpParts, options: () => ClassifyOptions): Stage<Arrival> {
  const admitCaller = (a: Arrival, known: CallerResult | undefined): Step | Promise<Step> => {
    const { req, res } = a;
    const hint = () => refusalCodec(req.url ?? '/', options());
    if (known?.ok === false) return h.refuse(res, proxyError('unauthenticated', known.message, { ...known.metadata }), null, hint());
    a.key = admittedKey(known?.ok === true ? known : undefined, req.socket.remoteAddress, h.deps.config.perCaller.ipv6Prefix);
    const after = (r: Awaited<ReturnType<typeof h.admit.enter>>): Step => {
      if (r === 'gone') return END;
      if (!r.ok) return h.refuse(res, r.error, null, hint());
      a.leave = r.leave;
      return undefined;
    };
    const entered = h.admit.enter(a.lease, known, req.socket.remoteAddress, () => a.closed, responseClosing(res));
    return entered instanceof Promise ? entered.then(after) : after(entered);
  };
  return {
    name: 'admit',
    run: (a) => {
      // Without a body there is no cost to protect before routing: admitted by its address.
      if (!hasBody(a.req)) return admitCaller(a, undefined);
      const atBound = h.admit.precheck(a.req.headers, a.req.socket.remoteAddress);
      if (atBound !== undefined) return h.refuse(a.res, atBound, null, refusalCodec(a.req.url ?? '/', options()));
      a.who = h.admit.identify(a.req.headers, a.req.socket);
      return a.who.then((known) => admitCaller(a, known));
    },
  };
}

/** The body, bounded in size and time, decoded (gzip...) and held against the in-flight budget. */
function bodyStage(h: HttpParts, options: () => ClassifyOptions): Stage<Arrival> {
  const { config } = h.deps;
  const bodyPace = { timeoutMs: config.bodyTimeoutMs, minBytesPerSecond: config.perCaller.bodyMinBytesPerSecond };
  const parsing = new OnePerKey();
  const readDecoded = async (a: Arrival): Promise<Step> => {
    const { req, res, lease } = a;
    // Refusals before classification answer in the form of the binding the path belongs to.
    const hint = () => refusalCodec(req.url ?? '/', options());
    // Read in its caller's turns past READ_SLICE: one caller's uploads never fill a loop iteration.
    const turn = (): Promise<void> => largeTurn(h.deps.fair, a.key ?? claimedCallerKey(req, config.perCaller.ipv6Prefix), responseClosing(res));
    const read = await readBody(req, config.maxBodyBytes, bodyPace, lease, HELD_COPIES, turn);
    if (!read.ok) {
      // A body cut at the size limit, its deadline or a budget may have named its id already.
      const codec = hint();
      return h.refuse(res, read.error, codec === jsonRpcCodec && read.partial !== undefined ? refusalId(read.partial) : null, codec);
    }
    const coding = headerText(req.headers['content-encoding']);
    // Nearly every body comes unencoded: no promise to wait for.
    // While it is decoded, a compressed body holds its wire bytes once and its output as it comes.
    if (coding !== undefined) lease.shrinkTo(read.body.length);
    const decoded = coding === undefined ? read : await decodeBody(read.body, coding, config.maxBodyBytes, lease);
    if (!decoded.ok) return h.refuse(res, decoded.error, null, hint());
    // The raw bytes are dropped once decoded: hold what is kept. A compressed body weighs what it decodes to
    // (a few hundred gzip bytes can decode to MAX_BODY_BYTES).
    if (!lease.hold(decoded.body.length * HELD_COPIES)) {
      const over = lease.refusal();
      // The whole body is here: a JSON-RPC refusal carries the caller's id.
      const codec = hint();
      return h.refuse(res, over, codec === jsonRpcCodec ? refusalId(decoded.body) : null, codec);
    }
    a.body = decoded.body;
    if (a.body.length >= LARGE_BODY) a.large = true;
    // A caller gone while its body waited to be read is not read (nor parsed whole by classify).
    if (a.large === true && !(await readLarge(h, a, a.body, parsing))) return END;
    return undefined;
  };
  return { name: 'body', run: (a) => (hasBody(a.req) ? readDecoded(a) : undefined) };
}

/**
 * A large body read in turns (its caller's), and a JSON-RPC request's checked against its canonical serialization,
 * then held spliced (core/json-spliced.ts) when its long strings can make their own bytes again: the caller's buffer
 * is let go and its copy given back to the budget. A caller's large bodies are read one at a time: each holds its
 * bytes and its parsed copy together only while it is read, so a caller's many large calls hold about one copy each.
 * False: the caller left before its body was read.
 */
function readLarge(h: HttpParts, a: Arrival, body: Buffer, parsing: OnePerKey): Promise<boolean> {
  const { req, res } = a;
  const key = a.key ?? claimedCallerKey(req, h.deps.config.perCaller.ipv6Prefix);
  const turn = (): Promise<void> => largeTurn(h.deps.fair, key, responseClosing(res));
  return parsing.run(key, async () => {
    if (a.closed) return false;
    const parsed = await parseBodyInTurns({ verb: req.method ?? 'POST', path: req.url ?? '/', headers: req.headers, body }, h.deps.config.jsonLimits, turn);
    a.parsed = parsed;
    if (parsed.kind !== 'json' || parsed.longStrings === undefined) return true;
    // Only a JSON-RPC call forwards the caller's bytes (a REST call's request is made from its body, `jsonrpc` aside).
    const canonical = isObject(parsed.value) && Object.hasOwn(parsed.value, 'jsonrpc') && (await isCanonicalJson(body, parsed.value, turn, parsed.longStrings));
    const spliced = canonical ? await SplicedJson.from(body, parsed.longStrings, turn) : undefined;
    a.raw = { bytes: spliced ?? body, longStrings: parsed.longStrings, value: parsed.value, canonical };
    if (spliced === undefined) return true;
    a.body = null;
    a.lease.shrinkTo(spliced.length * (HELD_COPIES - 1));
    // Nothing reads the caller's buffer any more (the spliced parts are copies).
    giveBack(body);
    return true;
  });
}

/** What the request is (positive model: a2a/classify.ts), and where it goes. */
function route(h: HttpParts, options: () => ClassifyOptions): Stage<Arrival> {
  const startCall = createA2ACalls(h);
  return {
    name: 'route',
    run(a) {
      const { req, res } = a;
      const c = classify(
        { verb: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body: a.body, ...(a.parsed === undefined ? {} : { parsed: a.parsed }) },
        options(),
      );
      // A body forwarded unjudged is held once: it is never parsed, judged or rebuilt.
      if (c.kind === 'other') a.lease.shrinkTo(a.body?.length ?? c.body?.length ?? 0);
      // Only a call forwards the body's own bytes.
      if (c.kind !== 'a2a') a.raw = undefined;
      a.body = null;
      a.parsed = undefined;
      switch (c.kind) {
        case 'reject':
          return h.refuse(res, c.error, c.id, CODECS[c.binding]);
        case 'card':
          // Discovery stays public: the card is what a caller needs to learn how to authenticate.
          serveCard(h.deps, req, res, c.target);
          return END;
        case 'other':
          return passUnjudged(h, a, c);
        case 'a2a':
          return startCall(a, c);
      }
    },
  };
}

/** Before classification (a body too large, undecodable): the binding the path most likely belongs to. */
function refusalCodec(path: string, opts: ClassifyOptions): SseCodec {
  const t = parseTarget(path);
  if (!t.ok) return restCodec;
  const segs = t.target.segments;
  if (opts.endpoints.jsonrpc.some((j) => j.length === segs.length && isUnder(segs, j))) return jsonRpcCodec;
  return looksLikeRest(segs) || opts.endpoints.rest.some((b) => isUnder(segs, b)) ? restCodec : jsonRpcCodec;
}
