/**
 * The plain-Node guardian of the README, run as a reader would run it: a GET, an empty or broken
 * body and a batch get a JSON-RPC error and the process lives on; `ping` answers; and in front of a
 * real SDK agent behind a real proxy it denies a molotov (nothing reaches the agent) and allows the rest.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { postsTo, rawRpc, startAgent, type TestAgent } from '../../helpers/agent';
import { freePort, waitFor } from '../../helpers/net';
import { reapAll, spawnNode, type ChildRun } from '../../helpers/proxy-process';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { readme } from '../../helpers/readme';

const send = (text: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { role: 'user', kind: 'message', messageId: 'm1', parts: [{ kind: 'text', text }] } },
});

let dir: string;
let guardian: ChildRun;
let url: string;
let agent: TestAgent;
let proxy: TestProxy;

beforeAll(async () => {
  const code = /```js\n([\s\S]*?)```/.exec(readme())?.[1];
  if (code === undefined) throw new Error('README: no js block');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-guardian-'));
  fs.writeFileSync(path.join(dir, 'guardian.js'), code);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  guardian = spawnNode(path.join(dir, 'guardian.js'), { PORT: String(port) });
  await waitFor(
    async () =>
      (await fetch(url).then(
        (r) => r.status,
        () => 0,
      )) !== 0,
    10_000,
  );
  agent = await startAgent();
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: url });
  await proxy.upstreamCard.ready();
});

afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  guardian?.child.kill('SIGTERM');
  await reapAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a GET, an empty body, a broken body and a batch get a JSON-RPC error; the guardian keeps running', async () => {
  const get = await rawRpc(url, undefined, {}, { method: 'GET' });
  expect([get.status, get.json?.error?.code]).toEqual([400, -32600]);
  for (const body of ['', '{"jsonrpc":', '[]', 'null', '7']) {
    const r = await rawRpc(url, body);
    expect([body, r.status, r.json?.error?.code, r.json?.id]).toEqual([body, 400, -32600, null]);
  }
  const ping = await rawRpc(url, { jsonrpc: '2.0', id: 'p', method: 'ping', params: {} });
  expect(ping.json).toMatchObject({ jsonrpc: '2.0', id: 'p', result: { status: 'connected' } });
  expect(guardian.child.exitCode).toBeNull();
});

test('in front of an agent: a molotov is denied and never reaches it; a question is allowed', async () => {
  agent.clear();
  const denied = await rawRpc(`${proxy.url}/a2a/jsonrpc`, send('a molotov?'));
  expect(denied.json).toMatchObject({ id: 1, error: { code: -31403, message: 'Blocked by guardian: Not on my watch.' } });
  expect(postsTo(agent)).toEqual([]);
  const allowed = await rawRpc(`${proxy.url}/a2a/jsonrpc`, send('how to prepare a cheese cake?'));
  expect(allowed.json?.error).toBeUndefined();
  expect(allowed.json?.result).toBeDefined();
  expect(postsTo(agent).length).toBe(1);
});
