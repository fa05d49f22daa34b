/**
 * Cards judged by the guardian (INSPECT_CARDS): every card the proxy serves (the public card on every
 * card path, the extended card on every binding, a remote agent's card under ROLE=client) is shown to
 * the guardian after the URL rewrite, as an `agent/card` response hook on the card owner's side, before
 * the proxy signs it. Deny: not served. Modify: the replacement is served once it still sends every
 * interface to the proxy. Decisions are remembered per card content and caller (each caller has its own
 * share), so the guardian is asked once per card change, not once per fetch.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hookContext } from '../aos/identity';
import { buildEnvelope, envelopeJson } from '../aos/envelope';
import { CARD_METHOD, HOOK_ORDER, type Side } from '../aos/hook-points';
import type { GuardianOutcome } from '../aos/outcome';
import type { JsonObject, PartialAgent } from '../aos/schemas';
import { cardToServe, rewriteCard, type CardJson, type RewriteOptions } from '../a2a/card';
import { CallerShares } from '../core/caller-shares';
import { fieldKey, isObject } from '../core/json';
import { Cancellation } from '../core/cancel';
import { proxyError, type ProxyError } from '../core/errors';
import { UNVERIFIED, type CallerIdentifier, type CallerResult } from '../identity/caller';
import { ANONYMOUS, ownerKey } from '../ownership/principal';
import { callerKey } from './callers';
import type { HookDeps } from './hooks';

/** Shows a card to the guardian before it is served (INSPECT_CARDS). */
export interface CardGate {
  serve(given: CardJson, opts: RewriteOptions, viewer: CardViewer): Promise<CardVerdict>;
}

/** Who a card is served to. */
export interface CardViewer {
  /** The caller's key (proxy/callers.ts callerKey): its identity, else its address. */
  readonly key: string;
  /** The caller as the guardian sees it. */
  readonly peer: PartialAgent;
  /** The caller's request: once it left, no guardian call starts for it. */
  readonly caller?: Cancellation | undefined;
}

/** A card served (`unchecked`: passed without a guardian decision, FAIL_MODE=open), or refused with the reason for the audit line. */
export type CardVerdict =
  | { readonly type: 'serve'; readonly card: CardJson; readonly unchecked: boolean }
  | { readonly type: 'refuse'; readonly why: string; readonly cause: 'signature' | 'denied' | 'guardian' };

/** How a card is served: rewritten (and signed) per these options, and judged first when `judge` is set (INSPECT_CARDS). */
export type CardServing = RewriteOptions & { readonly judge?: CardGate | undefined };

/** What the card judge needs: what the hook runner does (hooks.ts). */
export type CardJudgeDeps = HookDeps;

/** Decisions remembered per caller, and callers remembered. */
const DECISIONS_PER_CALLER = 64;
const CALLERS = 4096;

/** What the guardian decided for one card and caller: served as shown, served replaced, or refused. */
type Decided =
  | { readonly type: 'serve'; readonly replacement: CardJson | undefined; readonly unchecked: boolean }
  | { readonly type: 'refuse'; readonly why: string; readonly cause: 'denied' | 'guardian' };

const CALLER_GONE = 'agent card: the caller went away';

interface Asked {
  readonly decided: Decided;
  /** A decision the guardian gave (not a failure, not a caller gone): remembered. */
  readonly remember: boolean;
}

export class CardJudge implements CardGate {
  private readonly remembered: CallerShares<Decided>;
  /** Questions under way, so concurrent fetches of one card by one caller ask once. */
  private readonly asking = new Map<string, Promise<Asked>>();

  constructor(private readonly deps: CardJudgeDeps) {
    // Remembered as long as a fetched card is (CARD_TTL_MS): a changed policy applies within it.
    this.remembered = new CallerShares(DECISIONS_PER_CALLER, CALLERS, deps.config.cardTtlMs);
  }

  async serve(given: CardJson, opts: RewriteOptions, viewer: CardViewer): Promise<CardVerdict> {
    const signing = opts.signing;
    if (signing?.refusal(given) !== undefined)
      return { type: 'refuse', why: 'agent card: its signature does not verify (CARD_SIGNATURES=require)', cause: 'signature' };
    const out = rewriteCard(given, opts);
    const shown = withoutSignatures(out);
    const decided = await this.decide(shown, viewer);
    if (decided.type === 'refuse') return decided;
    const card = decided.replacement ?? shown;
    // Without a signer, an allowed card keeps what the rewrite kept (CARD_SIGNATURES=keep); a replacement has no signature of the agent's.
    if (signing === undefined) return { type: 'serve', card: decided.replacement ?? out, unchecked: decided.unchecked };
    return { type: 'serve', card: signing.sign(card, opts.publicBase, viewer.key), unchecked: decided.unchecked };
  }

  private async decide(shown: CardJson, viewer: CardViewer, retried = false): Promise<Decided> {
    const json = JSON.stringify(shown);
    const hash = createHash('sha256').update(json).digest('base64url');
    const known = this.remembered.get(viewer.key, hash);
    if (known !== undefined) return known;
    const key = `${viewer.key}\n${hash}`;
    let asked = this.asking.get(key);
    if (asked === undefined) {
      asked = this.ask(shown, json, viewer).finally(() => this.asking.delete(key));
      this.asking.set(key, asked);
    }
    const a = await asked;
    if (a.remember) this.remembered.set(viewer.key, hash, a.decided);
    // A question another fetch of this caller started, and left: this fetch asks for itself.
    if (a.decided.type === 'refuse' && a.decided.why === CALLER_GONE && viewer.caller?.cancelled !== true && !retried) return this.decide(shown, viewer, true);
    return a.decided;
  }

  /** Each response side in order (ROLE=both: server, then client); a modify is what the next side sees. */
  private async ask(shown: CardJson, shownJson: string, viewer: CardViewer): Promise<Asked> {
    const { identities } = this.deps;
    if (identities.pending !== undefined) await identities.pending;
    let card = shown;
    let json = shownJson;
    let replaced = false;
    let unchecked = false;
    for (const side of HOOK_ORDER[this.deps.config.role].response) {
      const step = await this.askSide(side, card, json, shown, viewer);
      if (step.type === 'refuse') return { decided: step, remember: step.cause === 'denied' };
      if (step.type === 'unchecked') unchecked = true;
      if (step.type === 'modify') {
        card = step.card;
        json = JSON.stringify(card);
        replaced = true;
      }
    }
    return { decided: { type: 'serve', replacement: replaced ? card : undefined, unchecked }, remember: !unchecked };
  }

  private async askSide(
    side: Side,
    card: CardJson,
    json: string,
    shown: CardJson,
    viewer: CardViewer,
  ): Promise<
    | { readonly type: 'allow' | 'unchecked' }
    | { readonly type: 'modify'; readonly card: CardJson }
    | { readonly type: 'refuse'; readonly why: string; readonly cause: 'denied' | 'guardian' }
  > {
    const { config, guardian, identities, metrics, logger } = this.deps;
    if (viewer.caller?.cancelled === true) return { type: 'refuse', why: CALLER_GONE, cause: 'guardian' };
    const peer = side === 'client' ? identities.upstreamPeer() : viewer.peer;
    const envelope = buildEnvelope({
      method: CARD_METHOD,
      payload: card as JsonObject,
      context: hookContext(side, 'response', identities.observed(side), peer),
    });
    const t0 = performance.now();
    const outcome = await this.inShare(viewer, () => guardian.decide(envelope, envelopeJson(envelope, json), viewer.caller, undefined, 'call'));
    metrics.guardianCall(CARD_METHOD, outcome.ok ? outcome.result.decision : outcome.kind, (performance.now() - t0) / 1000);
    if (!outcome.ok && outcome.kind === 'cancelled') return { type: 'refuse', why: CALLER_GONE, cause: 'guardian' };
    let failure: GuardianOutcome = outcome;
    if (outcome.ok) {
      const r = outcome.result;
      if (config.shadowMode) {
        metrics.decision(CARD_METHOD, side, 'response', 'shadow');
        if (r.decision !== 'allow') logger.info({ method: CARD_METHOD, side, wouldBe: r.decision, envelopeId: envelope.id }, 'shadow mode: not enforced');
        return { type: 'allow' };
      }
      if (r.decision === 'allow') {
        metrics.decision(CARD_METHOD, side, 'response', 'allow');
        return { type: 'allow' };
      }
      if (r.decision === 'deny') {
        metrics.decision(CARD_METHOD, side, 'response', 'deny');
        return {
          type: 'refuse',
          why: `card hook (${side}): deny${r.reasonCode === undefined ? '' : ` ${r.reasonCode.join(',').slice(0, 256)}`}: ${r.message.slice(0, 256)}`,
          cause: 'denied',
        };
      }
      const replacement = r.modifiedRequest?.params.payload;
      const problem = replacement === undefined ? 'modify without modifiedRequest.params.payload' : leadsAroundProxy(replacement, shown);
      if (problem === undefined) {
        metrics.decision(CARD_METHOD, side, 'response', 'modify');
        return { type: 'modify', card: replacement as CardJson };
      }
      failure = { ok: false, kind: 'invalidModify', detail: problem };
    }
    const kind = failure.ok ? 'error' : failure.kind;
    const detail = failure.ok ? '' : failure.detail;
    metrics.guardianFailures.inc({ kind });
    if (config.failMode === 'open') {
      metrics.decision(CARD_METHOD, side, 'response', 'failOpen');
      metrics.failOpenPasses.inc();
      logger.warn(
        { method: CARD_METHOD, side, failure: kind, detail, envelopeId: envelope.id },
        'guardian gave no valid answer; passing anyway (FAIL_MODE=open)',
      );
      return { type: 'unchecked' };
    }
    metrics.decision(CARD_METHOD, side, 'response', 'failClosed');
    return { type: 'refuse', why: `card hook (${side}): no valid guardian decision (${kind}: ${detail.slice(0, 256)})`, cause: 'guardian' };
  }

  /** The guardian call within the caller's own share of guardian calls (GUARDIAN_CALLS_PER_CALLER). */
  private async inShare(viewer: CardViewer, call: () => Promise<GuardianOutcome>): Promise<GuardianOutcome> {
    const limits = this.deps.callerLimits;
    if (limits === undefined) return call();
    const place = limits.guardianPlace(viewer.key, viewer.caller);
    if (place.entered !== true && !(await place.entered))
      return { ok: false, kind: 'cancelled', detail: 'caller went away while waiting for its share of the guardian' };
    try {
      return await call();
    } finally {
      place.leave();
    }
  }
}

function withoutSignatures(card: CardJson): CardJson {
  const out: CardJson = {};
  for (const [k, val] of Object.entries(card))
    if (k !== 'signatures') Object.defineProperty(out, k, { value: val, enumerable: true, writable: true, configurable: true });
  return out;
}

/** Where a card sends callers, by fieldKey (any spelling a decoder reads), and the one spelling allowed. */
const ROUTES: Readonly<Record<string, string>> = {
  url: 'url',
  supportedinterfaces: 'supportedInterfaces',
  additionalinterfaces: 'additionalInterfaces',
  preferredtransport: 'preferredTransport',
};
const ENTRY_ROUTES: Readonly<Record<string, string>> = { url: 'url', protocolbinding: 'protocolBinding', transport: 'transport' };
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Why a guardian's replacement card would send a caller somewhere the proxy did not: every URL it names
 * (`url`, each interface's `url`) must be one the proxy wrote into the card it showed, `preferredTransport`
 * stays what it was, and no member may use another spelling of those names. Undefined: it leads only to the proxy.
 */
export function leadsAroundProxy(replacement: JsonObject, shown: CardJson): string | undefined {
  const allowed = new Set<string>();
  if (typeof shown.url === 'string') allowed.add(shown.url);
  for (const key of ['supportedInterfaces', 'additionalInterfaces'] as const) {
    const list = shown[key];
    if (Array.isArray(list)) for (const e of list) if (isObject(e) && typeof e.url === 'string') allowed.add(e.url);
  }
  for (const k of Object.keys(replacement)) {
    if (CONTROL.test(k)) return `modified card has a member name with a control character`;
    const name = ROUTES[fieldKey(k)];
    if (name !== undefined && name !== k) return `modified card spells ${JSON.stringify(k.slice(0, 64))} another way`;
  }
  if ('url' in replacement && (typeof replacement.url !== 'string' || !allowed.has(replacement.url))) return "modified card has a url that is not the proxy's";
  if (replacement.preferredTransport !== shown.preferredTransport) return 'modified card changed preferredTransport';
  for (const key of ['supportedInterfaces', 'additionalInterfaces'] as const) {
    if (!(key in replacement)) continue;
    const list = replacement[key];
    if (!Array.isArray(list)) return `modified card's ${key} is not a list`;
    for (const e of list) {
      if (!isObject(e)) return `modified card's ${key} holds a non-object`;
      for (const k of Object.keys(e)) {
        if (CONTROL.test(k)) return `modified card's ${key} has a member name with a control character`;
        const name = ENTRY_ROUTES[fieldKey(k)];
        if (name !== undefined && name !== k) return `modified card's ${key} spells ${JSON.stringify(k.slice(0, 64))} another way`;
      }
      if ('url' in e && (typeof e.url !== 'string' || !allowed.has(e.url))) return `modified card's ${key} names a url that is not the proxy's`;
    }
  }
  return undefined;
}

/**
 * The card to serve from the agent's `given`: judged first when the options carry a judge (INSPECT_CARDS),
 * else rewritten and signed at once (`caller`: its share of the remembered signatures). `viewer` is asked only when the card is judged.
 */
export function cardVerdict(given: CardJson, opts: CardServing, caller: string, viewer: () => Promise<CardViewer>): CardVerdict | Promise<CardVerdict> {
  const judge = opts.judge;
  if (judge !== undefined) return viewer().then((v) => judge.serve(given, opts, v));
  const card = cardToServe(given, opts, caller);
  return card === undefined
    ? { type: 'refuse', why: 'agent card: its signature does not verify (CARD_SIGNATURES=require)', cause: 'signature' }
    : { type: 'serve', card, unchecked: false };
}

/** The error a refused card gets, in the binding's terms; the reason goes to the log and audit line only. */
export function cardRefusal(v: Extract<CardVerdict, { type: 'refuse' }>): ProxyError {
  if (v.cause === 'denied') return proxyError('denied', 'Agent card refused by the guardian');
  if (v.cause === 'guardian') return proxyError('guardianUnavailable', 'Agent card not served: no guardian decision');
  return proxyError('upstreamUnavailable', 'Agent card unavailable');
}

/**
 * Who asks for a card on the public card route (discovery stays public: an identity that does not
 * verify is not refused here, it is judged as an unverified caller), and a cancellation for when it leaves.
 */
export async function cardViewer(identify: CallerIdentifier, req: IncomingMessage, res: ServerResponse, ipv6Prefix: number): Promise<CardViewer> {
  const caller = new Cancellation();
  res.once('close', () => caller.cancel());
  const known = await identify(req.headers, req.socket).catch((): CallerResult => ({ ok: false, message: '', metadata: {} }));
  const identity = known.ok ? known.identity : undefined;
  return {
    key: callerKey(identity === undefined ? ANONYMOUS : ownerKey(identity), req.socket.remoteAddress, ipv6Prefix),
    peer: known.ok ? known.peer : UNVERIFIED,
    caller,
  };
}
