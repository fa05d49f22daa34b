/** The owner store the configuration names: Redis with TASK_STORE_URL (ioredis is loaded only then), else in memory. */
import type { Logger } from 'pino';
import type { OwnershipConfig } from '../config/config';
import { MemoryOwnerStore, type OwnerStore } from './store';
import { createRedisStore, redactUrl } from './redis';

export async function createOwnerStore(config: OwnershipConfig, logger: Logger, onEvict: (n: number) => void): Promise<OwnerStore> {
  if (config.storeUrl === undefined) {
    logger.info(
      { maxEntries: config.maxEntries, maxBytes: config.maxBytes, maxPerCaller: config.maxPerCaller, ttlSeconds: config.ttlSeconds },
      'task ownership on; owners kept in memory (one replica; TASK_STORE_URL shares them)',
    );
    return new MemoryOwnerStore({ ttlSeconds: config.ttlSeconds, maxEntries: config.maxEntries, maxBytes: config.maxBytes, onEvict });
  }
  logger.info(
    { store: redactUrl(config.storeUrl), prefix: config.prefix, maxPerCaller: config.maxPerCaller, ttlSeconds: config.ttlSeconds },
    'task ownership on; owners kept in Redis',
  );
  return createRedisStore({
    url: config.storeUrl,
    prefix: config.prefix,
    ttlSeconds: config.ttlSeconds,
    timeoutMs: config.timeoutMs,
    allowEviction: config.allowEviction,
    logger,
  });
}
