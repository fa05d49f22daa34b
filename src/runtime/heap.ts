/**
 * One V8 heuristic off for the proxy process: allocation-site pretenuring. V8 watches how many
 * objects made by each object or array literal survive a young-generation GC; above ~85 % it makes
 * that literal allocate in the old generation from then on, for good. During the first ~1,000 calls
 * of a start under load, while the young generation is still small, a few per-call literals reach
 * 100 % and are pretenured. Each call then puts objects in the old generation that point at its young
 * ones: the scavenger treats those pointers as live until the next full GC, so the whole object graph
 * of every call (request, response, undici's headers, the flow) survives two scavenges and is copied,
 * then promoted, then swept.
 *
 * Measured under the bench's unary load (10 connections, ROLE=server, GUARDIAN_URL; 2026-11-24,
 * `--trace-gc-nvp`, 8,000 calls): young-generation survival 15 % -> 0.7-0.9 % per scavenge, ~2 MB ->
 * 10-50 kB promoted per scavenge, full GCs 3 -> 1, the old generation no longer swelling from 13 to
 * 45 MB between them. CPU per call did not move measurably: instruction counts (valgrind, README
 * "Unary CPU, third pass") disagreed between pairs of runs, CPU under load 0.97x. A2A calls keep
 * nothing from one call to the next that pretenuring could place well.
 *
 * Process-wide, so the programs call this (src/main.ts) before the first call, as baselineHttpParser.
 * Unknown to a future V8, the setting is ignored (test/unit/heap.test.ts checks this node knows it).
 */
import { setFlagsFromString } from 'node:v8';

export const PRETENURING_FLAG = '--no-allocation-site-pretenuring';

export function noPretenuring(): void {
  setFlagsFromString(PRETENURING_FLAG);
}
