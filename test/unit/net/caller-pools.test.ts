/** Connections to an origin kept per caller: each caller's idle connection carries its own next request only. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request, type Dispatcher, type Pool } from 'undici';
import { CallerPools } from '../../../src/net/caller-pools';
import { createPool } from '../../../src/net/undici-pool';

let server: http.Server;
let origin: string;
/** The client port of the connection each request came on, by its path. */
const seen = new Map<string, number | undefined>();
const made: Pool[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.set(req.url ?? '', req.socket.remotePort);
    res.end('ok');
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function pools(maxPools: number, keepAliveTimeout = 30_000): CallerPools {
  return new CallerPools({
    make: () => {
      // The server's keep-alive hint (30 s) is capped by keepAliveMaxTimeout.
      const p = createPool(origin, { connections: null, pipelining: 1, keepAliveTimeout, keepAliveMaxTimeout: keepAliveTimeout });
      made.push(p);
      return p;
    },
    maxPools,
    sweepMs: 60_000,
  });
}

async function get(d: Dispatcher, path: string): Promise<number | undefined> {
  const r = await request(`${origin}${path}`, { dispatcher: d });
  await r.body.text();
  return seen.get(path);
}

test("a caller's next request goes on its own idle connection, never on another caller's", async () => {
  const p = pools(8);
  const a1 = await get(p.for('a'), '/a1');
  // b's requests at once: with one pool for both, the first would take a's idle connection.
  const bs = await Promise.all([1, 2, 3].map((i) => get(p.for('b'), `/b${i}`)));
  const a2 = await get(p.for('a'), '/a2');
  expect(a2).toBe(a1);
  expect(bs).not.toContain(a1);
  expect(p.for('a')).toBe(p.for('a'));
  expect(p.for('a')).not.toBe(p.for('b'));
  await p.destroy();
});

test('traffic of no caller, and callers past maxPools, share one pool', async () => {
  const p = pools(2);
  expect(p.for(undefined)).toBe(p.shared);
  const a = p.for('a');
  const b = p.for('b');
  expect(p.for('c')).toBe(p.shared);
  expect(p.size).toBe(2);
  expect([a, b]).not.toContain(p.shared);
  await p.destroy();
});

test('a pool with no connection left and nothing in flight is closed by the sweep; one in use is kept', async () => {
  const p = pools(8, 200);
  const a = p.for('a');
  await get(a, '/idle');
  const b = p.for('b');
  const held = request(`${origin}/held`, { dispatcher: b });
  p.sweep();
  // a's connection is still open (kept alive), b has a request in flight: both kept.
  expect(p.size).toBe(2);
  await (await held).body.text();
  // Once the keep-alive timeout closed their connections, both pools go.
  for (let i = 0; i < 100 && p.size > 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
    p.sweep();
  }
  expect(p.size).toBe(0);
  expect((a as Pool).closed).toBe(true);
  // The caller's next request gets a new pool.
  expect(p.for('a')).not.toBe(a);
  await p.destroy();
});

test('destroy closes every pool; afterwards every caller gets the shared (destroyed) one', async () => {
  const p = pools(8);
  const a = p.for('a');
  await get(a, '/before-destroy');
  await p.destroy();
  expect((a as Pool).destroyed).toBe(true);
  expect(p.shared.destroyed).toBe(true);
  expect(p.for('z')).toBe(p.shared);
  expect(p.size).toBe(0);
});

afterAll(async () => {
  await Promise.all(made.map((m) => m.destroy().catch(() => undefined)));
});
