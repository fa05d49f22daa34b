/**
 * At MAX_CONNECTIONS only a connection carrying a call is kept from being given up. A connection a caller opens and
 * keeps without a call in flight on it (an upgrade refused, its socket never closed by the caller) is idle: the
 * caller holding many of them gives one up for another caller's new connection. Connections that do carry calls
 * are at most half the bound per caller, so one caller's calls in flight never refuse another's connection. The
 * attacker connects from 127.0.0.2, the victim (a real SDK client) from 127.0.0.1.
 */
import net from 'node:net';
import { makeClient, sendReq, textOf } from '../../helpers/agent';
import { counted, useStack } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

const stack = useStack();

/** An upgrade the proxy refuses (ALLOW_WEBSOCKETS=false), its answer read and the caller's side never closed. */
function refusedUpgrade(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2', allowHalfOpen: true });
    let answer = '';
    socket.on('data', (d: Buffer) => {
      answer += d.toString();
      if (answer.includes('\r\n\r\n')) resolve(socket);
    });
    socket.on('error', reject);
    socket.write('GET /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
  });
}

test("a caller's refused upgrades left open are idle connections: at MAX_CONNECTIONS another caller's call still gets in", async () => {
  const proxy = await stack.proxy({ ROLE: 'server', MAX_CONNECTIONS: '20', INSPECT_CARDS: 'false' });
  const port = Number(new URL(proxy.url).port);
  const attacker: net.Socket[] = [];
  for (let i = 0; i < 20; i++) attacker.push(await refusedUpgrade(port));
  const victim = await makeClient(proxy.url, 'JSONRPC', '1.0', { fetchImpl: (u, init) => fetch(u, { ...init, signal: AbortSignal.timeout(5_000) }) });
  expect(textOf(await victim.sendMessage(sendReq('victim past refused upgrades')))).toContain('victim past refused upgrades');
  // The attacker's refused upgrades gave up their places, the victim's connections were never refused.
  expect(await counted(proxy, 'a2a_guard_caller_limited_total', 'connections')).toBeGreaterThanOrEqual(1);
  for (const s of attacker) s.destroy();
});

/** A call whose body is still arriving (its headers and a first piece): a connection carrying a call. */
function slowBody(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
    socket.on('error', () => undefined);
    socket.once('close', () => reject(new Error('closed')));
    socket.once('connect', () => {
      socket.write('POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 100000\r\n\r\n{"jsonrpc":');
      resolve(socket);
    });
  });
}

test("one caller's calls in flight never hold every connection: another caller's new connection still gets in", async () => {
  const proxy = await stack.proxy({ ROLE: 'server', MAX_CONNECTIONS: '20', INSPECT_CARDS: 'false' });
  const port = Number(new URL(proxy.url).port);
  // Twenty calls of the attacker in flight (within its MAX_CALLS_PER_CALLER), each on its own connection.
  const attacker = await Promise.all(Array.from({ length: 20 }, () => slowBody(port).catch(() => undefined)));
  const victim = await makeClient(proxy.url, 'JSONRPC', '1.0', { fetchImpl: (u, init) => fetch(u, { ...init, signal: AbortSignal.timeout(5_000) }) });
  expect(textOf(await victim.sendMessage(sendReq('victim past calls in flight')))).toContain('victim past calls in flight');
  for (const s of attacker) s?.destroy();
});
