/** Connections to an origin kept per caller: each caller's idle connection carries its own next request only. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request, type Dispatcher, type Pool } from 'undici';
import { CallerPools } from '../../../src/net/caller-pools';
import { createPool, leanBuildConnector } from '../../../src/net/undici-pool';

let server: http.Server;
let origin: string;
/** The client port of the connection each request came on, by its path. */
const seen = new Map<string, number | undefined>();
const made: Pool[] = [];
const held: Array<() => void> = [];
const release = (): void => {
  for (const r of held.splice(0)) r();
};

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.set(req.url ?? '', req.socket.remotePort);
    // Held until release(): a call in flight.
    if (req.url?.startsWith('/held') === true) held.push(() => res.end('ok'));
    else res.end('ok');
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(release);

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function pools(maxPools: number, keepAliveTimeout = 30_000, maxConnections = 1000, onGivenUp?: (n: number) => void): CallerPools {
  return new CallerPools({
    make: (connect) => {
      // The server's keep-alive hint (30 s) is capped by keepAliveMaxTimeout.
      const p = createPool(origin, { connections: null, pipelining: 1, keepAliveTimeout, keepAliveMaxTimeout: keepAliveTimeout, connect });
      made.push(p);
      return p;
    },
    connect: leanBuildConnector({}),
    maxPools,
    maxConnections,
    sweepMs: 60_000,
    ...(onGivenUp === undefined ? {} : { onGivenUp }),
  });
}

async function waitUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(done()).toBe(true);
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

test('traffic of no caller, and callers past maxPools while every pool has a call in flight, share one pool', async () => {
  const p = pools(2);
  expect(p.for(undefined)).toBe(p.shared);
  const a = p.for('a');
  const b = p.for('b');
  const calls = [request(`${origin}/held-a`, { dispatcher: a }), request(`${origin}/held-b`, { dispatcher: b })];
  await waitUntil(() => held.length === 2);
  expect(p.for('c')).toBe(p.shared);
  expect(p.size).toBe(2);
  expect([a, b]).not.toContain(p.shared);
  release();
  await Promise.all(calls.map(async (r) => (await r).body.text()));
  await p.destroy();
});

test('a new caller past maxPools takes the place of the least recently used pool with nothing in flight', async () => {
  const p = pools(2);
  const a = p.for('a');
  const b = p.for('b');
  await get(a, '/lru-a');
  await get(b, '/lru-b');
  // a called last: b's pool, idle, is given up for c, and its connection closed.
  await get(p.for('a'), '/lru-a2');
  const c = p.for('c');
  expect(c).not.toBe(p.shared);
  expect(p.size).toBe(2);
  expect((b as Pool).closed).toBe(true);
  expect(p.for('a')).toBe(a);
  expect(await get(c, '/lru-c')).toBeDefined();
  await p.destroy();
});

test("past maxConnections, a new connection closes the least recently used callers' idle ones; their calls in flight go on", async () => {
  const given: number[] = [];
  const p = pools(8, 30_000, 4, (n) => given.push(n));
  // a: two idle connections; b: one idle, one carrying a call.
  const a = p.for('a');
  await Promise.all([get(a, '/cap-a1'), get(a, '/cap-a2')]);
  const b = p.for('b');
  await get(b, '/cap-b1');
  const inFlight = request(`${origin}/held-b`, { dispatcher: b });
  await waitUntil(() => p.connections === 4 && held.length === 1);
  // c's first connection: a's pool, least recently used with an idle connection, is closed for it.
  expect(await get(p.for('c'), '/cap-c')).toBeDefined();
  expect((a as Pool).closed).toBe(true);
  expect(given).toEqual([2]);
  await waitUntil(() => p.connections === 3);
  expect(await get(p.for('d'), '/cap-d')).toBeDefined();
  expect((b as Pool).closed).toBe(false);
  // e's: b, now least recently used, gives up its idle connection; its call in flight is answered, its next call gets a new pool.
  expect(await get(p.for('e'), '/cap-e')).toBeDefined();
  expect((b as Pool).closed).toBe(true);
  expect(given).toEqual([2, 1]);
  release();
  expect(await (await inFlight).body.text()).toBe('ok');
  expect(p.for('b')).not.toBe(b);
  await p.destroy();
});

test('a pool with no connection left and nothing in flight is closed by the sweep; one in use is kept', async () => {
  const p = pools(8, 200);
  const a = p.for('a');
  await get(a, '/idle');
  const b = p.for('b');
  const inFlight = request(`${origin}/held`, { dispatcher: b });
  await waitUntil(() => held.length === 1);
  p.sweep();
  // a's connection is still open (kept alive), b has a request in flight: both kept.
  expect(p.size).toBe(2);
  release();
  await (await inFlight).body.text();
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

test('destroy also ends the calls of pools given up with calls in flight', async () => {
  const p = pools(8, 30_000, 2);
  const a = p.for('a');
  await get(a, '/given-a');
  const inFlight = request(`${origin}/held-given`, { dispatcher: a }).then(
    async (r) => r.body.text(),
    () => 'ended',
  );
  await waitUntil(() => p.connections === 2 && held.length === 1);
  // b's connection: a's idle one is closed, a's pool given up with its call in flight.
  await get(p.for('b'), '/given-b');
  expect((a as Pool).closed).toBe(true);
  await p.destroy();
  expect((a as Pool).destroyed).toBe(true);
  expect(await inFlight).toBe('ended');
  release();
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

test('a connection that cannot be made fails its request and gives its place in the count back', async () => {
  const dead = http.createServer();
  await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
  const deadOrigin = `http://127.0.0.1:${(dead.address() as AddressInfo).port}`;
  await new Promise((r) => dead.close(r));
  const p = new CallerPools({
    make: (connect) => createPool(deadOrigin, { connections: null, pipelining: 1, connect }),
    connect: leanBuildConnector({}),
    maxPools: 8,
    maxConnections: 8,
    sweepMs: 60_000,
  });
  for (const caller of ['a', 'b', undefined]) {
    await expect(request(`${deadOrigin}/x`, { dispatcher: p.for(caller) })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  }
  expect(p.connections).toBe(0);
  await p.destroy();
});
