/**
 * CARD_PATHS: an agent that serves its card at a path of its own (VoltAgent's
 * `/.well-known/{agentId}/agent-card.json`), and no card at the standard path. A real SDK agent with its
 * card handler mounted there, a real SDK client resolving the card through the proxy at that path, then
 * calling through it: the card points at the proxy, the call reaches the agent's handler through the
 * guardian (ROLE=server and ROLE=client), and the proxy reads the agent's identity and REST base from that
 * card. Unlisted, such a path is refused with a message naming CARD_PATHS; a path that reads as an A2A
 * route cannot be listed.
 */
import http from 'node:http';
import { configFrom } from '../../../src/config/config';
import { makeClient, sendReq, startAgent, textOf, type TestAgent } from '../../helpers/agent';
import { endpointUrls } from '../../helpers/cards';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

const CARD_PATH = '/.well-known/my-agent/agent-card.json';

const recorder = handlerRecorder();
let agent: TestAgent;
let guardian: TestGuardian;
let listed: TestProxy;
let unlisted: TestProxy;
let client: TestProxy;

beforeAll(async () => {
  agent = await startAgent({ cardPath: CARD_PATH, name: 'My Agent', wrapRequestHandler: recorder.wrap });
  guardian = await startGuardian();
  listed = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, CARD_PATHS: `/.well-known/other/agent-card.json, ${CARD_PATH}` });
  unlisted = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url });
  client = await startTestProxy({
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    ROLE: 'client',
    OBSERVED_AGENT_NAME: 'caller',
    CARD_PATHS: CARD_PATH,
  });
  await Promise.all([listed.upstreamCard.ready(), unlisted.upstreamCard.ready(), client.upstreamCard.ready()]);
});
afterAll(async () => {
  for (const p of [listed, unlisted, client]) await p?.close();
  await agent?.close();
  await guardian?.close();
});
beforeEach(() => {
  guardian.clear();
  agent.clear();
  recorder.clear();
});

function get(
  origin: string,
  path: string,
  method = 'GET',
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  const u = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the card at a listed path', () => {
  test('the agent serves no standard card (as VoltAgent)', async () => {
    expect((await get(agent.origin, '/.well-known/agent-card.json')).status).toBe(404);
    expect((await get(agent.origin, CARD_PATH)).status).toBe(200);
  });

  test.each([
    ['v1 card', { 'a2a-version': '1.0' }],
    ['hybrid v0.3 card', {}],
  ])('%s: served rewritten, every endpoint URL at the proxy', async (_n, headers) => {
    const r = await get(listed.url, CARD_PATH, 'GET', headers);
    expect(r.status).toBe(200);
    const card = JSON.parse(r.text);
    expect(card.name).toBe('My Agent');
    const urls = endpointUrls(card);
    expect(urls.length).toBeGreaterThan(0);
    for (const u of urls) expect(u.startsWith(`${listed.url}/a2a/`)).toBe(true);
    expect(r.text).not.toContain(agent.origin);
    expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.text));
    expect(String(r.headers.vary)).toMatch(/A2A-Version/i);
    expect(String(r.headers.vary)).toMatch(/Host/);
    expect(String(r.headers.etag)).toMatch(/^W\//);
  });

  test('letter case aside and without its query, as the path is listed; HEAD as GET without a body', async () => {
    const r = await get(listed.url, '/.well-known/My-Agent/agent-card.json?x=1');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).name).toBe('My Agent');
    expect(agent.received.map((q) => q.path)).toEqual([CARD_PATH]);
    const h = await get(listed.url, CARD_PATH, 'HEAD');
    expect(h.status).toBe(200);
    expect(h.text).toBe('');
  });

  test.each([
    ['ROLE=server', 'JSONRPC', '1.0'],
    ['ROLE=server', 'JSONRPC', '0.3'],
    ['ROLE=server', 'HTTP+JSON', '1.0'],
    ['ROLE=server', 'HTTP+JSON', '0.3'],
    ['ROLE=client', 'JSONRPC', '1.0'],
  ] as const)('%s: an SDK client resolving the card there through the proxy calls through it and its guardian (%s %s)', async (role, binding, version) => {
    const c = await makeClient((role === 'ROLE=client' ? client : listed).url, binding, version, { cardPath: CARD_PATH });
    const result = await c.sendMessage(sendReq('hello via my card'));
    expect(textOf(result)).toContain('echo: hello via my card');
    expect(recorder.calls.map((k) => k.method)).toEqual(['sendMessage']);
    const calls = guardian.calls();
    expect(calls.map((e) => e.method)).toEqual(['message/send']);
    // The proxy read the agent's identity from the card at the listed path.
    expect(calls[0].params.context.to.agent.name).toBe('My Agent');
  });
});

describe('a card path that is not listed', () => {
  test('is refused with a message naming CARD_PATHS, and the SDK client fails at discovery', async () => {
    const r = await get(unlisted.url, CARD_PATH);
    expect(r.status).toBe(404);
    expect(r.text).toContain('CARD_PATHS');
    expect(r.text).not.toContain('PASSTHROUGH_PATHS');
    expect(agent.received).toEqual([]);
    await expect(makeClient(unlisted.url, 'JSONRPC', '1.0', { cardPath: CARD_PATH })).rejects.toThrow(/404/);
  });

  test('other card-like names are refused the same way; other paths keep the PASSTHROUGH_PATHS hint', async () => {
    for (const p of ['/.well-known/x/agent.json', '/agents/x/agent-card.json']) {
      const r = await get(listed.url, p);
      expect([p, r.status, r.text.includes('CARD_PATHS')]).toEqual([p, 404, true]);
    }
    const other = await get(listed.url, '/static/app.js');
    expect(other.status).toBe(404);
    expect(other.text).toContain('PASSTHROUGH_PATHS');
  });
});

describe('CARD_PATHS at start', () => {
  test.each([
    ['relative', 'well-known/x/agent-card.json', /absolute plain path/],
    ['with a query', '/.well-known/x/agent-card.json?a=1', /without a query/],
    ['with a dot segment', '/.well-known/../agent-card.json', /absolute plain path/],
    ['the root', '/', /absolute plain path/],
    ['the v0.3 extended card route', '/v1/card', /reads as an A2A route/],
    ['the v1.0 extended card route under a prefix', '/a2a/rest/extendedAgentCard', /reads as an A2A route/],
    ['a task route', '/tasks/abc', /reads as an A2A route/],
    ['a gRPC method', '/lf.a2a.v1.A2AService/GetExtendedAgentCard', /reads as an A2A route/],
  ])('%s is a configuration error', (_n, value, message) => {
    expect(() => configFrom({ UPSTREAM_URL: 'http://agent:1', CARD_PATHS: value })).toThrow(message);
    expect(() => configFrom({ UPSTREAM_URL: 'http://agent:1', CARD_PATHS: value })).toThrow(/CARD_PATHS=/);
  });
});
