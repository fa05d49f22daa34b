/**
 * Agent cards: fetched once and cached with a TTL (identity for AOS contexts), and rewritten so
 * every agent endpoint URL points at the proxy (design section 7). Without the rewrite SDK clients
 * call the URL in the card and bypass the proxy.
 */
import { isCarriedGrpcInterface } from './bindings/grpc/card';
import { BoundedBytes } from '../core/bounded';
import { asObject, fieldKey, fieldValue, findInObjects, isObject, type JsonObject } from '../core/json';
import { classifyUrl } from '../core/address';
import { monotonicMs } from '../core/clock';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { Logger } from 'pino';

export type CardJson = Record<string, unknown>;

/**
 * Candidate card locations for an agent base URL, as the SDK resolves them, plus the origin root, then
 * `paths` (CARD_PATHS, encoded) below the base's path, where the proxy forwards them.
 */
export function cardUrls(given: URL, paths: readonly string[] = []): URL[] {
  // Userinfo is never sent (calls go to the origin) and never logged: the URLs fetched and named are without it.
  const base = new URL(given.href);
  base.username = '';
  base.password = '';
  if (base.pathname.endsWith('.json')) return [base];
  const withSlash = new URL(base.href);
  if (!withSlash.pathname.endsWith('/')) withSlash.pathname += '/';
  const prefix = base.pathname.replace(/\/+$/, '');
  const urls = [
    new URL('.well-known/agent-card.json', withSlash),
    new URL('/.well-known/agent-card.json', base),
    ...paths.map((p) => new URL(prefix + p, base.origin)),
  ];
  return urls.filter((u, i) => urls.findIndex((v) => v.href === u.href) === i);
}

export interface CardCacheOptions {
  readonly base: URL;
  readonly ttlMs: number;
  readonly logger: Logger;
  readonly what: string;
  /** Back-off after a failed fetch, so a dead agent is not asked on every request. */
  readonly retryMs?: number;
  readonly timeoutMs?: number;
  /** An undici dispatcher for TLS options (UPSTREAM_CA_FILE, ...); the global one when unset. */
  readonly dispatcher?: object;
  /** More card paths (CARD_PATHS, encoded), tried after the standard locations. */
  readonly paths?: readonly string[];
}

/**
 * A cached card. `current()` never blocks: it returns the last good card (or undefined) and starts a
 * background refresh when the TTL has passed. `ready()` waits for the first attempt, bounded.
 */
export class CardCache {
  private card: CardJson | undefined;
  private fetchedAt = -Infinity;
  private failedAt = -Infinity;
  private inflight: Promise<void> | undefined;
  private lastOk = false;

  constructor(private readonly opts: CardCacheOptions) {}

  current(): CardJson | undefined {
    const now = monotonicMs();
    const stale = this.card === undefined ? now - this.failedAt > (this.opts.retryMs ?? 10_000) : now - this.fetchedAt > this.opts.ttlMs;
    if (stale && this.inflight === undefined) void this.refresh();
    return this.card;
  }

  /** Resolves once a first fetch attempt finished (success or not). */
  ready(): Promise<void> {
    if (this.card !== undefined) return Promise.resolve();
    return this.inflight ?? this.refresh();
  }

  /** Wait (at most `ms`) for a fetch that is under way, if any; never starts one. */
  async pending(ms: number): Promise<void> {
    const p = this.inflight;
    if (p === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      p,
      new Promise<void>((r) => {
        timer = setTimeout(r, ms);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Fetch now: true when the card is reachable at this moment (the cached card is kept either way). */
  async probe(): Promise<boolean> {
    await this.refresh();
    return this.lastOk;
  }

  refresh(): Promise<void> {
    if (this.inflight !== undefined) return this.inflight;
    this.inflight = this.fetchOnce().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /** node:http(s) by default; fetch only when a dispatcher carries TLS options (it is then loaded anyway). */
  private get(url: URL): Promise<{ status: number; body: unknown }> {
    const timeoutMs = this.opts.timeoutMs ?? 5000;
    const dispatcher = this.opts.dispatcher;
    return getJson(url, timeoutMs, dispatcher === undefined ? httpGetOnce : (at, ms) => fetchGetOnce(at, ms, dispatcher));
  }

  private async fetchOnce(): Promise<void> {
    const problems: string[] = [];
    for (const url of cardUrls(this.opts.base, this.opts.paths)) {
      try {
        const res = await this.get(url);
        if (res.status < 200 || res.status >= 300) {
          problems.push(`${url.href}: HTTP ${res.status}`);
          continue;
        }
        const body = res.body;
        if (typeof body !== 'object' || body === null || Array.isArray(body)) {
          problems.push(`${url.href}: not a JSON object`);
          continue;
        }
        this.card = body as CardJson;
        this.fetchedAt = monotonicMs();
        this.lastOk = true;
        this.opts.logger.debug({ card: url.href }, `${this.opts.what} agent card fetched`);
        return;
      } catch (err) {
        // fetch says only "fetch failed"; the socket's reason (a certificate problem, say) is its cause.
        // node:https names it itself: its code goes next to the message.
        const cause = (err as { cause?: NodeJS.ErrnoException }).cause;
        const code = (err as NodeJS.ErrnoException).code;
        const own = code === undefined || (err as Error).message.includes(code) ? '' : ` (${code})`;
        problems.push(`${url.href}: ${(err as Error).message}${own}${cause === undefined ? '' : ` (${cause.code ?? 'error'}: ${cause.message})`}`);
      }
    }
    this.failedAt = monotonicMs();
    this.lastOk = false;
    this.opts.logger.warn({ problems }, `${this.opts.what} agent card could not be fetched; identity fields will say "unknown"`);
  }
}

/** Largest card body read (the card route has the same bound). */
const MAX_CARD_BYTES = 1024 * 1024;
const MAX_REDIRECTS = 5;
/** The proxy's own card requests say who they are (they are not forwarded traffic). */
export const CARD_USER_AGENT = 'a2a-guard (agent card)';

/** One GET, no redirect followed: the status, a redirect's Location, and the text of a 2xx body. */
interface Fetched {
  readonly status: number;
  readonly location: string | undefined;
  readonly text: string;
}

type GetOnce = (url: URL, timeoutMs: number) => Promise<Fetched>;

/**
 * GET a JSON document: the status, and the parsed body of a 2xx answer (a body that is not JSON
 * throws). Bounded in size and in total time, not only per idle socket: a card dripped a byte at a
 * time would hold the fetch, and /readyz which waits for it, forever. Redirects are followed only
 * within the origin asked (or to https on the same host): the card names the peer and where it serves A2A, and a remote agent must
 * not aim the proxy's requests at other (internal) addresses.
 */
export async function getJson(url: URL, timeoutMs: number, once: GetOnce = httpGetOnce): Promise<{ status: number; body: unknown }> {
  const deadline = monotonicMs() + timeoutMs;
  let at = url;
  for (let hops = 0; ; hops++) {
    const answer = await once(at, Math.max(1, deadline - monotonicMs()));
    if (answer.status >= 300 && answer.status < 400 && answer.location !== undefined && hops < MAX_REDIRECTS) {
      const next = new URL(answer.location, at);
      // The one exception: the same host and port, or its default https port, moving the card to https (a common redirect).
      const upgrade = url.protocol === 'http:' && next.protocol === 'https:' && next.hostname === url.hostname && (next.port === '' || next.port === url.port);
      if (next.origin !== url.origin && !upgrade) throw new Error(`redirected to another origin (${next.origin.slice(0, 128)}), which is not followed`);
      at = next;
      continue;
    }
    return { status: answer.status, body: answer.status >= 300 ? undefined : JSON.parse(answer.text) };
  }
}

/** node:http(s) rather than fetch, which would load a second HTTP client into the process (about 20 MB of resident memory) for one request per TTL. */
function httpGetOnce(url: URL, timeoutMs: number): Promise<Fetched> {
  const client: typeof http = url.protocol === 'https:' ? require('node:https') : http;
  return new Promise<Fetched>((resolve, reject) => {
    const req = client.get(url, { headers: { accept: 'application/json', 'user-agent': CARD_USER_AGENT }, timeout: timeoutMs }, (res) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        res.resume();
        return resolve({ status, location: res.headers.location, text: '' });
      }
      const body = new BoundedBytes(MAX_CARD_BYTES);
      res.on('data', (c: Buffer) => {
        if (!body.push(c)) req.destroy(new Error(`card larger than ${MAX_CARD_BYTES} bytes`));
      });
      res.on('end', () => resolve({ status, location: undefined, text: body.text() }));
      res.on('error', reject);
    });
    const whole = setTimeout(() => req.destroy(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('close', () => clearTimeout(whole));
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** fetch over an undici dispatcher (TLS options), with the same bounds: no redirect followed here, the body read up to the limit. */
async function fetchGetOnce(url: URL, timeoutMs: number, dispatcher: object): Promise<Fetched> {
  const init = {
    signal: AbortSignal.timeout(timeoutMs),
    redirect: 'manual',
    headers: { accept: 'application/json', 'user-agent': CARD_USER_AGENT },
    dispatcher,
  };
  const res = await fetch(url, init as RequestInit);
  if (res.status < 200 || res.status >= 300) {
    await res.body?.cancel();
    return { status: res.status, location: res.headers.get('location') ?? undefined, text: '' };
  }
  const body = new BoundedBytes(MAX_CARD_BYTES);
  if (res.body !== null) {
    for await (const chunk of res.body) {
      // Leaving the loop cancels the rest of the body.
      if (!body.push(Buffer.from(chunk))) throw new Error(`card larger than ${MAX_CARD_BYTES} bytes`);
    }
  }
  return { status: res.status, location: undefined, text: body.text() };
}

/** Longest card description kept: prose (line breaks allowed), but it goes into every envelope. */
const MAX_DESCRIPTION_LENGTH = 8192;

/**
 * What a card says of the agent goes into every envelope and audit line, and the card may be a
 * hostile remote's: an identity field is kept only as fieldValue allows (else "unknown"), a description only bounded.
 */
const description = (v: unknown): string | undefined =>
  typeof v === 'string' && v !== '' && v.length <= MAX_DESCRIPTION_LENGTH && !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(v) ? v : undefined;

export interface CardIdentity {
  readonly name?: string;
  readonly url?: string;
  readonly version?: string;
  readonly description?: string;
  readonly providerName?: string;
  readonly providerUrl?: string;
}

export function identityFromCard(card: CardJson | undefined): CardIdentity {
  if (card === undefined) return {};
  const interfaces = Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces : [];
  const firstInterfaceUrl = interfaces.map((i) => fieldValue(asObject(i)?.url)).find((u) => u !== undefined);
  const provider = asObject(card.provider);
  const id: Record<string, string | undefined> = {
    name: fieldValue(card.name),
    url: fieldValue(card.url) ?? firstInterfaceUrl,
    version: fieldValue(card.version),
    description: description(card.description),
    providerName: fieldValue(provider?.organization) ?? fieldValue(provider?.name),
    providerUrl: fieldValue(provider?.url),
  };
  return Object.fromEntries(Object.entries(id).filter(([, v]) => v !== undefined));
}

/** Signs a rewritten card, or refuses the agent's (identity/card-signing.ts). `caller`: whose share of the remembered signatures. */
export interface CardVouch {
  /** The card served from the agent's `given` and its rewrite `out`; undefined: refused. */
  vouch(given: CardJson, out: CardJson, publicBase: URL, caller?: string): CardJson | undefined;
  /** Why the agent's card is refused (its signature is required and does not verify), else undefined. */
  refusal(given: CardJson): string | undefined;
  /** `out` as served: the proxy's signature in place of any other (none without a key). */
  sign(out: CardJson, publicBase: URL, caller?: string): CardJson;
}

export interface RewriteOptions {
  /** Public base URL of the proxy (scheme, host, optional path prefix). */
  readonly publicBase: URL;
  /** The upstream base URL the proxy forwards to. */
  readonly upstreamBase: URL;
  readonly signatures: 'strip' | 'keep' | 'require';
  /** Card signing and the agent's signatures checked (CARD_SIGNING_KEY_FILE, CARD_SIGNATURES=require); undefined: neither. */
  readonly signing?: CardVouch | undefined;
  /** host:port of the proxy's gRPC listener when it serves gRPC (GRPC_PORT); undefined: gRPC interfaces are removed. */
  readonly grpcAddress?: string | undefined;
}

/**
 * Point one agent endpoint URL at the proxy: keep the path below the upstream's base path, put the
 * proxy's public base in front. Returns undefined for URLs that are not http(s) (e.g. gRPC host:port),
 * which the proxy does not carry.
 */
export function rewriteEndpoint(raw: string, opts: RewriteOptions): string | undefined {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
  const upstreamPrefix = opts.upstreamBase.pathname.replace(/\/+$/, '');
  let rest = u.pathname;
  if (upstreamPrefix !== '' && (rest === upstreamPrefix || rest.startsWith(`${upstreamPrefix}/`))) rest = rest.slice(upstreamPrefix.length);
  const publicPrefix = opts.publicBase.pathname.replace(/\/+$/, '');
  const out = new URL(opts.publicBase.href);
  out.pathname = `${publicPrefix}${rest.startsWith('/') || rest === '' ? rest : `/${rest}`}`;
  out.search = u.search;
  out.hash = '';
  return out.href;
}

/**
 * The card members that say where and how to call the agent, by fieldKey, with the one spelling the
 * proxy writes. Decoders take other spellings for them: ts-proto's fromJSON (the SDK's v1.0 cards)
 * reads `supported_interfaces` and `protocol_binding`, Go's encoding/json any letter case, pydantic
 * its aliases. Rewriting only the camelCase names left an agent URL in `supported_interfaces`, and an
 * SDK client called it, around the proxy.
 */
const CARD_ROUTE_MEMBERS: Readonly<Record<string, string>> = {
  url: 'url',
  supportedinterfaces: 'supportedInterfaces',
  additionalinterfaces: 'additionalInterfaces',
  preferredtransport: 'preferredTransport',
};
const INTERFACE_MEMBERS: Readonly<Record<string, string>> = {
  url: 'url',
  protocolbinding: 'protocolBinding',
  protocolversion: 'protocolVersion',
  transport: 'transport',
  tenant: 'tenant',
};

/** A member name with a control character (see oneSpelling). */
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * `o` with each of `members` under its one spelling: another spelling is renamed to it, or dropped
 * when the member is already there (given twice, the spelling the proxy writes wins), so every
 * decoder reads the one value the proxy rewrote. A name with a control character goes: a C reader
 * (cJSON) ends `url\u0000x` at the NUL and reads `url`. Returns `o` itself when nothing needs it.
 */
function oneSpelling(o: JsonObject, members: Readonly<Record<string, string>>): JsonObject {
  let out: JsonObject | undefined;
  for (const k of Object.keys(o)) {
    if (CONTROL.test(k)) {
      out ??= { ...o };
      delete out[k];
      continue;
    }
    const name = members[fieldKey(k)];
    if (name === undefined || name === k) continue;
    out ??= { ...o };
    delete out[k];
    if (!Object.hasOwn(o, name) && !Object.hasOwn(out, name)) out[name] = o[k];
  }
  return out ?? o;
}

/** Rewrite every agent endpoint of a card (v1 supportedInterfaces, v0.3 url + additionalInterfaces), in any spelling a decoder reads. Pure. */
export function rewriteCard(given: CardJson, opts: RewriteOptions): CardJson {
  const card = oneSpelling(given, CARD_ROUTE_MEMBERS);
  const out: CardJson = { ...card };
  if (typeof card.url === 'string') {
    const u = rewriteEndpoint(card.url, opts);
    if (u !== undefined) out.url = u;
  }
  for (const key of ['supportedInterfaces', 'additionalInterfaces'] as const) {
    const list = card[key];
    if (list === undefined) continue;
    // Not a list: decoders read nothing or fail, but its URLs would still be the agent's.
    if (!Array.isArray(list)) {
      delete out[key];
      continue;
    }
    out[key] = list.flatMap((entry: unknown) => {
      const o = asObject(entry);
      if (o === undefined) return [entry];
      const e = oneSpelling(o, INTERFACE_MEMBERS);
      if (!('url' in e)) return [e];
      // A url that is not a string (["http://elsewhere/"]) is one to SDK clients, which String() it: never kept.
      if (typeof e.url !== 'string') return [];
      // A gRPC entry left pointing at the agent would lead around the proxy: it names the proxy's gRPC
      // listener when there is one (and the proxy carries that protocol version), else it goes.
      if (/^grpc$/i.test(String(e.protocolBinding ?? e.transport ?? ''))) {
        // A v0.3 card's additionalInterfaces carry no version of their own: the card's is theirs.
        const version = key === 'additionalInterfaces' && card.protocolVersion !== undefined ? { protocolVersion: card.protocolVersion } : {};
        return opts.grpcAddress !== undefined && isCarriedGrpcInterface({ ...version, ...e }) ? [{ ...e, url: opts.grpcAddress }] : [];
      }
      const u = rewriteEndpoint(e.url, opts);
      // An interface the proxy cannot carry (gRPC) is removed: leaving it would be a way around the proxy.
      return u === undefined ? [] : [{ ...e, url: u }];
    });
  }
  const mainIsGrpc = /^grpc$/i.test(String(card.preferredTransport ?? ''));
  const mainUnusable = typeof card.url === 'string' ? mainIsGrpc || rewriteEndpoint(card.url, opts) === undefined : 'url' in card;
  const grpcMain = { transport: 'GRPC', ...(card.protocolVersion === undefined ? {} : { protocolVersion: card.protocolVersion }) };
  if (mainIsGrpc && typeof card.url === 'string' && opts.grpcAddress !== undefined && isCarriedGrpcInterface(grpcMain)) {
    // v0.3 main endpoint on gRPC, which the proxy carries: its own gRPC listener.
    out.url = opts.grpcAddress;
  } else if (mainUnusable) {
    // v0.3 main endpoint on a binding the proxy does not carry (gRPC host:port): point it at the
    // first HTTP interface instead, so a client cannot be steered around the proxy.
    const alt = (Array.isArray(out.additionalInterfaces) ? out.additionalInterfaces : []).map(asObject).find((e) => typeof e?.url === 'string');
    if (alt !== undefined) {
      out.url = alt.url;
      if (typeof alt.transport === 'string') out.preferredTransport = alt.transport;
    } else delete out.url;
  }
  if (opts.signatures !== 'keep' && 'signatures' in out) delete out.signatures;
  return out;
}

/**
 * The card a caller is served: rewritten to point at the proxy, then signed by the proxy (or checked
 * first: CARD_SIGNATURES=require). undefined: refused (the agent's signature does not verify).
 * `caller`: whose share of the remembered signatures a new signature takes.
 */
export function cardToServe(given: CardJson, opts: RewriteOptions, caller?: string): CardJson | undefined {
  const out = rewriteCard(given, opts);
  return opts.signing === undefined ? out : opts.signing.vouch(given, out, opts.publicBase, caller);
}

/**
 * Cache-Control of a card rewritten from the request's Host (PUBLIC_URL unset): another Host gets other URLs,
 * so no shared cache may keep it (`private`), but the caller's own cache keeps the agent's freshness
 * (`max-age`), as it would without the proxy. Anything the proxy does not read stays uncached.
 */
export function hostBoundCacheControl(agent: string | string[] | undefined): string {
  const directives = (Array.isArray(agent) ? agent.join(',') : (agent ?? '')).split(',').map((d) => d.trim().toLowerCase());
  if (directives.includes('no-store')) return 'private, no-store';
  const maxAge = directives.map((d) => /^max-age\s*=\s*"?(\d{1,10})"?$/.exec(d)?.[1]).filter((v) => v !== undefined);
  if (directives.includes('no-cache') || maxAge.length !== 1) return 'private, no-cache';
  return `private, max-age=${Number(maxAge[0])}`;
}

export function weakEtag(body: Buffer): string {
  return `W/"${createHash('sha1').update(body).digest('base64url')}"`;
}

/** Members that say where to call an agent, as decoders read member names (fieldKey). */
const ROUTE_KEYS: ReadonlySet<string> = new Set(['url', 'supportedinterfaces', 'additionalinterfaces']);
/** Members only agent cards carry (the SDK takes an object with a string `url` and `protocolVersion` "0.3" as a v0.3 card). */
const CARD_ONLY_KEYS: ReadonlySet<string> = new Set([
  'supportedinterfaces',
  'additionalinterfaces',
  'preferredtransport',
  'protocolversion',
  'protocolversions',
  'skills',
  'capabilities',
  'defaultinputmodes',
  'defaultoutputmodes',
  'supportsauthenticatedextendedcard',
  'securityschemes',
  'securityrequirements',
]);

/** A member name as decoders read it (a C reader ends `url\u0000x` at the NUL). */
const cardKey = (k: string): string => fieldKey(CONTROL.test(k) ? k.replace(/[\u0000-\u001f\u007f][\s\S]*$/, '') : k);

/**
 * An object a card reader would take as an agent card: a member naming where to call the agent (`url`,
 * `supportedInterfaces`, `additionalInterfaces`, of any type: a first-match reader may see another value
 * of it) and a member only cards carry, in any spelling a decoder reads (a C reader ends `url\u0000x` at the NUL).
 */
export function looksLikeCard(o: JsonObject): boolean {
  let route = false;
  let only = false;
  for (const k of Object.keys(o)) {
    const key = cardKey(k);
    route ||= ROUTE_KEYS.has(key);
    only ||= CARD_ONLY_KEYS.has(key);
    if (route && only) return true;
  }
  return false;
}

/**
 * The least a v0.3 card reader follows (the SDK's A2AClient takes any object with a `url`): a `name`,
 * the member every card version has, and a route member naming the agent itself (`atAgent`), so JSON
 * that links elsewhere passes as it came.
 */
function looksLikeMinimalCard(o: JsonObject, atAgent: (url: string) => boolean): boolean {
  let route = false;
  let name = false;
  for (const [k, v] of Object.entries(o)) {
    const key = cardKey(k);
    name ||= key === 'name';
    if (!ROUTE_KEYS.has(key)) continue;
    const urls = Array.isArray(v) ? v.map((e) => (isObject(e) ? Object.entries(e).find(([ek]) => cardKey(ek) === 'url')?.[1] : undefined)) : [v];
    route ||= urls.some((u) => typeof u === 'string' && atAgent(u));
  }
  return route && name;
}

/**
 * Whether a URL could name the agent behind the proxy: the upstream's host, or an address only a
 * neighbour reaches (loopback, a private IP, a one-label or cluster-internal name). A link to a public
 * host that is not the upstream is taken as a link.
 */
export function agentAddress(raw: string, upstream: URL): boolean {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return false;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
  const verdict = classifyUrl(u);
  return verdict.host.toLowerCase() === upstream.hostname.toLowerCase().replace(/\.+$/, '') || verdict.class !== 'public';
}

/**
 * Where a JSON value holds an agent card: the value itself (`top`), somewhere inside it (`nested`: in an
 * array, or a member of another object), or nowhere. A card's own members are not searched. `atAgent`
 * says which URLs name the agent, for the minimal card.
 */
export function cardIn(value: unknown, atAgent: (url: string) => boolean = () => false): 'top' | 'nested' | undefined {
  if (isObject(value) && (looksLikeCard(value) || looksLikeMinimalCard(value, atAgent))) return 'top';
  return findInObjects(value, (o) => (looksLikeCard(o) ? 'nested' : undefined)) === undefined ? undefined : 'nested';
}

/** Card paths as lenient routers see them: any case, matrix parameters cut, one trailing slash. */
export function isCardPath(pathname: string): boolean {
  const p = pathname
    .toLowerCase()
    .replace(/;[^/]*/g, '')
    .replace(/\/$/, '');
  return p.endsWith('/.well-known/agent-card.json') || p.endsWith('/.well-known/agent.json');
}
