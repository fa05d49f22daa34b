/**
 * Task owners in Redis, shared by the replicas of one agent's sidecar (TASK_STORE_URL=redis://...).
 *
 * - A binding's value is its owner; a provisional one (./store.ts) `~<calls>~<owner>`. Each write is
 *   one Lua script (atomic, one round trip): the first owner wins on every replica, and another
 *   identity never overwrites it.
 *   - claim: per key, bind it (unbound, or held provisionally by the same owner) for the full TTL;
 *     the owner's new bindings are counted in slices of the TTL (`o:<owner>:<slice>`), and the
 *     script returns the owner's count (`held`).
 *   - provisional / renew / release: the same with the call count in the value, a short TTL.
 * - owners: one `MGET`.
 * - sharedSecret: `SET <prefix>s:page-token-secret <random> NX` then `GET`, in one MULTI: the first
 *   replica's secret is everyone's, so a page token sealed by one replica opens on every other.
 *   Cached; looked up again (at most every 5 s) when a token does not open, and a replica that
 *   still holds the secret offers it, so a secret lost with Redis's data comes back as it was.
 * - Assertion ids (identity/replay.ts): `r:<hash of key id and jti>`, `SET NX` with the assertion's
 *   remaining lifetime, each key's ids counted in slices (`rn:<hash of key id>:<slice>`).
 * - Eviction would drop bindings silently (a task "not found" to its owner, a context anyone can
 *   join): at every connection the server's `maxmemory-policy` must be `noeviction`, unless
 *   TASK_STORE_ALLOW_EVICTION says the operator accepts it (checkEviction).
 * - Bounded: every command fails after `timeoutMs` (ioredis commandTimeout); while the connection is
 *   down, commands fail at once instead of queueing (enableOfflineQueue off), so a call never waits
 *   on an outage and FAIL_MODE decides. The client reconnects in the background.
 *
 * ioredis is loaded only when a Redis store is configured.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type * as IORedis from 'ioredis';
import { StartupError } from '../credentials/files';
import type { OwnerStore } from './store';
import type { Owner } from './principal';
import { monotonicMs } from '../core/clock';

export interface RedisStoreOptions {
  /** redis:// or rediss:// URL (credentials in it are never logged). */
  readonly url: string;
  /** Prepended to every key: one prefix per agent when several agents share a Redis. */
  readonly prefix: string;
  readonly ttlSeconds: number;
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** The operator accepts a `maxmemory-policy` that evicts keys (TASK_STORE_ALLOW_EVICTION). */
  readonly allowEviction?: boolean;
  /** How long start-up waits for the first connection before going on without it. */
  readonly connectWaitMs?: number;
  /** The page-token secret is looked up again at most this often (default 5 s; tests). */
  readonly secretRecheckMs?: number;
}

/** The URL without user name and password, for logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.href;
  } catch {
    return 'redis://(unparsable)';
  }
}

const SECRET_KEY = 's:page-token-secret';
const SECRET_RECHECK_MS = 5000;
/** How long a count from the last confirmed binding stands for the owner's holding (held). */
const HELD_FRESH_MS = 60_000;
const HELD_OWNERS = 10_000;
/** The longest an assertion id is kept (its lifetime, at most 60 s, and the clock tolerance on both ends). */
const REPLAY_WINDOW_S = 75;

/** Values of provisional bindings: `~<calls>~<owner>` (no owner key starts with `~`). */
const LUA_HELD = `local function held(v) local c, o = string.match(v, '^~(%d+)~(.*)$') return tonumber(c), o end`;

/** KEYS: the bindings, then the owner's slice counters (current first). ARGV: owner, ttl, bindings, counter ttl. */
const CLAIM = `${LUA_HELD}
local owner, n = ARGV[1], tonumber(ARGV[3])
local out, added = {}, 0
for i = 1, n do
  local v = redis.call('GET', KEYS[i])
  local c, o = nil, nil
  if v then c, o = held(v) end
  if (not v) or o == owner then
    redis.call('SET', KEYS[i], owner, 'EX', ARGV[2])
    added = added + 1
    out[i] = owner
  else
    out[i] = o or v
  end
end
if added > 0 then
  redis.call('INCRBY', KEYS[n + 1], added)
  redis.call('EXPIRE', KEYS[n + 1], ARGV[4])
end
local total = 0
for i = n + 1, #KEYS do total = total + (tonumber(redis.call('GET', KEYS[i])) or 0) end
out[n + 1] = total
return out`;

/** KEYS: the bindings. ARGV: owner, ttl. */
const PROVISIONAL = `${LUA_HELD}
local owner = ARGV[1]
local out = {}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if not v then
    redis.call('SET', KEYS[i], '~1~' .. owner, 'EX', ARGV[2])
    out[i] = owner
  else
    local c, o = held(v)
    if o == owner then
      redis.call('SET', KEYS[i], '~' .. (c + 1) .. '~' .. owner, 'EX', math.max(tonumber(ARGV[2]), redis.call('TTL', KEYS[i])))
      out[i] = owner
    else
      out[i] = o or v
    end
  end
end
return out`;

/** KEYS: the bindings. ARGV: owner, ttl. */
const RENEW = `${LUA_HELD}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    local c, o = held(v)
    if o == ARGV[1] and redis.call('TTL', KEYS[i]) < tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[i], ARGV[2]) end
  end
end
return 0`;

/** KEYS: the bindings. ARGV: owner. */
const RELEASE = `${LUA_HELD}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    local c, o = held(v)
    if o == ARGV[1] then
      if c <= 1 then redis.call('DEL', KEYS[i]) else redis.call('SET', KEYS[i], '~' .. (c - 1) .. '~' .. o, 'KEEPTTL') end
    end
  end
end
return 0`;

/** KEYS: the assertion id, then its key's slice counters (current first). ARGV: id ttl, share, counter ttl. */
const REPLAY = `if redis.call('EXISTS', KEYS[1]) == 1 then return 'replayed' end
local n = 0
for i = 2, #KEYS do n = n + (tonumber(redis.call('GET', KEYS[i])) or 0) end
if n >= tonumber(ARGV[2]) then return 'full' end
redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 'fresh'`;

/**
 * Counters of what was added in the last `windowSeconds`, in slices: the keys of the slices that
 * window overlaps, the current one first, and how long a slice's counter must live. Something added
 * counts until its slice has left the window: at most one slice longer than it lives.
 */
export function sliceCounters(base: string, nowSeconds: number, windowSeconds: number, slices = 8): { keys: string[]; ttlSeconds: number } {
  const slice = Math.max(1, Math.ceil(windowSeconds / slices));
  const current = Math.floor(nowSeconds / slice);
  return { keys: Array.from({ length: slices + 1 }, (_, i) => `${base}${current - i}`), ttlSeconds: (slices + 2) * slice };
}

const digest = (text: string): string => createHash('sha256').update(text).digest('base64url');

type Script = (keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;

/** A Lua script run by its hash (EVALSHA, loaded on first use by ioredis). */
function script(client: IORedis.Redis, name: string, lua: string): Script {
  client.defineCommand(name, { lua });
  const run = (client as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>)[name] as (...a: (string | number)[]) => Promise<unknown>;
  return (keys, args) => run.call(client, keys.length, ...keys, ...args);
}

/** Policies that evict keys with a TTL (every key of this store has one): all but noeviction. */
export const evicts = (policy: string): boolean => policy !== 'noeviction';

export class RedisOwnerStore implements OwnerStore {
  readonly kind = 'redis';
  private up = false;
  private secret: Buffer | undefined;
  private secretCheckedAt = -Infinity;
  private secretLookup: Promise<Buffer> | undefined;
  /** Owner -> its count from the last confirmed binding, and when. */
  private readonly counts = new Map<Owner, { n: number; at: number }>();
  /** The server evicts keys and the operator did not accept it: every command refused. */
  private evicting: string | undefined;
  /** Start-up has checked the policy (or found no server): later connections check it again. */
  watching = false;
  private readonly scripts: Record<'claim' | 'provisional' | 'renew' | 'release' | 'replay', Script>;

  constructor(
    readonly client: IORedis.Redis,
    private readonly opts: RedisStoreOptions,
  ) {
    const where = redactUrl(opts.url);
    this.scripts = {
      claim: script(client, 'a2aGuardClaim', CLAIM),
      provisional: script(client, 'a2aGuardProvisional', PROVISIONAL),
      renew: script(client, 'a2aGuardRenew', RENEW),
      release: script(client, 'a2aGuardRelease', RELEASE),
      replay: script(client, 'a2aGuardReplay', REPLAY),
    };
    client.on('ready', () => {
      if (!this.up) opts.logger.info({ store: where }, 'task store connected');
      this.up = true;
      // A server replaced behind the same address may come with another policy.
      if (this.watching) void this.checkEviction().catch(() => undefined);
    });
    // ioredis reports every failed reconnect; say it once per outage.
    client.on('error', (err: Error) => {
      if (this.up) opts.logger.warn({ store: where, err: err.message }, 'task store unreachable; calls that need it follow FAIL_MODE');
      this.up = false;
    });
    client.on('close', () => {
      if (this.up) opts.logger.warn({ store: where }, 'task store connection closed; calls that need it follow FAIL_MODE');
      this.up = false;
    });
  }

  /** Connected now (for readiness). */
  get connected(): boolean {
    return this.client.status === 'ready';
  }

  /**
   * The server's `maxmemory-policy`: anything but noeviction drops bindings silently when Redis is
   * full. Refused (every command fails, FAIL_MODE decides) unless the operator allowed it; a server
   * that does not let us read its configuration (managed Redis) gets a warning. Returns the policy
   * (`atStart`: the caller refuses to start instead of logging it).
   */
  async checkEviction(atStart = false): Promise<string | undefined> {
    const where = redactUrl(this.opts.url);
    let policy: string | undefined;
    try {
      const reply = (await this.client.call('CONFIG', 'GET', 'maxmemory-policy')) as unknown;
      policy = Array.isArray(reply) && typeof reply[1] === 'string' ? reply[1] : undefined;
    } catch (err) {
      if (!this.up) throw err;
      this.opts.logger.warn(
        { store: where, err: (err as Error).message },
        'task store: cannot read maxmemory-policy (CONFIG GET refused); make sure it is noeviction, or bindings are dropped silently when Redis is full',
      );
      return undefined;
    }
    if (policy === undefined || !evicts(policy)) {
      this.evicting = undefined;
      return policy;
    }
    if (this.opts.allowEviction === true) {
      this.opts.logger.warn(
        { store: where, policy },
        'task store evicts keys when full (TASK_STORE_ALLOW_EVICTION=true): an evicted binding makes its task "not found" to its owner and its context free for anyone to join; size maxmemory so that it never fills',
      );
      return policy;
    }
    if (this.evicting !== policy && !atStart)
      this.opts.logger.error(
        { store: where, policy },
        'task store evicts keys when full (maxmemory-policy): refused; set it to noeviction (or TASK_STORE_ALLOW_EVICTION=true)',
      );
    this.evicting = policy;
    return policy;
  }

  private usable(): void {
    if (this.evicting !== undefined) throw new Error(`task store refused: its maxmemory-policy ${this.evicting} evicts bindings`);
  }

  async owners(keys: readonly string[]): Promise<(Owner | undefined)[]> {
    if (keys.length === 0) return [];
    this.usable();
    const values = await this.client.mget(keys.map((k) => this.opts.prefix + k));
    return values.map((v) => (v === null ? undefined : ownerOf(v)));
  }

  async claim(keys: readonly string[], owner: Owner): Promise<Owner[]> {
    if (keys.length === 0) return [];
    this.usable();
    const counters = sliceCounters(`${this.opts.prefix}o:${owner}:`, Date.now() / 1000, this.opts.ttlSeconds);
    const reply = await this.scripts.claim(
      [...keys.map((k) => this.opts.prefix + k), ...counters.keys],
      [owner, this.opts.ttlSeconds, keys.length, counters.ttlSeconds],
    );
    const out = this.ownersIn(reply, keys.length, 1);
    this.noteHeld(owner, Number((reply as unknown[])[keys.length]));
    return out;
  }

  async provisional(keys: readonly string[], owner: Owner, ttlSeconds: number): Promise<Owner[]> {
    if (keys.length === 0) return [];
    this.usable();
    return this.ownersIn(
      await this.scripts.provisional(
        keys.map((k) => this.opts.prefix + k),
        [owner, ttlSeconds],
      ),
      keys.length,
    );
  }

  async renew(keys: readonly string[], owner: Owner, ttlSeconds: number): Promise<void> {
    if (keys.length === 0) return;
    this.usable();
    await this.scripts.renew(
      keys.map((k) => this.opts.prefix + k),
      [owner, ttlSeconds],
    );
  }

  async release(keys: readonly string[], owner: Owner): Promise<void> {
    if (keys.length === 0) return;
    this.usable();
    await this.scripts.release(
      keys.map((k) => this.opts.prefix + k),
      [owner],
    );
  }

  held(owner: Owner): number | undefined {
    const c = this.counts.get(owner);
    if (c === undefined) return undefined;
    if (monotonicMs() - c.at < HELD_FRESH_MS) return c.n;
    this.counts.delete(owner);
    return undefined;
  }

  private noteHeld(owner: Owner, n: number): void {
    if (!Number.isFinite(n)) return;
    if (this.counts.size >= HELD_OWNERS && !this.counts.has(owner)) this.counts.clear();
    this.counts.set(owner, { n, at: monotonicMs() });
  }

  /** The owners a script answered for `n` keys (followed by `extra` other values). */
  private ownersIn(reply: unknown, n: number, extra = 0): Owner[] {
    if (!Array.isArray(reply) || reply.length !== n + extra) throw new Error('task store returned an unexpected reply');
    return reply.slice(0, n).map((v: unknown) => {
      if (typeof v !== 'string') throw new Error('task store returned no owner');
      return v;
    });
  }

  /**
   * Record assertion `jti` of key `kid` until `expiresAt` (epoch s), one use across every replica;
   * the key may hold `share` live ids (identity/replay.ts).
   */
  async recordAssertion(kid: string, jti: string, expiresAt: number, share: number): Promise<'fresh' | 'replayed' | 'full'> {
    this.usable();
    const now = Date.now() / 1000;
    const ttl = Math.max(1, Math.ceil(expiresAt - now));
    const counters = sliceCounters(`${this.opts.prefix}rn:${digest(kid)}:`, now, REPLAY_WINDOW_S);
    const verdict = await this.scripts.replay([this.assertionKey(kid, jti), ...counters.keys], [ttl, share, counters.ttlSeconds]);
    if (verdict !== 'fresh' && verdict !== 'replayed' && verdict !== 'full') throw new Error('replay store returned an unexpected reply');
    return verdict;
  }

  /** Assertion `jti` of key `kid` was recorded and has not expired. */
  async assertionSeen(kid: string, jti: string): Promise<boolean> {
    this.usable();
    return (await this.client.exists(this.assertionKey(kid, jti))) === 1;
  }

  private assertionKey(kid: string, jti: string): string {
    return `${this.opts.prefix}r:${digest(JSON.stringify([kid, jti]))}`;
  }

  sharedSecret(refresh: boolean): Promise<Buffer> {
    const cached = this.secret;
    if (cached !== undefined && (!refresh || monotonicMs() - this.secretCheckedAt < (this.opts.secretRecheckMs ?? SECRET_RECHECK_MS)))
      return Promise.resolve(cached);
    // A failed second look keeps the secret already held.
    return (this.secretLookup ??= this.lookUpSecret()
      .catch((err: unknown) => {
        if (this.secret !== undefined) return this.secret;
        throw err;
      })
      .finally(() => {
        this.secretLookup = undefined;
      }));
  }

  private async lookUpSecret(): Promise<Buffer> {
    this.usable();
    const key = this.opts.prefix + SECRET_KEY;
    const offer = (this.secret ?? randomBytes(32)).toString('base64');
    const replies = await this.client.multi().set(key, offer, 'NX').get(key).exec();
    const [err, value] = replies?.[1] ?? [new Error('task store transaction aborted'), null];
    if (err !== null) throw err;
    const secret = typeof value === 'string' ? Buffer.from(value, 'base64') : Buffer.alloc(0);
    if (secret.length < 32) throw new Error(`task store key ${SECRET_KEY} holds no usable secret`);
    this.secret = secret;
    this.secretCheckedAt = monotonicMs();
    return secret;
  }

  async close(): Promise<void> {
    this.client.removeAllListeners('error');
    this.client.on('error', () => undefined);
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

/** The owner a binding's value names (a provisional one: after its call count). */
function ownerOf(value: string): Owner {
  const m = /^~\d+~/.exec(value);
  return m === null ? value : value.slice(m[0].length);
}

/**
 * A client of the proxy's Redis (TASK_STORE_URL): every command fails after `timeoutMs`, and fails at
 * once while the connection is down (no offline queue), so no call waits on an outage.
 */
export function redisClient(url: string, timeoutMs: number): IORedis.Redis {
  const { Redis } = require('ioredis') as typeof IORedis;
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(1000, timeoutMs),
    // Reconnect quickly after an outage, at most every 2 s.
    retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
  });
}

export async function createRedisStore(opts: RedisStoreOptions): Promise<RedisOwnerStore> {
  const client = redisClient(opts.url, opts.timeoutMs);
  const store = new RedisOwnerStore(client, opts);
  // Start-up waits briefly for the first connection; after that the store's state is what FAIL_MODE acts on.
  const wait = opts.connectWaitMs ?? 3000;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      client.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, wait);
    timer.unref();
    if (client.status === 'ready') done();
    else client.once('ready', done);
  });
  store.watching = true;
  if (client.status !== 'ready') {
    opts.logger.warn(
      { store: redactUrl(opts.url) },
      'task store not reachable at start; calls that need it follow FAIL_MODE until it is (its maxmemory-policy is checked when it is)',
    );
    return store;
  }
  const policy = await store.checkEviction(true).catch(() => undefined);
  if (policy !== undefined && evicts(policy) && opts.allowEviction !== true) {
    await store.close();
    throw new StartupError(
      `TASK_STORE_URL: the Redis server's maxmemory-policy is ${policy}, which evicts keys when it is full: a task binding dropped that way makes the task "not found" to its owner and lets anyone join its context. Set maxmemory-policy noeviction (and size maxmemory: README "Store"), or TASK_STORE_ALLOW_EVICTION=true to accept it`,
    );
  }
  // Fetched now so that the first list answer does not wait for it (else on first use).
  await store.sharedSecret(false).catch(() => undefined);
  return store;
}
