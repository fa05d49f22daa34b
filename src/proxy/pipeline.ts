/**
 * One exchange, in order: parse -> classify -> envelope -> guardian -> enforce -> forward -> relay.
 * Each stage is a small function; I/O lives in forward.ts, guardian.ts and card.ts.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Metrics } from '../admin/metrics';
import type { Operation } from '../a2a/operations';
import { classify } from '../a2a/classify';
import { isCardPath } from '../a2a/card';
import type { Guardian } from '../aos/guardian';
import { type Identities, type Side, type Phase, hookContext, partialFromHeaders } from '../aos/identity';
import { buildEnvelope, envelopeJson } from '../aos/envelope';
import type { JsonObject, JsonRpcId, PartialAgent } from '../aos/schemas';
import { decodeBody, hasBody, readBody } from './body';
import { enforce, type HookAction, type HookDecision } from './enforce';
import { jsonRpcErrorBody, proxyError, type ProxyError } from './errors';
import { abortOnClientClose, callUpstream, forwardRequestHeaders, relayResponseHeaders, type Upstream } from './forward';
import { serveCard } from './card-route';
import { formatSseErrorEvent } from '../a2a/sse';

export interface ProxyDeps {
  readonly config: Config;
  readonly guardian: Guardian;
  readonly identities: Identities;
  readonly upstream: Upstream;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

const SIDES: Record<Config['role'], readonly Side[]> = { client: ['client'], server: ['server'], both: ['client', 'server'] };

interface HookRecord {
  readonly side: Side;
  readonly phase: Phase;
  readonly decision: HookDecision;
  readonly envelopeId: string;
  readonly guardianMs: number;
  readonly failure?: string;
}

/** Per-call facts, logged once when the call is over. */
interface Exchange {
  readonly started: number;
  readonly op: Operation;
  readonly wireMethod: string;
  readonly id: JsonRpcId | null;
  readonly hooks: HookRecord[];
  decision: HookDecision | 'error';
  upstreamStatus: number | null;
  error?: string;
}

export function createProxyHandler(deps: ProxyDeps): RequestListener {
  const { config, logger } = deps;
  const sides = SIDES[config.role];

  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      // Nothing may escape a request handler: answer what can still be answered, then log.
      logger.error({ err }, 'internal error while handling a request');
      if (!res.headersSent) sendJsonRpcError(res, proxyError('rejected', 'Internal proxy error'), null);
      else res.destroy();
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const verb = req.method ?? 'GET';
    const path = req.url ?? '/';
    if ((verb === 'GET' || verb === 'HEAD') && isCardPath(pathOnly(path))) return serveCard(deps, req, res);

    let body: Buffer | null = null;
    if (hasBody(req)) {
      const read = await readBody(req, config.maxBodyBytes, config.bodyTimeoutMs);
      if (!read.ok) return refuse(res, read.error, null);
      const decoded = decodeBody(read.body, headerString(req, 'content-encoding'), config.maxBodyBytes);
      if (!decoded.ok) return refuse(res, decoded.error, null);
      body = decoded.body;
    }

    const c = classify({ verb, path, headers: req.headers, body });
    if (c.kind === 'reject') return refuse(res, c.error, c.id);
    if (c.kind === 'other') {
      if (c.unknownMethod !== undefined && config.unknownMethods === 'deny') {
        deps.metrics.calls.inc({ operation: 'unknown', outcome: 'refused' });
        return sendJsonRpcError(res, proxyError('rejected', 'Method is not an A2A operation and UNKNOWN_METHODS=deny'), idOf(body));
      }
      deps.metrics.calls.inc({ operation: c.unknownMethod === undefined ? 'other' : 'unknown', outcome: 'forwarded' });
      return forward(req, res, c.body, false, undefined);
    }

    const ex: Exchange = { started: performance.now(), op: c.op, wireMethod: c.request.method as string, id: c.id, hooks: [], decision: 'allow', upstreamStatus: null };
    res.once('close', () => logExchange(ex));

    // The caller going away cancels the guardian call and everything after it.
    const abort = new AbortController();
    res.once('close', () => abort.abort());

    const reasoning = headerString(req, config.reasoningHeader);
    let payload = c.request;
    let payloadJson = JSON.stringify(payload);
    let unchecked = false;
    for (const side of sides) {
      const action = await runHook(ex, req, side, 'request', payload, payloadJson, side === 'client' ? reasoning : undefined, abort.signal);
      if (res.destroyed) return;
      if (action.type === 'block') {
        ex.decision = action.decision;
        return sendJsonRpcError(res, action.error, c.id);
      }
      if (action.decision === 'failOpen' || (action.decision === 'shadow' && !action.outcome.ok)) unchecked = true;
      if (action.payload !== payload) {
        payload = action.payload;
        payloadJson = JSON.stringify(payload);
      }
    }
    ex.decision = summarize(ex.hooks);
    deps.metrics.calls.inc({ operation: c.op.aosMethod, outcome: 'forwarded' });
    forward(req, res, Buffer.from(payloadJson, 'utf8'), unchecked, ex);
  }

  async function runHook(ex: Exchange, req: IncomingMessage, side: Side, phase: Phase, payload: JsonObject, payloadJson: string,
    reasoning: string | undefined, signal: AbortSignal): Promise<HookAction> {
    const context = hookContext(side, phase, deps.identities.observed(side), peerOf(side, req));
    const envelope = buildEnvelope({ method: ex.op.aosMethod, payload, context, reasoning });
    const json = envelopeJson(envelope, payloadJson);
    const t0 = performance.now();
    const outcome = await deps.guardian.decide(envelope, json, signal);
    const guardianMs = performance.now() - t0;
    const action = enforce({
      op: ex.op, payload, phase, envelopeId: envelope.id as string, outcome,
      failMode: config.failMode, shadow: config.shadowMode, exposeReasoning: config.exposeGuardianReasoning,
    });
    record(ex, { side, phase, decision: action.decision, envelopeId: envelope.id as string, guardianMs, ...(outcome.ok ? {} : { failure: outcome.kind }) }, action);
    if (logger.isLevelEnabled('debug')) logger.debug({ envelope: json, outcome }, 'guardian exchange');
    return action;
  }

  function record(ex: Exchange, rec: HookRecord, action: HookAction): void {
    ex.hooks.push(rec);
    const m = deps.metrics;
    m.requests.inc({ operation: ex.op.aosMethod, side: rec.side, phase: rec.phase, decision: rec.decision });
    m.guardianLatency.observe(rec.guardianMs / 1000);
    if (!action.outcome.ok) {
      m.guardianFailures.inc({ kind: action.outcome.kind });
      if (rec.decision === 'failOpen') {
        m.failOpenPasses.inc();
        logger.warn({ method: ex.op.aosMethod, side: rec.side, failure: action.outcome.kind, detail: action.outcome.detail, envelopeId: rec.envelopeId },
          'guardian gave no valid answer; forwarding anyway (FAIL_MODE=open)');
      }
    }
    if (rec.decision === 'shadow') m.shadowPasses.inc({ decision: action.outcome.ok ? action.outcome.result.decision : 'noAnswer' });
  }

  /** Who the observed agent is talking to, for one hook side. */
  function peerOf(side: Side, req: IncomingMessage): PartialAgent {
    if (side === 'client') return deps.identities.upstreamPeer();
    // ROLE=both sees the client directly: its own observed client is the caller.
    return config.role === 'both' ? deps.identities.clientAsPeer() : partialFromHeaders(req.headers);
  }

  function forward(req: IncomingMessage, res: ServerResponse, body: Buffer | null, unchecked: boolean, ex: Exchange | undefined): void {
    const headers = forwardRequestHeaders(req.headers, {
      role: config.role,
      reasoningHeader: config.reasoningHeader,
      announce: config.role === 'server' ? undefined : deps.identities.clientAsPeer(),
      unchecked,
      bodyLength: body === null ? null : body.length,
      upstreamHost: deps.upstream.url.host,
      remoteAddress: req.socket.remoteAddress,
      encrypted: 'encrypted' in req.socket,
    });
    const streaming = ex?.op.streaming ?? false;
    if (streaming) deps.metrics.openStreams.inc();
    const upReq = callUpstream(
      deps.upstream,
      { verb: req.method ?? 'GET', path: req.url ?? '/', headers, body },
      (upRes) => {
        if (ex !== undefined) ex.upstreamStatus = upRes.statusCode ?? 0;
        relay(upRes, res, ex);
      },
      (err) => {
        deps.metrics.upstreamErrors.inc();
        if (ex !== undefined) ex.error = err.message;
        if (res.destroyed) return;
        logger.warn({ err: err.message, path: pathOnly(req.url ?? '/') }, 'upstream agent unreachable');
        const e = proxyError('upstreamUnavailable', 'Upstream agent unreachable', { cause: (err as NodeJS.ErrnoException).code ?? 'error' });
        if (!res.headersSent) sendJsonRpcError(res, e, ex?.id ?? null);
        else res.destroy();
      },
    );
    abortOnClientClose(res, upReq);
    if (streaming) res.once('close', () => deps.metrics.openStreams.dec());
  }

  /** Pass the agent's answer on. SSE is piped chunk by chunk; nothing is buffered or compressed. */
  function relay(upRes: IncomingMessage, res: ServerResponse, ex: Exchange | undefined): void {
    if (res.destroyed) return void upRes.resume();
    res.writeHead(upRes.statusCode ?? 502, relayResponseHeaders(upRes.headers));
    const isSse = String(upRes.headers['content-type'] ?? '').startsWith('text/event-stream');
    if (isSse) res.flushHeaders();
    upRes.pipe(res);
    upRes.once('error', () => undefined); // surfaced through 'close' below
    upRes.once('close', () => {
      if (upRes.complete || res.writableEnded || res.destroyed) return;
      deps.metrics.upstreamErrors.inc();
      if (ex !== undefined) ex.error = 'upstream closed mid-response';
      if (isSse) {
        // A cut stream looks like success to A2A clients: say it failed.
        const e = proxyError('upstreamUnavailable', 'Upstream agent failed mid-stream');
        upRes.unpipe(res);
        res.end(formatSseErrorEvent(jsonRpcErrorBody(e, ex?.id ?? null)));
      } else {
        res.destroy();
      }
    });
  }

  function refuse(res: ServerResponse, err: ProxyError, id: JsonRpcId | null): void {
    deps.metrics.calls.inc({ operation: 'refused', outcome: 'refused' });
    logger.info({ reason: err.message }, 'request refused');
    sendJsonRpcError(res, err, id);
  }

  function logExchange(ex: Exchange): void {
    const first = ex.hooks[0];
    logger.info({
      method: ex.op.aosMethod,
      wireMethod: ex.wireMethod,
      role: config.role,
      decision: ex.decision,
      guardianMs: round(ex.hooks.reduce((s, h) => s + h.guardianMs, 0)),
      upstreamStatus: ex.upstreamStatus,
      totalMs: round(performance.now() - ex.started),
      a2aId: ex.id,
      envelopeId: first?.envelopeId,
      hooks: ex.hooks.map((h) => ({ side: h.side, phase: h.phase, decision: h.decision, envelopeId: h.envelopeId, ms: round(h.guardianMs), failure: h.failure })),
      ...(ex.error === undefined ? {} : { error: ex.error }),
    }, 'a2a call');
  }
}

/** The overall request decision: deny/failClosed are terminal; else modify if any hook modified. */
function summarize(hooks: readonly HookRecord[]): HookDecision {
  let d: HookDecision = 'allow';
  for (const h of hooks) {
    if (h.decision === 'failOpen' || h.decision === 'shadow') d = h.decision;
    else if (h.decision === 'modify' && d === 'allow') d = 'modify';
  }
  return d;
}

export function sendJsonRpcError(res: ServerResponse, err: ProxyError, id: JsonRpcId | null): void {
  const body = jsonRpcErrorBody(err, id);
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  // 413 / 408: the rest of the body was not read, so this connection cannot carry another request.
  if (err.httpStatus === 413 || err.httpStatus === 408) headers.connection = 'close';
  res.writeHead(err.httpStatus ?? 200, headers);
  res.end(body);
}

function headerString(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? v.join(', ') : undefined;
}

function pathOnly(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

function idOf(body: Buffer | null): JsonRpcId | null {
  if (body === null) return null;
  try {
    const v = (JSON.parse(body.toString('utf8')) as { id?: unknown }).id;
    return typeof v === 'string' || typeof v === 'number' ? v : null;
  } catch {
    return null;
  }
}

const round = (ms: number) => Math.round(ms * 100) / 100;
