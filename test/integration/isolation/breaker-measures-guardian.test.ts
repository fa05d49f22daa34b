/**
 * The circuit breaker measures the guardian, not the callers (README "Enforcement and errors"): a
 * real HTTP guardian that is healthy but slow to judge large payloads (an LLM guardian given a long
 * text), a real SDK agent whose request handler records what it acts on, the proxy in-process.
 *
 * One caller's large calls time out; that must not make the guardian "down" for a caller whose small
 * call the guardian answers at once. A guardian that answers nothing (not even a ping), answers 5xx or
 * answers what is not AOS still opens the breaker.
 */
import { rawRpc, textOf, type RawResponse } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { textIn } from '../../helpers/guardian';
import { waitFor } from '../../helpers/net';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

const recorder = handlerRecorder();
const stack = useStack({ wrapRequestHandler: recorder.wrap });
beforeEach(() => recorder.clear());

/** The proxy's time budget (the pings that measure the guardian get as long): generous for a busy machine. */
const BUDGET_MS = 3000;
/** Longer than the budget: a large payload is not judged in time. */
const SLOW_JUDGING_MS = 10_000;
const LARGE = 'x'.repeat(256 * 1024);

const msg = (id: string, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}-${Math.random()}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

const send = (p: TestProxy, id: string, text: string): Promise<RawResponse> => rawRpc(`${p.url}/a2a/jsonrpc`, msg(id, text));

/** The -31503 failure kind of an answer, or undefined when the agent answered. */
const failure = (r: RawResponse): string | undefined =>
  r.json?.error === undefined ? undefined : String(r.json.error.data?.[0]?.metadata?.failure ?? r.json.error.code);

/** What the SDK agent's request handler acted on: the texts of the messages it received. */
const acted = (): string[] => recorder.calls.filter((c) => c.method === 'sendMessage').map((c) => textOf(c.params));

/** A healthy guardian that takes long over large payloads only (pings and small calls are answered at once). */
function slowForLargePayloads(): void {
  stack.guardian.script((env) => (textIn(env).length > 64 * 1024 ? { decision: 'allow', delayMs: SLOW_JUDGING_MS } : { decision: 'allow' }));
}

test("one caller's large calls time out on a healthy guardian: another caller's small call is still judged and served", async () => {
  const p = await stack.proxy({ ROLE: 'server', GUARDIAN_TIMEOUT_MS: String(BUDGET_MS) });
  slowForLargePayloads();
  for (let round = 0; round < 2; round++) {
    // Six at once: more than the five failures that open the breaker.
    const attack = await Promise.all(Array.from({ length: 6 }, (_, i) => send(p, `large-${round}-${i}`, LARGE)));
    expect(attack.map(failure)).toEqual(Array(6).fill('timeout'));
    const victim = await send(p, `small-${round}`, `hello ${round}`);
    expect({ failure: failure(victim), text: textOf(victim.json) }).toEqual({ failure: undefined, text: `echo: hello ${round}` });
  }
  expect(acted()).toEqual(['hello 0', 'hello 1']);
  expect(stack.guardian.envelopes.some((e) => e.method === 'ping')).toBe(true);
});

test('a guardian that answers nothing, not even a ping, opens the breaker: later calls fail fast without reaching it', async () => {
  const p = await stack.proxy({ ROLE: 'server', GUARDIAN_TIMEOUT_MS: '300' });
  stack.guardian.script(() => ({ fault: 'hang' }));
  stack.guardian.scriptPing(() => ({ fault: 'hang' }));
  await waitFor(async () => failure(await send(p, `hung-${Math.random()}`, 'x')) === 'breakerOpen', 15_000, 'the breaker opened');
  const asked = stack.guardian.calls().length;
  expect(failure(await send(p, 'after', 'x'))).toBe('breakerOpen');
  expect(stack.guardian.calls()).toHaveLength(asked);
  expect(acted()).toEqual([]);
});

test.each([
  ['HTTP 500', { fault: 'http500' } as const, 'http'],
  ['a body that is not JSON', { fault: 'garbage' } as const, 'json'],
  ['a result that fails the AOS schema', { fault: 'badSchema' } as const, 'schema'],
])('five answers of %s in a row open the breaker', async (_name, reply, kind) => {
  const p = await stack.proxy({ ROLE: 'server' });
  stack.guardian.script(() => reply);
  for (let i = 0; i < 5; i++) expect(failure(await send(p, `bad-${i}`, 'x'))).toBe(kind);
  expect(failure(await send(p, 'next', 'x'))).toBe('breakerOpen');
  expect(stack.guardian.calls()).toHaveLength(5);
});

test('JSON-RPC errors (the guardian declining one envelope) leave the breaker closed', async () => {
  const p = await stack.proxy({ ROLE: 'server' });
  stack.guardian.script(() => ({ fault: 'rpcError' }));
  for (let i = 0; i < 6; i++) expect(failure(await send(p, `declined-${i}`, 'x'))).toBe('rpcError');
  stack.guardian.reset();
  expect(failure(await send(p, 'fine', 'fine'))).toBeUndefined();
  expect(acted()).toEqual(['fine']);
});
