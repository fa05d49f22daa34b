/** Connections counted per caller as they are accepted: an IPv6 caller is its /64, however many of its addresses it uses. */
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { ConnectionShares } from '../../../src/core/connection-shares';
import { shareConnections } from '../../../src/proxy/connections';

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
