/**
 * The push relay's records: relay token -> the caller's webhook, its owner and task. Kept where task
 * ownership keeps its owners: in Redis when the owner store is Redis (replicas share them: a delivery
 * may arrive at any replica), else in memory. Each record lives the ownership TTL; one caller holds
 * at most `perCaller` of them (counted by the caller's fairness key), so no caller fills the store.
 */
import type * as IORedis from 'ioredis';
import type { PartialAgent } from '../../aos/schemas';
import type { CallerWebhook } from './configs';

export interface PushRecord {
  /** Task ownership's key of the caller that set the config. */
  readonly owner: string;
  /** The caller's fairness key (its share of records and of the delivery queue). */
  readonly caller: string;
  /** The task the config is for; undefined: a new task's (inline config of a first message), pinned at its first delivery. */
  readonly taskId: string | undefined;
  readonly webhook: CallerWebhook;
  /** The caller as the guardian saw it when it set the config: `to` of the delivery hooks. */
  readonly peer: PartialAgent;
}

export type PutResult = 'ok' | 'full';

export interface PushStore {
  put(token: string, record: PushRecord): Promise<PutResult>;
  get(token: string): Promise<PushRecord | undefined>;
  /** The record's task: its own, else `taskId` pinned now (first delivery wins). */
  pin(token: string, taskId: string): Promise<string | undefined>;
  delete(token: string): Promise<void>;
  /** Name a record by its caller, task and config id (what a delete names), for the record's lifetime. */
  alias(name: string, token: string): Promise<void>;
  /** The record key a name stands for. */
  named(name: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/** The name of a config as a delete call names it. */
export const configName = (owner: string, taskId: string, configId: string): string => JSON.stringify([owner, taskId, configId]);

interface Held {
  record: PushRecord;
  expires: number;
}

export class MemoryPushStore implements PushStore {
  private readonly records = new Map<string, Held>();
  private readonly perCallerCount = new Map<string, number>();
  private readonly names = new Map<string, string>();

  constructor(
    private readonly ttlSeconds: number,
    private readonly perCaller: number,
    private readonly now: () => number = Date.now,
  ) {}

  async put(token: string, record: PushRecord): Promise<PutResult> {
    this.sweep();
    const n = this.perCallerCount.get(record.caller) ?? 0;
    if (n >= this.perCaller) return 'full';
    this.records.set(token, { record, expires: this.now() + this.ttlSeconds * 1000 });
    this.perCallerCount.set(record.caller, n + 1);
    return 'ok';
  }

  async get(token: string): Promise<PushRecord | undefined> {
    const held = this.records.get(token);
    if (held === undefined) return undefined;
    if (held.expires <= this.now()) {
      this.drop(token, held);
      return undefined;
    }
    return held.record;
  }

  async pin(token: string, taskId: string): Promise<string | undefined> {
    const held = this.records.get(token);
    if (held === undefined) return undefined;
    if (held.record.taskId === undefined) held.record = { ...held.record, taskId };
    return held.record.taskId;
  }

  async delete(token: string): Promise<void> {
    const held = this.records.get(token);
    if (held !== undefined) this.drop(token, held);
  }

  async alias(name: string, token: string): Promise<void> {
    if (this.records.has(token)) this.names.set(name, token);
  }

  async named(name: string): Promise<string | undefined> {
    const token = this.names.get(name);
    if (token !== undefined && !this.records.has(token)) this.names.delete(name);
    return token !== undefined && this.records.has(token) ? token : undefined;
  }

  async close(): Promise<void> {
    this.records.clear();
    this.names.clear();
  }

  private drop(token: string, held: Held): void {
    this.records.delete(token);
    // A name of a dropped record goes with it (names are few: one per config shown).
    for (const [name, t] of this.names) if (t === token) this.names.delete(name);
    const n = (this.perCallerCount.get(held.record.caller) ?? 1) - 1;
    if (n <= 0) this.perCallerCount.delete(held.record.caller);
    else this.perCallerCount.set(held.record.caller, n);
  }

  /** Expired records go in insertion order (every record lives the same TTL). */
  private sweep(): void {
    const now = this.now();
    for (const [token, held] of this.records) {
      if (held.expires > now) break;
      this.drop(token, held);
    }
  }
}

/** Pin the task of a record once: HSETNX-like on a JSON string, atomic in Redis. */
const PIN = `
local raw = redis.call('GET', KEYS[1])
if not raw then return false end
local rec = cjson.decode(raw)
if rec.taskId == nil or rec.taskId == cjson.null then
  rec.taskId = ARGV[1]
  redis.call('SET', KEYS[1], cjson.encode(rec), 'KEEPTTL')
end
return rec.taskId`;

/** Add a token to its caller's set unless the caller is at its share (expired members dropped first). */
const PUT = `
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3] + ARGV[2], ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1`;

export class RedisPushStore implements PushStore {
  constructor(
    private readonly client: IORedis.Redis,
    private readonly prefix: string,
    private readonly ttlSeconds: number,
    private readonly perCaller: number,
  ) {}

  private key(token: string): string {
    return `${this.prefix}push:${token}`;
  }

  async put(token: string, record: PushRecord): Promise<PutResult> {
    const now = Math.floor(Date.now() / 1000);
    const ok = await this.client.eval(
      PUT,
      2,
      this.key(token),
      `${this.prefix}push-caller:${record.caller}`,
      JSON.stringify(record),
      String(this.ttlSeconds),
      String(now),
      String(this.perCaller),
      token,
    );
    return ok === 1 ? 'ok' : 'full';
  }

  async get(token: string): Promise<PushRecord | undefined> {
    const raw = await this.client.get(this.key(token));
    return raw === null ? undefined : (JSON.parse(raw) as PushRecord);
  }

  async pin(token: string, taskId: string): Promise<string | undefined> {
    const r = await this.client.eval(PIN, 1, this.key(token), taskId);
    return typeof r === 'string' ? r : undefined;
  }

  async delete(token: string): Promise<void> {
    await this.client.del(this.key(token));
  }

  async alias(name: string, token: string): Promise<void> {
    await this.client.set(`${this.prefix}push-name:${name}`, token, 'EX', this.ttlSeconds);
  }

  async named(name: string): Promise<string | undefined> {
    return (await this.client.get(`${this.prefix}push-name:${name}`)) ?? undefined;
  }

  async close(): Promise<void> {
    // The client is the owner store's: it closes it.
  }
}
