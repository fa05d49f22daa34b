/**
 * The connections both listeners accept, counted per caller (its address; IPv6 by its /64) within MAX_CONNECTIONS
 * (core/connection-shares.ts): an idle one is given up by the caller holding the most when the bound is reached.
 * MAX_CONNECTIONS and the outbound pools' sizes are lowered at start to fit the process's file descriptors
 * (core/descriptor-budget.ts).
 */
import fs from 'node:fs';
import type { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { defaultGuardianCalls, type Config } from '../config/config';
import type { Metrics } from '../admin/metrics';
import { ConnectionShares } from '../core/connection-shares';
import { DESCRIPTOR_RESERVE, descriptorBudget, softFileLimit, type DescriptorParts } from '../core/descriptor-budget';
import { ANONYMOUS } from '../ownership/principal';
import { callerKey } from './callers';

export type Connections = ConnectionShares<Socket>;

/** What names a connection while it is open, on its TCP socket or on the TLS or HTTP/2 socket over it. */
export function connectionId(s: {
  readonly localPort?: number | undefined;
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}): string {
  return `${s.localPort ?? ''}|${s.remoteAddress ?? ''}|${s.remotePort ?? ''}`;
}

/** Log the connections given up or refused at most this often. */
const WARN_EVERY_MS = 10_000;

/** Configs already fitted to the descriptors: fitting again (main.ts, then startProxy) changes and logs nothing. */
const fitted = new WeakSet<Config>();

/** What each pool wants of the descriptors; 0 for a pool not in use (an embedded guardian, no stream checks, no push relay). */
function wantedParts(config: Config): DescriptorParts {
  const httpGuardian = config.guardianUrl !== undefined;
  return {
    inbound: config.maxConnections,
    guardianCall: httpGuardian ? config.guardianCallConnections : 0,
    guardianStream: httpGuardian && config.inspectResponses ? config.guardianStreamConnections : 0,
    push: config.push.relay && config.role !== 'client' ? config.push.connections : 0,
  };
}

const NAMES: Readonly<Record<keyof DescriptorParts, string>> = {
  inbound: 'MAX_CONNECTIONS',
  guardianCall: 'GUARDIAN_CALL_CONNECTIONS',
  guardianStream: 'GUARDIAN_STREAM_CONNECTIONS',
  push: 'push deliveries',
};

/** What `config`'s pools want, the soft limit in `limits`, the bounds they get within it, and the pools in use. */
function fit(config: Config, limits: string | undefined) {
  const wanted = wantedParts(config);
  const soft = softFileLimit(limits);
  const parts = (Object.keys(NAMES) as Array<keyof DescriptorParts>).filter((p) => wanted[p] > 0);
  return { wanted, soft, bound: descriptorBudget(wanted, soft), parts };
}

/**
 * `config` with MAX_CONNECTIONS, the guardian's connections and the push deliveries' lowered to fit this process's
 * file descriptors (core/descriptor-budget.ts), computed once; one warning names each value configured and the bound
 * in use when any was lowered. `limits`: the text of /proc/self/limits (read when not given).
 */
export function withinDescriptors(config: Config, logger: Logger, limits: string | undefined = procLimits()): Config {
  if (fitted.has(config)) return config;
  const { wanted, soft, bound, parts } = fit(config, limits);
  const used = (p: keyof DescriptorParts, configured: number): number => (wanted[p] === 0 ? configured : bound[p]);
  const guardianCall = used('guardianCall', config.guardianCallConnections);
  const out: Config = {
    ...config,
    maxConnections: bound.inbound,
    guardianCallConnections: guardianCall,
    guardianStreamConnections: used('guardianStream', config.guardianStreamConnections),
    perCaller: {
      ...config.perCaller,
      guardianCalls: config.perCaller.guardianCallsSet ? Math.min(config.perCaller.guardianCalls, guardianCall) : defaultGuardianCalls(guardianCall),
    },
    push: { ...config.push, connections: used('push', config.push.connections) },
  };
  fitted.add(out);
  if (parts.some((p) => bound[p] < wanted[p])) {
    logger.warn(
      {
        fileDescriptors: soft,
        reserve: DESCRIPTOR_RESERVE,
        configured: Object.fromEntries(parts.map((p) => [NAMES[p], wanted[p]])),
        bound: Object.fromEntries(parts.map((p) => [NAMES[p], bound[p]])),
      },
      "the connections configured need more file descriptors than this process may open (MAX_CONNECTIONS twice: each call's connection to the agent): the largest lowered to fit",
    );
  }
  return out;
}

/** For --check: the connections each pool in use may open within this process's file descriptors, and what was configured. */
export function descriptorsLine(config: Config, limits: string | undefined = procLimits()): string {
  const { wanted, soft, bound, parts } = fit(config, limits);
  const each = parts.map((p) => `${NAMES[p]} ${bound[p]}${bound[p] < wanted[p] ? ` (configured ${wanted[p]})` : ''}`).join(', ');
  if (soft === undefined) return `# connections: ${each} (file descriptor limit unknown)`;
  return `# connections within ${soft} file descriptors (${DESCRIPTOR_RESERVE} kept apart): ${each}`;
}

/** The listeners' connections, at most MAX_CONNECTIONS of `config` (fitted: withinDescriptors); the bounds of every pool in use shown. */
export function createConnections(config: Config, logger: Logger, metrics: Pick<Metrics, 'callerLimited' | 'connectionBounds'>): Connections {
  const bound = config.maxConnections;
  showBounds(config, metrics);
  let lastWarn = 0;
  let givenUp = 0;
  const shares = new ConnectionShares<Socket>(bound, (s) => {
    metrics.callerLimited.inc({ resource: 'connections' });
    givenUp++;
    s.destroy();
    const now = Date.now();
    if (now - lastWarn >= WARN_EVERY_MS) {
      lastWarn = now;
      logger.warn({ bound, givenUp }, 'connections at MAX_CONNECTIONS: idle connections of the caller holding the most were closed');
      givenUp = 0;
    }
  });
  return shares;
}

/** a2a_guard_connection_bounds: the pools in use, with the bounds they were given. */
function showBounds(config: Config, metrics: Pick<Metrics, 'connectionBounds'>): void {
  const wanted = wantedParts(config);
  const pools: Array<[string, number, number]> = [
    ['listeners', config.maxConnections, wanted.inbound],
    ['agent', config.maxConnections, wanted.inbound],
    ['guardian_call', config.guardianCallConnections, wanted.guardianCall],
    ['guardian_stream', config.guardianStreamConnections, wanted.guardianStream],
    ['push', config.push.connections, wanted.push],
  ];
  for (const [pool, bound, used] of pools) if (used > 0) metrics.connectionBounds.set({ pool }, bound);
}

/** Every connection `server` accepts is counted, and refused when its caller holds the most and none of them is idle. */
export function shareConnections(server: EventEmitter, connections: Connections, metrics: Pick<Metrics, 'callerLimited'>, ipv6Prefix: number): void {
  server.on('connection', (socket: Socket) => {
    const id = connectionId(socket);
    if (connections.open(id, socket, callerKey(ANONYMOUS, socket.remoteAddress, ipv6Prefix)) === 'refused') {
      metrics.callerLimited.inc({ resource: 'connections' });
      return void socket.destroy();
    }
    socket.once('close', () => connections.closed(id, socket));
  });
}

function procLimits(): string | undefined {
  try {
    return fs.readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return undefined;
  }
}
