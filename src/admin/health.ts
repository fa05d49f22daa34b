/**
 * Readiness means "this replica can serve": the listener is up, the configuration is loaded, it is
 * not draining, and its guardian has answered a ping since start. A guardian that never answered is
 * this replica's configuration (a wrong GUARDIAN_URL, a token it refuses, a guardian not deployed):
 * such a replica must not take traffic, so a rollout with it stalls while the old replicas serve.
 * The guardian and the agent are probed and reported (in /readyz's body and in metrics); later
 * misses fail readiness only when READINESS_REQUIRES names them: a guardian that misses a ping after
 * answering is every replica's problem at once, and taking them all out of the Service would turn
 * FAIL_MODE=open into an outage and FAIL_MODE=closed's fast -31503 into connection errors.
 * With GRPC_PORT set, "the agent" is its card and its gRPC endpoint: both must answer.
 */
import type { Metrics, BreakerState } from './metrics';

export interface HealthSources {
  /** AOS ping within `timeoutMs`. */
  pingGuardian(timeoutMs: number): Promise<boolean>;
  /** The agent card is reachable. */
  probeUpstream(): Promise<boolean>;
  /** GRPC_PORT set: the agent's gRPC endpoint answers (an HTTP/2 PING) within `timeoutMs`. */
  probeGrpcUpstream?: ((timeoutMs: number) => Promise<boolean>) | undefined;
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
  /** `answered`: it has answered a ping since start (a replica is not ready before). */
  readonly guardian: DependencyState & { readonly answered: boolean; readonly breaker: BreakerState; readonly failMode: 'closed' | 'open' };
  /** `card` and `grpc` (GRPC_PORT set only): the two parts of `up`. */
  readonly upstream: DependencyState & { readonly card?: boolean | undefined; readonly grpc?: boolean | undefined };
}

interface Probe {
  up: boolean | undefined;
  at: number | undefined;
}

/** The agent's parts when GRPC_PORT is set (undefined: not yet checked). */
export interface UpstreamParts {
  readonly card: boolean | undefined;
  readonly grpc: boolean | undefined;
}

/** Pure: what /readyz says for these facts. */
export function readiness(
  facts: {
    listening: boolean;
    draining: boolean;
    guardianUp: boolean | undefined;
    guardianAnswered: boolean;
    upstreamUp: boolean | undefined;
    breaker: BreakerState;
    upstreamParts?: UpstreamParts | undefined;
  },
  settings: HealthSettings,
  checkedAt: { guardian: string | undefined; upstream: string | undefined } = { guardian: undefined, upstream: undefined },
): Readiness {
  const required = settings.requires;
  const ready =
    facts.listening &&
    !facts.draining &&
    facts.guardianAnswered &&
    (!required.guardian || facts.guardianUp === true) &&
    (!required.upstream || facts.upstreamUp === true);
  return {
    ready,
    listening: facts.listening,
    configured: true,
    draining: facts.draining,
    guardian: {
      up: facts.guardianUp,
      required: required.guardian,
      checkedAt: checkedAt.guardian,
      answered: facts.guardianAnswered,
      breaker: facts.breaker,
      failMode: settings.failMode,
    },
    upstream: { up: facts.upstreamUp, required: required.upstream, checkedAt: checkedAt.upstream, ...facts.upstreamParts },
  };
}

/** A dependency's new state; an upstream change says which parts answered when GRPC_PORT is set. */
export type HealthChange = { readonly what: 'guardian' | 'upstream'; readonly up: boolean; readonly parts?: UpstreamParts };

export class Health {
  private readonly guardian: Probe = { up: undefined, at: undefined };
  private readonly upstream: Probe = { up: undefined, at: undefined };
  private parts: UpstreamParts | undefined;
  private guardianAnswered = false;

  constructor(
    private readonly sources: HealthSources,
    private readonly settings: HealthSettings,
    metrics: Metrics,
    /** Told when a dependency changes state (for one log line per change, not per probe). */
    private readonly onChange: (change: HealthChange) => void = () => undefined,
  ) {
    metrics.watchHealth(() => this.current());
  }

  /**
   * Probe the guardian and the agent now, then answer. Calls while a probe runs share it: each
   * /readyz would otherwise be one more ping to the guardian, so whoever reaches the admin port
   * could multiply the guardian's traffic.
   */
  check(): Promise<Readiness> {
    this.running ??= this.probe().finally(() => (this.running = undefined));
    return this.running;
  }

  private running: Promise<Readiness> | undefined;

  private async probe(): Promise<Readiness> {
    const timeoutMs = this.settings.pingTimeoutMs ?? 2000;
    // The gRPC endpoint after the card: without GRPC_UPSTREAM_URL the card (just fetched) names it.
    const agent = this.sources.probeUpstream().then(async (card) => [card, await this.sources.probeGrpcUpstream?.(timeoutMs)] as const);
    const [g, [card, grpc]] = await Promise.all([this.sources.pingGuardian(timeoutMs), agent]);
    this.note('guardian', this.guardian, g);
    if (this.sources.probeGrpcUpstream !== undefined) this.parts = { card, grpc };
    this.note('upstream', this.upstream, card && grpc !== false);
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
      {
        listening: this.sources.listening(),
        draining: this.sources.draining(),
        guardianUp: this.guardian.up,
        guardianAnswered: this.guardianAnswered,
        upstreamUp: this.upstream.up,
        breaker: this.sources.breaker(),
        upstreamParts: this.sources.probeGrpcUpstream === undefined ? undefined : (this.parts ?? { card: undefined, grpc: undefined }),
      },
      this.settings,
      { guardian: iso(this.guardian.at), upstream: iso(this.upstream.at) },
    );
  }

  private note(what: 'guardian' | 'upstream', probe: Probe, up: boolean): void {
    const before = probe.up;
    probe.up = up;
    if (what === 'guardian' && up) this.guardianAnswered = true;
    probe.at = Date.now();
    if (before !== up) this.onChange({ what, up, ...(what === 'upstream' && this.parts !== undefined ? { parts: this.parts } : {}) });
  }
}
