/** The push relay as the configuration asks: its records where task ownership keeps owners (Redis shares them), its listener open. */
import type { OwnerStore } from '../../ownership/store';
import { RedisOwnerStore } from '../../ownership/redis';
import { PushRelay, type PushRelayDeps } from './relay';
import { MemoryPushStore, RedisPushStore } from './store';

export async function startPushRelay(deps: Omit<PushRelayDeps, 'store'>, owners: OwnerStore | undefined): Promise<PushRelay> {
  const { config } = deps;
  const store =
    owners instanceof RedisOwnerStore
      ? new RedisPushStore(owners.client, config.ownership.prefix, config.ownership.ttlSeconds, config.push.configsPerCaller)
      : new MemoryPushStore(config.ownership.ttlSeconds, config.push.configsPerCaller);
  const relay = new PushRelay({ ...deps, store });
  await relay.listen();
  return relay;
}
