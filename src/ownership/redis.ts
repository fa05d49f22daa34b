/**
 * Task owners in Redis, shared by the replicas of one agent's sidecar (TASK_STORE_URL=redis://...).
 *
 * - claim: `SET key owner NX EX ttl` then `GET key`, in one MULTI (atomic, one round trip): the
 *   first owner wins on every replica, and another identity never overwrites it.
 * - owners: one `MGET`.
 * - sharedSecret: `SET <prefix>s:page-token-secret <random> NX` then `GET`, in one MULTI: the first
 *   replica's secret is everyone's, so a page token sealed by one replica opens on every other.
 *   Cached; looked up again (at most every 5 s) when a token does not open, and a replica that
 *   still holds the secret offers it, so a secret lost with Redis's data comes back as it was.
 * - Bounded: every command fails after `timeoutMs` (ioredis commandTimeout); while the connection is
 *   down, commands fail at once instead of queueing (enableOfflineQueue off), so a call never waits
 *   on an outage and FAIL_MODE decides. The client reconnects in the background.
 *
 * ioredis is loaded only when a Redis store is configured.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type * as IORedis from 'ioredis';
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

export class RedisOwnerStore implements OwnerStore {
  readonly kind = 'redis';
  private up = false;
  private secret: Buffer | undefined;
  private secretCheckedAt = -Infinity;
  private secretLookup: Promise<Buffer> | undefined;

  constructor(private readonly client: IORedis.Redis, private readonly opts: RedisStoreOptions) {
    const where = redactUrl(opts.url);
    client.on('ready', () => {
      if (!this.up) opts.logger.info({ store: where }, 'task store connected');
      this.up = true;
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

  async owners(keys: readonly string[]): Promise<(Owner | undefined)[]> {
    if (keys.length === 0) return [];
    const values = await this.client.mget(keys.map((k) => this.opts.prefix + k));
    return values.map((v) => v ?? undefined);
  }

  async claim(keys: readonly string[], owner: Owner): Promise<Owner[]> {
    if (keys.length === 0) return [];
    const tx = this.client.multi();
    for (const k of keys) {
      const key = this.opts.prefix + k;
      tx.set(key, owner, 'EX', this.opts.ttlSeconds, 'NX');
      tx.get(key);
    }
    const replies = await tx.exec();
    if (replies === null) throw new Error('task store transaction aborted');
    return keys.map((k, i) => {
      const [err, value] = replies[2 * i + 1] ?? [new Error('missing reply'), null];
      if (err !== null) throw err;
      // A binding that expired between SET and GET (ttl of seconds) cannot happen in one MULTI.
      if (typeof value !== 'string') throw new Error(`task store returned no owner for ${k.slice(0, 2)}...`);
      return value;
    });
  }

  sharedSecret(refresh: boolean): Promise<Buffer> {
    const cached = this.secret;
    if (cached !== undefined && (!refresh || monotonicMs() - this.secretCheckedAt < (this.opts.secretRecheckMs ?? SECRET_RECHECK_MS))) return Promise.resolve(cached);
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

export async function createRedisStore(opts: RedisStoreOptions): Promise<RedisOwnerStore> {
  const { Redis } = require('ioredis') as typeof IORedis;
  const client = new Redis(opts.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: opts.timeoutMs,
    connectTimeout: Math.max(1000, opts.timeoutMs),
    // Reconnect quickly after an outage, at most every 2 s.
    retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
  });
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
  if (client.status !== 'ready') opts.logger.warn({ store: redactUrl(opts.url) }, 'task store not reachable at start; calls that need it follow FAIL_MODE until it is');
  // Fetched now so that the first list answer does not wait for it (else on first use).
  else await store.sharedSecret(false).catch(() => undefined);
  return store;
}
