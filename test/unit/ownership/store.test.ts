/** The owner stores: in memory (TTL, bound, oldest out) and Redis (a real redis-server on 127.0.0.1). */
import { createHash } from 'node:crypto';
import pino from 'pino';
import { StartupError } from '../../../src/credentials/files';
import { bindingBytes, MemoryOwnerStore, type OwnerStore } from '../../../src/ownership/store';
import { createRedisStore, redactUrl, sliceCounters, type RedisOwnerStore } from '../../../src/ownership/redis';
import { startRedis, type TestRedis } from '../../helpers/redis';

const silent = pino({ level: 'silent' });

describe('MemoryOwnerStore', () => {
  test('the first owner wins and is never overwritten', async () => {
    const s = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 10 });
    expect(await s.claim(['t:1', 'c:1'], 'A')).toEqual(['A', 'A']);
    expect(await s.claim(['t:1', 'c:2'], 'B')).toEqual(['A', 'B']);
    expect(await s.owners(['t:1', 'c:1', 'c:2', 't:none'])).toEqual(['A', 'A', 'B', undefined]);
  });

  test('bindings expire after the TTL', async () => {
    let now = 1_000_000;
    const s = new MemoryOwnerStore({ ttlSeconds: 10, maxEntries: 10, now: () => now });
    await s.claim(['t:1'], 'A');
    now += 9_000;
    expect(await s.owners(['t:1'])).toEqual(['A']);
    now += 1_000;
    expect(await s.owners(['t:1'])).toEqual([undefined]);
    // Expired: free to bind again.
    expect(await s.claim(['t:1'], 'B')).toEqual(['B']);
  });

  test('expired bindings are swept from the front on the next claim', async () => {
    let now = 0;
    const s = new MemoryOwnerStore({ ttlSeconds: 5, maxEntries: 100, now: () => now });
    await s.claim(['t:1', 't:2', 't:3'], 'A');
    now += 3_000;
    await s.claim(['t:4'], 'A');
    now += 3_000;
    await s.claim(['t:5'], 'A');
    expect(s.size).toBe(2);
  });

  test('bounded: the oldest binding makes room, and evictions are counted', async () => {
    let evicted = 0;
    const s = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 3, onEvict: (n) => (evicted += n) });
    await s.claim(['t:1', 't:2', 't:3'], 'A');
    await s.claim(['t:4'], 'B');
    expect(s.size).toBe(3);
    expect(evicted).toBe(1);
    expect(await s.owners(['t:1', 't:2', 't:3', 't:4'])).toEqual([undefined, 'A', 'A', 'B']);
  });

  test('full: a caller that floods the store evicts its own oldest bindings, never those of a caller holding fewer', async () => {
    let evicted = 0;
    const s = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 4, onEvict: (n) => (evicted += n) });
    await s.claim(['c:a', 't:a'], 'A');
    for (let i = 0; i < 10; i++) await s.claim([`t:b${i}`], 'B');
    expect(await s.owners(['c:a', 't:a'])).toEqual(['A', 'A']);
    expect(await s.owners(['t:b7', 't:b8', 't:b9'])).toEqual([undefined, 'B', 'B']);
    expect(s.size).toBe(4);
    expect(evicted).toBe(8);
    // A newcomer takes room from the churning holder (B, tied with A in size, its oldest binding younger), not from A.
    await s.claim(['t:c'], 'C');
    expect(await s.owners(['c:a', 't:a', 't:c', 't:b8', 't:b9'])).toEqual(['A', 'A', 'C', undefined, 'B']);
  });

  test('a re-claim by the owner does not move or renew the binding', async () => {
    const s = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 2 });
    await s.claim(['t:1'], 'A');
    await s.claim(['t:2'], 'A');
    await s.claim(['t:1'], 'A');
    await s.claim(['t:3'], 'A');
    expect(await s.owners(['t:1', 't:2', 't:3'])).toEqual([undefined, 'A', 'A']);
  });

  test('bounded in bytes: long keys of a flooder evict its own oldest, never the bindings of a caller holding less', async () => {
    const long = (i: number) => `c:${String(i).padStart(4, '0')}${'x'.repeat(1000)}`;
    const maxBytes = 10 * bindingBytes(long(0));
    const s = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 1000, maxBytes });
    await s.claim(['t:a', 'c:a'], 'A');
    for (let i = 0; i < 50; i++) await s.claim([long(i)], 'F');
    expect(s.bytes).toBeLessThanOrEqual(maxBytes);
    expect(await s.owners(['t:a', 'c:a'])).toEqual(['A', 'A']);
    expect(await s.owners([long(0), long(49)])).toEqual([undefined, 'F']);
    expect(s.held('A')).toBe(2);
  });

  test('held: the bindings of an owner, provisional ones included; bytes come back when bindings go', async () => {
    const s = new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 100 });
    await s.claim(['t:1', 'c:1'], 'A');
    await s.provisional(['c:2'], 'A', 5);
    expect(s.held('A')).toBe(3);
    expect(s.held('B')).toBe(0);
    await s.release(['c:2'], 'A');
    expect(s.held('A')).toBe(2);
    expect(s.bytes).toBe(bindingBytes('t:1') + bindingBytes('c:1'));
  });

  test('a provisional hold expires with its TTL unless renewed', async () => {
    let now = 0;
    const s = new MemoryOwnerStore({ ttlSeconds: 600, maxEntries: 100, now: () => now });
    await s.provisional(['c:p', 'c:q'], 'A', 10);
    now = 8000;
    await s.renew(['c:p'], 'A', 10);
    now = 12_000;
    expect(await s.owners(['c:p', 'c:q'])).toEqual(['A', undefined]);
  });
});

/** What both stores do with provisional holds (store.ts): the same contract in memory and in Redis. */
function provisionalContract(make: () => Promise<OwnerStore>): void {
  test("a provisional hold is its owner's for everyone; released by its only call, the key is free again", async () => {
    const s = await make();
    expect(await s.provisional(['c:p1'], 'A', 30)).toEqual(['A']);
    expect(await s.owners(['c:p1'])).toEqual(['A']);
    expect(await s.provisional(['c:p1'], 'B', 30)).toEqual(['A']);
    expect(await s.claim(['c:p1'], 'B')).toEqual(['A']);
    // Another owner's release is no release.
    await s.release(['c:p1'], 'B');
    expect(await s.owners(['c:p1'])).toEqual(['A']);
    await s.release(['c:p1'], 'A');
    expect(await s.owners(['c:p1'])).toEqual([undefined]);
    expect(await s.claim(['c:p1'], 'B')).toEqual(['B']);
  });

  test('two calls of one owner hold a key: it stays held until both let go', async () => {
    const s = await make();
    await s.provisional(['c:p2'], 'A', 30);
    await s.provisional(['c:p2'], 'A', 30);
    await s.release(['c:p2'], 'A');
    expect(await s.owners(['c:p2'])).toEqual(['A']);
    await s.release(['c:p2'], 'A');
    expect(await s.owners(['c:p2'])).toEqual([undefined]);
  });

  test('the answer confirms a hold: a release after it leaves the binding', async () => {
    const s = await make();
    await s.provisional(['c:p3'], 'A', 30);
    expect(await s.claim(['c:p3', 't:p3'], 'A')).toEqual(['A', 'A']);
    await s.release(['c:p3'], 'A');
    expect(await s.owners(['c:p3', 't:p3'])).toEqual(['A', 'A']);
    // A confirmed binding is no hold: a later call's hold of it is a plain lookup.
    expect(await s.provisional(['c:p3'], 'A', 30)).toEqual(['A']);
    await s.release(['c:p3'], 'A');
    expect(await s.owners(['c:p3'])).toEqual(['A']);
  });
}

describe('provisional holds: in memory', () => {
  provisionalContract(() => Promise.resolve(new MemoryOwnerStore({ ttlSeconds: 60, maxEntries: 100 })));
});

describe('RedisOwnerStore (real redis-server)', () => {
  let redis: TestRedis;
  const stores: OwnerStore[] = [];
  const store = async (prefix = 'test:', timeoutMs = 500, secretRecheckMs?: number): Promise<RedisOwnerStore> => {
    const s = await createRedisStore({
      url: redis.url,
      prefix,
      ttlSeconds: 60,
      timeoutMs,
      logger: silent,
      ...(secretRecheckMs === undefined ? {} : { secretRecheckMs }),
    });
    stores.push(s);
    return s;
  };

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const s of stores.splice(0)) await s.close();
    await redis.close();
  });

  test('two clients (two replicas) agree: the first owner wins, never overwritten', async () => {
    const r1 = await store();
    const r2 = await store();
    expect(await r1.claim(['t:x', 'c:x'], 'A')).toEqual(['A', 'A']);
    expect(await r2.claim(['t:x', 'c:y'], 'B')).toEqual(['A', 'B']);
    expect(await r2.owners(['t:x', 'c:x', 'c:y', 't:none'])).toEqual(['A', 'A', 'B', undefined]);
    expect(await r1.owners([])).toEqual([]);
  });

  test('concurrent claims of one key from two clients: exactly one owner, both see it', async () => {
    const r1 = await store();
    const r2 = await store();
    const keys = Array.from({ length: 200 }, (_, i) => `t:race-${i}`);
    const [a, b] = await Promise.all([r1.claim(keys, 'A'), r2.claim(keys, 'B')]);
    expect(a).toEqual(b);
    expect(new Set(a).size).toBeLessThanOrEqual(2);
    expect(await r1.owners(keys)).toEqual(a);
  });

  test('keys carry the prefix and the TTL', async () => {
    const s = await store('agent-1:');
    await s.claim(['t:ttl'], 'A');
    expect(await redis.command('GET', 'agent-1:t:ttl')).toBe('A');
    const ttl = Number(await redis.command('TTL', 'agent-1:t:ttl'));
    expect(ttl).toBeGreaterThan(50);
    expect(ttl).toBeLessThanOrEqual(60);
    // Another prefix (another agent) is another namespace.
    const other = await store('agent-2:');
    expect(await other.owners(['t:ttl'])).toEqual([undefined]);
  });

  test('Redis down: calls reject at once (no queueing), and the client reconnects when it is back', async () => {
    // A generous command timeout: while Redis is down the client refuses at once anyway (the timeout only
    // guards the calls before the stop, which a loaded machine can make slow).
    const s = await store('down:', 5000);
    await s.claim(['t:before'], 'A');
    await redis.stop();
    try {
      // Refused by the client, not queued until Redis returns (ioredis' offline queue is off). (Whether the
      // client counts as connected at this instant depends on its reconnect timing: not asserted.)
      await expect(s.owners(['t:before'])).rejects.toThrow(/enableOfflineQueue|Connection is closed|ECONNREFUSED|ECONNRESET/);
      await expect(s.claim(['t:during'], 'A')).rejects.toThrow(/enableOfflineQueue|Connection is closed|ECONNREFUSED|ECONNRESET/);
    } finally {
      // Whatever happened above, the later tests get their server back.
      await redis.start();
    }
    const deadline = Date.now() + 60_000;
    while (!s.connected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(s.connected).toBe(true);
    // A fresh server (no persistence): the binding is gone, a new one works.
    expect(await s.claim(['t:after'], 'B')).toEqual(['B']);
  });

  test('a server that stops answering: commands fail after the timeout', async () => {
    const s = await store('slow:', 1000);
    // Ask the server to stop answering for 3 s: the store's command gives up on its own timeout (1 s).
    await redis.command('CLIENT', 'PAUSE', '3000', 'ALL');
    await expect(s.owners(['t:x'])).rejects.toThrow(/Command timed out/);
    await new Promise((r) => setTimeout(r, 3000));
  });

  test("the page-token secret: one for every replica (the first one's), kept when Redis loses it, a new one adopted", async () => {
    const r1 = await store('sec:', 500, 0);
    const r2 = await store('sec:', 500, 0);
    const s1 = await r1.sharedSecret(false);
    expect(s1.length).toBe(32);
    expect((await r2.sharedSecret(false)).equals(s1)).toBe(true);
    expect(await redis.command('GET', 'sec:s:page-token-secret')).toBe(s1.toString('base64'));
    // Another prefix (another agent) has its own.
    expect((await (await store('sec-other:')).sharedSecret(false)).equals(s1)).toBe(false);
    // Lost (eviction, a restart without persistence): the first replica to look again puts its own back.
    await redis.command('DEL', 'sec:s:page-token-secret');
    expect((await r1.sharedSecret(true)).equals(s1)).toBe(true);
    expect((await (await store('sec:')).sharedSecret(false)).equals(s1)).toBe(true);
    // Lost and made anew by a replica that never had it: the others adopt it when they look again.
    await redis.command('DEL', 'sec:s:page-token-secret');
    const s4 = await (await store('sec:')).sharedSecret(false);
    expect(s4.equals(s1)).toBe(false);
    expect((await r2.sharedSecret(false)).equals(s1)).toBe(true);
    expect((await r2.sharedSecret(true)).equals(s4)).toBe(true);
  });

  describe('provisional holds: in Redis', () => {
    provisionalContract(() => store('prov:'));

    test('a hold lives the short TTL, renewed while its call runs; the answer gives it the full TTL', async () => {
      const s = await store('prov-ttl:');
      await s.provisional(['c:t'], 'A', 20);
      expect(await redis.command('GET', 'prov-ttl:c:t')).toBe('~1~A');
      expect(Number(await redis.command('TTL', 'prov-ttl:c:t'))).toBeLessThanOrEqual(20);
      await s.renew(['c:t'], 'A', 40);
      expect(Number(await redis.command('TTL', 'prov-ttl:c:t'))).toBeGreaterThan(20);
      await s.claim(['c:t'], 'A');
      expect(await redis.command('GET', 'prov-ttl:c:t')).toBe('A');
      expect(Number(await redis.command('TTL', 'prov-ttl:c:t'))).toBeGreaterThan(50);
    });
  });

  test("held: each confirmed binding is counted for its owner (per slice of the TTL), not another's", async () => {
    const s = await store('held:');
    expect(s.held('A')).toBeUndefined();
    await s.claim(['t:1', 'c:1'], 'A');
    await s.claim(['t:1'], 'A');
    await s.provisional(['c:2'], 'A', 30);
    await s.claim(['t:2'], 'B');
    expect(s.held('A')).toBe(2);
    await s.claim(['c:2'], 'A');
    expect(s.held('A')).toBe(3);
    expect(s.held('B')).toBe(1);
    // Another replica learns the count from its own next binding of that owner.
    const other = await store('held:');
    await other.claim(['t:3'], 'A');
    expect(other.held('A')).toBe(4);
  });

  test('slice counters: the current slice first, then the ones the window still overlaps', () => {
    expect(sliceCounters('o:A:', 1000, 80)).toEqual({
      keys: ['o:A:100', 'o:A:99', 'o:A:98', 'o:A:97', 'o:A:96', 'o:A:95', 'o:A:94', 'o:A:93', 'o:A:92'],
      ttlSeconds: 100,
    });
  });

  describe('maxmemory-policy', () => {
    afterEach(async () => {
      await redis.command('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    });

    test.each(['allkeys-lru', 'volatile-lru', 'volatile-ttl', 'allkeys-random'])(
      '%s evicts bindings: refused at start unless TASK_STORE_ALLOW_EVICTION',
      async (policy) => {
        await redis.command('CONFIG', 'SET', 'maxmemory-policy', policy);
        const err = await createRedisStore({ url: redis.url, prefix: 'evict:', ttlSeconds: 60, timeoutMs: 500, logger: silent }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StartupError);
        expect(String(err)).toContain(`maxmemory-policy is ${policy}`);
        const allowed = await createRedisStore({ url: redis.url, prefix: 'evict:', ttlSeconds: 60, timeoutMs: 500, logger: silent, allowEviction: true });
        stores.push(allowed);
        expect(await allowed.claim(['t:e'], 'A')).toEqual(['A']);
      },
    );

    test('a server that turns evicting later: its commands are refused (FAIL_MODE decides) until it is noeviction again', async () => {
      const s = await store('later:');
      await redis.command('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lfu');
      expect(await s.checkEviction()).toBe('allkeys-lfu');
      await expect(s.owners(['t:x'])).rejects.toThrow(/maxmemory-policy allkeys-lfu/);
      await redis.command('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
      expect(await s.checkEviction()).toBe('noeviction');
      expect(await s.owners(['t:x'])).toEqual([undefined]);
    });
  });

  test('assertion ids: one use across replicas; a key whose share is full is refused, another key is not', async () => {
    const r1 = await store('replay:');
    const r2 = await store('replay:');
    const exp = Date.now() / 1000 + 30;
    expect(await r1.recordAssertion('k1', 'jti-1', exp, 3)).toBe('fresh');
    expect(await r2.recordAssertion('k1', 'jti-1', exp, 3)).toBe('replayed');
    // The same jti under another key is another id.
    expect(await r2.recordAssertion('k2', 'jti-1', exp, 3)).toBe('fresh');
    expect(await r1.recordAssertion('k1', 'jti-2', exp, 3)).toBe('fresh');
    expect(await r2.recordAssertion('k1', 'jti-3', exp, 3)).toBe('fresh');
    expect(await r1.recordAssertion('k1', 'jti-4', exp, 3)).toBe('full');
    expect(await r1.recordAssertion('k2', 'jti-4', exp, 3)).toBe('fresh');
    expect([await r2.assertionSeen('k1', 'jti-2'), await r2.assertionSeen('k1', 'jti-4'), await r2.assertionSeen('k3', 'jti-1')]).toEqual([true, false, false]);
    // Kept for the assertion's remaining lifetime, under a digest of its key id and jti.
    const key = `replay:r:${createHash('sha256')
      .update(JSON.stringify(['k1', 'jti-1']))
      .digest('base64url')}`;
    const ttl = Number(await redis.command('TTL', key));
    expect(ttl).toBeGreaterThan(20);
    expect(ttl).toBeLessThanOrEqual(31);
  });

  test('a URL with credentials is logged without them', () => {
    expect(redactUrl('redis://user:secret@127.0.0.1:6379/0')).toBe('redis://127.0.0.1:6379/0');
    expect(redactUrl('not a url')).not.toContain('not a url');
  });
});
