/**
 * Readiness means "this replica can serve": the listener is up, the configuration is loaded, and it
 * is not draining. The guardian and the agent are probed and reported (in /readyz's body and in
 * metrics) but only fail readiness when READINESS_REQUIRES names them: a guardian that misses a
 * ping is every replica's problem at once, and taking them all out of the Service would turn
 * FAIL_MODE=open into an outage and FAIL_MODE=closed's fast -31503 into connection errors.
 */
import type { Metrics, BreakerState } from './metrics';

export interface HealthSources {
  /** AOS ping within `timeoutMs`. */
  pingGuardian(timeoutMs: number): Promise<boolean>;
  /** The agent card is reachable. */
  probeUpstream(): Promise<boolean>;
  listening(): boolean;
  draining(): boolean;
  breaker(): BreakerState;
}

export interface HealthSettings {
  readonly requires: { readonly guardian: boolean; readonly upstream: boolean };
  readonly failMode: 'closed' | 'open';
  readonly pingTimeoutMs?: number;
}

export interface DependencyState {
  /** undefined until the first check. */
  readonly up: boolean | undefined;
  readonly required: boolean;
  readonly checkedAt: string | undefined;
}

export interface Readiness {
  readonly ready: boolean;
  readonly listening: boolean;
  readonly configured: true;
  readonly draining: boolean;
  readonly guardian: DependencyState & { readonly breaker: BreakerState; readonly failMode: 'closed' | 'open' };
  readonly upstream: DependencyState;
}

interface Probe {
  up: boolean | undefined;
  at: number | undefined;
}

/** Pure: what /readyz says for these facts. */
export function readiness(
  facts: { listening: boolean; draining: boolean; guardianUp: boolean | undefined; upstreamUp: boolean | undefined; breaker: BreakerState },
  settings: HealthSettings,
  checkedAt: { guardian: string | undefined; upstream: string | undefined } = { guardian: undefined, upstream: undefined },
): Readiness {
  const required = settings.requires;
  const ready = facts.listening && !facts.draining
    && (!required.guardian || facts.guardianUp === true)
    && (!required.upstream || facts.upstreamUp === true);
  return {
    ready,
    listening: facts.listening,
    configured: true,
    draining: facts.draining,
    guardian: { up: facts.guardianUp, required: required.guardian, checkedAt: checkedAt.guardian, breaker: facts.breaker, failMode: settings.failMode },
    upstream: { up: facts.upstreamUp, required: required.upstream, checkedAt: checkedAt.upstream },
  };
}

export type HealthChange = { readonly what: 'guardian' | 'upstream'; readonly up: boolean };

export class Health {
  private readonly guardian: Probe = { up: undefined, at: undefined };
  private readonly upstream: Probe = { up: undefined, at: undefined };

  constructor(
    private readonly sources: HealthSources,
    private readonly settings: HealthSettings,
    private readonly metrics: Metrics,
    /** Told when a dependency changes state (for one log line per change, not per probe). */
    private readonly onChange: (change: HealthChange) => void = () => undefined,
  ) {
    metrics.watchHealth(() => this.current());
  }

  /** Probe the guardian and the agent now, then answer. */
  async check(): Promise<Readiness> {
    const [g, u] = await Promise.all([this.sources.pingGuardian(this.settings.pingTimeoutMs ?? 2000), this.sources.probeUpstream()]);
    this.note('guardian', this.guardian, g);
    this.note('upstream', this.upstream, u);
    return this.current();
  }

  /** Record a guardian ping made elsewhere (the periodic pinger). */
  noteGuardian(up: boolean): void {
    this.note('guardian', this.guardian, up);
  }

  /** The last known state, without probing. */
  current(): Readiness {
    const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
    return readiness(
      { listening: this.sources.listening(), draining: this.sources.draining(), guardianUp: this.guardian.up, upstreamUp: this.upstream.up, breaker: this.sources.breaker() },
      this.settings,
      { guardian: iso(this.guardian.at), upstream: iso(this.upstream.at) },
    );
  }

  private note(what: 'guardian' | 'upstream', probe: Probe, up: boolean): void {
    const before = probe.up;
    probe.up = up;
    probe.at = Date.now();
    if (before !== up) this.onChange({ what, up });
  }
}
