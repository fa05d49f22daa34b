/**
 * The parts of undici the proxy uses, without the rest of undici. `require('undici')` loads fetch,
 * WebSocket, the cache and mock agents too (about 9 MB of resident memory at start); the proxy needs
 * Pool always, and Agent and buildConnector only when outbound TLS options are set. The module paths
 * are undici's own files for the names it exports (test/unit/undici-pool.test.ts checks that they
 * are the same objects, so an undici upgrade that moves them fails loudly).
 */
import { setFlagsFromString } from 'node:v8';
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

/**
 * undici parses HTTP with llhttp compiled to WebAssembly. V8 recompiles llhttp's one large function
 * with its optimising compiler (TurboFan) as soon as it is hot, i.e. at the first call: ~37 MB of
 * compiler memory for a moment, of which the C allocator keeps ~10 MB for good, a sixth of an idle
 * proxy's memory. Liftoff, V8's baseline WebAssembly compiler, parses a call's few hundred bytes of
 * headers for ~6 µs more CPU per call (perf under load: 8.8 instead of 2.9 µs in the parser, ~1.5 %;
 * below the noise of the bench's load phase): ~10 MB of a sidecar for good against that. A
 * process-wide V8 setting, so the programs call this (src/main.ts), never the library: before the
 * first connection, when undici compiles the parser. Unknown to a future V8, it is ignored.
 */
export function baselineHttpParser(): void {
  setFlagsFromString('--liftoff-only');
}
