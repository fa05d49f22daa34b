/**
 * The proxy's CPU stages take turns per caller (core/fair-queue.ts): verifying a credential, parsing
 * and classifying a body, building and posting the guardian's envelope, rebuilding the approved
 * request. A caller is keyed as its shares are (proxy/callers.ts): the verified identity, else the
 * remote address. Before its credential is verified, a request is keyed by its address and the key
 * its credential names (unverified): callers behind one address take turns too, and a request that
 * claims another caller's key only shares that caller's turns if it also comes from its address.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Config } from '../config/config';
import type { Metrics } from '../admin/metrics';
import { FairQueue, type Leaving } from '../core/fair-queue';
import { largeTurn } from '../core/turns';
import type { Guardian } from '../aos/guardian';
import { callerLimited, type ProxyError } from '../core/errors';
import { ASSERTION_HEADER } from '../identity/types';
import { ANONYMOUS } from '../ownership/principal';
import { callerKey } from './callers';
import { END, type CallFlow, type Stage, type Step } from './stages';

export type FairTurns = FairQueue;

/**
 * The scheduler FAIR_QUEUE_PER_CALLER asks for, or undefined (0: first come, first served). A guardian that reads large
 * answers on the proxy's thread reads them in the same callers' turns.
 */
export function createFairTurns(config: Pick<Config, 'perCaller'>, guardian?: Pick<Guardian, 'shareTurns'>): FairTurns | undefined {
  const { fairQueue, fairSliceMs } = config.perCaller;
  if (fairQueue <= 0) return undefined;
  const fair = new FairQueue({ maxQueuedPerCaller: fairQueue, sliceMs: fairSliceMs });
  guardian?.shareTurns?.((key, caller) => largeTurn(fair, key, caller));
  return fair;
}

/** The answer to a caller whose turns waiting are at FAIR_QUEUE_PER_CALLER. */
export function turnsFull(max: number): ProxyError {
  return callerLimited('requests waiting', 1, `Too many requests of this caller waiting for the proxy (at most ${max}); retry later`);
}

/** The turns a stage takes, where a full queue is counted, and the bound its refusal names (FAIR_QUEUE_PER_CALLER). */
export interface Turns {
  readonly fair: FairTurns | undefined;
  readonly metrics: Pick<Metrics, 'callerLimited'>;
  readonly max: number;
}

export function turnsOf(deps: {
  readonly fair?: FairTurns | undefined;
  readonly metrics: Pick<Metrics, 'callerLimited'>;
  readonly config: Pick<Config, 'perCaller'>;
}): Turns {
  return { fair: deps.fair, metrics: deps.metrics, max: deps.config.perCaller.fairQueue };
}

/**
 * Wait for `key`'s turn: undefined to go on, END once `refuse` answered a full queue (counted) or the caller left.
 * Synchronous (no promise) when the turn is now.
 */
export function takeTurn(turns: Turns, key: string, caller: Leaving, refuse: (err: ProxyError) => typeof END): Step | Promise<Step> {
  if (turns.fair === undefined) return undefined;
  const t = turns.fair.turn(key, caller);
  if (t === true) return undefined;
  if (t === 'full') {
    turns.metrics.callerLimited.inc({ resource: 'turns' });
    return refuseInTurn(turns, key, caller, () => refuse(turnsFull(turns.max)));
  }
  return t.then((granted) => (granted ? undefined : END));
}

/**
 * A refusal of a caller at one of its bounds, written in that caller's turn: a flood's refusals (each a response
 * written, counted and logged) take one turn per round like its other work, instead of all running as its requests
 * are parsed, in front of other callers' work. END without a word when the caller left first. At most `max` refusals
 * of a caller wait: past them the caller is dropped without an answer (each waiting one holds its request and
 * response, and a flood of pipelined requests parses thousands per read), or refused at once where it cannot be.
 */
export function refuseInTurn(turns: Pick<Turns, 'fair' | 'max'>, key: string, caller: Leaving, refuse: () => typeof END): typeof END | Promise<typeof END> {
  if (turns.fair === undefined) return refuse();
  const waiting = turns.fair.laterWithin(key, turns.max, caller);
  if (waiting !== 'full') return waiting.then((granted) => (granted ? refuse() : END));
  if (caller.drop === undefined) return refuse();
  caller.drop();
  return END;
}

/** What closes when a caller goes away: an HTTP response, a gRPC call's stream. */
interface Closing {
  readonly closed: boolean;
  once(event: 'close', fn: () => void): unknown;
  off(event: 'close', fn: () => void): unknown;
  destroy(): unknown;
}

/**
 * A caller going away (its response, or its gRPC stream, closing). `connection`: what dropping it ends, when not `res`
 * (a pipelined response has no socket until the answers before it are written, and a destroy waits for that).
 */
export function responseClosing(res: Closing, connection: { destroy(): unknown } = res): Leaving {
  return {
    onCancel(fn) {
      if (res.closed) {
        fn();
        return () => undefined;
      }
      res.once('close', fn);
      return () => void res.off('close', fn);
    },
    drop: () => void connection.destroy(),
  };
}

/** A request's key before its credential is verified: its address, and the key its credential names. */
export function claimedCallerKey(req: IncomingMessage, ipv6Prefix: number): string {
  return claimedKey(req.headers, req.socket.remoteAddress, ipv6Prefix);
}

/** The same from the headers (or gRPC metadata) and address alone. */
export function claimedKey(headers: IncomingHttpHeaders, remoteAddress: string | undefined, ipv6Prefix: number): string {
  const addr = callerKey(ANONYMOUS, remoteAddress, ipv6Prefix);
  const named = jwtKid(headers[ASSERTION_HEADER]) ?? bearerKid(headers);
  return named === undefined ? addr : `${addr}|${named}`;
}

function bearerKid(headers: IncomingHttpHeaders): string | undefined {
  const h = headers.authorization;
  if (typeof h !== 'string' || h.length <= 7 || h.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  // One identity provider's key signs every caller's token: the subject names the caller.
  const payload = segment(h.slice(7), 1);
  return typeof payload?.['sub'] === 'string' && payload['sub'].length <= 256 ? `sub:${String(payload['iss']).slice(0, 256)}:${payload['sub']}` : undefined;
}

/** The `kid` of a compact JWS's protected header, read without verifying. */
function jwtKid(token: string | string[] | undefined): string | undefined {
  if (typeof token !== 'string') return undefined;
  const kid = segment(token, 0)?.['kid'];
  return typeof kid === 'string' && kid.length <= 256 ? `kid:${kid}` : undefined;
}

/** Segment `n` of a compact JWS as a JSON object, unverified (bounded: short segments only). */
function segment(token: string, n: 0 | 1): Record<string, unknown> | undefined {
  const first = token.indexOf('.');
  const start = n === 0 ? 0 : first + 1;
  const end = n === 0 ? first : token.indexOf('.', start);
  if (first <= 0 || end <= start || end - start > 4096) return undefined;
  try {
    const v = JSON.parse(Buffer.from(token.slice(start, end), 'base64url').toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Wait for `key`'s turn (as takeTurn), for an adapter outside the stages: true to go on; false once
 * `refuse` answered the caller (queue full, counted) or the caller left.
 */
export async function turnOrRefuse(turns: Turns, key: string, caller: Leaving, refuse: (err: ProxyError) => void): Promise<boolean> {
  const step = takeTurn(turns, key, caller, (err) => {
    refuse(err);
    return END;
  });
  return (step instanceof Promise ? await step : step) !== END;
}

/** A call stage: the call's caller waits for its turn (its verified key) before the stages after it run. */
export function turnStage<F extends CallFlow>(turns: Turns): Stage<F> {
  return {
    name: 'turn',
    run(flow) {
      const { call } = flow.ex;
      return takeTurn(turns, call.key, call.caller, (err) => {
        flow.ex.log.decision = 'refused';
        flow.holds?.end();
        flow.port.fail(err);
        return END;
      });
    },
  };
}
