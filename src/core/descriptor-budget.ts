/**
 * The process's file descriptors as one budget that every pool of connections is inside. Past its soft limit the
 * next accept or connect fails with EMFILE, whoever's turn it is: a caller's connection is dropped, a guardian call
 * fails (fail-closed: a denial for a call that did nothing wrong). So the limit is split once, at start, between the
 * pools that hold many sockets, and each is bounded by its part:
 *
 *   - inbound: connections on the listeners (MAX_CONNECTIONS). Each counts twice: a call on it may hold a
 *     connection to the agent, and the agent's pools are bounded by the same number (net/caller-pools.ts);
 *   - guardian calls and guardian stream events (GUARDIAN_CALL_CONNECTIONS, GUARDIAN_STREAM_CONNECTIONS);
 *   - push deliveries to webhooks (the connections kept alive, and the deliveries in flight: push/deliver.ts).
 *
 * DESCRIPTOR_RESERVE is kept apart for what holds few: files, the listening sockets, Redis, the trace exporter, card
 * and key fetches, the guardian's pings, the gRPC session to the agent, admin connections.
 *
 * When the wanted parts do not fit, the largest is lowered first (water-filling): every part above a common level is
 * cut to it, the level as high as the room allows, and a part below it keeps all it asked for. The largest
 * configured value is the one furthest above what the others can serve (MAX_CONNECTIONS, 8192, is sized for memory,
 * not descriptors), and no part is cut below the level another keeps, so none is starved for the others: at 256
 * descriptors each gets 38 (inbound 38 + 38 to the agent), where cutting in proportion would leave each of the
 * guardian's pools 2 (and the listeners 90).
 */

/** Descriptors kept apart from the pools (see above). */
export const DESCRIPTOR_RESERVE = 64;

/** The fewest connections the listeners take whatever the limit (MAX_CONNECTIONS's own minimum). */
const MIN_INBOUND = 16;

/** How many connections each pool may open; 0: the pool is not in use (not counted). */
export interface DescriptorParts {
  readonly inbound: number;
  readonly guardianCall: number;
  readonly guardianStream: number;
  readonly push: number;
}

type Part = keyof DescriptorParts;

/** Descriptors one connection of the part costs (an inbound connection's call may hold one to the agent). */
const COST: Readonly<Record<Part, number>> = { inbound: 2, guardianCall: 1, guardianStream: 1, push: 1 };

const PARTS = Object.keys(COST) as Part[];

/** The soft limit of open files in the text of /proc/self/limits; undefined when unknown (not Linux). */
export function softFileLimit(limits: string | undefined): number | undefined {
  const soft = /^Max open files\s+(\d+)/m.exec(limits ?? '')?.[1];
  return soft === undefined ? undefined : Number(soft);
}

/** Descriptors `parts` take when each opens all it may. */
export function descriptorsOf(parts: DescriptorParts): number {
  return PARTS.reduce((sum, p) => sum + COST[p] * parts[p], 0);
}

/**
 * `wanted` within `soft` descriptors less the reserve: as wanted when it fits (or `soft` is unknown), else each part
 * above the highest level that fits is lowered to it. Every part in use keeps at least one connection (inbound
 * MIN_INBOUND), even under a limit too low for them all.
 */
export function descriptorBudget(wanted: DescriptorParts, soft: number | undefined): DescriptorParts {
  if (soft === undefined) return wanted;
  const room = soft - DESCRIPTOR_RESERVE;
  if (descriptorsOf(wanted) <= room) return wanted;
  const at = (level: number): Record<Part, number> => {
    const out = { ...wanted };
    for (const p of PARTS) out[p] = Math.min(wanted[p], level);
    return out;
  };
  // The highest level that fits: descriptorsOf(at(level)) grows with level.
  let low = 0;
  let high = Math.max(...PARTS.map((p) => wanted[p]));
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (descriptorsOf(at(mid)) <= room) low = mid;
    else high = mid - 1;
  }
  const bound = at(low);
  for (const p of PARTS) if (wanted[p] > 0) bound[p] = Math.max(bound[p], p === 'inbound' ? Math.min(MIN_INBOUND, wanted[p]) : 1);
  return bound;
}
