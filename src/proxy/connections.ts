/**
 * The connections both listeners accept, counted per caller (its address; IPv6 by its /64) within MAX_CONNECTIONS
 * (core/connection-shares.ts): an idle one is given up by the caller holding the most when the bound is reached.
 */
import fs from 'node:fs';
import type { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config/config';
import type { Metrics } from '../admin/metrics';
import { ConnectionShares, connectionBound } from '../core/connection-shares';
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

/** MAX_CONNECTIONS within this process's file descriptors (connectionBound). */
export function connectionLimit(config: Pick<Config, 'maxConnections'>): number {
  return connectionBound(config.maxConnections, procLimits());
}

export function createConnections(config: Pick<Config, 'maxConnections'>, logger: Logger, metrics: Pick<Metrics, 'callerLimited'>): Connections {
  const bound = connectionLimit(config);
  if (bound < config.maxConnections) {
    logger.warn(
      { configured: config.maxConnections, bound },
      'MAX_CONNECTIONS is above what this process may open (half its file descriptors): using the lower bound',
    );
  }
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
