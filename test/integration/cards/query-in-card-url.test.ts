/**
 * An agent whose card names its JSON-RPC endpoint with a query (`.../a2a/jsonrpc?code=...`, as
 * function hosts do). The card the proxy serves keeps that query (card.ts rewriteUrl copies
 * `search`), and a real SDK client posts its JSON-RPC calls to exactly that URL. Since a3f60aa
 * classify.ts refuses every JSON-RPC call with a query parameter (-32600), so the proxy advertises
 * an endpoint it refuses. Positive control: the same client straight to the agent is answered.
 * Whichever way, the card and the refusal must agree.
 */
import { useStack } from '../../helpers/proxy-harness';
import { makeClient, sendReq, textOf } from '../../helpers/agent';

const stack = useStack();

test("an SDK JSON-RPC client that follows the proxy's card is answered when the agent's card URL has a query", async () => {
  for (const i of stack.agent.card.supportedInterfaces) if (i.protocolBinding === 'JSONRPC') i.url = `${i.url}?code=abc`;
  const direct = await makeClient(stack.agent.origin, 'JSONRPC', '1.0');
  expect(textOf(await direct.sendMessage(sendReq('hello')))).toContain('echo: hello');

  const proxy = await stack.proxy();
  const client = await makeClient(proxy.url, 'JSONRPC', '1.0');
  const outcome = await client.sendMessage(sendReq('hello')).then(textOf, (e: unknown) => `refused: ${String(e)}`);
  expect(outcome).toContain('echo: hello');
});
