/**
 * Connections counted per caller as they are accepted: an IPv6 caller is its /64, however many of its addresses it uses.
 * The pools of connections in use fitted to the process's file descriptors.
 */
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import pino, { type Logger } from 'pino';
import { configFrom } from '../../../src/config/config';
import { ConnectionShares } from '../../../src/core/connection-shares';
import { descriptorsLine, shareConnections, withinDescriptors } from '../../../src/proxy/connections';

/** An accepted connection as the listener's 'connection' event hands it over. */
function accepted(remoteAddress: string, remotePort: number): Socket & { destroyed: boolean } {
  const s = Object.assign(new EventEmitter(), { remoteAddress, remotePort, localPort: 8443, destroyed: false });
  return Object.assign(s, { destroy: () => void (s.destroyed = true) }) as unknown as Socket & { destroyed: boolean };
}

test("addresses of one /64 hold one caller's share of the connections: past half the bound, the /64's own oldest is given up", () => {
  const shares = new ConnectionShares<Socket>(4, (s) => void s.destroy());
  const server = new EventEmitter();
  shareConnections(server, shares, { callerLimited: { inc: () => undefined } } as never, 64);
  const other = accepted('2001:db8:9:9::1', 1);
  const mine = ['2001:db8:1:2::a', '2001:db8:1:2::b', '2001:db8:1:2:ffff::c'].map((a, i) => accepted(a, 100 + i));
  for (const s of [other, ...mine]) server.emit('connection', s);
  expect(shares.heldBy('addr:2001:db8:1:2::/64')).toBe(2);
  expect(mine.map((s) => s.destroyed)).toEqual([true, false, false]);
  expect(other.destroyed).toBe(false);
  expect(shares.heldBy('addr:2001:db8:9:9::/64')).toBe(1);
});

/** A logger whose lines are kept, parsed. */
function keptLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  return { logger, lines };
}

const limits = (soft: number): string => `Max open files            ${soft}                 ${soft}                 files\n`;
const BASE = { UPSTREAM_URL: 'http://127.0.0.1:1', GUARDIAN_URL: 'http://127.0.0.1:2' };

test('under a low descriptor limit the pools in use are lowered to fit, with one warning naming each configured value and its bound', () => {
  const { logger, lines } = keptLogger();
  const config = configFrom({ ...BASE, INSPECT_RESPONSES: 'true', ROLE: 'server' });
  const fitted = withinDescriptors(config, logger, limits(256));
  expect([fitted.maxConnections, fitted.guardianCallConnections, fitted.guardianStreamConnections, fitted.push.connections]).toEqual([38, 38, 38, 38]);
  // A caller's share of the guardian's calls follows the connections in use (a quarter) when it was not set.
  expect(fitted.perCaller.guardianCalls).toBe(9);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({
    fileDescriptors: 256,
    configured: { MAX_CONNECTIONS: 8192, GUARDIAN_CALL_CONNECTIONS: 256, GUARDIAN_STREAM_CONNECTIONS: 256, 'push deliveries': 512 },
    bound: { MAX_CONNECTIONS: 38, GUARDIAN_CALL_CONNECTIONS: 38, GUARDIAN_STREAM_CONNECTIONS: 38, 'push deliveries': 38 },
  });
  // Fitted once: the config main.ts fitted is not fitted (or logged) again by startProxy.
  expect(withinDescriptors(fitted, logger, limits(100))).toBe(fitted);
  expect(lines).toHaveLength(1);
});

test('pools not in use take no descriptors and keep their values; a set per-caller share stays within the connections in use', () => {
  const { logger, lines } = keptLogger();
  // No stream checks (INSPECT_RESPONSES=false), hence no push relay: inbound twice and the guardian's calls share 448.
  const config = configFrom({ ...BASE, GUARDIAN_CALLS_PER_CALLER: '200' });
  const fitted = withinDescriptors(config, logger, limits(512));
  expect([fitted.maxConnections, fitted.guardianCallConnections, fitted.guardianStreamConnections]).toEqual([149, 149, 256]);
  expect(fitted.perCaller.guardianCalls).toBe(149);
  expect(lines[0]?.configured).toEqual({ MAX_CONNECTIONS: 8192, GUARDIAN_CALL_CONNECTIONS: 256 });
});

test('the defaults under a normal limit are kept as configured, without a warning', () => {
  const { logger, lines } = keptLogger();
  const config = configFrom({ ...BASE, INSPECT_RESPONSES: 'true', ROLE: 'server' });
  for (const soft of [65_536, 1_048_576]) {
    const fitted = withinDescriptors(config, logger, limits(soft));
    expect(fitted).toEqual(config);
  }
  expect(withinDescriptors(config, logger, undefined)).toEqual(config);
  expect(lines).toHaveLength(0);
});

test('--check names the connections each pool in use may open within the descriptors, and what was configured when lowered', () => {
  const config = configFrom({ ...BASE, INSPECT_RESPONSES: 'true', ROLE: 'server' });
  expect(descriptorsLine(config, limits(256))).toBe(
    '# connections within 256 file descriptors (64 kept apart): MAX_CONNECTIONS 38 (configured 8192), GUARDIAN_CALL_CONNECTIONS 38 (configured 256), ' +
      'GUARDIAN_STREAM_CONNECTIONS 38 (configured 256), push deliveries 38 (configured 512)',
  );
  expect(descriptorsLine(configFrom(BASE), limits(1_048_576))).toBe(
    '# connections within 1048576 file descriptors (64 kept apart): MAX_CONNECTIONS 8192, GUARDIAN_CALL_CONNECTIONS 256',
  );
  expect(descriptorsLine(configFrom(BASE), '')).toBe('# connections: MAX_CONNECTIONS 8192, GUARDIAN_CALL_CONNECTIONS 256 (file descriptor limit unknown)');
});
