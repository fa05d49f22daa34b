/**
 * The extended agent card is the caller's own: a real SDK agent serves each verified caller (OIDC
 * bearer tokens, IDENTITY_POLICY=required) a card naming that caller, and says the answer may be
 * cached publicly. Through the proxy each caller gets only its own card, however the fetches
 * interleave, and the answer tells every cache it is private.
 */
import type { Request, Response, NextFunction } from 'express';
import { makeClient, startAgent, type AgentCard, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

let agent: TestAgent;
let guardian: TestGuardian;
let ids: TestIdentities;
let proxy: TestProxy;

const perCaller = (caller: string | undefined, card: AgentCard): AgentCard => ({ ...card, name: `extended for ${caller ?? 'nobody'}` });

beforeAll(async () => {
  ids = await startIdentities();
  agent = await startAgent({ extendedAgentCard: true, extendedCardFor: perCaller });
  // The agent marks its extended-card answers as publicly cacheable (as a careless agent might).
  agent.server.prependListener('request', (_req: Request, res: Response, _next?: NextFunction) => {
    const writeHead = res.writeHead.bind(res) as (...a: unknown[]) => Response;
    (res as unknown as { writeHead: (...a: unknown[]) => Response }).writeHead = (...a: unknown[]) => {
      if (!res.hasHeader('cache-control')) res.setHeader('cache-control', 'public, max-age=3600');
      return writeHead(...a);
    };
  });
  guardian = await startGuardian();
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ...ids.env });
  await proxy.upstreamCard.ready();
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
  await ids?.close();
});

test.each([
  ['JSONRPC', '1.0'],
  ['JSONRPC', '0.3'],
  ['HTTP+JSON', '1.0'],
  ['HTTP+JSON', '0.3'],
] as const)('SDK clients %s %s of two identities, interleaved: each gets only its own extended card', async (binding, version) => {
  const clients = {
    A: await makeClient(proxy.url, binding, version, { fetchImpl: ids.fetchAs('A') }),
    B: await makeClient(proxy.url, binding, version, { fetchImpl: ids.fetchAs('B') }),
  };
  for (const c of ['A', 'B', 'A', 'B', 'B', 'A'] as Caller[]) {
    const card = await clients[c].getAgentCard();
    expect(card.name).toBe(`extended for agent-${c.toLowerCase()}`);
  }
});

test.each([
  ['REST v1', '/a2a/rest/extendedAgentCard', { 'a2a-version': '1.0' }],
  ['REST v0.3', '/a2a/rest/v1/card', {}],
])("%s: the agent says public, the proxy's answer says private, no-store", async (_n, path, headers) => {
  const direct = await fetch(`${agent.origin}${path}`, { headers: { ...headers, ...ids.headersAs('A') } });
  await direct.text();
  expect(direct.headers.get('cache-control')).toBe('public, max-age=3600');
  const res = await fetch(`${proxy.url}${path}`, { headers: { ...headers, ...ids.headersAs('A') } });
  const card: any = await res.json();
  expect(card.name).toBe('extended for agent-a');
  expect(res.headers.get('cache-control')).toBe('private, no-store');
});

test('a caller without an identity gets no extended card (the agent is never asked)', async () => {
  agent.received.length = 0;
  const res = await fetch(`${proxy.url}/a2a/rest/extendedAgentCard`, { headers: { 'a2a-version': '1.0' } });
  await res.text();
  expect(res.status).toBe(401);
  expect(agent.received).toEqual([]);
});
