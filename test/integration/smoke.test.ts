import { startAgent, makeClient, sendReq, collect, textOf, type TestAgent } from '../helpers/agent';
import { startGuardian, type TestGuardian } from '../helpers/guardian';
import { startTestProxy } from './proxy-harness';

let agent: TestAgent;
let guardian: TestGuardian;
let proxy: Awaited<ReturnType<typeof startTestProxy>>;

beforeAll(async () => {
  agent = await startAgent({ name: 'Cake Baker' });
  guardian = await startGuardian();
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server' });
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
});

test('smoke', async () => {
  for (const version of ['1.0', '0.3'] as const) {
    const client = await makeClient(proxy.url, 'JSONRPC', version);
    const r = await client.sendMessage(sendReq('hello'));
    expect(textOf(r)).toContain('echo: hello');
    const events = await collect(client.sendMessageStream(sendReq('stream 5')));
    expect(events.length).toBeGreaterThan(5);
  }
  console.log(JSON.stringify(guardian.calls().slice(0, 1), null, 1));
  console.log(agent.received.map((r) => `${r.method} ${r.path} ${r.headers['a2a-version']}`));
});
