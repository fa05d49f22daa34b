/**
 * The guardian's call connections are shared by every caller; each caller's share is a part of them
 * (GUARDIAN_CALLS_PER_CALLER), so a few callers at their shares fill them. While they are all taken, the next one
 * free goes to the callers waiting in round-robin order: a caller that arrives after others queued their calls is
 * judged once the next connections free up, not after every call queued before it. The callers are addresses
 * (127.0.0.2-5 slow to judge, the victim 127.0.0.1 quick), the order is the order in which their envelopes reached the guardian.
 */
import { Agent as UndiciAgent, fetch as undiciFetch } from 'undici';
import { waitFor } from '../../helpers/net';
import { useStack } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

const stack = useStack();

/** Guardian calls waiting for a connection, as the proxy's metric says. */
const queuedCalls = (text: string): number => Number(/budget="call"\} (\d+)/.exec(text)?.[1] ?? 0);

test('with every guardian connection taken, a caller that comes last is judged at the next free one, not behind every queued call', async () => {
  const proxy = await stack.proxy({
    ROLE: 'server',
    INSPECT_CARDS: 'false',
    GUARDIAN_CALL_CONNECTIONS: '4',
    GUARDIAN_CALLS_PER_CALLER: '2',
    GUARDIAN_TIMEOUT_MS: '20000',
  });
  stack.guardian.script((env) =>
    JSON.stringify(env.params?.payload ?? '').includes('judge me at length') ? { decision: 'allow', delayMs: 1500 } : { decision: 'allow' },
  );
  const agents: UndiciAgent[] = [];
  const done: string[] = [];
  const call = (from: string, text: string, id: number): Promise<void> => {
    const dispatcher = new UndiciAgent({ localAddress: from });
    agents.push(dispatcher);
    return undiciFetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `g-${id}`, role: 'ROLE_USER', parts: [{ text }] } } }),
    }).then(async (r) => {
      expect(r.status).toBe(200);
      await r.text();
      done.push(from);
    });
  };
  // Two callers at their shares take the four connections.
  const first = ['127.0.0.2', '127.0.0.2', '127.0.0.3', '127.0.0.3'].map((a, i) => call(a, 'judge me at length', i));
  await waitFor(() => stack.guardian.load.inFlight >= 4, 10_000, 'four calls at the guardian');
  // Two more callers queue theirs, then the victim comes.
  const queued = ['127.0.0.4', '127.0.0.4', '127.0.0.5', '127.0.0.5'].map((a, i) => call(a, 'judge me at length', 10 + i));
  await waitFor(
    async () => queuedCalls(await proxy.metrics.registry.getSingleMetricAsString('a2a_guard_guardian_queued_calls')) >= 4,
    10_000,
    'four calls queued',
  );
  const victim = call('127.0.0.1', 'a quick question', 99);
  await Promise.all([...first, ...queued, victim]);
  // The victim took one of the next connections free: its envelope reached the guardian before two of the four
  // queued before it (first come, first served, it came after all four).
  const arrived = stack.guardian.envelopes.map((e) => JSON.stringify(e.params?.payload ?? ''));
  const victimAt = arrived.findIndex((t) => t.includes('a quick question'));
  expect(victimAt).toBeGreaterThanOrEqual(4);
  expect(arrived.slice(victimAt + 1).filter((t) => t.includes('judge me at length'))).toHaveLength(2);
  expect(done).toContain('127.0.0.1');
  for (const a of agents) await a.close();
});
