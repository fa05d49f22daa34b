/**
 * The proxy's connections to the agent are kept per caller. With one pool for all, a caller starting many calls at
 * once took the connection another caller had just used, and that caller's next call opened a new one, queued at the
 * agent behind the first caller's new connections. Now each caller's next call goes on its own idle connection, and
 * no other caller's call is carried on it. The victim (a real SDK client) calls from 127.0.0.1, the other caller
 * from 127.0.0.2, and what the agent received says which connection each call came on.
 */
import { Agent as UndiciAgent, fetch as undiciFetch } from 'undici';
import { makeClient, sendReq, textOf, type ReceivedRequest } from '../../helpers/agent';
import { useStack } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

const stack = useStack({ slowMs: 10_000, stepMs: 50 });

const textOfRequest = (r: ReceivedRequest): string => JSON.stringify(r.body ?? '');

test("a caller's next call reaches the agent on its own connection, which carries none of another caller's calls", async () => {
  const proxy = await stack.proxy({ ROLE: 'server', INSPECT_CARDS: 'false' });
  const victim = await makeClient(proxy.url, 'JSONRPC', '1.0');
  expect(textOf(await victim.sendMessage(sendReq('victim first')))).toContain('victim first');

  // Another caller (another address) starts slow calls at once: each needs a connection to the agent.
  const other = new UndiciAgent({ localAddress: '127.0.0.2' });
  const ac = new AbortController();
  const slow = Array.from({ length: 4 }, (_v, i) =>
    undiciFetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      dispatcher: other,
      signal: ac.signal,
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: i,
        method: 'SendMessage',
        params: { message: { messageId: `o-${i}`, role: 'ROLE_USER', parts: [{ text: `other slow ${i}` }] } },
      }),
    }).catch(() => undefined),
  );
  const arrived = (): ReceivedRequest[] => stack.agent.received.filter((r) => textOfRequest(r).includes('other slow'));
  for (let i = 0; i < 200 && arrived().length < 4; i++) await new Promise((r) => setTimeout(r, 25));
  expect(arrived()).toHaveLength(4);

  expect(textOf(await victim.sendMessage(sendReq('victim second')))).toContain('victim second');
  const victims = stack.agent.received.filter((r) => textOfRequest(r).includes('victim'));
  expect(victims).toHaveLength(2);
  const [first, second] = victims as [ReceivedRequest, ReceivedRequest];
  expect(first.connection).toBeDefined();
  expect(second.connection).toBe(first.connection);
  expect(arrived().map((r) => r.connection)).not.toContain(first.connection);

  ac.abort();
  await Promise.all(slow);
  await other.close();
});
