/**
 * An A2A call over HTTP (JSON-RPC or REST), once routed: its caller verified, its facts frozen, then
 *
 *   [ownership] -> request hooks -> [ownership of a modified call] -> rebuild -> forward
 *
 * (the binding-neutral stages are ../stages.ts) and the agent's answer back plain, through the unary
 * response hooks, or event by event (responses.ts, relay/stream.ts).
 */
import type { ServerResponse } from 'node:http';
import type { Classified } from '../../a2a/classify';
import type { ErrorShape, SseCodec } from '../../a2a/binding';
import { CODECS } from '../../a2a/bindings';
import { rebuildRequest } from '../../a2a/rebuild';
import { HOOK_ORDER } from '../../aos/hook-points';
import { proxyError, type ProxyError } from '../../core/errors';
import { finishCall, type Exchange } from '../call';
import { admittedKey } from '../admit';
import { responseClosing, turnsOf, turnStage } from '../fair';
import { largeTurn, type WireBytes } from '../../core/turns';
import { SplicedJson } from '../../core/json-spliced';
import { stringifyInPieces } from '../../core/json-canonical';
import { headerText } from '../headers';
import type { AnswerHook } from '../ownership';
import { callStages, END, runStages, type CallerPort, type CallFlow, type Stage, type Step } from '../stages';
import type { BodyLease } from '../budget';
import { HELD_COPIES, giveBack } from '../../core/bounded';
import { cardRewrite } from './card-route';
import type { Arrival, HttpParts } from './deps';
import type { UpstreamAnswer, UpstreamHandle } from './forward';
import { isEventStream, relayPlain, relayStreamInspected, relayUnaryInspected, sendError } from './responses';
import { uninspectable, type RelayContext } from './relay/context';
import { pathOnly, send, type Leg, type UpstreamRequest } from './send';

type A2ACall = Extract<Classified, { kind: 'a2a' }>;

/** An A2A call over HTTP: the binding-neutral flow plus the HTTP exchange and what the HTTP stages make. */
interface HttpFlow extends CallFlow {
  readonly arrival: Arrival;
  readonly classified: A2ACall;
  readonly codec: SseCodec;
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

/** The call stages over HTTP, and the entry of a routed call into them. */
export function createA2ACalls(h: HttpParts): (a: Arrival, c: A2ACall) => Promise<Step> {
  const { config, ownership, fair, push } = h.deps;
  const approvedTurn: readonly Stage<HttpFlow>[] = fair === undefined ? [] : [turnStage(turnsOf(h.deps))];
  const stages: readonly Stage<HttpFlow>[] = [
    ...callStages({ config, ownership, runHooks: h.runHooks, requestSides: HOOK_ORDER[config.role].request, push }),
    ...approvedTurn,
    rebuild,
    forwardStage(h),
  ];
  return (a, c) => startCall(h, stages, a, c);
}

/** An A2A call: its caller verified, its facts frozen, then the call stages. */
async function startCall(h: HttpParts, stages: readonly Stage<HttpFlow>[], a: Arrival, c: A2ACall): Promise<Step> {
  const { deps, admit } = h;
  const { req, res } = a;
  const codec = CODECS[c.binding];
  const known = await h.routedCaller(a);
  if (!known.ok) return h.refuse(res, proxyError('unauthenticated', known.message, { ...known.metadata }), c.id, codec);
  const serviceParameters = admit.serviceParameters(req.headers, c.version);
  if ('error' in serviceParameters) return h.refuse(res, serviceParameters.error, c.id, codec);
  // What the call holds while it is judged and forwarded (its bytes, the parsed request, the guardian's envelope,
  // the agent's request: each about the request's size) is counted, so the budget bounds memory.
  // A large request: its serialization, and the steps after it, each in a turn of its own (core/turns.ts).
  // Its caller's turns: one caller's many large requests take one step per round between other callers' work.
  const turn = (): Promise<void> => largeTurn(deps.fair, admittedKey(known, req.socket.remoteAddress, deps.config.perCaller.ipv6Prefix), responseClosing(res));
  if (a.large === true) await turn();
  const { requestBytes, requestJson } = await serialized(a, c, turn);
  if (a.large === true) await turn();
  // In UTF-8 bytes, not characters: a text of CJK characters holds about three bytes per character in its copies.
  const size = requestBytes === undefined ? Buffer.byteLength(requestJson) : requestBytes.length;
  // Held since its bytes arrived; a serialization longer than the caller's (`1e9` is `1000000000`) takes the difference.
  // The caller's bytes held spliced are not a copy of their own (core/json-spliced.ts): one copy less.
  if (!a.lease.hold(size * (requestBytes instanceof SplicedJson ? HELD_COPIES - 1 : HELD_COPIES))) {
    return h.refuse(res, a.lease.refusal(), c.id, codec);
  }
  const wireMethod = String(c.request.method);
  const ex = admit.open(req.headers, {
    started: performance.now(),
    codec,
    op: c.op,
    wireMethod,
    id: c.id,
    shape: errorShape(c),
    binding: c.binding,
    httpMethod: req.method ?? 'POST',
    path: pathOnly(req.url ?? '/'),
    remoteAddress: req.socket.remoteAddress,
    caller: known,
    serviceParameters,
  });
  const flow: HttpFlow = {
    ex,
    arrival: a,
    classified: c,
    codec,
    port: new HttpPort(res, ex),
    request: c.request,
    requestJson,
    requestBytes,
    reasoning: headerText(req.headers[deps.config.reasoningHeader]),
    // A modify must still rebuild to a request with one meaning (same route, same path parameters).
    validateModified: (p) => {
      const r = rebuildRequest(c, req.method ?? 'POST', p, '');
      return typeof r === 'string' ? r : undefined;
    },
    answerHook: undefined,
    approved: undefined,
    upstreamRequest: undefined,
    tie: undefined,
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
  await runStages(stages, flow);
  return END;
}

/**
 * The request's serialization, what the guardian and the agent get. Sent as its canonical serialization (compared a
 * piece at a time: core/json-canonical.ts), the caller's own bytes are those of JSON.stringify(request). Otherwise a
 * large request is serialized again a piece per turn. A large request is carried as its bytes only, never decoded to
 * a text of the whole: the envelope, the budget and the agent's body all take the bytes.
 */
async function serialized(
  a: Arrival,
  c: A2ACall,
  turn: () => Promise<void>,
): Promise<{ readonly requestBytes: WireBytes; readonly requestJson: undefined } | { readonly requestBytes: undefined; readonly requestJson: string }> {
  const raw = a.raw;
  a.raw = undefined;
  // Checked when the body was read, against the value the call's request is (a JSON-RPC call's, not a REST call's).
  const canonical = raw !== undefined && raw.canonical && raw.value === c.request;
  const bytes = canonical ? raw.bytes : a.large === true ? await stringifyInPieces(c.request, turn, raw?.longStrings) : undefined;
  // Serialized again: nothing reads the caller's buffer any more.
  if (!canonical && raw !== undefined && Buffer.isBuffer(raw.bytes)) giveBack(raw.bytes);
  return bytes === undefined ? { requestBytes: undefined, requestJson: JSON.stringify(c.request) } : { requestBytes: bytes, requestJson: undefined };
}

/** The request the agent receives, built from the approved call (a2a/rebuild.ts): never the caller's bytes. */
const rebuild: Stage<HttpFlow> = {
  name: 'rebuild',
  run(f) {
    const run = f.approved as NonNullable<HttpFlow['approved']>;
    const c = f.classified;
    const rebuilt = rebuildRequest(c, f.arrival.req.method ?? 'POST', run.payload, run.payloadJson, run.payloadBytes);
    if (typeof rebuilt === 'string') {
      // The unmodified call was checked when classified; only a modify can get here, and it was validated.
      f.ex.log.decision = 'error';
      f.port.fail(proxyError('rejected', `Request cannot be rebuilt: ${rebuilt}`));
      return END;
    }
    f.upstreamRequest = {
      verb: rebuilt.verb,
      path: rebuilt.path,
      body: rebuilt.body,
      unchecked: run.unchecked,
      rebuilt: { version: rebuilt.version, json: true },
      serviceParameters: run.serviceParameters,
      caller: f.ex.call.key,
    };
    return undefined;
  },
};

function forwardStage(h: HttpParts): Stage<HttpFlow> {
  const forwardSigned = (f: HttpFlow, signed: string | undefined): Step => {
    const tie: UpstreamTie = { ex: f.ex, codec: f.codec, answerHook: f.answerHook, upReq: undefined, upAnswer: undefined };
    f.tie = tie;
    const { req, res, lease } = f.arrival;
    send(h.deps, req, res, f.upstreamRequest as UpstreamRequest, signed, lease, callLeg(h, req, res, lease, tie));
    // Forwarded: the approved payload and the rebuilt request are the agent's now.
    f.approved = undefined;
    f.upstreamRequest = undefined;
    return undefined;
  };
  return {
    name: 'forward',
    run(f) {
      const assertion = f.arrival.assertion;
      // Without a signing key there is nothing to wait for.
      if (assertion === undefined) return forwardSigned(f, undefined);
      return assertion().then((signed) => (f.arrival.res.destroyed ? END : forwardSigned(f, signed)));
    },
  };
}

/** The request of an A2A call to the agent, and its answer relayed as the operation and the hooks ask. */
function callLeg(h: HttpParts, req: Arrival['req'], res: ServerResponse, lease: BodyLease, f: UpstreamTie): Leg {
  const { config, metrics } = h.deps;
  const { ex } = f;
  const log = ex.log;
  return {
    codec: f.codec,
    id: ex.call.id,
    prepare(headers, up) {
      // Answers that will be read (response hooks, card results) must come uncompressed.
      if (config.inspectResponses || ex.call.op.returnsCard || f.answerHook !== undefined) headers['accept-encoding'] = 'identity';
      const upSpan = ex.call.span.upstream(up.verb, h.deps.upstream.url);
      if (upSpan.headers !== undefined) {
        // The agent's span becomes a child of the proxy's upstream span.
        headers.traceparent = upSpan.headers.traceparent;
        if (upSpan.headers.tracestate === undefined) delete headers.tracestate;
        else headers.tracestate = upSpan.headers.tracestate;
      }
      log.upstreamSentAt = performance.now();
      log.upSpan = upSpan;
    },
    started(upReq) {
      f.upReq = upReq;
    },
    answered(upRes) {
      log.upstreamStatus = upRes.statusCode;
      f.upAnswer = upRes;
      metrics.upstreamCall(ex.call.op.aosMethod, (performance.now() - (log.upstreamSentAt as number)) / 1000);
    },
    failed(err) {
      log.error = err.message;
      log.upstreamEndedAt = performance.now();
      log.upSpan?.end(undefined, (err as NodeJS.ErrnoException).code ?? 'error');
      log.upSpan = undefined;
    },
    relay: (upRes, upReq) => relayAnswer(h, req, res, upRes, upReq, f, lease),
  };
}

/** Choose how the answer goes back: plain, through the unary response hooks, or event by event. */
function relayAnswer(
  h: HttpParts,
  req: Arrival['req'],
  res: ServerResponse,
  upRes: UpstreamAnswer,
  upReq: UpstreamHandle,
  f: UpstreamTie,
  lease: BodyLease,
): void {
  const { deps } = h;
  const { config, metrics } = deps;
  const { ex } = f;
  if (upRes.statusCode >= 300 && upRes.statusCode < 400 && upRes.statusCode !== 304) {
    // A2A defines no redirects. Relayed, a client's fetch follows it: the approved request goes to a URL
    // the guardian never judged, and the answer it acts on comes from there, past the response hooks.
    upReq.abort();
    metrics.upstreamErrors.inc();
    ex.log.error = `agent answered HTTP ${upRes.statusCode} (a redirect)`;
    return sendError(res, f.codec, proxyError('upstreamUnavailable', 'Upstream agent answered with a redirect, which A2A does not define'), ex.call.id);
  }
  const sides = HOOK_ORDER[config.role];
  const ctx: RelayContext = {
    codec: f.codec,
    id: ex.call.id,
    ex,
    res,
    upRes,
    upReq,
    inspect: config.inspectResponses
      ? (payload, payloadJson, budget) =>
          h.runHooks({ ex, sides: sides.response, phase: 'response', payload, payloadJson, reasoning: undefined, ...(budget === undefined ? {} : { budget }) })
      : undefined,
    rewriteCard: ex.call.op.returnsCard ? cardRewrite(deps, req) : undefined,
    maxBodyBytes: config.maxBodyBytes,
    // The call's lease (its request bytes already returned) holds the answer bytes read for inspection; released when the call ends.
    lease,
    answerHook: f.answerHook,
    onUpstreamFailure: (why) => {
      metrics.upstreamErrors.inc();
      ex.log.error = why;
    },
    trackStream: h.admit.trackStream,
    streamWindow: config.streamInspectWindow,
    streamLine: deps.streamLine,
    turns: turnsOf(deps),
    onUninspectable: uninspectable(deps, ex.call.op.aosMethod, (outcome) => {
      ex.log.outcome = outcome;
    }),
  };
  if (ctx.inspect === undefined && ctx.rewriteCard === undefined && ctx.answerHook === undefined) return relayPlain(ctx);
  // The operation, not the agent's label, says whether the answer is a stream: a unary answer labelled
  // text/event-stream is never read event by event (an SDK caller reads its JSON); relayUnaryInspected refuses it.
  if (ex.call.op.streaming && isEventStream(upRes)) return relayStreamInspected(ctx);
  return relayUnaryInspected(ctx);
}

/** The caller's side of an A2A call over HTTP: answers in the call's binding, in the agent's own form where it is one the agent gives. */
class HttpPort implements CallerPort {
  constructor(
    private readonly res: ServerResponse,
    private readonly ex: Exchange,
  ) {}

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
  log.upSpan?.end(
    answer?.statusCode,
    answer === undefined ? 'caller went away' : answer.endedComplete === true ? undefined : 'incomplete answer',
    answer?.endedAt,
  );
}

/** The form of the agent's own error answers to this call (task ownership answers "not found" exactly so). */
function errorShape(c: A2ACall): ErrorShape {
  const v03 = c.rest === undefined ? c.request.method === c.op.v03Method && c.op.v03Method !== c.op.v1Method : c.rest.match.version === '0.3';
  return { v03, errorAsEvent: v03 && c.rest === undefined && c.op.aosMethod === 'tasks/resubscribe' };
}
