import { startAgent, makeClient, sendReq, collect, textOf, type TestAgent } from '../helpers/agent';
import { startGuardian, type TestGuardian } from '../helpers/guardian';
import { startTestProxy } from './proxy-harness';

let agent: TestAgent;
let guardian: TestGuardian;
let proxy: Awaited<ReturnType<typeof startTestProxy>>;

beforeAll(async () => {
  agent = await startAgent({ name: 'Cake Baker' });
  guardian = await startGuardian();
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', INSPECT_RESPONSES: 'true' });
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
});

test.each([['JSONRPC', '1.0'], ['JSONRPC', '0.3'], ['HTTP+JSON', '1.0'], ['HTTP+JSON', '0.3']] as const)('smoke %s %s', async (binding, version) => {
  guardian.clear();
  agent.clear();
  guardian.reset();
  const client = await makeClient(proxy.url, binding, version);
  const r = await client.sendMessage(sendReq('hello'));
  expect(textOf(r)).toContain('echo: hello');
  const events = await collect(client.sendMessageStream(sendReq('stream 5')));
  expect(events.length).toBeGreaterThan(5);
  const methods = guardian.calls().map((e: { method: string; params: { payload: { method?: string } } }) => `${e.method}:${e.params.payload.method ?? 'resp'}`);
  expect(methods.length).toBeGreaterThan(8);
  console.log(binding, version, methods.join(' '), agent.received.map((x) => `${x.method} ${x.path}`).join(' | '));
  // deny at the 3rd event
  let n = 0;
  guardian.script((env: { params: { payload: { method?: string } } }) => {
    if (env.params.payload.method === undefined) n++;
    return n === 3 ? { decision: 'deny', message: 'no event 3' } : { decision: 'allow' };
  });
  const got: unknown[] = [];
  await expect((async () => { for await (const e of client.sendMessageStream(sendReq('stream 5'))) got.push(e); })()).rejects.toThrow(/no event 3|31403|403/);
  expect(got.length).toBe(2);
});
