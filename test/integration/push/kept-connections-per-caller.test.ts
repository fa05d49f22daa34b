/**
 * The relay keeps connections to webhooks alive per origin and checked address. One caller's many webhook
 * origins never evict another caller's kept connection nor take every socket: each caller holds a bounded share.
 * All of them, with the deliveries still in flight on connections given up, stay within the push deliveries' part of
 * the file descriptors.
 */
import { deliver, PinnedDispatchers, type Resolver } from '../../../src/proxy/push/deliver';
import { startWebhook, type Webhook } from '../../helpers/webhook';
import { sleep } from '../../helpers/net';

const noDns: Resolver = async () => [];
let hook: Webhook;
let dispatchers: PinnedDispatchers;
beforeAll(async () => {
  hook = await startWebhook();
});
afterAll(async () => {
  await hook.close();
});
beforeEach(() => {
  dispatchers = new PinnedDispatchers();
});
afterEach(async () => {
  await dispatchers.close();
});

const send = (caller: string, path: string) =>
  deliver({ url: `${hook.origin}${path}`, token: 't' }, '{"kind":"status-update","taskId":"t"}', 'application/json', {
    allowPrivate: true,
    resolve: noDns,
    timeoutMs: 5000,
    dispatchers,
    caller,
  });

it("keeps a victim's connection while another caller pins a hundred webhook origins", async () => {
  expect(await send('victim', '/hooks/victim')).toMatchObject({ type: 'delivered' });
  // The connection goes back to its pool once the answer's end is read.
  await sleep(100);
  const before = hook.connections;
  // Webhook origins of the attacker (no connection is made until a delivery uses one).
  for (let i = 0; i < 100; i++) dispatchers.pinned(new URL(`http://127.0.0.1:${20_000 + i}/x`), '127.0.0.1', 4, 'attacker');
  expect(await send('victim', '/hooks/victim')).toMatchObject({ type: 'delivered' });
  expect(hook.connections).toBe(before);
  expect(hook.received.filter((r) => r.path === '/hooks/victim')).toHaveLength(2);
});

it('bounds the connections one caller holds, and all of them together', () => {
  for (let i = 0; i < 100; i++) dispatchers.pinned(new URL(`http://127.0.0.1:${20_000 + i}/x`), '127.0.0.1', 4, 'attacker');
  expect(dispatchers.held('attacker')).toBeLessThanOrEqual(8);
  for (let c = 0; c < 40; c++) dispatchers.pinned(new URL(`http://127.0.0.1:${30_000 + c}/x`), '127.0.0.1', 4, `caller-${c}`);
  let total = dispatchers.held('attacker');
  for (let c = 0; c < 40; c++) total += dispatchers.held(`caller-${c}`);
  expect(total).toBeLessThanOrEqual(64);
  // The one over the top gave up its own: the latest callers still hold theirs.
  expect(dispatchers.held('caller-39')).toBe(1);
});

it("many callers' deliveries to many webhook origins at once, agents given up mid-delivery included, open at most the push deliveries' connections", async () => {
  // 16 connections: two agents kept (four connections each), eight deliveries in flight.
  const slow = await startWebhook({ holdMs: 100 });
  const bounded = new PinnedDispatchers(16);
  // Every origin is the one webhook, by names the resolver points at it.
  const toSlow: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
  const port = new URL(slow.origin).port;
  const sends = [];
  for (let c = 0; c < 3; c++) {
    for (let i = 0; i < 16; i++) {
      sends.push(
        deliver({ url: `http://hook-${i % 8}.example:${port}/c${c}/${i}`, token: 't' }, '{"kind":"status-update","taskId":"t"}', 'application/json', {
          allowPrivate: true,
          resolve: toSlow,
          timeoutMs: 10_000,
          dispatchers: bounded,
          caller: `caller-${c}`,
        }),
      );
    }
  }
  const results = await Promise.all(sends);
  await bounded.close();
  await slow.close();
  expect(results.filter((r) => r.type === 'delivered')).toHaveLength(48);
  expect(slow.mostOpen).toBeLessThanOrEqual(16);
});
