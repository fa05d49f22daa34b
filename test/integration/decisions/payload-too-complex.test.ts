/**
 * A payload the embedded guardian cannot judge within GUARDIAN_TIMEOUT_MS is denied as too complex
 * (PAYLOAD_TOO_COMPLEX, the binding's denial, counted as a deny): the guardian is healthy, the payload
 * is the problem. So FAIL_MODE=open never passes it, nothing reaches the agent, and the next call is
 * judged as usual. Real SDK agent, the embedded reference guardian (this envelope goes to its worker
 * thread) with config/policy.json, the proxy in between.
 */
import path from 'node:path';
import { rawRpc, startAgent, type TestAgent } from '../../helpers/agent';
import { embeddedGuardian } from '../../../src/guardian/embedded';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

const POLICY = path.join(__dirname, '../../../config/policy.json');

const send = (id: number, text: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] } },
});

let agent: TestAgent;
let proxy: TestProxy;
beforeAll(async () => {
  agent = await startAgent();
  // Every envelope to the worker; a budget far below what the engine needs for the hostile text (about 1 s of CPU).
  proxy = await startTestProxy(
    { UPSTREAM_URL: agent.origin, ROLE: 'server', FAIL_MODE: 'open' },
    embeddedGuardian(POLICY, { timeoutMs: 150, inlineMaxChars: 0 }),
  );
  await proxy.upstreamCard.ready();
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
});

test('a payload too complex to judge in time is denied with PAYLOAD_TOO_COMPLEX under FAIL_MODE=open, and nothing reaches the agent', async () => {
  const hostile = '1 '.repeat(4 * 1024 * 1024);
  const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, send(7, hostile));
  const body = r.json as { id: number; error?: { code: number; message: string; data?: unknown } };
  expect(body.id).toBe(7);
  expect(body.error?.message).toMatch(/too complex/i);
  expect(JSON.stringify(body.error?.data)).toContain('PAYLOAD_TOO_COMPLEX');
  expect(r.headers['x-aos-unchecked']).toBeUndefined();
  expect(agent.received.filter((q) => q.bodyText.includes('1 1 1 1'))).toEqual([]);
  // Counted as a denial, never as a guardian failure or a fail-open pass.
  const metrics = await proxy.metrics.registry.metrics();
  expect(metrics).toMatch(/a2a_guard_hook_decisions_total\{[^}]*decision="deny"[^}]*\} 1/);
  expect(metrics).not.toMatch(/a2a_guard_fail_open_passes_total \d*[1-9]/);
  expect(metrics).not.toMatch(/a2a_guard_guardian_failures_total\{/);
});
