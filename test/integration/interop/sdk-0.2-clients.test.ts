/**
 * @a2a-js/sdk 0.2.5's A2AClient (the client VoltAgent, @ag-ui/a2a and @ag-ui/a2a-middleware build
 * on) direct, behind a2a-guard ROLE=server and through ROLE=client, against a real 0.2.5 agent
 * (A2AExpressApp) and a real 1.3 agent (v0.3 compat): every operation the client has.
 */
import { interopSuite, sdkAgent, type InteropSuite } from '../../helpers/interop';
import { startLegacySdkAgent } from '../../helpers/interop-agents';
import { collect, startAgent } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';

export type A2AClient02 = {
  getAgentCard(): Promise<unknown>;
  sendMessage(p: unknown): Promise<any>;
  sendMessageStream(p: unknown): AsyncGenerator<unknown>;
  getTask(p: unknown): Promise<any>;
  cancelTask(p: unknown): Promise<any>;
  resubscribeTask(p: unknown): AsyncGenerator<unknown>;
  setTaskPushNotificationConfig(p: unknown): Promise<any>;
  getTaskPushNotificationConfig(p: unknown): Promise<any>;
};
const { A2AClient } = require('a2a-sdk-02/client') as { A2AClient: new (base: string, cardPath?: string) => A2AClient02 };

const msg = (text: string) => ({ kind: 'message', role: 'user', messageId: crypto.randomUUID(), parts: [{ kind: 'text', text }] });

/** Every operation of the 0.2.5 client, registered on `suite`; `cardPath` is where the agent serves its card. */
function clientOps(suite: InteropSuite, cardPath: string): void {
  const client = (base: string): A2AClient02 => new A2AClient(base, cardPath);
  /** A task that works until cancelled, started without waiting for it. */
  const running = async (c: A2AClient02): Promise<string> =>
    (await c.sendMessage({ message: msg('wait-for-cancel'), configuration: { blocking: false, acceptedOutputModes: ['text'] } })).result.id;

  suite.op('getAgentCard', async ({ base }) => client(base).getAgentCard());
  suite.op('sendMessage (task)', async ({ base }) => client(base).sendMessage({ message: msg('hello') }));
  suite.op('sendMessage (message reply)', async ({ base }) => client(base).sendMessage({ message: msg('reply please') }));
  suite.op('sendMessageStream', async ({ base }) => collect(client(base).sendMessageStream({ message: msg('stream me') })));
  suite.op('getTask', async ({ base }) => {
    const c = client(base);
    const sent = await c.sendMessage({ message: msg('keep me') });
    return c.getTask({ id: sent.result.id, historyLength: 1 });
  });
  suite.op('getTask unknown task', async ({ base }) => client(base).getTask({ id: 'no-such-task' }));
  suite.op('cancelTask', async ({ base }) => {
    const c = client(base);
    return c.cancelTask({ id: await running(c) });
  });
  suite.op('resubscribeTask (cancelled while subscribed)', async ({ base }) => {
    const c = client(base);
    const id = await running(c);
    const events: unknown[] = [];
    for await (const e of c.resubscribeTask({ id })) {
      events.push(e);
      if (events.length === 1) await c.cancelTask({ id });
    }
    return events;
  });
  suite.op('setTaskPushNotificationConfig + getTaskPushNotificationConfig', async ({ base }) => {
    const c = client(base);
    const id = await running(c);
    const set = await c.setTaskPushNotificationConfig({ taskId: id, pushNotificationConfig: { id: 'cfg-1', url: 'https://hooks.example/a2a', token: 'tok' } });
    const got = await c.getTaskPushNotificationConfig({ id });
    await c.cancelTask({ id });
    return { set, got };
  });
}

beforeAll(() => {
  // The agents log refused calls and the 0.2.5 client logs card failures with console.error.
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
  jest.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterAll(() => jest.restoreAllMocks());

describe('against an @a2a-js/sdk 0.2.5 agent', () => {
  clientOps(
    interopSuite('sdk 0.2 client -> sdk 0.2 agent', () => startLegacySdkAgent('0.2')),
    '.well-known/agent.json',
  );
});

describe('against an @a2a-js/sdk 1.3 agent (v0.3 compat)', () => {
  clientOps(
    interopSuite('sdk 0.2 client -> sdk 1.3 agent', async () => {
      const recorder = handlerRecorder();
      return sdkAgent(await startAgent({ wrapRequestHandler: recorder.wrap, stepMs: 20 }), recorder);
    }),
    '.well-known/agent-card.json',
  );
});
