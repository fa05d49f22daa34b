/**
 * A2A signs a card with its empty values removed, so an empty entry added to a list of a signed card
 * (`"security": [{}]`: an empty requirement, "no authentication needed") leaves every signature valid,
 * the SDK's own verifier included. With CARD_SIGNATURES=require the proxy vouches for the agent's card:
 * it refuses one holding an entry no signature covers, rather than serve it (re-signed) as the agent's.
 */
import http from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import { startAgent, type TestAgent } from '../../helpers/agent';
import { atPublicUrl } from '../../helpers/cards';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { makeKey, writeSigningKey } from '../../helpers/keys';
import { closeServer, listen } from '../../helpers/net';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { jose } from '../../../src/identity/jose';

const sdk: typeof A2A = require('@a2a-js/sdk');
const CARD = '/.well-known/agent-card.json';

const agentKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
let dir: string;
let agent: TestAgent;
let guardian: TestGuardian;
let tamper: http.Server;
let proxy: TestProxy;
/** What the party between the agent and the proxy adds to the agent's signed card. */
let addition: Record<string, unknown> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'card-empty-'));
  const trust = join(dir, 'agent.jwks.json');
  await writeFile(trust, JSON.stringify({ keys: [{ ...(await jose().exportJWK(agentKeys.publicKey)), kid: 'agent-key', alg: 'ES256' }] }));
  agent = await startAgent({ signCards: { key: agentKeys.privateKey, kid: 'agent-key' } });
  guardian = await startGuardian();
  // On the way from the agent: its signed card, with members added.
  tamper = http.createServer((req, res) => {
    void fetch(`${agent.origin}${req.url ?? '/'}`, { headers: { 'a2a-version': String(req.headers['a2a-version'] ?? '') } }).then(async (r) => {
      const card = { ...((await r.json()) as Record<string, unknown>), ...addition };
      res.writeHead(r.status, { 'content-type': 'application/json' }).end(JSON.stringify(card));
    });
  });
  const origin = await listen(tamper);
  const proxyKey = await writeSigningKey(dir, await makeKey('proxy-card-key'));
  proxy = await startTestProxy({
    ...(await atPublicUrl()),
    UPSTREAM_URL: origin,
    GUARDIAN_URL: guardian.url,
    CARD_SIGNATURES: 'require',
    CARD_TRUST_JWKS_FILE: trust,
    CARD_SIGNING_KEY_FILE: proxyKey,
    CARD_TTL_MS: '0',
  });
});
afterAll(async () => {
  await proxy?.close();
  await closeServer(tamper);
  await agent?.close();
  await guardian?.close();
  await rm(dir, { recursive: true, force: true });
});

test('the untouched signed card is served', async () => {
  addition = {};
  const res = await fetch(`${proxy.url}${CARD}`, { headers: { 'a2a-version': '1.0' } });
  expect(res.status).toBe(200);
});

test.each([
  ['v1.0 securityRequirements: [{}]', { securityRequirements: [{}] }],
  ['v0.3 security: [{}]', { security: [{}] }],
  ['an empty list among the requirements', { securityRequirements: [[], { schemes: {} }] }],
])('%s: the SDK verifier still accepts the card, the proxy refuses it', async (_n, added) => {
  addition = added;
  const direct = (await (await fetch(`${agent.origin}${CARD}`, { headers: { 'a2a-version': '1.0' } })).json()) as Record<string, unknown>;
  await expect(sdk.verifyAgentCardSignature(async () => agentKeys.publicKey)({ ...direct, ...added } as never)).resolves.toBeUndefined();
  const res = await fetch(`${proxy.url}${CARD}`, { headers: { 'a2a-version': '1.0' } });
  expect(res.status).toBe(502);
  expect(await res.text()).not.toContain('[{}]');
});
