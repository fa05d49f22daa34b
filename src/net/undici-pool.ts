/**
 * The parts of undici the proxy uses, without the rest of undici. `require('undici')` loads fetch,
 * WebSocket, the cache and mock agents too (about 9 MB of resident memory at start); the proxy needs
 * Pool always, and Agent and buildConnector only when outbound TLS options are set. The module paths
 * are undici's own files for the names it exports (test/unit/undici-pool.test.ts checks that they
 * are the same objects, so an undici upgrade that moves them fails loudly). A/B in one `npm run bench`
 * (2026-11-29, docs/performance.md): CPU to the first served call 470 ms here, 560 ms with
 * `require('undici')` (16 %), RSS 58.9 vs 65.3 MB.
 */
import { setFlagsFromString } from 'node:v8';
import type { Agent, buildConnector, Dispatcher, Pool } from 'undici';

type PoolClass = typeof Pool;

const PoolCtor: PoolClass = require('undici/lib/dispatcher/pool');

export function createPool(origin: string, options: Pool.Options): Pool {
  return new PoolCtor(origin, options);
}

/** undici's Agent (card fetches with TLS options), loaded on first use. */
export function createAgent(options: Agent.Options): Agent {
  const AgentCtor: typeof Agent = require('undici/lib/dispatcher/agent');
  return new AgentCtor(options);
}

/** undici's buildConnector (outbound TLS), loaded on first use. */
export function leanBuildConnector(options: buildConnector.BuildOptions): buildConnector.connector {
  const build: typeof buildConnector = require('undici/lib/core/connect');
  return build(options);
}

export { PoolCtor as LeanPool };

/**
 * undici's own handler interface, the one its client calls for every request. The newer controller
 * interface (onRequestStart, onResponseStart...) is a wrapper over this one (lib/handler/unwrap-handler.js):
 * per request one more handler and controller object, the response headers parsed into an object, the
 * trailers too. callgrind, a small POST to a local server dispatched 6,000 times after 8,000 warm-up
 * calls: 171.6k -> 160.7k instructions per call with this interface (2026-11-24). Marked deprecated in
 * undici's types, not in its client: test/unit/undici-pool.test.ts checks a handler of this shape still
 * reaches the client as it is, so an upgrade that drops it fails loudly.
 */
export interface RawHandler {
  /** `abort` ends the request (no-op once it is over); may come again if undici retries on a new connection. */
  onConnect(abort: (err?: Error) => void): void;
  /** Also for 1xx informational answers. false pauses the body; `resume` lets it flow again. */
  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean;
  /** false pauses until `resume` (from onHeaders). */
  onData(chunk: Buffer): boolean;
  onComplete(trailers: Buffer[] | null): void;
  onError(err: Error): void;
}

export function dispatchRaw(pool: Dispatcher, options: Dispatcher.DispatchOptions, handler: RawHandler): void {
  pool.dispatch(options, handler as unknown as Dispatcher.DispatchHandler);
}

const util = require('undici/lib/core/util') as { bufferToLowerCasedHeaderName(raw: Buffer): string };

/** A raw response header name in lower case, as undici's own parsers name it (a lookup tree for the known names). */
export function headerNameOf(raw: Buffer): string {
  return util.bufferToLowerCasedHeaderName(raw);
}

/**
 * undici parses HTTP with llhttp compiled to WebAssembly, first by Liftoff (V8's baseline compiler),
 * then recompiled by TurboFan once V8's tiering budget for it is spent. At V8's default budget that is
 * at the first call: ~37 MB of compiler memory for a moment, of which the C allocator kept ~10 MB, a
 * sixth of an idle sidecar. Liftoff alone (the earlier setting, `--liftoff-only`) cost ~5 µs per call for
 * good (perf under the bench's load: 10.2 µs per call in the parser against 5.0 µs optimised). The budget
 * here (~1,100x the default, near its largest value) keeps a proxy on Liftoff for its first 100-300
 * calls (--trace-wasm-compilation-times, bench load; at 55x it was within 10): an idle sidecar keeps the
 * memory of Liftoff-only (RSS 2 s after its first call 60.2 / 59.8 MB against 60.1 / 61.4 MB), a busy one
 * gets the optimised parser for ~13 MB more (after 3,000 calls and 5 s idle: 93.1 / 94.0 MB against
 * 79.5 / 81.1 MB; 2026-11-24). A process-wide V8 setting, so the programs call this (src/main.ts),
 * never the library: before the first connection, when undici compiles the parser. Unknown to a future
 * V8, it is ignored (test/unit/heap.test.ts checks this node knows it).
 */
export const PARSER_TIERING_FLAG = '--wasm-tiering-budget=2000000000';

export function lateParserTierUp(): void {
  setFlagsFromString(PARSER_TIERING_FLAG);
}
