/**
 * A caller past FAIR_QUEUE_PER_CALLER has its refusals written in its own turns, one per round; at most as many
 * refusals wait again, and past them its connection is closed without an answer. Pipelined requests are parsed
 * thousands per read: each one waiting held its request and response (~1.6 KiB of heap per 28 bytes sent).
 * The attacker connects from 127.0.0.2, the victim (a real SDK client) from 127.0.0.1.
 */
import net from 'node:net';
import { makeClient, sendReq, textOf } from '../../helpers/agent';
import { sleep, waitFor } from '../../helpers/net';
import { counted, useStack } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

const stack = useStack();

test("a caller's pipelined flood past its waiting turns and refusals has its connection closed; another caller's call goes through", async () => {
  const proxy = await stack.proxy({ ROLE: 'server', FAIR_QUEUE_PER_CALLER: '2', INSPECT_CARDS: 'false' });
  const port = Number(new URL(proxy.url).port);
  const attacker = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
  attacker.on('error', () => undefined);
  attacker.resume();
  let closed = false;
  attacker.once('close', () => (closed = true));
  await new Promise((resolve) => attacker.once('connect', resolve));
  // Chunks of 10,000 requests while the connection is open: far past the two turns and two refusals a caller may
  // have waiting. Each waiting refusal held its request and response while the flood went on (~16 MiB of heap per chunk).
  let chunks = 0;
  while (!closed && chunks < 40) {
    attacker.write('GET /x HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(10_000));
    chunks++;
    await sleep(25);
  }
  await waitFor(() => closed, 10_000, "the flooding caller's connection closed");
  // Closed while the flood went on, not once it stopped.
  expect(chunks).toBeLessThan(40);
  expect(await counted(proxy, 'a2a_guard_caller_limited_total', 'turns')).toBeGreaterThan(4);
  const victim = await makeClient(proxy.url, 'JSONRPC', '1.0');
  expect(textOf(await victim.sendMessage(sendReq('victim after a flood')))).toContain('victim after a flood');
});
