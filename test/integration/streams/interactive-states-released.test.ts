/**
 * Interactive states never wait: with INSPECT_RESPONSES=true, a task that reaches input-required or
 * auth-required and then waits for its caller gets that event to the caller as soon as it is judged.
 * The agent goes on only after the caller's next message ("release <taskId>"), which the caller sends
 * only once it has received the event: a proxy that held events back until the stream or task ended
 * would never let the task finish. Oracle: the caller's receipt and the agent's handler, not timing.
 */
import { makeClient, sendReq, TaskState, type Client, type StreamResponse } from '../../helpers/agent';
import { makeGrpcClient } from '../../helpers/grpc';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(30_000);

/** Bound of the one wait: a hang guard only (a held-back event never arrives at all). */
const HANG_MS = 15_000;

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap, stepMs: 10 });
let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy({ GRPC_PORT: '0', INSPECT_RESPONSES: 'true' });
});
beforeEach(() => rec.clear());

const stateOf = (e: StreamResponse): number | undefined => {
  const p = e.payload;
  if (p?.$case === 'statusUpdate') return p.value.status?.state;
  if (p?.$case === 'task') return p.value.status?.state;
  return undefined;
};
const taskIdOf = (e: StreamResponse): string | undefined => {
  const p = e.payload;
  return p?.$case === 'statusUpdate' ? p.value.taskId : p?.$case === 'task' ? p.value.id : undefined;
};

/**
 * Streams `ask-<kind>`, and on receiving the interactive state sends "release <taskId>" on a second call.
 * Returns the states the caller received, in order, and whether the release was sent after the receipt.
 */
async function askAndAnswer(client: Client, kind: 'input' | 'auth'): Promise<{ states: number[]; releasedAfterReceipt: boolean }> {
  const wanted = kind === 'input' ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_AUTH_REQUIRED;
  const states: number[] = [];
  let taskId = '';
  let released = false;
  const run = (async () => {
    for await (const e of client.sendMessageStream(sendReq(`ask-${kind} please`))) {
      taskId ||= taskIdOf(e) ?? '';
      const st = stateOf(e);
      if (st !== undefined) states.push(st);
      if (st === wanted && !released) {
        // The caller's next message, sent only now that it holds the event.
        released = true;
        await client.sendMessage(sendReq(`release ${taskId}`));
      }
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the caller did not get ${kind}-required while the agent waited for it (held back?)`)), HANG_MS);
  });
  try {
    await Promise.race([run, hang]);
  } finally {
    clearTimeout(timer);
  }
  return { states, releasedAfterReceipt: released };
}

const CLIENTS: Array<[string, (p: TestProxy) => Promise<Client>]> = [
  ['JSON-RPC', (p) => makeClient(p.url, 'JSONRPC', '1.0')],
  ['REST', (p) => makeClient(p.url, 'HTTP+JSON', '1.0')],
  ['gRPC', async (p) => (await makeGrpcClient(p.url)).client],
];

describe.each(CLIENTS)('%s streaming', (_name, makeFor) => {
  test('auth-required reaches the caller while the stream stays open; the task ends after the caller answers', async () => {
    const client = await makeFor(proxy);
    const { states, releasedAfterReceipt } = await askAndAnswer(client, 'auth');
    expect(releasedAfterReceipt).toBe(true);
    // One stream: the interactive state, then the rest of the task once the caller answered.
    expect(states).toEqual(expect.arrayContaining([TaskState.TASK_STATE_AUTH_REQUIRED, TaskState.TASK_STATE_COMPLETED]));
    expect(states.indexOf(TaskState.TASK_STATE_AUTH_REQUIRED)).toBeLessThan(states.indexOf(TaskState.TASK_STATE_COMPLETED));
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessageStream', 'sendMessage']);
  });

  test("input-required reaches the caller; the agent continues only after the caller's next message", async () => {
    const client = await makeFor(proxy);
    const { states, releasedAfterReceipt } = await askAndAnswer(client, 'input');
    expect(releasedAfterReceipt).toBe(true);
    // The SDK ends a stream at input-required: it is the last state the caller gets on it.
    expect(states[states.length - 1]).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    // The agent acted on the caller's answer, which the caller sent only once it held the event.
    expect(rec.calls.map((c) => c.method)).toEqual(['sendMessageStream', 'sendMessage']);
    // Every event the caller got was judged.
    expect(s.guardian.calls().length).toBeGreaterThan(states.length);
  });
});
