/**
 * A card the proxy signs names PUBLIC_URL, never the caller's Host. Rewritten from the Host, the proxy
 * would sign, for anyone who asks with `Host: attacker.example`, a card whose interfaces point at the
 * attacker: a verifying client that trusts the proxy's key would accept it wherever it was served from.
 */
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import { startAgent, type TestAgent } from '../../helpers/agent';
import { endpointUrls } from '../../helpers/cards';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { makeKey, writeSigningKey } from '../../helpers/keys';
import { freePort } from '../../helpers/net';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { configFrom } from '../../../src/config/config';
import type { JWK } from '../../../src/identity/jose';

const sdk: typeof A2A = require('@a2a-js/sdk');

let dir: string;
let keyFile: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'card-host-'));
  keyFile = await writeSigningKey(dir, await makeKey('proxy-card-key'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('CARD_SIGNING_KEY_FILE without PUBLIC_URL stops the proxy at start, naming PUBLIC_URL', () => {
  expect(() => configFrom({ UPSTREAM_URL: 'http://127.0.0.1:9', GUARDIAN_URL: 'http://127.0.0.1:9', CARD_SIGNING_KEY_FILE: keyFile })).toThrow(/PUBLIC_URL/);
});

describe('with PUBLIC_URL', () => {
  let agent: TestAgent;
  let guardian: TestGuardian;
  let proxy: TestProxy;
  let publicUrl: string;
  beforeAll(async () => {
    agent = await startAgent();
    guardian = await startGuardian();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    proxy = await startTestProxy({
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      CARD_SIGNING_KEY_FILE: keyFile,
    });
  });
  afterAll(async () => {
    await proxy?.close();
    await agent?.close();
    await guardian?.close();
  });

  /** GET the card with a Host header of the caller's choosing (fetch cannot set Host). */
  const cardWithHost = (host: string): Promise<any> =>
    new Promise((resolve, reject) => {
      const u = new URL(proxy.url);
      http
        .get(
          {
            host: u.hostname,
            port: u.port,
            path: '/.well-known/agent-card.json',
            headers: { host, 'a2a-version': '1.0', 'x-forwarded-host': host },
            agent: false,
          },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString('utf8')));
            res.on('end', () => resolve(JSON.parse(text)));
          },
        )
        .on('error', reject);
    });

  test('a card asked for with another Host is signed naming PUBLIC_URL, and verifies', async () => {
    const card = await cardWithHost('attacker.example');
    const urls = endpointUrls(card);
    expect(urls.length).toBeGreaterThan(0);
    for (const u of urls) expect(new URL(u).origin).toBe(publicUrl);
    expect(JSON.stringify(card)).not.toContain('attacker.example');
    const jwks = (await (await fetch(`${proxy.url}/.well-known/a2a-guard/jwks.json`)).json()) as { keys: JWK[] };
    const quiet = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    try {
      await expect(
        sdk.verifyAgentCardSignature(async (kid) => createPublicKey({ key: jwks.keys.find((k) => k.kid === kid) as JsonWebKey, format: 'jwk' }))(card),
      ).resolves.toBeUndefined();
    } finally {
      quiet.mockRestore();
    }
  });
});
