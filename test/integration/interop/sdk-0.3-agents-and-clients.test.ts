/**
 * @a2a-js/sdk 0.3.x (npm alias a2a-sdk-03) direct, behind a2a-guard ROLE=server and through ROLE=client:
 * its Client over the JSON-RPC and the HTTP+JSON transports and its legacy A2AClient, against a
 * real 0.3 agent (jsonRpcHandler + restHandler) and a real 1.3 agent (v0.3 compat); every operation
 * the clients have.
 */
import { interopSuite, sdkAgent, type InteropSuite } from '../../helpers/interop';
import { startLegacySdkAgent } from '../../helpers/interop-agents';
import { collect, startAgent } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';

type Client03 = {
  getAgentCard(): Promise<unknown>;
  sendMessage(p: unknown): Promise<any>;
  sendMessageStream(p: unknown): AsyncGenerator<unknown>;
  getTask(p: unknown): Promise<any>;
  cancelTask(p: unknown): Promise<any>;
  resubscribeTask(p: unknown): AsyncGenerator<unknown>;
  setTaskPushNotificationConfig(p: unknown): Promise<any>;
  getTaskPushNotificationConfig(p: unknown): Promise<any>;
  listTaskPushNotificationConfig(p: unknown): Promise<any>;
  deleteTaskPushNotificationConfig(p: unknown): Promise<any>;
};
const sdk03 = require('a2a-sdk-03/client') as Record<string, any>;

type Transport = 'JSONRPC' | 'HTTP+JSON' | 'A2AClient';

async function client(base: string, transport: Transport): Promise<Client03> {
  if (transport === 'A2AClient') {
    const c = await sdk03['A2AClient'].fromCardUrl(`${base}/.well-known/agent-card.json`);
    // The legacy client answers JSON-RPC envelopes; make it read like Client (errors thrown).
    const unwrap = (f: (p: unknown) => Promise<any>) => async (p: unknown) => {
      const r = await f.call(c, p);
      if (r?.error !== undefined) throw Object.assign(new Error(r.error.message), { code: r.error.code });
      return r?.result;
    };
    return {
      getAgentCard: () => c.getAgentCard(),
      sendMessage: unwrap(c.sendMessage),
      sendMessageStream: (p) => c.sendMessageStream(p),
      getTask: unwrap(c.getTask),
      cancelTask: unwrap(c.cancelTask),
      resubscribeTask: (p) => c.resubscribeTask(p),
      setTaskPushNotificationConfig: unwrap(c.setTaskPushNotificationConfig),
      getTaskPushNotificationConfig: unwrap(c.getTaskPushNotificationConfig),
      listTaskPushNotificationConfig: unwrap(c.listTaskPushNotificationConfig),
      deleteTaskPushNotificationConfig: unwrap(c.deleteTaskPushNotificationConfig),
    };
  }
  const factory = new sdk03['ClientFactory'](
    sdk03['ClientFactoryOptions'].createFrom(sdk03['ClientFactoryOptions'].default, { preferredTransports: [transport] }),
  );
  return factory.createFromUrl(base);
}

const msg = (text: string) => ({ kind: 'message', role: 'user', messageId: crypto.randomUUID(), parts: [{ kind: 'text', text }] });

function clientOps(suite: InteropSuite, transport: Transport, opts: { pushRefusedDirectly?: boolean } = {}): void {
  const t = transport;
  const running = async (c: Client03): Promise<string> =>
    (await c.sendMessage({ message: msg('wait-for-cancel'), configuration: { blocking: false, acceptedOutputModes: ['text'] } })).id;

  suite.op(`${t}: getAgentCard`, async ({ base }) => (await client(base, t)).getAgentCard());
  suite.op(`${t}: sendMessage (task)`, async ({ base }) => (await client(base, t)).sendMessage({ message: msg('hello') }));
  suite.op(`${t}: sendMessage (message reply)`, async ({ base }) => (await client(base, t)).sendMessage({ message: msg('reply please') }));
  suite.op(`${t}: sendMessageStream`, async ({ base }) => collect((await client(base, t)).sendMessageStream({ message: msg('stream me') })));
  suite.op(`${t}: getTask`, async ({ base }) => {
    const c = await client(base, t);
    const sent = await c.sendMessage({ message: msg('keep me') });
    return c.getTask({ id: sent.id, historyLength: 1 });
  });
  suite.op(`${t}: getTask unknown task`, async ({ base }) => (await client(base, t)).getTask({ id: 'no-such-task' }), { expectError: true });
  suite.op(`${t}: cancelTask`, async ({ base }) => {
    const c = await client(base, t);
    return c.cancelTask({ id: await running(c) });
  });
  suite.op(`${t}: resubscribeTask (cancelled while subscribed)`, async ({ base }) => {
    const c = await client(base, t);
    const id = await running(c);
    const events: unknown[] = [];
    for await (const e of c.resubscribeTask({ id })) {
      events.push(e);
      if (events.length === 1) await c.cancelTask({ id });
    }
    return events;
  });
  suite.op(
    `${t}: push config set, get, list, delete`,
    async ({ base }) => {
      const c = await client(base, t);
      const id = await running(c);
      const out: Record<string, unknown> = {};
      out['set'] = await c.setTaskPushNotificationConfig({
        taskId: id,
        pushNotificationConfig: { id: 'cfg-1', url: 'https://hooks.example/a2a', token: 'tok' },
      });
      out['get'] = await c.getTaskPushNotificationConfig({ id, pushNotificationConfigId: 'cfg-1' });
      out['list'] = await c.listTaskPushNotificationConfig({ id });
      out['delete'] = (await c.deleteTaskPushNotificationConfig({ id, pushNotificationConfigId: 'cfg-1' })) ?? null;
      await c.cancelTask({ id });
      return out;
    },
    { expectError: opts.pushRefusedDirectly === true },
  );
}

beforeAll(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
  jest.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterAll(() => jest.restoreAllMocks());

describe('against an @a2a-js/sdk 0.3 agent', () => {
  const suite = interopSuite('sdk 0.3 -> sdk 0.3 agent', () => startLegacySdkAgent('0.3'));
  clientOps(suite, 'JSONRPC');
  // 0.3's own REST client and server disagree on the set-config body: -32602 "Request must include a `config` object".
  clientOps(suite, 'HTTP+JSON', { pushRefusedDirectly: true });
  clientOps(suite, 'A2AClient');
});

describe('against an @a2a-js/sdk 1.3 agent (v0.3 compat)', () => {
  const suite = interopSuite('sdk 0.3 -> sdk 1.3 agent', async () => {
    const recorder = handlerRecorder();
    return sdkAgent(await startAgent({ wrapRequestHandler: recorder.wrap, stepMs: 20 }), recorder);
  });
  for (const t of ['JSONRPC', 'HTTP+JSON', 'A2AClient'] as const) clientOps(suite, t);
});
