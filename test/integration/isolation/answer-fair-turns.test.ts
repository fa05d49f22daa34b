/**
 * Judging an agent's answers takes per-caller turns: a caller whose many calls are answered at once
 * with costly answers waits behind its own queue, and another caller's answer is judged between them,
 * not after them. Real parts: the test guardian over HTTP (INSPECT_RESPONSES=true), two verified
 * callers (OIDC), the victim on a real SDK client. The agent holds every answer until the victim's call
 * arrived, then writes them all at once, the victim's last. The guardian's connections are not shared
 * per caller here (GUARDIAN_CALLS_PER_CALLER=0), so the order in which the guardian sees answers is the
 * order in which the proxy finished its own work on them.
 */
import { makeClient, sendReq, textOf } from '../../helpers/agent';
import { answer, useHostileAgent, type Req } from '../../helpers/hostile-agent';
import { isResponseEnvelope, startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startIdentities, type TestIdentities } from '../../helpers/identities';
import { expectServedBetween, sidesOf } from '../../helpers/fairness';
import { waitFor } from '../../helpers/net';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(120_000);

const hostile = useHostileAgent();
let guardian: TestGuardian;
let ids: TestIdentities;
let proxy: TestProxy;

beforeAll(async () => {
  guardian = await startGuardian();
  ids = await startIdentities();
  proxy = await startTestProxy({
    UPSTREAM_URL: hostile.origin,
    GUARDIAN_URL: guardian.url,
    ...ids.env,
    INSPECT_RESPONSES: 'true',
    GUARDIAN_CALLS_PER_CALLER: '0',
    GUARDIAN_TIMEOUT_MS: '60000',
    FAIR_SLICE_MS: '1',
  });
});
afterAll(async () => {
  await proxy.close();
  await guardian.close();
  await ids.close();
});

const ATTACK_CALLS = 100;
/** Each attack answer costs the proxy a parse, a serialisation and an envelope of this many characters. */
const ANSWER_TEXT = 80 * 1024;

/** A JSON-RPC answer: an agent message whose text starts with `text`. */
function messageAnswer(r: Req, text: string): Buffer {
  return answer(
    200,
    [['content-type', 'application/json']],
    JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { message: { messageId: `a-${String(r.id)}`, role: 'ROLE_AGENT', parts: [{ text }] } } }),
  );
}

test("a caller whose many answers arrive at once waits behind its own queue: the victim's answer is judged between them", async () => {
  const victim = await makeClient(proxy.url, 'JSONRPC', '1.0', { fetchImpl: ids.fetchAs('B') });
  // Warm: the victim's first call costs its client and the proxy's caches what later ones do not.
  hostile.script = (r) => messageAnswer(r, 'warm-up');
  expect(textOf(await victim.sendMessage(sendReq('warm-up')))).toContain('warm-up');
  guardian.clear();
  hostile.received.length = 0;

  // Every answer waits until the victim's call arrived; then the attacker's are written first, the victim's last.
  const held: Array<{ victim: boolean; write: () => void }> = [];
  hostile.script = (r) =>
    new Promise<Buffer>((resolve) => {
      const isVictim = r.text.includes('victim call');
      held.push({ victim: isVictim, write: () => resolve(messageAnswer(r, isVictim ? 'victim answer' : `attack answer ${'x'.repeat(ANSWER_TEXT)}`)) });
    });
  const attack = Array.from({ length: ATTACK_CALLS }, (_v, i) =>
    fetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { ...ids.headersAs('A'), 'a2a-version': '1.0', 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: i,
        method: 'SendMessage',
        params: { message: { messageId: `m-${i}`, role: 'ROLE_USER', parts: [{ text: `attack call ${i}` }] } },
      }),
    }).then((r) => r.status),
  );
  let victimAnswer: ReturnType<typeof victim.sendMessage>;
  try {
    await waitFor(() => held.length === ATTACK_CALLS, 60_000, 'the attack calls at the agent');
    victimAnswer = victim.sendMessage(sendReq('victim call'));
    await waitFor(() => held.length === ATTACK_CALLS + 1, 60_000, "the victim's call at the agent");
  } finally {
    for (const h of held.filter((x) => !x.victim)) h.write();
    held.find((x) => x.victim)?.write();
  }

  expect(textOf(await victimAnswer)).toContain('victim answer');
  const statuses = await Promise.all(attack);

  // The guardian judged the victim's answer before most of the attacker's: between them, not after them.
  expectServedBetween(sidesOf(guardian.calls().filter(isResponseEnvelope)), { floodFirst: true });
  // The attacker was served too (or told to retry), never dropped.
  for (const status of statuses) expect([200, 429]).toContain(status);
});
