/**
 * The proxy's CPU stages take turns per caller: a caller that floods the proxy with costly calls waits
 * behind its own queue, and another caller's call is judged and served between them, not after them.
 * Real parts: a real SDK agent, the test guardian over HTTP, two verified callers (OIDC). The
 * guardian's connections are not shared per caller here (GUARDIAN_CALLS_PER_CALLER=0), so the order in
 * which the guardian sees calls is the order in which the proxy finished its own work on them.
 */
import { makeClient, sendReq, textOf } from '../../helpers/agent';
import { expectServedBetween, heldCall, sidesOf } from '../../helpers/fairness';
import { waitFor } from '../../helpers/net';
import { useStack } from '../../helpers/proxy-harness';
import { useIdentityProxy } from '../../helpers/identities';

const stack = useStack({ name: 'Shared Agent', version: '1.0.0' });
const shared = useIdentityProxy(stack, { GUARDIAN_CALLS_PER_CALLER: '0', GUARDIAN_TIMEOUT_MS: '60000', FAIR_SLICE_MS: '1' });

const ATTACK_CALLS = 100;
/** Each attack call costs the proxy a parse, a serialisation and an envelope of this many characters. */
const ATTACK_TEXT = 80 * 1024;

test("a caller flooding the proxy with costly calls waits behind its own queue: the victim's calls are judged between them and all succeed", async () => {
  const { ids, proxy } = shared;
  const victim = await makeClient(proxy.url, 'JSONRPC', '1.0', { fetchImpl: ids.fetchAs('B') });
  // Warm: the victim's first call costs its client and the proxy's caches what later ones do not.
  expect(textOf(await victim.sendMessage(sendReq('warm-up')))).toContain('warm-up');
  stack.guardian.clear();
  stack.agent.clear();

  // The flood is read but for each call's last byte; released at once, its work is all ready before the victim's call arrives.
  const attack = await Promise.all(
    Array.from({ length: ATTACK_CALLS }, (_v, i) => heldCall(proxy.url, ids.headersAs('A'), `attack ${i} ${'x'.repeat(ATTACK_TEXT)}`, i)),
  );
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
  expectServedBetween(sidesOf(stack.guardian.calls()), { victims: 3, floodFirst: true });
  // The attacker was served too (or told to retry), never dropped.
  for (const status of attacked) expect(status).toMatch(/^HTTP\/1\.1 (200|429) /);
});
