/**
 * Who is who in an AOS context (spec 3.16): the observed agent in full, the peer partially.
 * Identity comes from OBSERVED_AGENT_* variables, filled in from agent cards; whatever cannot be
 * learned says "unknown". Context JSON is cached per identity snapshot: no per-request work.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type CardCache, type CardIdentity, identityFromCard } from '../a2a/card';
import type { Phase, Role, Side } from './hook-points';
import type { A2AContext, Agent, PartialAgent } from './schemas';
import { fieldValue } from '../core/json';

export const UNKNOWN = 'unknown';

/** OBSERVED_AGENT_*: the observed agent's AOS Agent fields as the operator gives them (unset: from its card). */
export type ObservedAgentOverrides = {
  readonly [K in 'id' | 'name' | 'url' | 'version' | 'description' | 'instructions' | 'providerName' | 'providerUrl']?: string;
};

export const AGENT_HEADERS = { name: 'x-aos-agent-name', url: 'x-aos-agent-url', version: 'x-aos-agent-version' } as const;

export function fullAgent(overrides: ObservedAgentOverrides, card: CardIdentity): Agent {
  const agent: Agent = {
    id: overrides.id ?? UNKNOWN,
    name: overrides.name ?? card.name ?? UNKNOWN,
    url: overrides.url ?? card.url ?? UNKNOWN,
    version: overrides.version ?? card.version ?? UNKNOWN,
    instructions: overrides.instructions ?? UNKNOWN,
    provider: { name: overrides.providerName ?? card.providerName ?? UNKNOWN, url: overrides.providerUrl ?? card.providerUrl ?? UNKNOWN },
  };
  const description = overrides.description ?? card.description;
  if (description !== undefined) agent.description = description;
  return agent;
}

export function partialAgent(card: CardIdentity): PartialAgent {
  return { url: card.url ?? UNKNOWN, name: card.name ?? UNKNOWN, version: card.version ?? UNKNOWN };
}

/**
 * The agent a client-side hook's call goes to, as the guardian is told: its card's URL only when that
 * names UPSTREAM_URL's origin, where the call lands; otherwise UPSTREAM_URL. A remote card may name any
 * URL (another agent's), and a policy on the callee's URL must judge the destination the bytes reach.
 */
export function towards(card: PartialAgent, upstream: URL): PartialAgent {
  let origin: string | undefined;
  try {
    origin = new URL(card.url).origin;
  } catch {
    origin = undefined;
  }
  return origin === upstream.origin ? card : { ...card, url: upstream.href };
}

/** The caller's claim in X-AOS-Agent-* headers (ROLE=server). A list-valued header is not a claim. */
/**
 * Header values are ASCII on the wire: a value with other characters (an agent named in Japanese)
 * is sent as an RFC 8187 ext-value, `UTF-8''` followed by percent-encoded UTF-8.
 */
export function encodeAgentHeader(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : `UTF-8''${encodeURIComponent(value)}`;
}

export function decodeAgentHeader(value: string): string {
  if (!/^utf-8''/i.test(value)) return value;
  try {
    return decodeURIComponent(value.slice(7));
  } catch {
    return value; // not valid percent-encoding: kept as sent, never guessed
  }
}

export function partialFromHeaders(headers: IncomingHttpHeaders): PartialAgent {
  const one = (h: string): string => {
    const v = headers[h];
    // Decoding can make what a raw header cannot carry (line breaks, escapes): held to the rules of verified fields.
    return typeof v === 'string' ? (fieldValue(decodeAgentHeader(v.trim())) ?? UNKNOWN) : UNKNOWN;
  };
  return { url: one(AGENT_HEADERS.url), name: one(AGENT_HEADERS.name), version: one(AGENT_HEADERS.version) };
}

/**
 * Request hook: from = caller, to = callee. Response hook: from = the server side, to = the client side.
 * `side` is the observed agent's role.
 */
export function hookContext(side: Side, phase: Phase, observed: Agent, peer: PartialAgent): A2AContext {
  const client = side === 'client' ? observed : peer;
  const server = side === 'client' ? peer : observed;
  const c = { agent: client, role: 'client' as const };
  const s = { agent: server, role: 'server' as const };
  return phase === 'request' ? { from: c, to: s } : { from: s, to: c };
}

export interface IdentitySources {
  readonly overrides: ObservedAgentOverrides;
  readonly role: Role;
  /** The upstream agent's card (the server agent). */
  readonly upstreamCard: CardCache;
  /** UPSTREAM_URL: where calls to the upstream agent go. */
  readonly upstreamUrl: URL;
  /** The observed client agent's own card, when OBSERVED_AGENT_CARD_URL is set (ROLE=client/both). */
  readonly observedCard: CardCache | undefined;
}

/**
 * Identities as seen now. Cached and rebuilt only when a card object changes, so the hot path reads
 * two object fields.
 */
export class Identities {
  private upstreamSeen: object | undefined | null = null;
  private observedSeen: object | undefined | null = null;
  private cached!: { clientAgent: Agent; serverAgent: Agent; upstreamPartial: PartialAgent; clientPartial: PartialAgent };
  /** While the first card fetches are under way (bounded): hooks wait for it rather than say "unknown". */
  pending: Promise<void> | undefined;

  constructor(private readonly src: IdentitySources) {}

  /**
   * Start fetching the cards now, without holding anyone back: `pending` is set until the first
   * attempts end or `maxWaitMs` passes (a failing card never delays traffic longer than that).
   */
  warmUp(maxWaitMs: number): void {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, maxWaitMs);
      timer.unref();
    });
    const first = Promise.all([this.src.upstreamCard.ready(), this.src.observedCard?.ready()]).then(
      () => undefined,
      () => undefined,
    );
    this.pending = Promise.race([first, bound]).then(() => {
      clearTimeout(timer);
      this.pending = undefined;
    });
  }

  private snapshot() {
    const up = this.src.upstreamCard.current();
    const ob = this.src.observedCard?.current();
    if (up !== this.upstreamSeen || ob !== this.observedSeen) {
      this.upstreamSeen = up;
      this.observedSeen = ob;
      const upstream = identityFromCard(up);
      const observedClient = identityFromCard(ob);
      const clientAgent = fullAgent(this.src.overrides, observedClient);
      const upstreamPartial = towards(partialAgent(upstream), this.src.upstreamUrl);
      // ROLE=server: OBSERVED_AGENT_* describe the server agent (its own card). ROLE=both: they describe the
      // client, and the server agent is known from its card only, at the URL where calls go (towards).
      const serverAgent = this.src.role === 'server' ? fullAgent(this.src.overrides, upstream) : { ...fullAgent({}, upstream), url: upstreamPartial.url };
      this.cached = {
        clientAgent,
        serverAgent,
        upstreamPartial,
        clientPartial: { url: clientAgent.url, name: clientAgent.name, version: clientAgent.version },
      };
    }
    return this.cached;
  }

  /** The observed agent of a hook side (full Agent). */
  observed(side: Side): Agent {
    const s = this.snapshot();
    return side === 'client' ? s.clientAgent : s.serverAgent;
  }

  /** The peer of a client-side hook: the upstream server agent. */
  upstreamPeer(): PartialAgent {
    return this.snapshot().upstreamPartial;
  }

  /** The observed client agent as a peer (ROLE=both server-side hook), and for X-AOS-Agent-* headers. */
  clientAsPeer(): PartialAgent {
    return this.snapshot().clientPartial;
  }
}
