/**
 * The assertion a ROLE=client proxy signs for the agent is signed as the call arrives (while its body comes), but the
 * call may then take longer than the assertion lives (a slow guardian, a wait for a place, a slow body): the agent
 * must never receive one that has expired on the way. A real signing key, a real HTTP guardian held back for longer
 * than ASSERTION_TTL_SECONDS, and a recorder where the server sidecar would be.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rawRpc } from '../../helpers/agent';
import { makeKey, writeSigningKey } from '../../helpers/keys';
import { recordingUpstream } from '../../helpers/net';
import { startTestProxy, useStack } from '../../helpers/proxy-harness';

const stack = useStack();
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'a2a-guard-fresh-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const claimsOf = (jwt: string): { exp: number; iat: number } =>
  JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString('utf8')) as { exp: number; iat: number };

test.each([
  ['a call judged at once gets the assertion signed as it arrived', 0],
  ['a call the guardian holds past the assertion lifetime gets one signed when it is forwarded', 2300],
])('%s', async (_what, holdMs) => {
  const upstream = await recordingUpstream();
  const proxy = await startTestProxy({
    GUARDIAN_URL: stack.guardian.url,
    GUARDIAN_TIMEOUT_MS: '10000',
    ROLE: 'client',
    UPSTREAM_URL: upstream.url,
    OBSERVED_AGENT_ID: 'cooking-assistant',
    OBSERVED_AGENT_NAME: 'Cooking assistant',
    OBSERVED_AGENT_URL: 'https://kitchen.example/agents/cooking-assistant',
    OBSERVED_AGENT_VERSION: '1.0.0',
    ASSERTION_SIGNING_KEY_FILE: await writeSigningKey(dir, await makeKey(`fresh-${holdMs}`)),
    ASSERTION_TTL_SECONDS: '2',
  });
  try {
    stack.guardian.script(() => ({ decision: 'allow', delayMs: holdMs }));
    const sentMs = Date.now();
    const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'hello' }] } },
    });
    expect(r.json).toMatchObject({ result: { kind: 'message' } });
    expect(upstream.posts()).toHaveLength(1);
    const { headers, atMs } = upstream.posts()[0]!;
    const { exp, iat } = claimsOf(headers['x-aos-agent-assertion'] as string);
    // Still valid when the agent's side reads it (exp is in whole seconds).
    expect(exp * 1000).toBeGreaterThan(atMs);
    if (holdMs > 0) expect(iat * 1000).toBeGreaterThanOrEqual(Math.floor(sentMs / 1000) * 1000 + 1000);
  } finally {
    stack.guardian.reset();
    await proxy.close();
    await upstream.close();
  }
});
