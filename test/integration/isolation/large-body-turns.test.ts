/**
 * A large body's costly steps (decoding, parsing, serializing, copying: core/turns.ts) take its caller's turns: a
 * caller sending many large bodies at once gets one such step per round, and another caller's large body is judged
 * between them, not after them. Real parts: a real SDK agent, the test guardian over HTTP, two verified callers (OIDC).
 * The guardian's connections are not shared per caller here (GUARDIAN_CALLS_PER_CALLER=0), so the order in which the
 * guardian sees calls is the order in which the proxy finished its own work on them.
 */
import { expectServedBetween, heldCall, sidesOf } from '../../helpers/fairness';
import { waitFor } from '../../helpers/net';
import { useStack } from '../../helpers/proxy-harness';
import { useIdentityProxy } from '../../helpers/identities';

const stack = useStack({ name: 'Shared Agent', version: '1.0.0' });
const shared = useIdentityProxy(stack, {
  GUARDIAN_CALLS_PER_CALLER: '0',
  GUARDIAN_TIMEOUT_MS: '60000',
  FAIR_SLICE_MS: '1',
  MAX_BODY_BYTES: String(1024 * 1024),
});

const ATTACK_CALLS = 24;
/** Over LARGE_BODY (256 KiB): each step of these bodies' handling is a turn of its own. */
const LARGE_TEXT = 300 * 1024;

test("a caller's many large bodies take one step per round: another caller's large body is judged between them", async () => {
  const { ids, proxy } = shared;
  stack.guardian.clear();
  // Both read but for their last byte; the flood released first, so its steps are all ready before the victim's body ends.
  const attack = await Promise.all(
    Array.from({ length: ATTACK_CALLS }, (_v, i) => heldCall(proxy.url, ids.headersAs('A'), `attack ${i} ${'x'.repeat(LARGE_TEXT)}`, i)),
  );
  const victim = await heldCall(proxy.url, ids.headersAs('B'), `victim ${'v'.repeat(LARGE_TEXT)}`, 1000);
  await waitFor(() => proxy.metrics.bodyBytesInFlight() >= (ATTACK_CALLS + 1) * LARGE_TEXT);
  for (const call of attack) call.release();
  victim.release();
  const answers = await Promise.all([victim.answer, ...attack.map((c) => c.answer)]);

  // The victim's body was judged before most of the flood's, though its last byte came after all of theirs.
  expectServedBetween(sidesOf(stack.guardian.calls()));
  // Every body was judged and forwarded (the SDK's agent refuses bodies over its 100 KB limit: 413), or the attacker told to retry.
  expect(answers[0]).toMatch(/^HTTP\/1\.1 413 /);
  for (const status of answers.slice(1)) expect(status).toMatch(/^HTTP\/1\.1 (413|429) /);
});
