/**
 * VoltAgent's A2A server (@voltagent/a2a-server 2.0.3 over @voltagent/core 2.0.2, scripted model
 * from ai/test) direct, behind a2a-guard ROLE=server and through a2a-guard ROLE=client: every
 * operation it serves (message/send, message/stream, tasks/get, tasks/cancel), its errors, its
 * card path and its `context` extensions, with raw callers and with @a2a-js/sdk 0.2.5's A2AClient
 * (the SDK VoltAgent builds on).
 */
import { interopSuite, streamed, unary } from '../../helpers/interop';
import { startVoltAgent, VOLT_AGENT_ID, type VoltAgentRun } from '../../helpers/interop-agents';

type A2AClient02 = {
  getAgentCard(): Promise<unknown>;
  sendMessage(p: unknown): Promise<any>;
  sendMessageStream(p: unknown): AsyncGenerator<unknown>;
  getTask(p: unknown): Promise<any>;
  cancelTask(p: unknown): Promise<any>;
};
const { A2AClient } = require('a2a-sdk-02/client') as { A2AClient: new (base: string, cardPath?: string) => A2AClient02 };

// VoltAgent serves its card on a path of its own: the proxies rewrite it like the standard card.
const suite = interopSuite('voltagent', startVoltAgent, { proxyEnv: { CARD_PATHS: `/.well-known/${VOLT_AGENT_ID}/agent-card.json` } });
const volt = (): VoltAgentRun => suite.agent as VoltAgentRun;
const rpc = (base: string): string => `${base}/a2a/${VOLT_AGENT_ID}`;

const msg = (text: string, extra: Record<string, unknown> = {}) => ({
  kind: 'message',
  role: 'user',
  messageId: crypto.randomUUID(),
  parts: [{ kind: 'text', text }],
  ...extra,
});
const send = (id: number | string, text: string, method = 'message/send') => ({ jsonrpc: '2.0', id, method, params: { message: msg(text) } });

/** Send, then return the task id the agent answered with (through the same path). */
async function newTask(base: string): Promise<string> {
  const r = await unary(rpc(base), send(1, 'make a task'));
  return ((r.body as any).result as { id: string }).id;
}

beforeAll(() => {
  // @a2a-js/sdk 0.2.5 logs every card failure with console.error.
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
});
afterAll(() => jest.restoreAllMocks());

suite.op('card', async ({ base }) => unary(`${base}${volt().cardPath}`, undefined, {}, 'GET'));

suite.op('message/send', async ({ base }) => unary(rpc(base), send(1, 'hello volt')));

suite.op('message/stream', async ({ base }) => streamed(rpc(base), send(2, 'stream volt', 'message/stream')));

suite.op('tasks/get', async ({ base }) => {
  const id = await newTask(base);
  return unary(rpc(base), { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id } });
});

suite.op('tasks/get unknown task (-32001)', async ({ base }) =>
  unary(rpc(base), { jsonrpc: '2.0', id: 'g', method: 'tasks/get', params: { id: 'no-such-task' } }),
);

suite.op('tasks/cancel a finished task (-32002)', async ({ base }) => {
  const id = await newTask(base);
  return unary(rpc(base), { jsonrpc: '2.0', id: 3, method: 'tasks/cancel', params: { id } });
});

suite.op('tasks/resubscribe, which it does not serve (-32601)', async ({ base }) =>
  unary(rpc(base), { jsonrpc: '2.0', id: 4, method: 'tasks/resubscribe', params: { id: 'x' } }),
);

suite.op('message/send with only a data part (-32602)', async ({ base }) =>
  unary(rpc(base), {
    jsonrpc: '2.0',
    id: 5,
    method: 'message/send',
    params: { message: { kind: 'message', role: 'user', messageId: crypto.randomUUID(), parts: [{ kind: 'data', data: { a: 1 } }] } },
  }),
);

suite.op('message/send with a top-level context member', async ({ base }) => {
  const r = await unary(rpc(base), { ...send(6, 'with context'), context: { userId: 'user-7', sessionId: 's-1', metadata: { tier: 'gold' } } });
  return { ...r, agentContext: volt().handled.map((h) => h.context) };
});

suite.op(
  'message/send with ?context= in the query',
  async ({ base }) => {
    const q = encodeURIComponent(JSON.stringify({ userId: 'user-8' }));
    const r = await unary(`${rpc(base)}?context=${q}`, send(7, 'with query context'));
    return { ...r, agentContext: volt().handled.map((h) => h.context) };
  },
  { refusedByProxy: 'VoltAgent reads a user, session and metadata from the ?context= query, which the guardian is not shown' },
);

/* @a2a-js/sdk 0.2.5 A2AClient, reading VoltAgent's card */

const sdkClient = (base: string): A2AClient02 => new A2AClient(base, `.well-known/${VOLT_AGENT_ID}/agent-card.json`);

suite.op('sdk 0.2 client: getAgentCard', async ({ base }) => sdkClient(base).getAgentCard());

suite.op('sdk 0.2 client: sendMessage', async ({ base }) => sdkClient(base).sendMessage({ message: msg('sdk hello') }));

suite.op('sdk 0.2 client: sendMessageStream', async ({ base }) => {
  const out: unknown[] = [];
  for await (const e of sdkClient(base).sendMessageStream({ message: msg('sdk stream') })) out.push(e);
  return out;
});

suite.op('sdk 0.2 client: getTask', async ({ base }) => {
  const c = sdkClient(base);
  const sent = await c.sendMessage({ message: msg('sdk task') });
  return c.getTask({ id: sent.result.id });
});

// VoltAgent answers JSON-RPC errors with HTTP 400, on which this client reads the body twice and throws.
suite.op(
  'sdk 0.2 client: cancelTask of a finished task',
  async ({ base }) => {
    const c = sdkClient(base);
    const sent = await c.sendMessage({ message: msg('sdk cancel') });
    return c.cancelTask({ id: sent.result.id });
  },
  { expectError: true },
);
