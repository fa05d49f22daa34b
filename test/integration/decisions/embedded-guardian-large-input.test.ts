/**
 * The reference guardian's engine: a text of ~8.5 million digits (within the
 * proxy's 10 MiB MAX_BODY_BYTES) overflowed V8's regexp backtrack stack in the card detector
 * (`\d(?:[ -]?\d)*`), and the engine threw. A thrown engine is "no valid answer": under
 * FAIL_MODE=open the call went on unmasked (an e-mail address the policy masks reached the agent);
 * the standalone guardian answered a JSON-RPC error, the same. The detectors are linear scans now and
 * decide on such a text; a policy's own pattern that cannot walk the content still denies it, as
 * content nested too deep is. Real SDK agent, the embedded reference guardian with config/policy.json
 * (this envelope is judged on its worker thread), the proxy in between.
 */
import path from 'node:path';
import { startAgent, type TestAgent } from '../../helpers/agent';
import { embeddedGuardian } from '../../../src/guardian/embedded';
import { createEngine } from '../../../src/guardian/engine';
import { loadPolicy, parsePolicy } from '../../../src/guardian/policy';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

const POLICY = path.join(__dirname, '../../../config/policy.json');
const DIGITS = '4'.repeat(8_500_000);

const send = (text: string, digits: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: {
    message: {
      kind: 'message',
      messageId: 'm-1',
      role: 'user',
      parts: [
        { kind: 'text', text },
        { kind: 'text', text: digits },
      ],
    },
  },
});

describe('reference guardian engine on content its patterns cannot walk', () => {
  const context = {
    from: { role: 'client', agent: { url: 'u', name: 'n', version: 'v' } },
    to: { role: 'server', agent: { id: 'i', url: 'u', name: 'n', version: 'v', instructions: 'x', provider: { name: 'p', url: 'u' } } },
  };
  const envelope = { jsonrpc: '2.0', id: 'e-1', method: 'message/send', params: { payload: send('write to alice@example.com', DIGITS), context } };

  test('the detectors walk it: the address is masked, the digits (no card number) kept', () => {
    const result = createEngine(loadPolicy(POLICY)).decide(envelope as never);
    expect(result.decision).toBe('modify');
    const parts = (result.modifiedRequest?.params.payload['params'] as { message: { parts: Array<{ text: string }> } }).message.parts;
    expect(parts[0]?.text).toBe('write to [EMAIL]');
    expect(parts[1]?.text).toBe(DIGITS);
  });

  test('a policy pattern that runs out of backtrack stack decides (deny) instead of throwing', () => {
    const engine = createEngine(parsePolicy({ mask: [{ id: 'runs', patterns: ['\\d(?:[ -]?\\d)*'] }] }, 'test'));
    expect(engine.decide(envelope as never)).toMatchObject({ decision: 'deny', reasonCode: ['PAYLOAD_TOO_COMPLEX'] });
  });

  describe('through the proxy, FAIL_MODE=open', () => {
    let agent: TestAgent;
    let proxy: TestProxy;
    beforeAll(async () => {
      agent = await startAgent();
      // A budget for a loaded test machine: the worker compiles its TypeScript under ts-jest.
      proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, ROLE: 'server', FAIL_MODE: 'open' }, embeddedGuardian(POLICY, { timeoutMs: 60_000 }));
      await proxy.upstreamCard.ready();
    });
    afterAll(async () => {
      await proxy?.close();
      await agent?.close();
    });

    test('an address the policy masks never reaches the agent behind a run of digits', async () => {
      const res = await fetch(`${proxy.url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(send('write to alice@example.com', DIGITS)),
      });
      await res.text();
      // The bytes the agent was sent (its SDK then refuses a body over 100 KB: 413, its own answer).
      expect(agent.received.filter((r) => r.bodyText.includes('alice@example.com'))).toEqual([]);
      expect(agent.received.filter((r) => r.bodyText.includes('write to [EMAIL]') && r.bodyText.includes(DIGITS))).toHaveLength(1);
      expect(res.status).toBe(413);
    });
  });
});
