/**
 * One delivery to a caller's webhook, as the SDK's push sender makes it (POST, the delivered JSON,
 * `X-A2A-Notification-Token: <token>` or `Authorization: <scheme> <credentials>`), with the host
 * resolved now and every address it resolves to classified (core/address.ts): loopback,
 * private, link-local and metadata addresses are refused unless allowed (metadata never). The
 * connection goes to the address that was checked (undici's `connect.lookup` pinned to it), so a
 * name cannot resolve elsewhere between the check and the connect.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { Agent } from 'undici';

/** undici whole (its request API), loaded by the first delivery: a proxy without the push relay never loads it. */
const undici = (): typeof import('undici') => require('undici') as typeof import('undici');
import { classifyUrl } from '../../core/address';
import { FairGate } from '../../core/fair-gate';
import type { CallerWebhook } from './configs';

/** Resolve a host name to all its addresses (injectable: tests change the answer between set and delivery). */
export type Resolver = (host: string) => Promise<readonly LookupAddress[]>;

export const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (err, addrs) => (err ? reject(err) : resolve(addrs))));

export type DeliveryResult =
  | { readonly type: 'delivered'; readonly status: number; readonly address: string }
  | { readonly type: 'refused'; readonly why: string }
  /** `retry`: the webhook may take it later (5xx, 429, no connection). */
  | { readonly type: 'failed'; readonly why: string; readonly status?: number; readonly retry: boolean };

export interface DeliverOptions {
  readonly allowPrivate: boolean;
  readonly resolve: Resolver;
  readonly timeoutMs: number;
  readonly tokenHeader?: string;
  readonly dispatchers: PinnedDispatchers;
  /** The caller's fairness key: its share of the kept connections. */
  readonly caller: string;
}

/** The address to connect to, checked; or why the webhook is refused. */
export async function checkedAddress(url: URL, allowPrivate: boolean, resolve: Resolver): Promise<{ address: string; family: number } | { refused: string }> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { refused: `scheme ${url.protocol} is not http(s)` };
  if (url.username !== '' || url.password !== '') return { refused: 'webhook URL carries credentials' };
  const named = classifyUrl(url);
  if (named.class === 'metadata') return { refused: `host is a metadata endpoint (${named.range})` };
  if (named.class === 'private' && !allowPrivate) return { refused: `host is ${named.range}` };
  const host = named.host;
  let addrs: readonly LookupAddress[];
  if (isIP(host) !== 0) addrs = [{ address: host, family: isIP(host) }];
  else {
    try {
      addrs = await resolve(host);
    } catch (err) {
      return { refused: `host does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
    }
  }
  if (addrs.length === 0) return { refused: 'host resolves to no address' };
  // Every address the name has now is checked: a name that also points inside is refused, whichever the connect would take.
  for (const a of addrs) {
    const v = classifyUrl(new URL(`http://${a.family === 6 ? `[${a.address}]` : a.address}/`));
    if (v.class === 'metadata') return { refused: `host resolves to a metadata address (${a.address})` };
    if (v.class === 'private' && !allowPrivate) return { refused: `host resolves to a ${v.range} address (${a.address})` };
  }
  const first = addrs[0] as LookupAddress;
  return { address: first.address, family: first.family };
}

/** The headers the SDK's push sender sets for a config: authentication first, else the token. */
export function authHeaders(hook: CallerWebhook, tokenHeader = 'x-a2a-notification-token'): Record<string, string> {
  const scheme = hook.authentication?.scheme;
  const credentials = hook.authentication?.credentials;
  if (typeof scheme === 'string' && scheme !== '' && typeof credentials === 'string' && credentials !== '')
    return { authorization: `${scheme} ${credentials}` };
  if (hook.token !== undefined) return { [tokenHeader]: hook.token };
  return {};
}

export async function deliver(hook: CallerWebhook, body: string, contentType: string, opts: DeliverOptions): Promise<DeliveryResult> {
  let url: URL;
  try {
    url = new URL(hook.url);
  } catch {
    return { type: 'refused', why: 'webhook URL does not parse' };
  }
  const checked = await checkedAddress(url, opts.allowPrivate, opts.resolve);
  if ('refused' in checked) return { type: 'refused', why: checked.refused };
  const sent = await opts.dispatchers.inTurn(opts.caller, () => post(url, hook, body, contentType, checked, opts));
  return sent ?? { type: 'failed', why: 'push relay closed before the delivery went out', retry: false };
}

async function post(
  url: URL,
  hook: CallerWebhook,
  body: string,
  contentType: string,
  checked: { address: string; family: number },
  opts: DeliverOptions,
): Promise<DeliveryResult> {
  const pinned = opts.dispatchers.pinned(url, checked.address, checked.family, opts.caller);
  try {
    const res = await undici().request(url, {
      method: 'POST',
      dispatcher: pinned,
      headers: { 'content-type': contentType, ...authHeaders(hook, opts.tokenHeader) },
      body,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    await res.body.dump();
    const status = res.statusCode;
    if (status >= 200 && status < 300) return { type: 'delivered', status, address: checked.address };
    return { type: 'failed', why: `webhook answered HTTP ${status}`, status, retry: status >= 500 || status === 429 || status === 408 };
  } catch (err) {
    return { type: 'failed', why: `webhook unreachable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, retry: true };
  }
}

/** Connections one kept agent opens to its webhook at most. */
const AGENT_CONNECTIONS = 4;

/**
 * Connections per webhook origin and checked address, kept alive between deliveries (a new TCP and TLS
 * handshake per notification would be most of its cost). An agent connects only to the address it was
 * made for, so reuse never skips the check. Each caller holds at most `perCaller` of them (its own least
 * recently used go first), so one caller's many webhook origins never evict another's or take every
 * socket; past `max` in all, the caller holding the most gives up its least recently used.
 *
 * All of it opens at most `connections` at once (the push deliveries' part of the file descriptors,
 * core/descriptor-budget.ts): half to the agents kept (AGENT_CONNECTIONS each), half to deliveries in flight. An
 * agent given up lets its deliveries in flight finish, so they are bounded apart: past that many at once, the next
 * waits for a place, given round-robin by caller.
 */
export class PinnedDispatchers {
  /** Per caller, its agents in least-recently-used order. */
  private readonly byCaller = new Map<string, Map<string, Agent>>();
  private total = 0;
  /** Agents kept in all, and by one caller. */
  private readonly max: number;
  private readonly perCaller: number;
  private readonly inFlight: FairGate;
  private closed = false;

  /** `connections`: to every webhook at once (64 agents kept and 256 deliveries in flight by default); `perCaller`: agents one caller keeps. */
  constructor(connections = 512, perCaller = 8) {
    this.max = Math.max(1, Math.floor(connections / (2 * AGENT_CONNECTIONS)));
    this.perCaller = Math.min(perCaller, this.max);
    this.inFlight = new FairGate(Math.max(1, connections - this.max * AGENT_CONNECTIONS));
  }

  /** `send` once `caller` has a place for a delivery in flight; undefined when closed meanwhile. */
  async inTurn<T>(caller: string, send: () => Promise<T>): Promise<T | undefined> {
    const entered = this.inFlight.enter(caller);
    if (entered !== true) await entered;
    try {
      return this.closed ? undefined : await send();
    } finally {
      this.inFlight.leave();
    }
  }

  pinned(url: URL, address: string, family: number, caller: string): Agent {
    const key = `${url.origin}|${address}`;
    let mine = this.byCaller.get(caller);
    let agent = mine?.get(key);
    if (mine !== undefined && agent !== undefined) {
      mine.delete(key);
      mine.set(key, agent);
      return agent;
    }
    agent = new (undici().Agent)({
      connect: {
        lookup: (_host, options, cb) => {
          // undici asks with all: true on some paths: answer in the form asked for.
          if ((options as { all?: boolean }).all === true) (cb as unknown as (e: null, a: LookupAddress[]) => void)(null, [{ address, family }]);
          else cb(null, address, family);
        },
      },
      connections: AGENT_CONNECTIONS,
      keepAliveTimeout: 10_000,
    });
    if (mine === undefined) {
      mine = new Map();
      this.byCaller.set(caller, mine);
    }
    if (mine.size >= this.perCaller) this.evictOldest(caller, mine);
    else if (this.total >= this.max) this.evictFromLargest();
    mine.set(key, agent);
    this.total++;
    return agent;
  }

  /** Agents a caller holds (the share that bounds it). */
  held(caller: string): number {
    return this.byCaller.get(caller)?.size ?? 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.byCaller.values()].flatMap((m) => [...m.values()]);
    this.byCaller.clear();
    this.total = 0;
    await Promise.all(all.map((a) => a.destroy()));
  }

  private evictFromLargest(): void {
    let largest: [string, Map<string, Agent>] | undefined;
    for (const entry of this.byCaller) if (largest === undefined || entry[1].size > largest[1].size) largest = entry;
    if (largest !== undefined) this.evictOldest(largest[0], largest[1]);
  }

  private evictOldest(caller: string, mine: Map<string, Agent>): void {
    const first = mine.entries().next();
    if (first.done === true) return;
    const [key, old] = first.value;
    mine.delete(key);
    this.total--;
    if (mine.size === 0) this.byCaller.delete(caller);
    // close(), not destroy(): a delivery already on it finishes.
    void old.close();
  }
}
