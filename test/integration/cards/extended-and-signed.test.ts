/**
 * Extended agent cards and signed cards, with a real @a2a-js/sdk agent configured for both
 * (design section 7; a2a-wire-reference 2.1, 3, 0.4):
 *   - the agent announces an extended card (capabilities.extendedAgentCard) and serves one whose
 *     URLs name its internal address; SDK clients built from the proxy URL fetch it through the proxy
 *     in all four combinations (GetExtendedAgentCard, agent/getAuthenticatedExtendedCard, REST
 *     GET /extendedAgentCard and v0.3 GET /v1/card): the guardian sees each fetch under
 *     agent/getAuthenticatedExtendedCard, and the result's URLs point at the proxy; deny and modify too;
 *   - the agent signs its cards with the SDK's generateAgentCardSignature (ES256): the proxied card has
 *     no signatures under CARD_SIGNATURES=strip (default); under keep it carries the agent's signatures,
 *     which the SDK's verifyAgentCardSignature then rejects (the URLs changed), while the agent's own
 *     card verifies.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import http from 'node:http';
import express from 'express';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type * as A2AServer from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import type * as A2AExpress from '@a2a-js/sdk/server/express' with { 'resolution-mode': 'import' };
import type * as A2ACompat from '@a2a-js/sdk/compat/v0_3' with { 'resolution-mode': 'import' };
import type * as A2AClient from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import { makeClient, rawRpc, type AgentCard } from '../../helpers/agent';
import { endpointUrls } from '../../helpers/cards';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { closeServer, listen } from '../../helpers/net';
import { startTestProxy } from '../../helpers/proxy-harness';

const sdk: typeof A2A = require('@a2a-js/sdk');
const sdkServer: typeof A2AServer = require('@a2a-js/sdk/server');
const sdkExpress: typeof A2AExpress = require('@a2a-js/sdk/server/express');
const sdkCompat: typeof A2ACompat = require('@a2a-js/sdk/compat/v0_3');
const sdkClient: typeof A2AClient = require('@a2a-js/sdk/client');

type Proxy = Awaited<ReturnType<typeof startTestProxy>>;

const INTERNAL = 'https://agent.internal.example:8443';
const CARD = '/.well-known/agent-card.json';

interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
}

interface CardAgent {
  origin: string;
  received: Seen[];
  close(): Promise<void>;
}

/** A real SDK agent with an extended card (and, optionally, signed cards). Its cards name INTERNAL. */
async function startCardAgent(opts: { sign?: { privateKey: KeyObject } }): Promise<CardAgent> {
  const received: Seen[] = [];
  const app = express();
  const server = http.createServer((req, res) => {
    received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers });
    app(req, res);
  });
  const origin = await listen(server);
  const card: AgentCard = {
    name: 'Card Agent',
    description: 'has an extended card',
    version: '3.1.4',
    provider: { organization: 'Test Org', url: 'https://test-org.example' },
    signatures: [],
    supportedInterfaces: sdkCompat.duplicateInterfacesForLegacy(
      [
        { url: `${INTERNAL}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
        { url: `${INTERNAL}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
      ],
      ['JSONRPC', 'HTTP+JSON'],
    ),
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: true },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'public', name: 'public', description: 'public skill', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  };
  const extended: AgentCard = {
    ...card,
    name: 'Card Agent (extended)',
    skills: [
      ...card.skills,
      { id: 'vip', name: 'vip', description: 'for authenticated callers', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] },
    ],
  };
  const executor: A2AServer.AgentExecutor = {
    cancelTask: async () => undefined,
    execute: async ({ taskId, contextId, userMessage }, bus) => {
      bus.publish(
        sdkServer.AgentEvent.task({
          id: taskId,
          contextId,
          status: { state: sdk.TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        }),
      );
    },
  };
  const signer = opts.sign === undefined ? undefined : sdk.generateAgentCardSignature(opts.sign.privateKey, { alg: 'ES256', kid: 'test-key', typ: 'JOSE' });
  const requestHandler = new sdkServer.DefaultRequestHandler(
    card,
    new sdkServer.InMemoryTaskStore(),
    executor,
    undefined,
    undefined,
    undefined,
    async () => extended,
    signer,
  );
  const legacyCompat = { enabled: true };
  app.use(`/${sdk.AGENT_CARD_PATH}`, sdkExpress.agentCardHandler({ agentCardProvider: requestHandler, legacyCompat }));
  app.use('/a2a/jsonrpc', sdkExpress.jsonRpcHandler({ requestHandler, userBuilder: sdkExpress.UserBuilder.noAuthentication, legacyCompat }));
  app.use('/a2a/rest', sdkExpress.restHandler({ requestHandler, userBuilder: sdkExpress.UserBuilder.noAuthentication, legacyCompat }));
  return { origin, received, close: () => closeServer(server) };
}

function expectAtProxy(urls: string[], proxyUrl: string): void {
  expect(urls.length).toBeGreaterThan(0);
  for (const u of urls) {
    expect(new URL(u).origin).toBe(proxyUrl);
    expect(u).toMatch(/\/a2a\/(jsonrpc|rest)$/);
  }
}

const skillIds = (card: any): string[] => (card?.skills ?? []).map((s: { id: string }) => s.id);

/* ---------------------------------------------------------------------------------------------- */
/* Extended card                                                                                  */
/* ---------------------------------------------------------------------------------------------- */

describe('extended agent card', () => {
  let agent: CardAgent;
  let guardian: TestGuardian;
  let proxy: Proxy;

  beforeAll(async () => {
    agent = await startCardAgent({});
    guardian = await startGuardian();
    proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url });
    await proxy.upstreamCard.ready();
  });
  afterAll(async () => {
    await proxy?.close();
    await agent?.close();
    await guardian?.close();
  });
  beforeEach(() => {
    guardian.reset();
    guardian.clear();
    agent.received.length = 0;
  });

  const COMBOS = [
    ['JSONRPC', '1.0', 'GetExtendedAgentCard', 'POST /a2a/jsonrpc'],
    ['JSONRPC', '0.3', 'agent/getAuthenticatedExtendedCard', 'POST /a2a/jsonrpc'],
    ['HTTP+JSON', '1.0', 'GetExtendedAgentCard', 'GET /a2a/rest/extendedAgentCard'],
    ['HTTP+JSON', '0.3', 'agent/getAuthenticatedExtendedCard', 'GET /a2a/rest/v1/card'],
  ] as const;

  test.each(COMBOS)('SDK client %s %s: getAgentCard() fetches the extended card through the proxy, URLs rewritten', async (binding, version, wire, route) => {
    const client = await makeClient(proxy.url, binding, version);
    agent.received.length = 0;
    const card = await client.getAgentCard();
    expect(card.name).toBe('Card Agent (extended)');
    expect(skillIds(card)).toEqual(['public', 'vip']);
    expectAtProxy(endpointUrls(card), proxy.url);
    expect(guardian.calls().map((e) => [e.method, e.params.payload.method])).toEqual([['agent/getAuthenticatedExtendedCard', wire]]);
    expect(agent.received.map((r) => `${r.method} ${r.path}`)).toEqual([route]);
    expect(agent.received[0]?.headers['x-forwarded-host']).toBe(new URL(proxy.url).host);
  });

  test.each([
    ['JSON-RPC v1', 'POST', '/a2a/jsonrpc', { 'a2a-version': '1.0' }, { jsonrpc: '2.0', id: 'x1', method: 'GetExtendedAgentCard', params: {} }],
    ['JSON-RPC v0.3', 'POST', '/a2a/jsonrpc', {}, { jsonrpc: '2.0', id: 'x2', method: 'agent/getAuthenticatedExtendedCard' }],
    ['REST v1', 'GET', '/a2a/rest/extendedAgentCard', { 'a2a-version': '1.0' }, undefined],
    ['REST v0.3', 'GET', '/a2a/rest/v1/card', {}, undefined],
  ] as const)('%s on the wire: every endpoint URL of the result rewritten, body length and validators consistent', async (_n, verb, path, headers, body) => {
    const direct = await fetch(`${agent.origin}${path}`, {
      method: verb,
      headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const upstreamJson: any = await direct.json();
    const res = await fetch(`${proxy.url}${path}`, {
      method: verb,
      headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    const json = JSON.parse(text);
    expect(res.status).toBe(direct.status);
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    const upstreamCard = body ? upstreamJson.result : upstreamJson;
    const card = body ? json.result : json;
    if (body) expect(json.id).toBe(body.id);
    for (const u of endpointUrls(upstreamCard)) expect(u.startsWith(INTERNAL)).toBe(true);
    expect(endpointUrls(card)).toHaveLength(endpointUrls(upstreamCard).length);
    expectAtProxy(endpointUrls(card), proxy.url);
    expect(skillIds(card)).toEqual(skillIds(upstreamCard));
    // A validator of the agent's body must not vouch for the rewritten one.
    const etag = res.headers.get('etag');
    if (etag !== null) expect(etag).not.toBe(direct.headers.get('etag'));
  });

  test.each([
    ['JSON-RPC v1', 'JSONRPC', '1.0'],
    ['JSON-RPC v0.3', 'JSONRPC', '0.3'],
    ['REST v1', 'HTTP+JSON', '1.0'],
    ['REST v0.3', 'HTTP+JSON', '0.3'],
  ] as const)('%s: deny -> the SDK client raises the refusal, the agent never sees the request', async (_n, binding, version) => {
    const client = await makeClient(proxy.url, binding, version);
    agent.received.length = 0;
    guardian.script(() => ({ decision: 'deny', message: 'no vip card for you' }));
    let err: any;
    try {
      await client.getAgentCard();
    } catch (e) {
      err = e;
    }
    expect(err).toBeDefined();
    expect(String(err.message)).toContain('no vip card for you');
    if (binding === 'JSONRPC') expect(err.envelopeCode).toBe(-31403);
    else if (version === '1.0') expect(err.statusCode).toBe(403);
    else expect(String(err.message)).toContain('403');
    expect(agent.received).toEqual([]);
  });

  test('modify (JSON-RPC v1): the agent receives the replacement; the result is still rewritten', async () => {
    const original = { jsonrpc: '2.0', id: 'm1', method: 'GetExtendedAgentCard', params: {} };
    const replacement = { ...original, params: { tenant: '' } };
    guardian.script(() => ({ decision: 'modify', modifiedPayload: replacement }));
    const res = await rawRpc(`${proxy.url}/a2a/jsonrpc`, original, { 'a2a-version': '1.0' });
    expect(res.json.id).toBe('m1');
    expect(skillIds(res.json.result)).toEqual(['public', 'vip']);
    expectAtProxy(endpointUrls(res.json.result), proxy.url);
    expect(agent.received).toHaveLength(1);
    expect(guardian.calls()[0].params.payload).toEqual(original);
  });

  test('modify (REST v1 GET /extendedAgentCard): the replacement params become the query', async () => {
    guardian.script((env) => ({ decision: 'modify', modifiedPayload: { ...env.params.payload, params: { tenant: 'guardian-tenant' } } }));
    const res = await fetch(`${proxy.url}/a2a/rest/extendedAgentCard`, { headers: { 'a2a-version': '1.0' } });
    await res.text();
    expect(agent.received.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /a2a/rest/extendedAgentCard?tenant=guardian-tenant']);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Signed cards                                                                                   */
/* ---------------------------------------------------------------------------------------------- */

describe('signed agent cards (SDK signing helpers)', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let agent: CardAgent;
  let guardian: TestGuardian;
  let strip: Proxy;
  let keep: Proxy;
  const verify = sdk.verifyAgentCardSignature(async () => publicKey);
  const resolve = (base: string) => new sdkClient.DefaultAgentCardResolver({ legacyCompat: { enabled: true } }).resolve(base);

  let quiet: jest.SpyInstance;

  beforeAll(async () => {
    // The SDK verifier console.debug()s every failed signature check; the failures are expected here.
    quiet = jest.spyOn(console, 'debug').mockImplementation(() => undefined);
    agent = await startCardAgent({ sign: { privateKey } });
    guardian = await startGuardian();
    strip = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url });
    keep = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, CARD_SIGNATURES: 'keep' });
  });
  afterAll(async () => {
    quiet.mockRestore();
    await strip?.close();
    await keep?.close();
    await agent?.close();
    await guardian?.close();
  });

  test("the agent's own card is signed and verifies (the test can tell a good signature from a bad one)", async () => {
    const card = await resolve(agent.origin);
    expect(card.signatures.length).toBeGreaterThan(0);
    await expect(verify(card)).resolves.toBeUndefined();
    await expect(verify({ ...card, name: 'tampered' })).rejects.toThrow();
  });

  test.each([
    ['v1 card', { 'a2a-version': '1.0' }],
    ['hybrid v0.3 card', {} as Record<string, string>],
  ])('CARD_SIGNATURES=strip (default), %s: no signatures in the proxied card', async (_n, headers) => {
    const up = (await (await fetch(`${agent.origin}${CARD}`, { headers })).json()) as any;
    expect(up.signatures?.length ?? 0).toBeGreaterThan(0);
    const res = await fetch(`${strip.url}${CARD}`, { headers });
    const card = (await res.json()) as any;
    expect('signatures' in card).toBe(false);
    expectAtProxy(endpointUrls(card), strip.url);
  });

  test.each([
    ['v1 card', { 'a2a-version': '1.0' }],
    ['hybrid v0.3 card', {} as Record<string, string>],
  ])("CARD_SIGNATURES=keep, %s: the agent's signatures are kept", async (_n, headers) => {
    // (ES256 signatures are randomised: the agent signs every response anew, so compare the JWS headers here;
    // the next test proves the signature bytes are the agent's.)
    const up = (await (await fetch(`${agent.origin}${CARD}`, { headers })).json()) as any;
    const res = await fetch(`${keep.url}${CARD}`, { headers });
    const card = (await res.json()) as any;
    expect(card.signatures.map((x: any) => x.protected)).toEqual(up.signatures.map((x: any) => x.protected));
    for (const sig of card.signatures) expect(sig.signature).toMatch(/^[\w-]{40,}$/);
    expectAtProxy(endpointUrls(card), keep.url);
  });

  test('CARD_SIGNATURES=keep: the kept signature no longer verifies (the URLs changed); strip: nothing to verify', async () => {
    const kept = await resolve(keep.url);
    expect(kept.signatures.length).toBeGreaterThan(0);
    await expect(verify(kept)).rejects.toThrow();
    // Put the agent's URLs back: the kept signature verifies again, so it is the agent's, untouched,
    // and the rewritten URLs are exactly what broke it.
    const restored = { ...kept, supportedInterfaces: kept.supportedInterfaces.map((i) => ({ ...i, url: i.url.replace(keep.url, INTERNAL) })) };
    await expect(verify(restored)).resolves.toBeUndefined();
    const stripped = await resolve(strip.url);
    expect(stripped.signatures ?? []).toEqual([]);
    await expect(verify(stripped)).rejects.toThrow();
  });

  test('the signed extended card is rewritten too; strip removes its signatures, keep keeps them', async () => {
    for (const [p, expectSigs] of [
      [strip, false],
      [keep, true],
    ] as const) {
      const res = await rawRpc(`${p.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 's', method: 'GetExtendedAgentCard', params: {} }, { 'a2a-version': '1.0' });
      const card = res.json.result;
      expect(skillIds(card)).toEqual(['public', 'vip']);
      expectAtProxy(endpointUrls(card), p.url);
      expect((card.signatures?.length ?? 0) > 0).toBe(expectSigs);
    }
  });
});
