/**
 * Fair shares (README "Limits and fairness"): what one caller may hold of what every caller shares.
 * A caller is its verified identity, else its remote address (IPv6: its /64, CALLER_IPV6_PREFIX). Each bound is checked before the cost
 * it protects: calls in flight and the rate when the call arrives (before its body is read), body
 * bytes as they arrive (proxy/budget.ts), guardian calls in flight before a guardian connection is
 * taken. A caller at a bound gets its own answer (429 / -31429 with Retry-After); no other caller
 * waits or is refused for it.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config/config';
import type { Metrics } from '../admin/metrics';
import { Gate } from '../aos/gate';
import { FairGate } from '../core/fair-gate';
import type { Cancellation } from '../core/cancel';
import type { Leaving } from '../core/fair-queue';
import { callerLimited, type ProxyError } from '../core/errors';
import { monotonicMs } from '../core/clock';
import { callerAddress } from '../core/address';
import { ANONYMOUS, type Owner } from '../ownership/principal';
import { redisClient } from '../ownership/redis';

/**
 * The key a caller's shares are counted under: its verified identity's owner key, else its address
 * (an IPv6 one by its first `ipv6Prefix` bits, CALLER_IPV6_PREFIX: core/address.ts callerAddress).
 */
export function callerKey(owner: Owner, remoteAddress: string | undefined, ipv6Prefix: number): string {
  return owner !== ANONYMOUS ? owner : `addr:${callerAddress(remoteAddress, ipv6Prefix)}`;
}

/** One caller's allowance of calls: `retryAfterMs` 0 = allowed now. */
export interface RateStore {
  readonly kind: 'memory' | 'redis';
  take(key: string): number | Promise<number>;
  /**
   * The wait `take` would answer now, taking nothing and remembering nothing (a key it does not know is
   * a full bucket). Absent for Redis: a round trip per call, paid by every admitted call too, to save a
   * signature check only for refused ones (calls in flight, the attack's bound, are counted locally).
   */
  peek?(key: string): number;
}

/**
 * Token buckets in memory: `burst` calls at once, refilled at `perSecond`. Bounded: at most
 * `maxKeys` buckets; past it, full buckets (callers idle long enough to be back at `burst`) go first,
 * then the oldest, which only ever makes a caller's allowance larger, never another's smaller.
 */
export class MemoryRateStore implements RateStore {
  readonly kind = 'memory';
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly maxKeys = 100_000,
    private readonly now: () => number = monotonicMs,
  ) {}

  take(key: string): number {
    const now = this.now();
    let b = this.buckets.get(key);
    if (b === undefined) {
      if (this.buckets.size >= this.maxKeys) this.sweep(now);
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
      b.at = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) / this.perSecond) * 1000);
  }

  peek(key: string): number {
    const b = this.buckets.get(key);
    if (b === undefined) return 0;
    const tokens = Math.min(this.burst, b.tokens + ((this.now() - b.at) / 1000) * this.perSecond);
    return tokens >= 1 ? 0 : Math.ceil(((1 - tokens) / this.perSecond) * 1000);
  }

  get size(): number {
    return this.buckets.size;
  }

  private sweep(now: number): void {
    const fullAfterMs = (this.burst / this.perSecond) * 1000;
    for (const [k, b] of this.buckets) if (now - b.at >= fullAfterMs) this.buckets.delete(k);
    // Still full of active callers: drop the oldest half (their buckets start again full).
    if (this.buckets.size >= this.maxKeys) {
      let drop = Math.ceil(this.buckets.size / 2);
      for (const k of this.buckets.keys()) {
        if (drop-- <= 0) break;
        this.buckets.delete(k);
      }
    }
  }
}

/**
 * The same buckets in Redis, shared by every replica: one Lua script per call (atomic, one round
 * trip), Redis's clock, a key per caller that expires once the bucket would be full again. When
 * Redis does not answer, the replica's own buckets decide (each replica then limits alone).
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or burst
local at = tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) / 1000 * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) / rate * 1000) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return wait
`;

export class RedisRateStore implements RateStore {
  readonly kind = 'redis';

  constructor(
    private readonly client: Pick<Redis, 'eval'>,
    private readonly prefix: string,
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly fallback: MemoryRateStore,
    private readonly onFailure: (err: unknown) => void,
  ) {}

  async take(key: string): Promise<number> {
    try {
      return Number(await this.client.eval(TAKE, 1, `${this.prefix}rate:${key}`, String(this.perSecond), String(this.burst)));
    } catch (err) {
      this.onFailure(err);
      return this.fallback.take(key);
    }
  }
}

export interface CallerLimitsOptions {
  /** Calls (HTTP requests and gRPC calls, streams included) one caller may have in flight; 0 = no bound. */
  readonly maxCalls: number;
  /**
   * How long a call past `maxCalls` waits in its caller's own line for a place (at most `maxCalls` wait);
   * then, or past that line, it is refused. 0 (or absent): refused at once.
   */
  readonly callWaitMs?: number;
  /** Guardian calls one caller may have in flight; more wait in the caller's own line. */
  readonly guardianCalls: number;
  /** The guardian's call connections (GUARDIAN_CALL_CONNECTIONS): while all are taken, the next goes round-robin by caller. */
  readonly guardianConnections?: number;
  /** Calls per second and burst per caller; undefined = no rate limit. */
  readonly rate?: RateStore;
  readonly ratePerSecond?: number;
  /** Counted per refusal: the resource a caller was at its share of. */
  readonly onLimited?: (resource: 'calls' | 'rate' | 'bytes') => void;
  /** A draw in [0, 1) that spreads waits and Retry-After (default Math.random). */
  readonly random?: () => number;
}

/** An admitted call: `leave()` once it is over (idempotent). */
export type Admission = { readonly ok: true; leave(): void } | { readonly ok: false; readonly error: ProxyError };

const NOTHING = (): void => undefined;

/** A guardian call's place: `entered` true at once, or once placed (false: the call ended first); `leave()` once done. */
export interface Place {
  readonly entered: true | Promise<boolean>;
  leave(): void;
}

/** What a call that went away while it waited for a place gets (nobody reads it: its caller is gone); not counted. */
const LEFT_WAITING = callerLimited('calls in flight', 1, 'The call ended while it waited for a place');

/** A call waiting for one of its caller's places: `place` hands it one (already counted). */
interface CallWaiter {
  place(): void;
}

export class CallerLimits {
  private readonly inFlight = new Map<string, number>();
  /** Per caller, its calls waiting for a place, oldest first (each line at most `maxCalls` long). */
  private readonly callLines = new Map<string, CallWaiter[]>();
  private readonly guardianLines = new Map<string, Gate>();
  /** The guardian's call connections, handed round-robin by caller while all are taken. */
  private readonly guardianConnections: FairGate | undefined;

  constructor(private readonly opts: CallerLimitsOptions) {
    const all = opts.guardianConnections ?? 0;
    this.guardianConnections = all > 0 && opts.guardianCalls > 0 ? new FairGate(all) : undefined;
  }

  /** Calls in flight of `key` now. */
  callsOf(key: string): number {
    return this.inFlight.get(key) ?? 0;
  }

  /** Callers with something counted now (bounded by the callers in flight). */
  get tracked(): number {
    return this.inFlight.size + this.callLines.size + this.guardianLines.size;
  }

  /** Guardian calls waiting for one of the guardian's connections now (every caller at its share waits in its own line, not counted). */
  get guardianWaiting(): number {
    return this.guardianConnections?.waiting ?? 0;
  }

  /** Calls of `key` waiting for a place now. */
  waitingOf(key: string): number {
    return this.callLines.get(key)?.length ?? 0;
  }

  /**
   * Admit one call of `key`: within its calls in flight (past them, it waits in the caller's own line
   * for up to `callWaitMs`), then within its rate. `caller` going away takes a waiting call out of the line.
   */
  admit(key: string, caller?: Leaving): Admission | Promise<Admission> {
    const { maxCalls, rate } = this.opts;
    const now = this.inFlight.get(key) ?? 0;
    if (maxCalls > 0 && (now >= maxCalls || this.callLines.has(key))) return this.waitForPlace(key, caller);
    if (rate === undefined) return this.enter(key);
    const wait = rate.take(key);
    return typeof wait === 'number' ? this.afterRate(key, wait) : wait.then((w) => this.afterRate(key, w));
  }

  /**
   * A call past its caller's calls in flight: refused at once when waiting is off or the caller's line is full;
   * else it waits, unread, for a place its caller gives back (nobody else's), for up to `callWaitMs`.
   */
  private waitForPlace(key: string, caller: Leaving | undefined): Admission | Promise<Admission> {
    const waitMs = this.opts.callWaitMs ?? 0;
    const line = this.callLines.get(key) ?? [];
    if (waitMs <= 0 || line.length >= this.opts.maxCalls) return { ok: false, error: this.limited('calls', 0) };
    // Each call waits its own draw in [waitMs/2, waitMs]: calls that arrived together are not refused (and retried) together.
    const deadline = waitMs - Math.floor((waitMs / 2) * this.draw());
    return new Promise<Admission>((resolve) => {
      let off: (() => void) | undefined;
      const out = (): void => {
        clearTimeout(timer);
        off?.();
        const i = line.indexOf(w);
        if (i !== -1) line.splice(i, 1);
        if (line.length === 0 && this.callLines.get(key) === line) this.callLines.delete(key);
      };
      const w: CallWaiter = {
        place: () => {
          out();
          resolve(this.placed(key));
        },
      };
      const timer = setTimeout(() => {
        out();
        resolve({ ok: false, error: this.limited('calls', 0) });
      }, deadline);
      line.push(w);
      this.callLines.set(key, line);
      off = caller?.onCancel(() => {
        out();
        resolve({ ok: false, error: LEFT_WAITING });
      });
    });
  }

  /** A place handed over from a call that ended: then the caller's rate, as for any call. */
  private placed(key: string): Admission | Promise<Admission> {
    const place = this.place(key);
    const rate = this.opts.rate;
    if (rate === undefined) return place;
    const within = (waitMs: number): Admission => {
      if (waitMs <= 0) return place;
      place.leave();
      return { ok: false, error: this.limited('rate', waitMs) };
    };
    const wait = rate.take(key);
    return typeof wait === 'number' ? within(wait) : wait.then(within);
  }

  /**
   * Before `key`'s credential is verified: the refusal `admit` would answer now (at its calls in
   * flight, or its bucket empty by a peek), counted the same, or undefined. Takes nothing: only
   * verified calls take a share, so a claim of another caller's key cannot push that caller to its
   * bound (docs/security.md "Shares before verification").
   */
  atBound(key: string): ProxyError | undefined {
    const { maxCalls, rate } = this.opts;
    // A caller whose line has room is verified, then waits: only a verified call takes a place in the line.
    const lineFull = (this.opts.callWaitMs ?? 0) <= 0 || this.waitingOf(key) >= maxCalls;
    if (maxCalls > 0 && (this.inFlight.get(key) ?? 0) >= maxCalls && lineFull) return this.limited('calls', 0);
    const wait = rate?.peek?.(key) ?? 0;
    return wait > 0 ? this.limited('rate', wait) : undefined;
  }

  private afterRate(key: string, waitMs: number): Admission {
    if (waitMs <= 0) return this.enter(key);
    return { ok: false, error: this.limited('rate', waitMs) };
  }

  private draw(): number {
    return (this.opts.random ?? Math.random)();
  }

  /**
   * A refusal at a bound, counted. Past its calls in flight, Retry-After is drawn in whole seconds
   * from 1 to CALL_WAIT_MS (at least 1): callers refused together do not all come back together.
   */
  private limited(resource: 'calls' | 'rate', waitMs: number): ProxyError {
    this.opts.onLimited?.(resource);
    if (resource === 'calls') {
      const spreadS = Math.max(1, Math.ceil((this.opts.callWaitMs ?? 0) / 1000));
      const retryAfterS = 1 + Math.floor(this.draw() * spreadS);
      return callerLimited('calls in flight', retryAfterS, `Too many calls in flight for this caller (at most ${this.opts.maxCalls}); retry later`);
    }
    return callerLimited('calls per second', waitMs / 1000, `Over this caller's rate of ${this.opts.ratePerSecond ?? '?'} calls per second; retry later`);
  }

  private enter(key: string): Admission {
    const { maxCalls } = this.opts;
    const now = this.inFlight.get(key) ?? 0;
    // Checked again: a rate look-up in Redis let other calls of the caller in meanwhile.
    if (maxCalls > 0 && now >= maxCalls) {
      return { ok: false, error: this.limited('calls', 0) };
    }
    this.inFlight.set(key, now + 1);
    return this.place(key);
  }

  /** One of `key`'s places, counted: leaving hands it to the caller's oldest waiting call, else gives it back. */
  private place(key: string): Extract<Admission, { ok: true }> {
    let left = false;
    return {
      ok: true,
      leave: () => {
        if (left) return;
        left = true;
        const next = this.callLines.get(key)?.[0];
        if (next !== undefined) return next.place();
        const n = (this.inFlight.get(key) ?? 1) - 1;
        if (n <= 0) this.inFlight.delete(key);
        else this.inFlight.set(key, n);
      },
    };
  }

  /**
   * A place for one guardian call of `key`: true at once, or a promise (true once placed, false if the
   * call ended first). Calls past the caller's share wait in the caller's own line, never in front of
   * another caller's: the guardian's connections stay free for everyone else. While every connection is
   * taken (callers at their shares together), the next one free goes to the callers waiting round-robin.
   */
  guardianPlace(key: string, caller?: Cancellation): Place {
    if (this.opts.guardianCalls <= 0) return { entered: true, leave: NOTHING };
    const share = this.sharePlace(key, caller);
    const all = this.guardianConnections;
    if (all === undefined) return share;
    let holdsOne = false;
    const leave = (): void => {
      if (holdsOne) all.leave();
      holdsOne = false;
      share.leave();
    };
    const connection = (): true | Promise<boolean> => {
      const entered = all.enter(key, caller);
      if (entered === true) return (holdsOne = true);
      return entered.then((ok) => {
        holdsOne = ok;
        if (!ok) share.leave();
        return ok;
      });
    };
    if (share.entered === true) return { entered: connection(), leave };
    return { entered: share.entered.then((ok) => ok && connection()), leave };
  }

  /** A place in `key`'s own share of guardian calls (GUARDIAN_CALLS_PER_CALLER). */
  private sharePlace(key: string, caller?: Cancellation): Place {
    let gate = this.guardianLines.get(key);
    if (gate === undefined) {
      gate = new Gate(this.opts.guardianCalls);
      this.guardianLines.set(key, gate);
    }
    const g = gate;
    const entered = g.enter(caller);
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      g.leave();
      if (g.idle) this.guardianLines.delete(key);
    };
    if (entered === true) return { entered, leave };
    return {
      entered: entered.then((ok) => {
        if (!ok) {
          left = true;
          if (g.idle) this.guardianLines.delete(key);
        }
        return ok;
      }),
      leave,
    };
  }
}

/** The per-caller limits the configuration names, or undefined when every one is off. */
export async function createCallerLimits(config: Config, logger: Logger, metrics: Metrics): Promise<(CallerLimits & { close(): Promise<void> }) | undefined> {
  const { maxCalls, guardianCalls, rate } = config.perCaller;
  if (maxCalls === 0 && guardianCalls === 0 && rate === undefined) return undefined;
  let store: RateStore | undefined;
  let client: Redis | undefined;
  if (rate !== undefined) {
    const local = new MemoryRateStore(rate.perSecond, rate.burst);
    store = local;
    const url = config.ownership.storeUrl;
    if (url !== undefined) {
      client = redisClient(url, config.ownership.timeoutMs);
      client.on('error', () => undefined);
      let lastWarn = -Infinity;
      store = new RedisRateStore(client, config.ownership.prefix, rate.perSecond, rate.burst, local, (err) => {
        // Each replica then limits on its own; said at most every 30 s.
        if (monotonicMs() - lastWarn < 30_000) return;
        lastWarn = monotonicMs();
        logger.warn({ err: (err as Error).message }, 'rate limit store (Redis) did not answer; this replica limits alone until it does');
      });
    }
    logger.info({ perSecond: rate.perSecond, burst: rate.burst, store: store.kind }, 'per-caller rate limit on');
  }
  const limits = new CallerLimits({
    maxCalls,
    callWaitMs: config.perCaller.callWaitMs,
    guardianCalls,
    guardianConnections: config.guardianCallConnections,
    ...(store === undefined ? {} : { rate: store, ratePerSecond: rate?.perSecond }),
    onLimited: (resource) => metrics.callerLimited.inc({ resource }),
  });
  return Object.assign(limits, { close: async () => void (await client?.quit().catch(() => undefined)) });
}
