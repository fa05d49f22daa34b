/**
 * The extension service parameter in a spelling the guardian does not read never reaches the agent.
 * `A2A_Extensions` is A2A-Extensions to CGI-style servers (WSGI, PHP, nginx with underscores_in_headers):
 * the guardian would see no extension while such an agent activated one. Oracles: the headers the agent
 * received, what the guardian saw.
 */
import { rawRpc } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

const EXT = 'https://example.com/ext/payments/v1';
const rec = handlerRecorder();
const s = useStack({ wrapRequestHandler: rec.wrap, extensions: [EXT] });
let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy();
});
beforeEach(() => {
  rec.clear();
  s.agent.clear();
});

const send = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'SendMessage',
  params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text: 'pay for it' }] } },
});
const calls = () => s.agent.received.filter((r) => r.method === 'POST');

test.each([['A2A_Extensions'], ['X_A2A_Extensions'], ['a2a_extensions']])('%s is refused (-31400) before the guardian and the agent', async (name) => {
  const r = await rawRpc(`${proxy.url}/a2a/jsonrpc`, send(7), { 'A2A-Version': '1.0', [name]: EXT });
  expect(r.json).toMatchObject({ id: 7, error: { code: -31400 } });
  expect(calls()).toEqual([]);
  expect(rec.calls).toEqual([]);
  expect(s.guardian.calls().filter((e) => e.params?.payload?.method !== undefined)).toEqual([]);
});

test('the dashed spelling is judged and forwarded as approved', async () => {
  await rawRpc(`${proxy.url}/a2a/jsonrpc`, send(9), { 'A2A-Version': '1.0', 'A2A-Extensions': EXT });
  expect(rec.calls.map((c) => c.requestedExtensions)).toEqual([[EXT]]);
  for (const r of calls()) expect(Object.keys(r.headers).filter((h) => h.includes('_'))).toEqual([]);
});
