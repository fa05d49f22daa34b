/**
 * The reference guardian's decision engine: pure and synchronous, so the proxy can run it
 * in-process as well as behind the AOS HTTP server.
 *
 * Order of checks: peers -> push-notification URLs -> deny patterns -> masking. The first deny
 * wins; masking answers `modify` only for operations whose hook accepts it. Protocol keys are
 * compared in every spelling the SDK's parser accepts (./keys), webhook hosts by the address
 * they connect to (./address).
 */
import { acceptsDecision, operationForMethod, type Operation } from '../a2a/operations';
import type { Phase, Side } from '../aos/hook-points';
import type { AgentContext, Envelope, JsonObject, SuccessResult } from '../aos/schemas';
import { isObject } from '../core/json';
import { classifyUrl } from '../core/address';
import { CardBaselines, CARD_METHOD, cardFingerprint, maskCard } from './cards';
import { work } from './detectors';
import { applySpans, findMaskSpans, maskText, REDACTED, type MaskSpan } from './masking';
import { forgetNormalised, normalise } from './normalise';
import { keySet, readField } from './keys';
import {
  normaliseKey,
  PROTECTED_KEYS,
  type DenyRule,
  type Detector,
  type MaskRule,
  type PeerPolicy,
  type Policy,
  type ServiceParameterPolicy,
  type PushPolicy,
  type RuleScope,
} from './policy';

export interface Engine {
  decide(envelope: Envelope): SuccessResult;
}

export function createEngine(policy: Policy): Engine {
  const rulesFor = createScopeCache(policy);
  const baselines = new CardBaselines();
  return {
    decide: (envelope) => {
      try {
        return decide(policy, rulesFor, baselines, envelope);
      } finally {
        // The deny and mask passes of one envelope share their normalised texts; nothing is kept past it.
        forgetNormalised();
      }
    },
  };
}

function decide(policy: Policy, rulesFor: ScopeLookup, baselines: CardBaselines, envelope: Envelope): SuccessResult {
  const hook = describeHook(envelope);
  const payload = envelope.params.payload;
  const rules = rulesFor(hook);
  try {
    if (hook.method === CARD_METHOD) return decideCard(policy, rules, baselines, envelope, hook);
    const denial =
      checkPeer(policy.peers, hook.peer) ??
      (hook.phase === 'request' ? checkServiceParameters(policy.serviceParameters, hook.peer, envelope.params.context) : undefined) ??
      (hook.phase === 'request' ? checkPushUrls(policy.push, hook.operation, payload) : undefined) ??
      checkDeliveryWebhook(policy.push, envelope) ??
      findDenyMatch(payload, rules.deny);
    if (denial !== undefined) return denial;

    if (rules.mask.hasAny && canModify(hook.operation)) {
      const masked = maskPayload(payload, rules.mask);
      if (masked.changedRules.length > 0) {
        return {
          decision: 'modify',
          message: policy.messages.modify,
          reasonCode: maskReasonCodes(masked.changedRules),
          modifiedRequest: { ...envelope, params: { ...envelope.params, payload: masked.payload } },
        };
      }
    }
  } catch (err) {
    // Content we cannot walk is content we cannot vouch for.
    if (err instanceof PayloadTooDeep) {
      return denyAnswer(`Payload nesting exceeds ${MAX_DEPTH} levels.`, ['PAYLOAD_TOO_DEEP']);
    }
    // A policy pattern that runs out of backtrack stack (V8 throws RangeError): a throw would be
    // "no valid answer", which FAIL_MODE=open passes unmasked.
    if (err instanceof RangeError) return denyAnswer('Payload content too complex to inspect.', ['PAYLOAD_TOO_COMPLEX']);
    throw err;
  }
  return { decision: 'allow', message: policy.messages.allow, reasonCode: ['ALLOWED'] };
}

/**
 * A card hook: peers, then deny rules over every string of the card, then the change rule, then masks
 * over the card's text (./cards). The approved version of the agent's card becomes this one when it
 * passes.
 */
function decideCard(policy: Policy, rules: ScopedRules, baselines: CardBaselines, envelope: Envelope, hook: HookView): SuccessResult {
  const card = envelope.params.payload;
  const denial = checkPeer(policy.peers, hook.peer) ?? findDenyMatch(card, rules.deny, false);
  if (denial !== undefined) return denial;
  const codes: string[] = [];
  const rule = policy.cards.changes;
  if (rule !== undefined) {
    const agent = cardOwner(envelope);
    const print = cardFingerprint(card);
    const changed = baselines.changes(agent, print);
    if (changed.length > 0 && rule.action === 'deny') return denyAnswer(rule.message, [rule.reasonCode], { changed });
    if (changed.length > 0) codes.push(rule.reasonCode);
    baselines.approve(agent, print);
  }
  const changedRules = new Set<MaskRule>();
  const masked = maskCard(card, rules.mask.textRules, changedRules);
  if (masked !== card) {
    const maskedRules = rules.mask.rules.filter((r) => changedRules.has(r));
    return {
      decision: 'modify',
      message: policy.messages.modify,
      reasonCode: [...maskReasonCodes(maskedRules), ...codes],
      modifiedRequest: { ...envelope, params: { ...envelope.params, payload: masked } },
    };
  }
  return { decision: 'allow', message: policy.messages.allow, reasonCode: ['ALLOWED', ...codes] };
}

/** The agent a card describes: the server side of the hook's context. */
function cardOwner(envelope: Envelope): string {
  const { from, to } = envelope.params.context;
  const owner = from.role === 'server' ? from : to.role === 'server' ? to : from;
  return owner.agent.url;
}

function canModify(operation: Operation | undefined): boolean {
  return operation !== undefined && acceptsDecision(operation, 'modify');
}

function denyAnswer(message: string, reasonCode: string[], data?: JsonObject): SuccessResult {
  return data === undefined ? { decision: 'deny', message, reasonCode } : { decision: 'deny', message, reasonCode, data };
}

// ---------------------------------------------------------------------------------------------
// Which hook is this: method, phase, observed side, peer
// ---------------------------------------------------------------------------------------------

export interface HookView {
  /** AOS method name (v1.0 names are folded onto it); the raw method when not in the table. */
  readonly method: string;
  readonly operation: Operation | undefined;
  readonly phase: Phase;
  /** Role of the observed agent (the context side carrying a full AOS Agent). */
  readonly side: Side;
  readonly peer: PeerView;
}

/** The peer agent of a hook, and whether a proxy verified who it is. */
export interface PeerView {
  readonly name: string;
  readonly url: string;
  /** The verified agent id (present when verified). */
  readonly id?: string;
  /** client = the caller of a server-side hook; server = the agent a client-side hook calls. */
  readonly role: Side;
  /** `agent.metadata.identity.verified === true`: the proxy verified it (assertion, mTLS, OIDC, or its own agent). */
  readonly verified: boolean;
  /** How it was verified (`agent.metadata.identity.source`), when verified. */
  readonly source?: string;
}

export function describeHook(envelope: Envelope): HookView {
  const { payload, context } = envelope.params;
  const operation = operationForMethod(envelope.method);
  // The observed agent is the full Agent side; when both or neither look full, take `from`.
  const observed = isFullAgent(context.to) && !isFullAgent(context.from) ? context.to : context.from;
  const peer = observed === context.from ? context.to : context.from;
  return {
    method: operation?.aosMethod ?? envelope.method,
    operation,
    // A card is what the agent serves: a response, whatever members it holds.
    phase: envelope.method === CARD_METHOD ? 'response' : phaseOf(payload, context.from.role),
    side: observed.role,
    peer: peerView(peer),
  };
}

function peerView(ctx: AgentContext): PeerView {
  const agent = ctx.agent as { name: string; url: string; id?: unknown; metadata?: unknown };
  const marker = (agent.metadata as { identity?: { verified?: unknown; source?: unknown } } | null | undefined)?.identity;
  const verified = marker?.verified === true;
  return {
    name: agent.name,
    url: agent.url,
    ...(verified && typeof agent.id === 'string' ? { id: agent.id } : {}),
    role: ctx.role,
    verified,
    ...(verified && typeof marker?.source === 'string' ? { source: marker.source } : {}),
  };
}

function isFullAgent(ctx: AgentContext): boolean {
  // `id` may be absent in hand-written envelopes (the AOS spec samples omit it).
  return 'instructions' in ctx.agent || 'provider' in ctx.agent;
}

function phaseOf(payload: JsonObject, fromRole: Side): Phase {
  if (typeof payload['method'] === 'string') return 'request';
  if ('result' in payload || 'error' in payload) return 'response';
  // REST bodies carry neither; a response travels from the server side (design section 4).
  return fromRole === 'server' ? 'response' : 'request';
}

// ---------------------------------------------------------------------------------------------
// Rules in scope for a hook (cached per method / side / phase)
// ---------------------------------------------------------------------------------------------

interface MaskSet {
  /** Rules in scope, in policy order. */
  readonly rules: readonly MaskRule[];
  readonly hasAny: boolean;
  /** Normalised key -> first rule that masks it. */
  readonly byKey: ReadonlyMap<string, MaskRule>;
  /** Rules with detectors or patterns. */
  readonly textRules: readonly MaskRule[];
  /** User-data keys already found unchanged by the text rules (keys repeat on every call). */
  readonly cleanKeys: Set<string>;
}

interface DenySet {
  /** Rules in scope, in policy order. */
  readonly rules: readonly DenyRule[];
  /** One alternation per flag set: a string none of them matches needs no per-rule scan. */
  readonly gates: readonly RegExp[];
  /** Object keys already found clean (keys repeat on every call; values rarely do). */
  readonly cleanKeys: Set<string>;
}

interface ScopedRules {
  readonly deny: DenySet;
  readonly mask: MaskSet;
}

type ScopeLookup = (hook: HookView) => ScopedRules;

function createScopeCache(policy: Policy): ScopeLookup {
  const cache = new Map<string, ScopedRules>();
  return (hook) => {
    const key = `${hook.method}|${hook.side}|${hook.phase}`;
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const scoped: ScopedRules = {
      deny: buildDenySet(policy.deny.filter((r) => inScope(r.scope, hook))),
      mask: buildMaskSet(policy.mask.filter((r) => inScope(r.scope, hook))),
    };
    // Only known methods are cached, so arbitrary method names cannot grow the map.
    if (hook.operation !== undefined || hook.method === CARD_METHOD) cache.set(key, scoped);
    return scoped;
  };
}

function inScope(scope: RuleScope, hook: HookView): boolean {
  return (
    (scope.methods === undefined || scope.methods.has(hook.method)) &&
    (scope.sides === undefined || scope.sides.has(hook.side)) &&
    (scope.phases === undefined || scope.phases.has(hook.phase))
  );
}

function buildDenySet(rules: readonly DenyRule[]): DenySet {
  const byFlags = new Map<string, string[]>();
  const gates: RegExp[] = [];
  for (const re of rules.flatMap((r) => r.patterns)) {
    // Group numbers and names would clash inside one alternation: such patterns gate alone.
    if (/\\[1-9]|\\k<|\(\?<[^=!]/.test(re.source)) {
      gates.push(re);
      continue;
    }
    const sources = byFlags.get(re.flags) ?? [];
    sources.push(`(?:${re.source})`);
    byFlags.set(re.flags, sources);
  }
  for (const [flags, sources] of byFlags) gates.push(new RegExp(sources.join('|'), flags));
  return { rules, gates, cleanKeys: new Set() };
}

function buildMaskSet(rules: readonly MaskRule[]): MaskSet {
  const byKey = new Map<string, MaskRule>();
  for (const rule of rules) {
    for (const key of rule.keys) if (!byKey.has(key)) byKey.set(key, rule);
  }
  const textRules = rules.filter((r) => r.detectors.length > 0 || r.patterns.length > 0);
  return { rules, hasAny: rules.length > 0, byKey, textRules, cleanKeys: new Set() };
}

// ---------------------------------------------------------------------------------------------
// Peers
// ---------------------------------------------------------------------------------------------

/**
 * Peer rules match identities only where they are verified: the caller of a server-side hook counts
 * as identified only when the proxy verified it (`metadata.identity.verified`), so a caller that
 * merely claims an allowed name in X-AOS-Agent-* headers is "unknown". The agent a client-side hook
 * calls is the one UPSTREAM_URL names (chosen by the operator) and is matched by its card. Block
 * rules also match what an unverified caller claims: refusing a claim can only be stricter. Globs
 * see the name and URL as sent and in canonical form (NFKC; WHATWG URL). Allow rules see only the
 * verified id of a caller proven by a sidecar assertion (its name and URL are the signer's words).
 */
function checkPeer(peers: PeerPolicy, peer: PeerView): SuccessResult | undefined {
  if (peers.block.length === 0 && peers.allow.length === 0 && peers.allowUnknown) return undefined;
  const forms = peerForms(peer);
  const matches = (re: RegExp): boolean => forms.some((form) => re.test(form));
  const proven = provenForms(peer, forms);
  const allowed = (re: RegExp): boolean => proven.some((form) => re.test(form));
  const label = `"${peer.name}" (${peer.url})`;
  if (peers.block.some(matches)) return denyAnswer(`Peer agent ${label} is blocked by policy.`, ['PEER_BLOCKED']);
  if (peer.role === 'client' && !peer.verified) {
    return peers.allowUnknown ? undefined : denyAnswer('Calling agent has no verified identity.', ['PEER_UNKNOWN']);
  }
  if (isUnknownValue(peer.name) && isUnknownValue(peer.url)) {
    return peers.allowUnknown ? undefined : denyAnswer('Peer agent did not identify itself.', ['PEER_UNKNOWN']);
  }
  if (peers.allow.length > 0 && !peers.allow.some(allowed)) {
    return denyAnswer(`Peer agent ${label} is not in the allowed list.`, ['PEER_NOT_ALLOWED']);
  }
  return undefined;
}

function peerForms(peer: PeerView): string[] {
  return [peer.name, canonicalName(peer.name), peer.url, canonicalUrl(peer.url), ...(peer.id === undefined ? [] : [peer.id])];
}

/**
 * What allow rules may match: a sidecar assertion proves its agent id (the key is bound to ids); its name
 * and URL are the signer's words, so another agent's key could write an allowed name. The id alone there.
 */
function provenForms(peer: PeerView, forms: readonly string[]): readonly string[] {
  return peer.role === 'client' && peer.source === 'assertion' ? (peer.id === undefined ? [] : [peer.id]) : forms;
}

/**
 * The request's A2A version and extensions (`context.serviceParameters`, as a2a-guard shows them) against
 * the peer's rule (the first `serviceParameters.peers` entry that matches it, else the defaults). Per-peer
 * rules are allowances, so they match as allow rules do (a caller's claim does not match).
 */
function checkServiceParameters(sp: ServiceParameterPolicy, peer: PeerView, context: unknown): SuccessResult | undefined {
  if (sp.versions === undefined && sp.extensions === undefined && sp.peers.length === 0) return undefined;
  const shown = isObject(context) ? context.serviceParameters : undefined;
  // Rules it cannot check are not passed: a request without them may carry anything.
  if (!isObject(shown)) return denyAnswer('The request does not show its A2A service parameters.', ['SERVICE_PARAMETERS_UNKNOWN']);
  const proven = peer.role === 'client' && !peer.verified ? [] : provenForms(peer, peerForms(peer));
  const rule = sp.peers.find((r) => r.match.some((re) => proven.some((form) => re.test(form)))) ?? sp;
  const version = shown['A2A-Version'];
  if (rule.versions !== undefined && (typeof version !== 'string' || !rule.versions.includes(version))) {
    return denyAnswer(`A2A version ${JSON.stringify(String(version)).slice(0, 40)} is not allowed for this peer.`, ['VERSION_NOT_ALLOWED']);
  }
  const extensions = shown['A2A-Extensions'];
  const list = Array.isArray(extensions) ? extensions : [];
  const refused = rule.extensions === undefined ? undefined : list.find((e) => typeof e !== 'string' || !rule.extensions?.includes(e));
  if (refused !== undefined)
    return denyAnswer(`Extension ${JSON.stringify(String(refused)).slice(0, 260)} is not allowed for this peer.`, ['EXTENSION_NOT_ALLOWED']);
  return undefined;
}

function isUnknownValue(value: string): boolean {
  const v = canonicalName(value).toLowerCase();
  return v === '' || v === 'unknown';
}

/** Globs see a peer name as written and folded (./normalise, single spaces). */
function canonicalName(name: string): string {
  return normalise(name).trim().replace(/\s+/g, ' ');
}

/** ... and a peer URL as written and as the WHATWG parser writes it (case, default port, trailing dot). */
function canonicalUrl(url: string): string {
  try {
    const parsed = new URL(url.trim());
    parsed.hostname = parsed.hostname.replace(/\.+$/, '');
    return parsed.href;
  } catch {
    return url;
  }
}

// ---------------------------------------------------------------------------------------------
// Push-notification webhook URLs
// ---------------------------------------------------------------------------------------------

/** Objects registering a webhook: v0.3 / v1 set, send configuration (v1), v0.3 REST send configuration. */
const PUSH_CONFIG_KEYS = keySet(['pushNotificationConfig', 'taskPushNotificationConfig', 'pushNotification']);
/** User content, not request configuration: an agent reads no webhook from there. */
const NOT_CONFIG_KEYS = keySet(['message', 'metadata']);

function checkPushUrls(push: PushPolicy, operation: Operation | undefined, payload: JsonObject): SuccessResult | undefined {
  for (const url of collectPushUrls(payload, operation)) {
    const denial = checkPushUrl(push, url);
    if (denial !== undefined) return denial;
  }
  return undefined;
}

/**
 * Webhook URLs a request registers, under every key spelling the SDK accepts: v0.3
 * `params.pushNotificationConfig.url`, v1 `params.url` (set), `configuration.{taskPushNotificationConfig,
 * pushNotificationConfig,pushNotification}.url` in message/send, and REST bodies (no `params`
 * wrapper; `config.pushNotificationConfig.url`).
 */
export function collectPushUrls(payload: JsonObject, operation: Operation | undefined): unknown[] {
  const urls: unknown[] = [];
  if (operation?.aosMethod === 'tasks/pushNotificationConfig/set') {
    // A REST body is the config itself; a JSON-RPC request holds it in `params`: check both.
    const params = payload['params'];
    for (const root of isObject(params) ? [payload, params] : [payload]) {
      urls.push(...readField(root, 'url'));
      for (const config of readField(root, 'config')) if (isObject(config)) urls.push(...readField(config, 'url'));
    }
  }
  collectConfigUrls(payload, urls, 0);
  return urls.filter((u) => u !== undefined);
}

function collectConfigUrls(value: unknown, urls: unknown[], depth: number): void {
  if (!isObject(value) && !Array.isArray(value)) return;
  if (depth > MAX_DEPTH) throw new PayloadTooDeep();
  if (Array.isArray(value)) {
    for (const item of value) collectConfigUrls(item, urls, depth + 1);
    return;
  }
  for (const key in value) {
    if (NOT_CONFIG_KEYS.has(key)) continue;
    const child = value[key];
    if (PUSH_CONFIG_KEYS.has(key) && isObject(child)) urls.push(...readField(child, 'url'));
    collectConfigUrls(child, urls, depth + 1);
  }
}

/**
 * A push delivery (the proxy's relay judges each one as a response hook, the caller's side carrying
 * `metadata.pushDelivery.webhook`) goes to the webhook under the same rules as the config that set it:
 * a policy changed since, or a config that passed unjudged (FAIL_MODE=open), is caught here.
 */
function checkDeliveryWebhook(push: PushPolicy, envelope: Envelope): SuccessResult | undefined {
  const { from, to } = envelope.params.context;
  for (const side of [from, to]) {
    const meta = (side.agent as { metadata?: unknown }).metadata;
    const delivery = isObject(meta) ? meta['pushDelivery'] : undefined;
    if (delivery === undefined) continue;
    const denial = checkPushUrl(push, isObject(delivery) ? delivery['webhook'] : undefined);
    if (denial !== undefined) return denial;
  }
  return undefined;
}

function checkPushUrl(push: PushPolicy, url: unknown): SuccessResult | undefined {
  const invalid = (why: string): SuccessResult => denyAnswer(`Push-notification URL refused: ${why}.`, ['PUSH_URL_INVALID']);
  if (typeof url !== 'string') return invalid('not a string');
  let parsed: URL;
  try {
    // The WHATWG parser is the one `fetch` uses when the agent POSTs the notification.
    parsed = new URL(url);
  } catch {
    return invalid('not a valid absolute URL');
  }
  const httpOk = push.allowHttp && parsed.protocol === 'http:';
  if (parsed.protocol !== 'https:' && !httpOk) {
    const need = push.allowHttp ? 'http or https' : 'https';
    return denyAnswer(`Push-notification URL refused: scheme "${parsed.protocol}" (${need} required).`, ['PUSH_URL_INSECURE']);
  }
  const { host, class: kind, range } = classifyUrl(parsed);
  if (kind === 'metadata') {
    return denyAnswer(`Push-notification URL refused: host ${host} is a cloud metadata endpoint.`, ['PUSH_URL_METADATA']);
  }
  if (kind === 'private' && !push.allowPrivate) {
    return denyAnswer(`Push-notification URL refused: host ${host} is not a public address (${range}).`, ['PUSH_URL_PRIVATE']);
  }
  if (push.allowHosts.length > 0 && !push.allowHosts.some((re) => re.test(host))) {
    return denyAnswer(`Push-notification URL refused: host ${host} is not in the allowed hosts.`, ['PUSH_URL_HOST_NOT_ALLOWED']);
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Deny patterns: every string (and object key) anywhere in the payload, text fields as the SDK reads them
// ---------------------------------------------------------------------------------------------

export const MAX_DEPTH = 256;

class PayloadTooDeep extends Error {}

/** The JSON-RPC envelope members of the payload itself are not content. */
const ENVELOPE_KEYS = new Set(['jsonrpc', 'method', 'id']);
/** Base64 file content of a part: scanning or masking it is meaningless and would corrupt it. */
const BINARY_KEYS = keySet(['bytes', 'raw', 'fileWithBytes']);
/** Subtrees holding free-form user content, where protocol key names carry no meaning. */
const CONTENT_KEYS = keySet(['data', 'metadata']);
/**
 * Protocol string fields carrying content. The SDK reads a non-string value there as
 * `String(value)` (v1 and v0.3 REST), or hands it on as is (v0.3 JSON-RPC) to an agent that
 * will most likely do the same: an array of fragments is checked as the text it joins into.
 */
const TEXT_KEYS = keySet(['text', 'url', 'uri', 'fileWithUri', 'filename', 'name', 'description', 'token', 'credentials']);

type PathSegment = string | number;

/** `jsonRpc`: the payload is a JSON-RPC message, whose envelope members are not content (a card's are). */
function findDenyMatch(payload: JsonObject, deny: DenySet, jsonRpc = true): SuccessResult | undefined {
  if (deny.rules.length === 0) return undefined;
  const path: PathSegment[] = [];
  for (const key in payload) {
    if (jsonRpc && ENVELOPE_KEYS.has(key)) continue;
    path.push(key);
    const hit = matchKey(key, deny, path) ?? scanValue(key, payload[key], deny, path, 1, CONTENT_KEYS.has(key), false);
    if (hit !== undefined) return hit;
    path.pop();
  }
  return undefined;
}

/** `inJoin`: inside an array whose joined text was checked already (the text its nested arrays join into is part of it). */
function scanValue(
  key: string,
  value: unknown,
  deny: DenySet,
  path: PathSegment[],
  depth: number,
  inContent: boolean,
  inJoin: boolean,
): SuccessResult | undefined {
  if (typeof value === 'string') return !inContent && BINARY_KEYS.has(key) ? undefined : matchText(value, deny, path);
  // The SDK turns a number in a text field into its digits.
  if (typeof value === 'number') return !inContent && TEXT_KEYS.has(key) ? matchText(String(value), deny, path) : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth > MAX_DEPTH) throw new PayloadTooDeep();
  if (Array.isArray(value)) {
    const joins = !inContent && TEXT_KEYS.has(key);
    const joined = joins && !inJoin ? joinedText(value, depth) : undefined;
    if (joined !== undefined) {
      const hit = matchText(joined, deny, path);
      if (hit !== undefined) return hit;
    }
    if (!inContent && PARTS_KEYS.has(key)) {
      const hit = matchJoinedParts(value, deny, path, depth);
      if (hit !== undefined) return hit;
    }
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      const hit = scanValue(key, value[i], deny, path, depth + 1, inContent, joins);
      if (hit !== undefined) return hit;
      path.pop();
    }
    return undefined;
  }
  const obj = value as JsonObject;
  for (const childKey in obj) {
    path.push(childKey);
    const childInContent = inContent || CONTENT_KEYS.has(childKey);
    const hit = matchKey(childKey, deny, path) ?? scanValue(childKey, obj[childKey], deny, path, depth + 1, childInContent, false);
    if (hit !== undefined) return hit;
    path.pop();
  }
  return undefined;
}

/** Arrays of message / artifact parts (`content` in v0.3 REST): an agent reads their texts joined. */
const PARTS_KEYS = keySet(['parts', 'content']);
/** How agents join the texts of a message's parts (`parts.map(p => p.text).join(sep)`): both are judged. */
const PART_SEPARATORS = ['', ' '];

/** The texts of the parts that carry one, as the SDK reads them (a number as its digits, an array as `String(array)`). */
function partTexts(parts: readonly unknown[], depth: number): { readonly index: number; readonly text: string }[] {
  const out: { index: number; text: string }[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (!isObject(part)) continue;
    const text = part['text'];
    const read = typeof text === 'string' ? text : typeof text === 'number' ? String(text) : Array.isArray(text) ? joinedText(text, depth + 2) : undefined;
    if (read !== undefined) out.push({ index: i, text: read });
  }
  return out;
}

function matchJoinedParts(parts: readonly unknown[], deny: DenySet, path: readonly PathSegment[], depth: number): SuccessResult | undefined {
  const texts = partTexts(parts, depth);
  if (texts.length < 2) return undefined;
  for (const separator of PART_SEPARATORS) {
    const hit = matchText(texts.map((t) => t.text).join(separator), deny, path);
    if (hit !== undefined) return hit;
  }
  return undefined;
}

/**
 * `String(array)` as JavaScript computes it (elements joined by ",", nested arrays flattened,
 * null as ""), depth-bounded, built in one pass; undefined when the array holds no text to check.
 */
function joinedText(array: readonly unknown[], depth: number): string | undefined {
  const joined = { text: '', hasText: false };
  joinInto(array, depth, joined);
  return joined.hasText ? joined.text : undefined;
}

function joinInto(items: readonly unknown[], depth: number, out: { text: string; hasText: boolean }): void {
  if (depth > MAX_DEPTH) throw new PayloadTooDeep();
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out.text += ',';
    const item = items[i];
    if (Array.isArray(item)) joinInto(item, depth + 1, out);
    else if (item === null || item === undefined) continue;
    else if (typeof item === 'object') out.text += '[object Object]';
    else {
      if (typeof item === 'string' || typeof item === 'number') out.hasText = true;
      out.text += String(item);
    }
  }
}

function matchKey(key: string, deny: DenySet, path: readonly PathSegment[]): SuccessResult | undefined {
  if (deny.cleanKeys.has(key)) return undefined;
  const hit = matchText(key, deny, path);
  if (hit === undefined && deny.cleanKeys.size < 10_000) deny.cleanKeys.add(key);
  return hit;
}

function matchText(text: string, deny: DenySet, path: readonly PathSegment[]): SuccessResult | undefined {
  const normalised = normalise(text);
  work.denyChars += normalised.length;
  if (!deny.gates.some((gate) => gate.test(normalised))) return undefined;
  // Something matched: find the first rule, in policy order.
  for (const rule of deny.rules) {
    for (const re of rule.patterns) {
      if (re.test(normalised)) {
        const codes = [`DENY_PATTERN:${rule.id}`];
        if (rule.reasonCode !== undefined) codes.push(rule.reasonCode);
        // The path says where, never what: message content stays out of answers and logs.
        return denyAnswer(rule.message, codes, { rule: rule.id, path: formatPath(path) });
      }
    }
  }
  return undefined;
}

function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out === '' ? seg : `.${seg}`;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Masking: copy-on-write rewrite of string (and integer) values
// ---------------------------------------------------------------------------------------------

/** Protocol structure outside user content, in every key spelling: never masked. */
const PROTECTED = keySet([...PROTECTED_KEYS]);

export interface MaskOutcome {
  readonly payload: JsonObject;
  /** Rules that changed something, in policy order. */
  readonly changedRules: readonly MaskRule[];
}

function maskPayload(payload: JsonObject, mask: MaskSet): MaskOutcome {
  const changed = new Set<MaskRule>();
  const out = maskObject(payload, mask, changed, false, 0);
  return { payload: out, changedRules: mask.rules.filter((r) => changed.has(r)) };
}

/** `inJoin`: inside an array whose joined text is masked as a whole (see scanValue). */
function maskValue(key: string, value: unknown, mask: MaskSet, changed: Set<MaskRule>, inContent: boolean, depth: number, inJoin: boolean): unknown {
  if (typeof value === 'string') return !inContent && BINARY_KEYS.has(key) ? value : maskText(value, mask.textRules, changed);
  if (typeof value === 'number') return maskNumber(value, mask.textRules, changed);
  if (typeof value !== 'object' || value === null) return value;
  if (depth > MAX_DEPTH) throw new PayloadTooDeep();
  if (Array.isArray(value)) {
    const joins = !inContent && TEXT_KEYS.has(key);
    // Parts joined first: a part masked alone may no longer show what spans it and the next.
    const items = !inContent && PARTS_KEYS.has(key) ? maskJoinedParts(value, mask, changed, depth) : value;
    let copy: unknown[] | undefined;
    for (let i = 0; i < items.length; i++) {
      const next = maskValue(key, items[i], mask, changed, inContent, depth + 1, joins);
      if (next !== items[i]) (copy ??= items.slice())[i] = next;
    }
    const out = copy ?? items;
    // Fragments that only form something to mask once joined are replaced by the masked text.
    const joined = joins && !inJoin ? joinedText(out, depth) : undefined;
    if (joined !== undefined) {
      const masked = maskText(joined, mask.textRules, changed);
      if (masked !== joined) return masked;
    }
    return out;
  }
  return maskObject(value as JsonObject, mask, changed, inContent, depth + 1);
}

/**
 * What only the parts' texts joined show (a card number split over two parts) is masked in each part
 * that holds a piece of it. A part whose text was an array or a number gets the masked text.
 */
function maskJoinedParts(parts: readonly unknown[], mask: MaskSet, changed: Set<MaskRule>, depth: number): readonly unknown[] {
  const texts = partTexts(parts, depth);
  if (texts.length < 2 || mask.textRules.length === 0) return parts;
  let current = texts.map((t) => t.text);
  const found = new Set<MaskRule>();
  for (const separator of PART_SEPARATORS) {
    const spans = findMaskSpans(current.join(separator), mask.textRules, found);
    if (spans.length > 0) current = splitSpans(current, separator, spans);
  }
  let copy: unknown[] | undefined;
  texts.forEach(({ index, text }, k) => {
    const next = current[k]!;
    if (next === text) return;
    const part = parts[index] as JsonObject;
    const masked = { ...part };
    setOwn(masked, 'text', next);
    (copy ??= parts.slice())[index] = masked;
  });
  if (copy === undefined) return parts;
  for (const rule of found) changed.add(rule);
  return copy;
}

/** Spans of the joined texts applied to each text: each piece of a span inside a text is replaced by the span's text. */
function splitSpans(texts: readonly string[], separator: string, spans: readonly MaskSpan[]): string[] {
  const out: string[] = [];
  let offset = 0;
  let s = 0;
  for (const text of texts) {
    const end = offset + text.length;
    const local: MaskSpan[] = [];
    while (s < spans.length && spans[s]!.end <= offset) s++;
    for (let k = s; k < spans.length && spans[k]!.start < end; k++) {
      const span = spans[k]!;
      const start = Math.max(span.start, offset) - offset;
      const stop = Math.min(span.end, end) - offset;
      if (stop > start) local.push({ start, end: stop, text: span.text });
    }
    out.push(applySpans(text, local));
    offset = end + separator.length;
  }
  return out;
}

function maskObject(obj: JsonObject, mask: MaskSet, changed: Set<MaskRule>, inContent: boolean, depth: number): JsonObject {
  let copy: JsonObject | undefined;
  let renames: Map<string, string> | undefined;
  for (const key in obj) {
    if (!inContent && PROTECTED.has(key)) continue;
    const value = obj[key];
    const keyRule = mask.byKey.size > 0 ? mask.byKey.get(cachedNormaliseKey(key)) : undefined;
    const next =
      keyRule !== undefined
        ? maskWholeValue(value, keyRule.replacement ?? REDACTED, keyRule, changed)
        : maskValue(key, value, mask, changed, inContent || CONTENT_KEYS.has(key), depth, false);
    if (next !== value) setOwn((copy ??= { ...obj }), key, next);
    // Keys of user data reach the agent as much as values do.
    const nextKey = inContent ? maskKey(key, mask, changed) : key;
    if (nextKey !== key) (renames ??= new Map()).set(key, nextKey);
  }
  const out = copy ?? obj;
  if (renames === undefined) return out;
  const names = renames;
  return fromEntriesUnique(Object.keys(out).map((key): [string, unknown] => [names.get(key) ?? key, out[key]]));
}

function maskKey(key: string, mask: MaskSet, changed: Set<MaskRule>): string {
  if (mask.cleanKeys.has(key)) return key;
  const masked = maskText(key, mask.textRules, changed);
  if (masked === key && mask.cleanKeys.size < 10_000) mask.cleanKeys.add(key);
  return masked;
}

/**
 * Rebuild an object in order; a masked key that collides gets a "#2", "#3", ... suffix. The next
 * suffix to try is kept per name, so n keys masked to one name cost n tries, not n^2/2.
 */
function fromEntriesUnique(entries: ReadonlyArray<readonly [string, unknown]>): JsonObject {
  const out: JsonObject = {};
  const nextSuffix = new Map<string, number>();
  for (const [key, value] of entries) {
    let unique = key;
    work.keyNames++;
    if (Object.prototype.hasOwnProperty.call(out, unique)) {
      let n = nextSuffix.get(key) ?? 2;
      for (unique = `${key}#${n}`; Object.prototype.hasOwnProperty.call(out, unique); unique = `${key}#${n}`) n++;
      work.keyNames += n - (nextSuffix.get(key) ?? 2) + 1;
      nextSuffix.set(key, n + 1);
    }
    setOwn(out, unique, value);
  }
  return out;
}

/** A masked key hides every scalar under it (a `password` may be a string, a number or a list). */
function maskWholeValue(value: unknown, replacement: string, rule: MaskRule, changed: Set<MaskRule>): unknown {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    if (value === replacement) return value;
    changed.add(rule);
    return replacement;
  }
  if (Array.isArray(value)) {
    const next = value.map((v) => maskWholeValue(v, replacement, rule, changed));
    return next.some((v, i) => v !== value[i]) ? next : value;
  }
  if (isObject(value)) {
    let copy: JsonObject | undefined;
    for (const k in value) {
      const v = value[k];
      const next = maskWholeValue(v, replacement, rule, changed);
      if (next !== v) setOwn((copy ??= { ...value }), k, next);
    }
    return copy ?? value;
  }
  return value;
}

/** Card numbers sent as JSON numbers are masked too (the value becomes a string). */
function maskNumber(value: number, rules: readonly MaskRule[], changed: Set<MaskRule>): unknown {
  if (rules.length === 0 || !Number.isSafeInteger(value) || Math.abs(value) < 1e12) return value;
  const text = String(value);
  const masked = maskText(text, rules, changed);
  return masked === text ? value : masked;
}

function maskReasonCodes(rules: readonly MaskRule[]): string[] {
  const codes: string[] = [];
  for (const rule of rules) {
    codes.push(`MASKED:${rule.id}`);
    if (rule.reasonCode !== undefined && !codes.includes(rule.reasonCode)) codes.push(rule.reasonCode);
  }
  return codes;
}

const normalisedKeys = new Map<string, string>();

/** Key names repeat across calls (parts, data fields); remember a bounded number of them. */
function cachedNormaliseKey(key: string): string {
  let normalised = normalisedKeys.get(key);
  if (normalised === undefined) {
    normalised = normaliseKey(key);
    if (normalisedKeys.size < 10_000) normalisedKeys.set(key, normalised);
  }
  return normalised;
}

/** Assignment would treat a "__proto__" key as the prototype; define it as data instead. */
function setOwn(obj: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

// ---------------------------------------------------------------------------------------------
// Detectors: linear scans (./detectors)
// ---------------------------------------------------------------------------------------------

/**
 * 13-19 digits passing Luhn. No card network issues numbers starting with 0 or 1 (UATP aside),
 * and excluding them keeps epoch-millisecond timestamps, which pass Luhn one time in ten, unmasked.
 */
export function isCardNumber(digits: string): boolean {
  return digits.length >= 13 && digits.length <= 19 && digits[0] !== '0' && digits[0] !== '1' && luhnValid(digits);
}

export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** Exposed for tests and for guardian authors who want the same detectors (on normalised text, as the engine runs them). */
export function applyDetector(detector: Detector, text: string, replacement?: string): string {
  const rule: MaskRule = { id: detector, reasonCode: undefined, keys: new Set(), detectors: [detector], patterns: [], replacement, scope: ANYWHERE };
  return maskText(text, [rule], new Set());
}

const ANYWHERE: RuleScope = { methods: undefined, sides: undefined, phases: undefined };
