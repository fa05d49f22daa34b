/**
 * The bytes held across all calls (MAX_INFLIGHT_BODY_BYTES), whatever the binding: request bodies and
 * messages, and the agent's answers held for inspection, each call holding a lease on it.
 */
import { callerLimited, proxyError, type ProxyError } from '../core/errors';

const overloaded = (): ProxyError => proxyError('overloaded', 'Too many request bytes in flight; retry later', {}, 503);

/**
 * One budget of the bytes held across all calls (MAX_INFLIGHT_BODY_BYTES): request bodies, and the
 * agent's answers held for inspection. A call that would go over it is answered "overloaded" at once
 * instead of growing the process without bound. Each caller (its verified identity, else its
 * address: proxy/callers.ts) holds at most `perCaller` of it, so one caller's bytes never refuse
 * another's: past its share it is answered "limited" (429), alone.
 */
export class BodyBudget {
  private used = 0;
  private readonly byCaller = new Map<string, number>();

  constructor(
    readonly limit: number,
    readonly perCaller: number = limit,
    /** Told of each call refused for its caller's share (`refusal()` is asked once per refused call). */
    private readonly onCallerLimited?: () => void,
  ) {}

  get inFlight(): number {
    return this.used;
  }

  /** Bytes `caller` holds now. */
  heldBy(caller: string): number {
    return this.byCaller.get(caller) ?? 0;
  }

  /** Callers holding bytes now (a bound check for tests: an idle caller leaves no entry). */
  get callers(): number {
    return this.byCaller.size;
  }

  /**
   * A lease for one call of `caller`; `take` grows it (false: over the budget or the caller's share,
   * nothing taken; `refusal()` says which), `release` ends it. The caller may be named later
   * (`charge`), while the lease holds nothing: a call is admitted before its caller is known.
   */
  lease(caller = ''): BodyLease {
    let held = 0;
    let who = caller;
    let refusedBy: 'budget' | 'caller' = 'budget';
    const add = (n: number) => {
      this.used += n;
      const mine = (this.byCaller.get(who) ?? 0) + n;
      if (mine <= 0) this.byCaller.delete(who);
      else this.byCaller.set(who, mine);
      held += n;
    };
    const take = (n: number): boolean => {
      if (this.used + n > this.limit) {
        refusedBy = 'budget';
        return false;
      }
      if ((this.byCaller.get(who) ?? 0) + n > this.perCaller) {
        refusedBy = 'caller';
        return false;
      }
      add(n);
      return true;
    };
    return {
      take,
      shrinkTo: (n: number) => add(Math.min(n, held) - held),
      hold: (n: number) => {
        if (n > held) return take(n - held);
        add(n - held);
        return true;
      },
      give: (n: number) => add(-Math.min(n, held)),
      release: () => add(-held),
      charge: (c: string) => {
        if (held !== 0) throw new Error('a lease names its caller before it holds bytes');
        who = c;
      },
      refusal: () => {
        if (refusedBy !== 'caller') return overloaded();
        this.onCallerLimited?.();
        return callerLimited('request bytes in flight', 1);
      },
    };
  }
}

export interface BodyLease {
  take(n: number): boolean;
  /** Hold at most n bytes now (fewer copies of a body are kept from here on); gives back, never grows, never refused. */
  shrinkTo(n: number): void;
  /** Hold exactly n bytes now: growth is taken (false: refused, nothing changed; `refusal()` says why), a shrink given back. */
  hold(n: number): boolean;
  /** Return n of the bytes held (never more than are held). */
  give(n: number): void;
  release(): void;
  /** Name the caller whose share the lease counts against (only while it holds nothing). */
  charge(caller: string): void;
  /** The error to refuse the call with after a refused `take`: the shared budget is full (503), or the caller's share (429, counted). */
  refusal(): ProxyError;
}
