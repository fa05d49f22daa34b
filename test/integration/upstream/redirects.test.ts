/**
 * Redirects from the upstream. In ROLE=client the upstream is a remote agent the
 * guardian judges; it answered a call (or the agent card) with a 3xx and a Location, and the proxy
 * relayed it. SDK clients use fetch, which follows it:
 *   - a 307 to message/send: the client re-sent the approved request to a URL the guardian never
 *     judged as the destination, and acted on that URL's answer, which the response hook never saw
 *     (it judged the 307's harmless body);
 *   - a 302 for the agent card: the client read another agent's card and then called that agent
 *     directly, past the proxy: neither request nor response hooks ran;
 *   - a card whose interface `url` is a one-element array (["http://elsewhere/a2a/jsonrpc"]): the card
 *     rewrite left non-string urls as they were, SDK clients String() them and called that agent
 *     directly. A non-string url is now removed like any endpoint the proxy cannot carry.
 * A2A defines no redirects: a 3xx from the agent is now an upstream failure (-31502 / 502).
 * Real SDK agent as the redirect target, real SDK clients, real guardian, a scripted remote.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeClient, sendReq, startAgent, textOf, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { closeServer } from '../../helpers/net';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

/** Where the scripted remote sends callers: a real SDK agent that echoes ("echo: <text>"). */
let elsewhere: TestAgent;
let guardian: TestGuardian;
let remote: http.Server;
let remoteOrigin: string;
let mode: 'call' | 'card' | 'arrayUrl' = 'call';

beforeAll(async () => {
  elsewhere = await startAgent();
  guardian = await startGuardian();
  remote = http.createServer((req, res) => {
    const isCard = req.method === 'GET' && (req.url ?? '').startsWith('/.well-known/');
    // The proxy's own card fetch (at start) gets the real card; a caller's card request through the proxy gets the redirect.
    if (isCard && mode === 'card' && req.headers['x-forwarded-for'] !== undefined) {
      res.writeHead(302, { location: `${elsewhere.origin}/.well-known/agent-card.json`, 'content-length': '0' });
      return void res.end();
    }
    if (isCard && mode === 'arrayUrl') {
      // Every interface URL as a one-element array naming the other agent: SDK clients String() it.
      const card = JSON.parse(JSON.stringify(elsewhere.card)) as { supportedInterfaces: { url: unknown }[] };
      for (const i of card.supportedInterfaces) i.url = [i.url];
      const body = JSON.stringify(card);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      return void res.end(body);
    }
    if (isCard) {
      const body = JSON.stringify(elsewhere.card).split(elsewhere.origin).join(remoteOrigin);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      return void res.end(body);
    }
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      let id: unknown = null;
      try {
        id = (JSON.parse(text) as { id?: unknown }).id ?? null;
      } catch {
        /* not JSON: id stays null */
      }
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id,
        result: { kind: 'message', messageId: 'x', role: 'agent', parts: [{ kind: 'text', text: 'harmless' }] },
      });
      res.writeHead(307, { location: elsewhere.jsonRpcUrl, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => remote.listen(0, '127.0.0.1', () => resolve()));
  remoteOrigin = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await closeServer(remote);
  await elsewhere?.close();
  await guardian?.close();
});

let proxy: TestProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  elsewhere.clear();
  guardian.clear();
  guardian.reset();
});

/** The text the SDK client acted on, or the error it failed with. */
async function callThrough(p: TestProxy, version: '0.3' | '1.0'): Promise<string> {
  try {
    const client = await makeClient(p.url, 'JSONRPC', version);
    return `answer: ${textOf(await client.sendMessage(sendReq('hello')))}`;
  } catch (err) {
    return `error: ${String(err)}`;
  }
}

describe('ROLE=client, a remote agent that redirects', () => {
  test.each(['0.3', '1.0'] as const)("a 307 to a call is not relayed: the client never acts on another URL's answer (JSON-RPC %s)", async (version) => {
    mode = 'call';
    proxy = await startTestProxy({ UPSTREAM_URL: remoteOrigin, GUARDIAN_URL: guardian.url, ROLE: 'client', INSPECT_RESPONSES: 'true' });
    await proxy.upstreamCard.ready();
    // The response hook denies what the redirect target would answer.
    guardian.script((e) => (JSON.stringify(e.params.payload).includes('echo:') ? { decision: 'deny' } : { decision: 'allow' }));
    const got = await callThrough(proxy, version);
    expect(got).not.toContain('echo: hello');
    expect(elsewhere.received.filter((r) => r.method === 'POST')).toEqual([]);
  });

  test('a redirected agent card is not relayed: the client never leaves the proxy', async () => {
    mode = 'card';
    proxy = await startTestProxy({ UPSTREAM_URL: remoteOrigin, GUARDIAN_URL: guardian.url, ROLE: 'client' });
    await proxy.upstreamCard.ready();
    guardian.script(() => ({ decision: 'deny' }));
    const card = await fetch(`${proxy.url}/.well-known/agent-card.json`, { redirect: 'manual' });
    expect(card.headers.get('location')).toBeNull();
    expect(card.status).toBeGreaterThanOrEqual(500);
    await card.body?.cancel();
    const got = await callThrough(proxy, '1.0');
    expect(got).not.toContain('echo: hello');
    expect(elsewhere.received.filter((r) => r.method === 'POST')).toEqual([]);
  });

  test.each(['0.3', '1.0'] as const)('a card interface url that is not a string never leads the client around the proxy (JSON-RPC %s)', async (version) => {
    mode = 'arrayUrl';
    proxy = await startTestProxy({ UPSTREAM_URL: remoteOrigin, GUARDIAN_URL: guardian.url, ROLE: 'client' });
    guardian.script(() => ({ decision: 'deny' }));
    const card = (await (await fetch(`${proxy.url}/.well-known/agent-card.json`)).json()) as { supportedInterfaces?: { url: unknown }[] };
    expect((card.supportedInterfaces ?? []).filter((i) => typeof i.url !== 'string')).toEqual([]);
    const got = await callThrough(proxy, version);
    expect(got).not.toContain('echo: hello');
    expect(elsewhere.received.filter((r) => r.method === 'POST')).toEqual([]);
  });
});
