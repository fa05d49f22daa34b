/**
 * Deadlines, back-offs and cache ages run on a clock that only moves forward (src/core/clock.ts):
 * a wall clock stepped back (NTP, a resumed VM) must not stretch them by the size of the step.
 * The breaker's case is in test/integration/hardening/guardian-faults.test.ts; the card cache's is here,
 * against a real HTTP server on 127.0.0.1.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { CardCache } from '../../../src/a2a/card';
import { monotonicMs } from '../../../src/core/clock';

const silent = pino({ level: 'silent' });

describe('monotonicMs', () => {
  test('does not follow Date.now when the wall clock steps back', () => {
    const wall = Date.now.bind(Date);
    const before = monotonicMs();
    const stepped = jest.spyOn(Date, 'now').mockImplementation(() => wall() - 3_600_000);
    try {
      expect(monotonicMs()).toBeGreaterThanOrEqual(before);
    } finally {
      stepped.mockRestore();
    }
  });
});

describe('CardCache over a wall clock step', () => {
  let server: http.Server;
  let fetches = 0;
  let base: URL;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      fetches++;
      const body = JSON.stringify({ name: `card ${fetches}`, url: 'http://127.0.0.1/', version: '1' });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  test('a card older than its TTL is fetched again though the wall clock went back an hour', async () => {
    fetches = 0;
    const cache = new CardCache({ base, ttlMs: 100, logger: silent, what: 'upstream' });
    await cache.ready();
    expect(cache.current()?.name).toBe('card 1');
    const wall = Date.now.bind(Date);
    const stepped = jest.spyOn(Date, 'now').mockImplementation(() => wall() - 3_600_000);
    try {
      await new Promise((r) => setTimeout(r, 150));
      // Stale by elapsed time: current() answers with the cached card and refreshes in the background.
      expect(cache.current()?.name).toBe('card 1');
      await cache.pending(2000);
      expect(fetches).toBe(2);
      expect(cache.current()?.name).toBe('card 2');
    } finally {
      stepped.mockRestore();
    }
  });

  test('a new cache fetches at its first use, however recently the process started', async () => {
    fetches = 0;
    const cache = new CardCache({ base, ttlMs: 60_000, logger: silent, what: 'upstream' });
    expect(cache.current()).toBeUndefined();
    // current() started the fetch; pending() only waits for one under way.
    await cache.pending(2000);
    expect(fetches).toBe(1);
    expect(cache.current()?.name).toBe('card 1');
  });
});

test('monotonicMs counts whole milliseconds, as Date.now does (AbortSignal.timeout refuses fractions)', () => {
  for (let i = 0; i < 50; i++) expect(Number.isInteger(monotonicMs())).toBe(true);
});
