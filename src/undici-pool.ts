/**
 * The parts of undici the proxy uses, without the rest of undici. `require('undici')` loads fetch,
 * WebSocket, the cache and mock agents too (about 9 MB of resident memory at start); the proxy needs
 * Pool always, and Agent and buildConnector only when outbound TLS options are set. The module paths
 * are undici's own files for the names it exports (test/unit/undici-pool.test.ts checks that they
 * are the same objects, so an undici upgrade that moves them fails loudly).
 */
import type { Agent, buildConnector, Pool } from 'undici';

type PoolClass = typeof Pool;

// eslint-disable-next-line @typescript-eslint/no-require-imports
const PoolCtor: PoolClass = require('undici/lib/dispatcher/pool');

export function createPool(origin: string, options: Pool.Options): Pool {
  return new PoolCtor(origin, options);
}

/** undici's Agent (card fetches with TLS options), loaded on first use. */
export function createAgent(options: Agent.Options): Agent {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const AgentCtor: typeof Agent = require('undici/lib/dispatcher/agent');
  return new AgentCtor(options);
}

/** undici's buildConnector (outbound TLS), loaded on first use. */
export function leanBuildConnector(options: buildConnector.BuildOptions): buildConnector.connector {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const build: typeof buildConnector = require('undici/lib/core/connect');
  return build(options);
}

export { PoolCtor as LeanPool };
