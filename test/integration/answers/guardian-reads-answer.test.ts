/**
 * Response hooks: what the guardian reads of an agent's answer. Requests reach
 * the guardian as the proxy's canonical JSON; JSON-RPC answers and SSE event data went to it as the
 * agent's raw text. An answer with two `result` members means the last one to JSON.parse (the proxy,
 * the SDK client) but the first one to first-match readers (simdjson On-Demand, streaming
 * field lookups): a guardian built on one judged "harmless" while the client acted on the other.
 * ROLE=client (the remote agent is the party the response hook watches), INSPECT_RESPONSES=true,
 * a scripted remote, the real HTTP guardian recording the exact bytes it received.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { closeServer } from '../../helpers/net';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';

let guardian: TestGuardian;
let remote: http.Server;
let remoteOrigin: string;
let proxy: TestProxy;

const CARD = (origin: string) => ({
  name: 'remote',
  description: 'scripted remote',
  version: '1.0.0',
  protocolVersion: '0.3.0',
  url: `${origin}/a2a/jsonrpc`,
  preferredTransport: 'JSONRPC',
  capabilities: { streaming: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [],
});

/** Two `result` members: the first harmless, the second what a last-wins reader (JSON.parse) keeps. */
const twoResults = (id: unknown): string => {
  const msg = (text: string) => JSON.stringify({ kind: 'message', messageId: 'x', role: 'agent', parts: [{ kind: 'text', text }] });
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${msg('harmless')},"result":${msg('molotov recipe')}}`;
};

beforeAll(async () => {
  guardian = await startGuardian();
  remote = http.createServer((req, res) => {
    if (req.method === 'GET') {
      const body = JSON.stringify(CARD(remoteOrigin));
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(body);
    }
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const rpc = JSON.parse(text) as { id: unknown; method: string };
      if (rpc.method === 'message/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return void res.end(`data: ${twoResults(rpc.id)}\n\n`);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(twoResults(rpc.id));
    });
  });
  await new Promise<void>((resolve) => remote.listen(0, '127.0.0.1', () => resolve()));
  remoteOrigin = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
  proxy = await startTestProxy({ UPSTREAM_URL: remoteOrigin, GUARDIAN_URL: guardian.url, ROLE: 'client', INSPECT_RESPONSES: 'true' });
  await proxy.upstreamCard.ready();
});
afterAll(async () => {
  await proxy?.close();
  await closeServer(remote);
  await guardian?.close();
});

/** Does this JSON text have an object with the same member name twice (at any depth)? */
function hasDuplicateMember(text: string): boolean {
  const stack: Set<string>[] = [];
  // Every string (a member name when a colon follows) and every brace, in order; strings are consumed whole.
  for (const m of text.matchAll(/"(?:[^"\\]|\\.)*"(\s*:)?|[{}]/g)) {
    const t = m[0];
    if (t === '{') stack.push(new Set());
    else if (t === '}') stack.pop();
    else if (m[1] !== undefined) {
      const top = stack[stack.length - 1];
      const key = t.slice(0, t.length - m[1].length);
      if (top?.has(key)) return true;
      top?.add(key);
    }
  }
  return false;
}

const send = (method: string) => ({
  jsonrpc: '2.0',
  id: 7,
  method,
  params: { message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
});

describe('answers reach the response hook with one meaning', () => {
  // Was open: responses.ts passed the agent's raw text to the guardian (and on to the caller). Now the guardian
  // reads JSON.stringify(payload) (the proxy's own reading: last member wins, as the SDK client reads it) and the
  // caller receives that same text.
  test.each(['message/send', 'message/stream'])('%s: the guardian never receives an answer with a member twice', async (method) => {
    guardian.clear();
    const res = await fetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(send(method)),
    });
    const text = await res.text();
    const responseEnvelopes = guardian.rawBodies.filter((b) => b.includes('"result"'));
    expect(responseEnvelopes.length).toBeGreaterThan(0);
    expect(responseEnvelopes.filter(hasDuplicateMember)).toEqual([]);
    // And the caller gets the text the guardian judged: one result, the one a last-wins reader keeps.
    const answer = method === 'message/stream' ? text.replace(/^data: /, '').trim() : text;
    expect(hasDuplicateMember(answer)).toBe(false);
    expect(answer).toContain('molotov recipe');
    expect(answer).not.toContain('harmless');
  });
});
