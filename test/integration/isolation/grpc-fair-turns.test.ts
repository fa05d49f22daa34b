/**
 * gRPC calls take the same per-caller turns as HTTP ones: a caller that floods the gRPC listener with
 * costly calls waits behind its own queue, and another caller's call is judged between them, not after
 * them. Real parts: a real SDK gRPC agent, the test guardian over HTTP, two verified callers (OIDC), the
 * victim on the SDK's gRPC client. The guardian's connections are not shared per caller here
 * (GUARDIAN_CALLS_PER_CALLER=0), so the order in which the guardian sees calls is the order in which the
 * proxy finished its own work on them.
 */
import http2 from 'node:http2';
import { sendReq, textOf } from '../../helpers/agent';
import { grpcFrame, makeGrpcClient } from '../../helpers/grpc';
import { expectServedBetween, sidesOf } from '../../helpers/fairness';
import { waitFor } from '../../helpers/net';
import { useStack } from '../../helpers/proxy-harness';
import { useIdentityProxy, type Caller } from '../../helpers/identities';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(120_000);

const stack = useStack({ name: 'Shared Agent', version: '1.0.0', grpc: true });
const shared = useIdentityProxy(stack, { GRPC_PORT: '0', GUARDIAN_CALLS_PER_CALLER: '0', GUARDIAN_TIMEOUT_MS: '60000', FAIR_SLICE_MS: '1' });

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const ATTACK_CALLS = 100;
/** Each attack call costs the proxy a decode, a re-encoding and an envelope of this many characters. */
const ATTACK_TEXT = 80 * 1024;

function sendFrame(text: string, n: number): Buffer {
  const m = grpcMethodForPath(SEND);
  if (m === undefined) throw new Error(SEND);
  const c = codecFor(m).request;
  return grpcFrame(c.encode(c.fromJson({ message: { messageId: `m-${n}`, role: 'ROLE_USER', parts: [{ text }] } })));
}

/** A SendMessage as `who` on a connection of its own, sent but for its last byte: `release()` sends it; `answer` is the grpc-status. */
async function heldCall(address: string, who: Caller, text: string, n: number): Promise<{ release(): void; answer: Promise<string> }> {
  const frame = sendFrame(text, n);
  const session = http2.connect(`http://${address}`);
  session.on('error', () => undefined);
  const req = session.request({
    ':method': 'POST',
    ':path': SEND,
    'content-type': 'application/grpc',
    te: 'trailers',
    'a2a-version': '1.0',
    ...shared.ids.headersAs(who),
  });
  let status = '';
  req.on('response', (h) => (status = String(h['grpc-status'] ?? status)));
  req.on('trailers', (t) => (status = String(t['grpc-status'] ?? status)));
  req.on('data', () => undefined);
  req.on('error', () => undefined);
  const answer = new Promise<string>((resolve) =>
    req.on('close', () => {
      session.close();
      resolve(status);
    }),
  );
  await new Promise<void>((resolve) => req.write(frame.subarray(0, -1), () => resolve()));
  return { release: () => void req.end(frame.subarray(-1)), answer };
}

test("a caller flooding the gRPC listener with costly calls waits behind its own queue: the victim's calls are judged between them and all succeed", async () => {
  const { ids, proxy } = shared;
  const { client } = await makeGrpcClient(proxy.url);
  const asVictim = { serviceParameters: ids.headersAs('B') };
  // Warm: the victim's first call costs its client and the proxy's caches what later ones do not.
  expect(textOf(await client.sendMessage(sendReq('warm-up'), asVictim))).toContain('warm-up');
  stack.guardian.clear();

  // The flood is read but for each call's last byte; released at once, its work is all ready before the victim's call arrives.
  const attack = await Promise.all(
    Array.from({ length: ATTACK_CALLS }, (_v, i) => heldCall(proxy.grpcAddress as string, 'A', `attack ${i} ${'x'.repeat(ATTACK_TEXT)}`, i)),
  );
  await waitFor(() => proxy.metrics.bodyBytesInFlight() >= ATTACK_CALLS * ATTACK_TEXT);
  for (const call of attack) call.release();
  const victimTexts: string[] = [];
  for (let i = 0; i < 3; i++) victimTexts.push(textOf(await client.sendMessage(sendReq(`victim ${i}`), asVictim)));
  const attacked = await Promise.all(attack.map((c) => c.answer));

  // Every victim call succeeded, through the agent.
  expect(victimTexts.map((t, i) => t.includes(`victim ${i}`))).toEqual([true, true, true]);
  // The guardian saw the victim's first call before most of the flood: served between the attacker's calls, not after them.
  expectServedBetween(sidesOf(stack.guardian.calls()), { victims: 3, floodFirst: true });
  // The attacker was served too (OK) or told to retry (RESOURCE_EXHAUSTED), never dropped.
  for (const status of attacked) expect(['0', '8']).toContain(status);
});
