/**
 * The proxy's connections to the agent are kept per caller, and a caller's idle ones stay open after it left (until
 * the keep-alive ends): nobody else's call may use them. MAX_CONNECTIONS counts twice in the process's descriptors
 * (core/descriptor-budget.ts), one connection to the agent per caller's connection, so callers that come and go, each with many
 * calls at once, must not leave more idle connections to the agent than that: past it, the least recently used
 * callers' idle connections are closed for the new ones. Else the process runs out of descriptors, and a victim's
 * connection or its call's connection to the agent fails. The callers come from 127.0.0.2-9, the victim (a real SDK
 * client) from 127.0.0.1.
 */
import fs from 'node:fs';
import type { Socket } from 'node:net';
import { Agent as UndiciAgent, fetch as undiciFetch } from 'undici';
import { makeClient, sendReq, textOf } from '../../helpers/agent';
import { useStack } from '../../helpers/proxy-harness';
import { MAIN, ensureBuilt, reapAll, startProxyProcess } from '../../helpers/proxy-process';

jest.setTimeout(90_000);

// Each call is held at the agent a moment: a caller's calls are all in flight at once, each on a connection of its own.
const stack = useStack({ slowMs: 300, stepMs: 50 });
afterAll(() => reapAll());

/** True: the agent's answer came back. */
function slowCall(url: string, from: UndiciAgent, i: number): Promise<boolean> {
  return undiciFetch(`${url}/a2a/jsonrpc`, {
    method: 'POST',
    dispatcher: from,
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: i,
      method: 'SendMessage',
      params: { message: { messageId: `m-${i}`, role: 'ROLE_USER', parts: [{ text: `slow ${i}` }] } },
    }),
  }).then(
    async (r) => (await r.text()).includes(`echo: slow ${i}`),
    () => false,
  );
}

const descriptors = (pid: number): number => fs.readdirSync(`/proc/${pid}/fd`).length;

test("callers that come and go, each with 100 calls at once, leave the process descriptors for another caller's call", async () => {
  ensureBuilt();
  // 768 descriptors: 704 past the reserve, a third each to the listeners, the agent and the guardian's calls: MAX_CONNECTIONS 234, one caller at most 117.
  const proxy = await startProxyProcess(
    { UPSTREAM_URL: stack.agent.origin, GUARDIAN_URL: stack.guardian.url, ROLE: 'server', INSPECT_CARDS: 'false' },
    { node: 'bash', script: '-c', args: [`ulimit -n 768 && exec "$0" "${MAIN}"`, process.execPath] },
  );
  const pid = proxy.child.pid as number;
  const victim = await makeClient(proxy.base, 'JSONRPC', '1.0', { fetchImpl: (u, init) => fetch(u, { ...init, signal: AbortSignal.timeout(10_000) }) });
  expect(textOf(await victim.sendMessage(sendReq('victim before')))).toContain('victim before');

  let most = 0;
  // The proxy's connections open at the agent, and the most at once.
  let atAgent = 0;
  let mostAtAgent = 0;
  const counting = (socket: Socket): void => {
    mostAtAgent = Math.max(mostAtAgent, ++atAgent);
    socket.once('close', () => atAgent--);
  };
  stack.agent.server.on('connection', counting);
  const answered: boolean[] = [];
  const victimCalls: string[] = [];
  // Eight callers one after another, within the agent's keep-alive (each leaves after ~300 ms); the victim calls
  // while each one's calls are in flight.
  for (let c = 2; c <= 9; c++) {
    const caller = new UndiciAgent({ localAddress: `127.0.0.${c}`, connections: 100 });
    const calls = Array.from({ length: 100 }, (_v, i) => slowCall(proxy.base, caller, c * 1000 + i));
    const sampler = setInterval(() => (most = Math.max(most, descriptors(pid))), 20);
    await new Promise((r) => setTimeout(r, 100));
    victimCalls.push(await victim.sendMessage(sendReq(`victim ${c}`)).then(textOf, (err: Error) => `failed: ${err.message}`));
    answered.push(...(await Promise.all(calls)));
    clearInterval(sampler);
    await caller.close();
  }
  stack.agent.server.off('connection', counting);
  process.stdout.write(
    `descriptors: most ${most}; at the agent: most ${mostAtAgent}; callers' calls answered ${answered.filter(Boolean).length}/800; victim: ${victimCalls.filter((v) => v.startsWith('echo')).length}/8\n`,
  );
  for (let c = 2; c <= 9; c++) expect(victimCalls[c - 2]).toContain(`victim ${c}`);
  expect(answered.every(Boolean)).toBe(true);
  expect(most).toBeLessThan(768);
  expect(mostAtAgent).toBeLessThanOrEqual(234);
});
