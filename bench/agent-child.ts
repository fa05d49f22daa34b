/**
 * Bench agent: a real @a2a-js/sdk 1.3.0 server agent (JSON-RPC at /a2a/jsonrpc, REST at /a2a/rest,
 * v1.0 and legacy v0.3), in its own process.
 *
 *   any message            -> one Task event, already COMPLETED, with an "ok" artifact (instant)
 *   text containing stream -> Task (WORKING), STREAM_EVENTS artifact-update events, COMPLETED status;
 *                             "stream" emits as fast as it can (yielding to the event loop between
 *                             events), "stream paced" waits STREAM_GAP_MS between events
 *   POST /a2a/big          -> reads and drops any body (the SDK's JSON parser stops at 100 KB), answers
 *                             a small completed-task JSON-RPC result: the large-body memory phase
 *   POST /a2a/tick         -> a SendStreamingMessage answered by hand, for the concurrent-streams phase:
 *                             the same v1.0 JSON-RPC SSE events as the SDK's (a task, then one
 *                             artifact update per second, each stream at its own phase of the second,
 *                             a COMPLETED status on {t:'stop-ticks'}). One 10 ms timer serves every
 *                             stream, so 5,000 streams cost the agent little: the phase measures the
 *                             proxy, not the SDK's per-event machinery.
 *
 * Every streamed artifact carries the text `t=<process.hrtime.bigint()>` taken when the agent
 * publishes it. hrtime is CLOCK_MONOTONIC, shared by all processes on the machine, so the load
 * generator can compute each event's agent-to-client latency exactly.
 *
 * Tasks are kept in a small bounded store: the SDK's InMemoryTaskStore keeps every task forever,
 * which would make the agent slow down and grow over a 100,000-request run.
 * Env: PORT (default 0), STREAM_EVENTS (default 100), STREAM_GAP_MS (default 1).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type * as A2AServer from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import type * as A2AExpress from '@a2a-js/sdk/server/express' with { 'resolution-mode': 'import' };
import type * as A2ACompat from '@a2a-js/sdk/compat/v0_3' with { 'resolution-mode': 'import' };
import { fail, serveIpc } from './ipc';

/* The SDK is ESM-typed; at run time require() resolves its CJS build. */
const sdk: typeof A2A = require('@a2a-js/sdk');
const sdkServer: typeof A2AServer = require('@a2a-js/sdk/server');
const sdkExpress: typeof A2AExpress = require('@a2a-js/sdk/server/express');
const sdkCompat: typeof A2ACompat = require('@a2a-js/sdk/compat/v0_3');

const STREAM_EVENTS = Number(process.env.STREAM_EVENTS ?? 100);
const STREAM_GAP_MS = Number(process.env.STREAM_GAP_MS ?? 1);
const { TaskState } = sdk;
const { AgentEvent, DefaultRequestHandler } = sdkServer;

let executions = 0;
/** {t:'stop-ticks'}: every running tick stream ends at its next tick. */
process.on('message', (m: { t?: string }) => {
  if (m?.t !== 'stop-ticks') return;
  stopHandTicks();
});

/* ---- /a2a/tick: hand-made streams, one event per stream per second ---- */

interface HandTick {
  readonly res: http.ServerResponse;
  readonly id: unknown;
  readonly taskId: string;
  n: number;
}
const SLOTS = 100; // 10 ms each
const tickSlots: Array<Set<HandTick>> = Array.from({ length: SLOTS }, () => new Set());
let nextSlot = 0;
let tickTimer: NodeJS.Timeout | undefined;
const sse = (id: unknown, result: unknown) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`;

function handTick(req: http.IncomingMessage, res: http.ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let id: unknown = null;
    try {
      id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown }).id ?? null;
    } catch {
      /* answered anyway */
    }
    executions++;
    const taskId = `tick-${executions}`;
    const t: HandTick = { res, id, taskId, n: 0 };
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(sse(id, { task: { id: taskId, contextId: taskId, status: { state: 'TASK_STATE_WORKING' }, artifacts: [], history: [] } }));
    // Spread the streams over the second, as independent agents would be.
    const slot = tickSlots[nextSlot++ % SLOTS] as Set<HandTick>;
    slot.add(t);
    res.once('close', () => slot.delete(t));
    tickTimer ??= setInterval(tickDue, 10);
  });
}

/** Every slot whose 10 ms came since the last run (a late timer skips none): one event to each of its streams. */
let lastTick = Math.floor(Date.now() / 10);
function tickDue(): void {
  const now = Math.floor(Date.now() / 10);
  for (let t = Math.max(lastTick + 1, now - SLOTS + 1); t <= now; t++) {
    for (const x of tickSlots[t % SLOTS] as Set<HandTick>) {
      x.res.write(
        sse(x.id, {
          artifactUpdate: {
            taskId: x.taskId,
            contextId: x.taskId,
            append: x.n > 0,
            lastChunk: false,
            artifact: { artifactId: 'a1', name: 'out', parts: [{ text: `t=${process.hrtime.bigint()}` }] },
          },
        }),
      );
      x.n++;
    }
  }
  lastTick = now;
}

function stopHandTicks(): void {
  for (const slot of tickSlots) {
    for (const x of slot) x.res.end(sse(x.id, { statusUpdate: { taskId: x.taskId, contextId: x.taskId, status: { state: 'TASK_STATE_COMPLETED' } } }));
    slot.clear();
  }
}

const textPart = (t: string): A2A.Part => ({ content: { $case: 'text', value: t }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const status = (state: A2A.TaskState) => ({ state, message: undefined, timestamp: new Date().toISOString() });

/** Keeps the most recent tasks only (enough for streams and getTask right after a send). */
class BoundedTaskStore implements A2AServer.TaskStore {
  private readonly tasks = new Map<string, A2A.Task>();
  constructor(private readonly max: number) {}
  async save(task: A2A.Task): Promise<void> {
    this.tasks.delete(task.id);
    this.tasks.set(task.id, task);
    if (this.tasks.size > this.max) {
      const oldest = this.tasks.keys().next().value;
      if (oldest !== undefined) this.tasks.delete(oldest);
    }
  }
  async load(taskId: string): Promise<A2A.Task | undefined> {
    return this.tasks.get(taskId);
  }
  async list(): Promise<A2A.ListTasksResponse> {
    return { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 } as unknown as A2A.ListTasksResponse;
  }
}

const executor: A2AServer.AgentExecutor = {
  cancelTask: async () => undefined,
  execute: async ({ taskId, contextId, userMessage }, bus) => {
    executions++;
    const input = userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
    const artifact = (text: string) => ({ artifactId: 'a1', name: 'out', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] });
    if (!input.includes('stream')) {
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_COMPLETED),
          artifacts: [artifact('ok')],
          history: [userMessage],
          metadata: undefined,
        }),
      );
      return;
    }
    bus.publish(
      AgentEvent.task({ id: taskId, contextId, status: status(TaskState.TASK_STATE_WORKING), artifacts: [], history: [userMessage], metadata: undefined }),
    );
    const paced = input.includes('paced');
    for (let i = 0; i < STREAM_EVENTS; i++) {
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          append: i > 0,
          lastChunk: i === STREAM_EVENTS - 1,
          metadata: undefined,
          artifact: artifact(`t=${process.hrtime.bigint()}`),
        }),
      );
      // Yield like a real producer would, so each event is written as it is produced.
      await new Promise((r) => (paced ? setTimeout(r, STREAM_GAP_MS) : setImmediate(r)));
    }
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined }));
  },
};

async function main(): Promise<void> {
  const app = express();
  const server = http.createServer({ keepAliveTimeout: 65_000 }, app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => resolve());
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card: A2A.AgentCard = {
    name: 'bench-agent',
    description: 'instant agent for npm run bench',
    version: '1.0.0',
    provider: { organization: 'a2a-guard bench', url: 'https://example.invalid' },
    signatures: [],
    supportedInterfaces: sdkCompat.duplicateInterfacesForLegacy(
      [
        { url: `${origin}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
        { url: `${origin}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
      ],
      ['JSONRPC', 'HTTP+JSON'],
    ),
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'bench', name: 'bench', description: 'bench', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  };
  const requestHandler = new DefaultRequestHandler(card, new BoundedTaskStore(20_000), executor);
  app.post('/a2a/tick', handTick);
  app.post('/a2a/big', (req, res) => {
    let bytes = 0;
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      executions++;
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        result: { task: { id: 'big', contextId: 'big', status: { state: 'TASK_STATE_COMPLETED' }, metadata: { bytes } } },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  const legacyCompat = { enabled: true };
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = sdkExpress;
  app.use(`/${sdk.AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  serveIpc(origin, () => executions);
}

main().catch((e: unknown) => fail('agent-child', e));
