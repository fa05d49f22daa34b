/**
 * Cards signed by the proxy (CARD_SIGNING_KEY_FILE) and the agent's signature required
 * (CARD_SIGNATURES=require), with real @a2a-js/sdk agents that sign their cards (or not) and real SDK
 * clients. Every signature is checked with verifiers that are not the proxy's code: `jose`'s
 * flattenedVerify over a payload this file canonicalises itself (A2A v1.0 section 8.4: the card
 * without `signatures`, empty members removed, RFC 8785), and the SDK's verifyAgentCardSignature.
 */
import { createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import pino from 'pino';
import { join } from 'node:path';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type * as A2AClient from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import { makeClient, rawRpc, sendReq, startAgent, type AgentCard, type TestAgent } from '../../helpers/agent';
import { atPublicUrl, endpointUrls, joseVerifyCard } from '../../helpers/cards';
import { makeGrpcClient } from '../../helpers/grpc';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { makeKey, writeJwks, writeSigningKey, type TestKey } from '../../helpers/keys';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { jose, type JWK } from '../../../src/identity/jose';

const sdk: typeof A2A = require('@a2a-js/sdk');
const sdkClient: typeof A2AClient = require('@a2a-js/sdk/client');

const CARD = '/.well-known/agent-card.json';
const JWKS = '/.well-known/a2a-guard/jwks.json';

/** Verify a card's one signature with jose against a JWKS (test/helpers/cards.ts): the kid of the one that verified. */
async function joseVerify(card: any, jwks: { keys: JWK[] }): Promise<string> {
  const header = await joseVerifyCard(card, jwks as unknown as { keys: Array<Record<string, unknown>> });
  expect(header.typ).toBe('JOSE');
  return header.kid as string;
}

async function publicKeyOf(jwks: { keys: JWK[] }, kid: string): Promise<KeyObject> {
  return createPublicKey({ key: jwks.keys.find((k) => k.kid === kid) as JsonWebKey, format: 'jwk' });
}

/** The agent's extended card: its card under another name (served to any caller). */
const extendedName = (_caller: string | undefined, card: AgentCard): AgentCard => ({ ...card, name: `${card.name} (extended)` });

function expectAtProxy(card: any, proxyUrl: string): void {
  const urls = endpointUrls(card).filter((u) => /^https?:/.test(u));
  expect(urls.length).toBeGreaterThan(0);
  for (const u of urls) expect(new URL(u).origin).toBe(proxyUrl);
}

describe('cards signed by the proxy (CARD_SIGNING_KEY_FILE)', () => {
  const agentKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let dir: string;
  let proxyKey: TestKey;
  let agent: TestAgent;
  let guardian: TestGuardian;
  let proxy: TestProxy;
  let jwks: { keys: JWK[] };
  let quiet: jest.SpyInstance;

  beforeAll(async () => {
    // The SDK verifier console.debug()s every entry that fails; some are expected here.
    quiet = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    dir = await mkdtemp(join(tmpdir(), 'card-sign-'));
    proxyKey = await makeKey('proxy-card-key');
    agent = await startAgent({
      extendedAgentCard: true,
      extendedCardFor: extendedName,
      grpc: true,
      signCards: { key: agentKeys.privateKey, kid: 'agent-key' },
    });
    guardian = await startGuardian();
    proxy = await startTestProxy({
      ...(await atPublicUrl()),
      UPSTREAM_URL: agent.origin,
      GRPC_UPSTREAM_URL: `http://${agent.grpcAddress as string}`,
      GRPC_PORT: '0',
      GUARDIAN_URL: guardian.url,
      CARD_SIGNING_KEY_FILE: await writeSigningKey(dir, proxyKey),
    });
    await proxy.upstreamCard.ready();
    jwks = (await (await fetch(`${proxy.url}${JWKS}`)).json()) as { keys: JWK[] };
  });
  afterAll(async () => {
    quiet.mockRestore();
    await proxy?.close();
    await agent?.close();
    await guardian?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('the JWKS path publishes the public key only', async () => {
    expect(jwks.keys.map((k) => k.kid)).toEqual(['proxy-card-key']);
    for (const k of jwks.keys) expect('d' in k).toBe(false);
  });

  test.each([
    ['v1 card', { 'a2a-version': '1.0' }],
    ['v0.3 card', {} as Record<string, string>],
  ])('%s at the standard path: the rewritten card carries one signature, by the proxy, that verifies', async (_n, headers) => {
    const res = await fetch(`${proxy.url}${CARD}`, { headers });
    const card: any = await res.json();
    expectAtProxy(card, proxy.url);
    expect(await joseVerify(card, jwks)).toBe('proxy-card-key');
    expect(JSON.parse(Buffer.from(card.signatures[0].protected, 'base64url').toString()).jku).toBe(`${proxy.url}${JWKS}`);
    // The test's verifier tells a good signature from a bad one.
    await expect(joseVerify({ ...card, name: 'tampered' }, jwks)).rejects.toThrow();
    await expect(
      joseVerify({ ...card, supportedInterfaces: card.supportedInterfaces.map((i: any) => ({ ...i, url: i.url.replace(proxy.url, agent.origin) })) }, jwks),
    ).rejects.toThrow();
  });

  test("the SDK's own verifier accepts the v1 card an SDK resolver reads through the proxy, and rejects the agent's key", async () => {
    const card = await new sdkClient.DefaultAgentCardResolver().resolve(proxy.url);
    await expect(sdk.verifyAgentCardSignature(async (kid) => publicKeyOf(jwks, kid))(card)).resolves.toBeUndefined();
    await expect(sdk.verifyAgentCardSignature(async () => agentKeys.publicKey)(card)).rejects.toThrow();
  });

  test.each([
    ['JSON-RPC v1', 'POST', '/a2a/jsonrpc', { 'a2a-version': '1.0' }, { jsonrpc: '2.0', id: 'x1', method: 'GetExtendedAgentCard', params: {} }],
    ['JSON-RPC v0.3', 'POST', '/a2a/jsonrpc', {}, { jsonrpc: '2.0', id: 'x2', method: 'agent/getAuthenticatedExtendedCard' }],
    ['REST v1', 'GET', '/a2a/rest/extendedAgentCard', { 'a2a-version': '1.0' }, undefined],
    ['REST v0.3', 'GET', '/a2a/rest/v1/card', {}, undefined],
  ] as const)('extended card, %s: signed by the proxy, verifies', async (_n, verb, path, headers, body) => {
    const res = await fetch(`${proxy.url}${path}`, {
      method: verb,
      headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const json: any = await res.json();
    const card = body ? json.result : json;
    expect(card.name).toMatch(/\(extended\)$/);
    expectAtProxy(card, proxy.url);
    expect(await joseVerify(card, jwks)).toBe('proxy-card-key');
  });

  test.each([['JSONRPC'], ['HTTP+JSON']] as const)(
    "SDK client %s v1: getAgentCard() (the extended card) passes the SDK verifier with the proxy's key",
    async (binding) => {
      const client = await makeClient(proxy.url, binding, '1.0');
      const card = await client.getAgentCard();
      expect(card.name).toMatch(/\(extended\)$/);
      await expect(sdk.verifyAgentCardSignature(async (kid) => publicKeyOf(jwks, kid))(card)).resolves.toBeUndefined();
    },
  );

  test("SDK gRPC client: the extended card over gRPC passes the SDK verifier with the proxy's key", async () => {
    const { client } = await makeGrpcClient(proxy.url);
    const card = await client.getAgentCard();
    expect(card.name).toMatch(/\(extended\)$/);
    expect(card.signatures).toHaveLength(1);
    await expect(sdk.verifyAgentCardSignature(async (kid) => publicKeyOf(jwks, kid))(card)).resolves.toBeUndefined();
  });

  test('ROLE=client, the card at a CARD_PATHS path: signed by the proxy, verifies; an SDK client built from it calls the proxy', async () => {
    const CARD_PATH = '/.well-known/remote/agent-card.json';
    const remote = await startAgent({ cardPath: CARD_PATH, signCards: { key: agentKeys.privateKey, kid: 'agent-key' } });
    const client = await startTestProxy({
      ...(await atPublicUrl()),
      UPSTREAM_URL: remote.origin,
      GUARDIAN_URL: guardian.url,
      ROLE: 'client',
      OBSERVED_AGENT_NAME: 'caller',
      CARD_PATHS: CARD_PATH,
      CARD_SIGNING_KEY_FILE: await writeSigningKey(dir, proxyKey, 'client.jwk.json'),
    });
    try {
      for (const headers of [{ 'a2a-version': '1.0' }, {}] as Array<Record<string, string>>) {
        const card: any = await (await fetch(`${client.url}${CARD_PATH}`, { headers })).json();
        expectAtProxy(card, client.url);
        expect(await joseVerify(card, jwks)).toBe('proxy-card-key');
      }
      const sdkCard = await new sdkClient.DefaultAgentCardResolver().resolve(client.url, CARD_PATH);
      await expect(sdk.verifyAgentCardSignature(async (kid) => publicKeyOf(jwks, kid))(sdkCard)).resolves.toBeUndefined();
      remote.received.length = 0;
      const c = await makeClient(client.url, 'JSONRPC', '1.0', { cardPath: CARD_PATH });
      await c.sendMessage(sendReq('hello'));
      expect(remote.received.some((r) => r.method === 'POST' && r.headers['x-forwarded-host'] === new URL(client.url).host)).toBe(true);
    } finally {
      await client.close();
      await remote.close();
    }
  });

  test('a rotated key signs the next card; the JWKS publishes the new and the previous key', async () => {
    const rotated = await startTestProxy({
      ...(await atPublicUrl()),
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      CARD_SIGNING_KEY_FILE: await writeSigningKey(dir, proxyKey, 'rotating.jwk.json'),
      CREDENTIALS_REFRESH_MS: '100',
    });
    try {
      const next = await makeKey('next-card-key');
      await writeSigningKey(dir, next, 'rotating.jwk.json');
      let keys: { keys: JWK[] } = { keys: [] };
      for (let i = 0; i < 100 && keys.keys.length < 2; i++) {
        await new Promise((r) => setTimeout(r, 50));
        keys = (await (await fetch(`${rotated.url}${JWKS}`)).json()) as { keys: JWK[] };
      }
      expect(keys.keys.map((k) => k.kid)).toEqual(['next-card-key', 'proxy-card-key']);
      const card: any = await (await fetch(`${rotated.url}${CARD}`, { headers: { 'a2a-version': '1.0' } })).json();
      expect(await joseVerify(card, keys)).toBe('next-card-key');
    } finally {
      await rotated.close();
    }
  });
});

describe("CARD_SIGNATURES=require: the agent's signature checked before the rewrite", () => {
  const agentKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let dir: string;
  let signed: TestAgent;
  let unsigned: TestAgent;
  let guardian: TestGuardian;
  let trusted: TestProxy;
  let untrusted: TestProxy;
  let noSignatures: TestProxy;
  const logged: Array<{ msg?: string; problem?: string }> = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'card-require-'));
    const j = jose();
    const agentJwk = { ...(await j.exportJWK(agentKeys.publicKey)), kid: 'agent-key', alg: 'ES256' };
    const other = await makeKey('someone-else');
    const { writeFile } = await import('node:fs/promises');
    const trust = join(dir, 'agent.jwks.json');
    await writeFile(trust, JSON.stringify({ keys: [agentJwk] }));
    signed = await startAgent({ extendedAgentCard: true, extendedCardFor: extendedName, signCards: { key: agentKeys.privateKey, kid: 'agent-key' } });
    unsigned = await startAgent({ extendedAgentCard: true });
    guardian = await startGuardian();
    const proxyKey = await writeSigningKey(dir, await makeKey('proxy-card-key'));
    trusted = await startTestProxy({
      ...(await atPublicUrl()),
      UPSTREAM_URL: signed.origin,
      GUARDIAN_URL: guardian.url,
      CARD_SIGNATURES: 'require',
      CARD_TRUST_JWKS_FILE: trust,
      CARD_SIGNING_KEY_FILE: proxyKey,
    });
    const sink = new Writable({
      write(chunk: Buffer, _e, cb) {
        logged.push(JSON.parse(chunk.toString('utf8')));
        cb();
      },
    });
    untrusted = await startTestProxy(
      { UPSTREAM_URL: signed.origin, GUARDIAN_URL: guardian.url, CARD_SIGNATURES: 'require', CARD_TRUST_JWKS_FILE: await writeJwks(dir, [other]) },
      undefined,
      pino({ level: 'info' }, sink),
    );
    noSignatures = await startTestProxy({ UPSTREAM_URL: unsigned.origin, GUARDIAN_URL: guardian.url, CARD_SIGNATURES: 'require', CARD_TRUST_JWKS_FILE: trust });
  });
  afterAll(async () => {
    for (const p of [trusted, untrusted, noSignatures]) await p?.close();
    await signed?.close();
    await unsigned?.close();
    await guardian?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('a card signed by a trusted key is served, re-signed by the proxy', async () => {
    const card: any = await (await fetch(`${trusted.url}${CARD}`, { headers: { 'a2a-version': '1.0' } })).json();
    expectAtProxy(card, trusted.url);
    const jwks = (await (await fetch(`${trusted.url}${JWKS}`)).json()) as { keys: JWK[] };
    expect(await joseVerify(card, jwks)).toBe('proxy-card-key');
    const res = await rawRpc(`${trusted.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 'e', method: 'GetExtendedAgentCard', params: {} }, { 'a2a-version': '1.0' });
    expect(await joseVerify(res.json.result, jwks)).toBe('proxy-card-key');
  });

  test.each([
    ['signed by a key that is not trusted', () => untrusted],
    ['not signed', () => noSignatures],
  ])("a card %s is refused: 502 on the card route, the binding's error for the extended card", async (_n, proxyOf) => {
    const p = proxyOf();
    const res = await fetch(`${p.url}${CARD}`, { headers: { 'a2a-version': '1.0' } });
    expect(res.status).toBe(502);
    const body: any = await res.json();
    expect(JSON.stringify(body)).not.toContain('supportedInterfaces');
    const rpc = await rawRpc(`${p.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 'r1', method: 'GetExtendedAgentCard', params: {} }, { 'a2a-version': '1.0' });
    expect(rpc.json.id).toBe('r1');
    expect(rpc.json.error.code).toBe(-31502);
    expect(rpc.json.result).toBeUndefined();
    const rest = await fetch(`${p.url}/a2a/rest/extendedAgentCard`, { headers: { 'a2a-version': '1.0' } });
    expect(rest.status).toBe(502);
  });

  test('the refusal is logged with the reason (the key is not trusted)', async () => {
    logged.length = 0;
    expect((await fetch(`${untrusted.url}${CARD}`, { headers: { 'a2a-version': '1.0' } })).status).toBe(502);
    const line = logged.find((l) => l.msg?.startsWith('agent card refused') === true);
    expect(line?.problem).toBe('key "agent-key" is not trusted');
  });
});
