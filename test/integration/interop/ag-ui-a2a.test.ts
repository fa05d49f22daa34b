/**
 * AG-UI's A2A integrations direct, behind a2a-guard ROLE=server and through ROLE=client:
 * - @ag-ui/a2a 0.0.6 A2AAgent over @a2a-js/sdk 0.2.5's A2AClient: a streamed run, and the blocking
 *   fallback it takes when the agent does not stream; it adds its A2UI extension in X-A2A-Extensions,
 *   which must reach the agent unchanged.
 * - @ag-ui/a2a-middleware 0.0.2 A2AMiddlewareAgent: a scripted orchestration agent calls the
 *   send_message_to_a2a_agent tool, the middleware sends the task to the A2A agent (as role "agent")
 *   and feeds the answer back for a second run.
 * The AG-UI event sequences the caller sees are compared.
 */
import { interopSuite, sdkAgent } from '../../helpers/interop';
import { startLegacySdkAgent, type LegacyAgent } from '../../helpers/interop-agents';
import { startAgent, type TestAgent } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';

type Obj = Record<string, any>;
const agui = require('@ag-ui/client') as Obj;
const { A2AAgent } = require('@ag-ui/a2a') as Obj;
const { A2AMiddlewareAgent } = require('@ag-ui/a2a-middleware') as Obj;
const { A2AClient } = require('a2a-sdk-02/client') as Obj;
const rxjs = require('rxjs') as Obj;

const input = (text: string) => ({
  threadId: 'thread-1',
  runId: crypto.randomUUID(),
  messages: [{ id: crypto.randomUUID(), role: 'user', content: text }],
  tools: [],
  context: [],
  state: {},
  forwardedProps: {},
});

/** Every AG-UI event of one run, in order. */
const events = (agent: Obj, text: string): Promise<unknown[]> => rxjs['lastValueFrom'](agent['run'](input(text)).pipe(rxjs['toArray']()));

/** The X-A2A-Extensions header of each JSON-RPC call that reached the agent. */
const extensionHeaders = (received: TestAgent['received']): unknown[] =>
  received.filter((r) => r.method === 'POST').map((r) => r.headers['x-a2a-extensions'] ?? null);

beforeAll(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
  jest.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterAll(() => jest.restoreAllMocks());

for (const streaming of [true, false]) {
  describe(`@ag-ui/a2a A2AAgent, ${streaming ? 'streaming' : 'blocking fallback (the agent does not stream)'}`, () => {
    let sdk: TestAgent;
    const suite = interopSuite(`ag-ui a2a (${streaming ? 'stream' : 'blocking'})`, async () => {
      const recorder = handlerRecorder();
      sdk = await startAgent({ wrapRequestHandler: recorder.wrap, streaming });
      return sdkAgent(sdk, recorder);
    });
    suite.op('run', async ({ base }) => {
      const a2aClient = new A2AClient(base, '.well-known/agent-card.json');
      const evs = await events(new A2AAgent({ a2aClient }), 'plan a team offsite');
      return { events: evs, extensions: extensionHeaders(sdk.received) };
    });
  });
}

const toolArgs = (agentName: string): string => JSON.stringify({ agentName, task: 'book the venue' });

/** An AG-UI agent standing in for an LLM: first run calls the A2A tool, the next one answers with the tool's result. */
class ScriptedOrchestrator extends agui['AbstractAgent'] {
  constructor(private readonly agentName: string) {
    super({});
  }
  run(inp: Obj): unknown {
    const E = agui['EventType'];
    const toolResult = [...(inp['messages'] as Obj[])].reverse().find((m) => m['role'] === 'tool');
    const base = { threadId: inp['threadId'], runId: inp['runId'] };
    const evs: Obj[] = [{ type: E.RUN_STARTED, ...base }];
    if (toolResult === undefined) {
      const args = toolArgs(this.agentName);
      evs.push(
        { type: E.TOOL_CALL_START, toolCallId: 'call-1', toolCallName: 'send_message_to_a2a_agent', parentMessageId: 'assistant-1' },
        { type: E.TOOL_CALL_ARGS, toolCallId: 'call-1', delta: args },
        { type: E.TOOL_CALL_END, toolCallId: 'call-1' },
      );
    } else {
      evs.push(
        { type: E.TEXT_MESSAGE_START, messageId: 'assistant-2', role: 'assistant' },
        { type: E.TEXT_MESSAGE_CONTENT, messageId: 'assistant-2', delta: `done (${String(toolResult['content']).slice(0, 200)})` },
        { type: E.TEXT_MESSAGE_END, messageId: 'assistant-2' },
      );
    }
    evs.push({ type: E.RUN_FINISHED, ...base });
    return rxjs['from'](evs);
  }
}

describe('@ag-ui/a2a-middleware A2AMiddlewareAgent', () => {
  let agent: LegacyAgent;
  const suite = interopSuite('ag-ui a2a-middleware', async () => (agent = await startLegacySdkAgent('0.2')));
  suite.op('tool call to the A2A agent', async ({ base }) => {
    const card = (await (await fetch(`${agent.origin}/.well-known/agent.json`)).json()) as { name: string };
    // With @ag-ui/client 1.x the middleware's own event reducer no longer records the tool call's
    // arguments, so the assistant turn it looks them up in is given as history.
    const toolCall = { id: 'call-1', type: 'function', function: { name: 'send_message_to_a2a_agent', arguments: toolArgs(card.name) } };
    const mw = new A2AMiddlewareAgent({
      agentUrls: [base],
      orchestrationAgent: new ScriptedOrchestrator(card.name),
      instructions: 'route',
      initialMessages: [{ id: 'assistant-1', role: 'assistant', toolCalls: [toolCall] }],
    });
    return events(mw, 'get the offsite booked');
  });
});
