/**
 * The proxy's CPU stages take turns per caller: a caller that floods the proxy with costly calls waits
 * behind its own queue, and another caller's call is judged and served between them, not after them.
 * Real parts: a real SDK agent, the test guardian over HTTP, two verified callers (OIDC). The
 * guardian's connections are not shared per caller here (GUARDIAN_CALLS_PER_CALLER=0), so the order in
 * which the guardian sees calls is the order in which the proxy finished its own work on them.
 */
import net from 'node:net';
import { makeClient, sendReq, textOf } from '../../helpers/agent';
import { expectServedBetween, sidesOf } from '../../helpers/fairness';
import { waitFor } from '../../helpers/net';
import { useStack } from '../../helpers/proxy-harness';
import { useIdentityProxy, type Caller } from '../../helpers/identities';

const stack = useStack({ name: 'Shared Agent', version: '1.0.0' });
const shared = useIdentityProxy(stack, { GUARDIAN_CALLS_PER_CALLER: '0', GUARDIAN_TIMEOUT_MS: '60000', FAIR_SLICE_MS: '1' });

const ATTACK_CALLS = 100;
/** Each attack call costs the proxy a parse, a serialisation and an envelope of this many characters. */
const ATTACK_TEXT = 80 * 1024;

/**
 * A JSON-RPC SendMessage as `who` on a socket of its own, sent but for its last byte: `release()` sends
 * that byte; `answer` is the status line the caller gets.
 */
async function heldCall(url: string, who: Caller, text: string, id: number): Promise<{ release(): void; answer: Promise<string> }> {
  const u = new URL(url);
  const body = Buffer.from(
    JSON.stringify({ jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } } }),
  );
  const headers = Object.entries({
    ...shared.ids.headersAs(who),
    'a2a-version': '1.0',
    'content-type': 'application/json',
    'content-length': String(body.length),
    connection: 'close',
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const s = net.connect(Number(u.port), u.hostname);
  let got = '';
  s.on('data', (c: Buffer) => (got += c.toString('latin1')));
  const answer = new Promise<string>((resolve) => s.on('close', () => resolve(got.split('\r\n')[0] ?? '')));
  s.on('error', () => undefined);
  await new Promise<void>((resolve) =>
    s.write(`POST /a2a/jsonrpc HTTP/1.1\r\nhost: ${u.host}\r\n${headers}\r\n`, () => s.write(body.subarray(0, -1), () => resolve())),
  );
  return { release: () => void s.write(body.subarray(-1)), answer };
}

test("a caller flooding the proxy with costly calls waits behind its own queue: the victim's calls are judged between them and all succeed", async () => {
  const { ids, proxy } = shared;
  const victim = await makeClient(proxy.url, 'JSONRPC', '1.0', { fetchImpl: ids.fetchAs('B') });
  // Warm: the victim's first call costs its client and the proxy's caches what later ones do not.
  expect(textOf(await victim.sendMessage(sendReq('warm-up')))).toContain('warm-up');
  stack.guardian.clear();
  stack.agent.clear();

  // The flood is read but for each call's last byte; released at once, its work is all ready before the victim's call arrives.
  const attack = await Promise.all(Array.from({ length: ATTACK_CALLS }, (_v, i) => heldCall(proxy.url, 'A', `attack ${i} ${'x'.repeat(ATTACK_TEXT)}`, i)));
  await waitFor(() => proxy.metrics.bodyBytesInFlight() >= ATTACK_CALLS * ATTACK_TEXT);
  for (const call of attack) call.release();
  const victimTexts: string[] = [];
  for (let i = 0; i < 3; i++) {
    const answer = await victim.sendMessage(sendReq(`victim ${i}`));
    victimTexts.push(textOf(answer));
  }
  const attacked = await Promise.all(attack.map((c) => c.answer));

  // Every victim call succeeded, through the agent's handler.
  expect(victimTexts.map((t, i) => t.includes(`victim ${i}`))).toEqual([true, true, true]);
  // The guardian saw the victim's first call before most of the flood (served between the attacker's calls, not after
  // them), and its later calls too: all three before the flood's end.
  expectServedBetween(sidesOf(stack.guardian.calls()), 3);
  // The attacker was served too (or told to retry), never dropped.
  for (const status of attacked) expect(status).toMatch(/^HTTP\/1\.1 (200|429) /);
});
