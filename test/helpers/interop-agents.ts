/**
 * Third-party A2A agents for the interop suite (test/helpers/interop.ts), each on 127.0.0.1:0 with
 * every HTTP request recorded (raw body) and its handler's calls recorded:
 *
 * - startLegacySdkAgent('0.2' | '0.3'): @a2a-js/sdk 0.2.5 (A2AExpressApp: card at
 *   /.well-known/agent.json, JSON-RPC at /) or 0.3.x (card at /.well-known/agent-card.json,
 *   JSON-RPC at /a2a/jsonrpc, HTTP+JSON at /a2a/rest), installed as npm aliases a2a-sdk-02/-03.
 *   The executor answers "echo: <text>" as task → working → artifact → completed; "reply" answers
 *   a bare message; "wait-for-cancel" works until cancelled.
 * - startVoltAgent(): VoltAgent's A2AServer (@voltagent/a2a-server) over a VoltAgent Agent
 *   (@voltagent/core) whose model is ai/test's MockLanguageModelV3, answering "echo: <text>"
 *   without a key. The HTTP layer is VoltAgent's route contract (server-hono's a2a.routes.ts:
 *   GET /.well-known/{agentId}/agent-card.json, POST /a2a/{agentId} with `context` taken from the
 *   body's top-level member or the `?context=` / `?runtimeContext=` query; errors HTTP 400, SSE
 *   frames `data: <json>`), rebuilt on node:http because @voltagent/server-hono pulls in every
 *   model provider VoltAgent ships (about 190 MB).
 *
 * The packages load with require() (each ships a CommonJS build); their types are kept local.
 */
import http from 'node:http';
import express from 'express';
import { tapRequest, type ReceivedRequest } from './agent';
import { handlerRecorder, type HandlerRecorder } from './handler-recorder';
import { approvedReading, differences, type ApprovedReading, type HandlerFacts } from './a2a-facts';
import { closeServer, listen } from './net';
import { isRpc, type InteropAgent } from './interop';

type Obj = Record<string, any>;

/* ------------------------------------------------------------------------------------------ */
/* Oracle for handlers that take v0.3 JSON-RPC params                                         */
/* ------------------------------------------------------------------------------------------ */

/** @a2a-js/sdk 0.2/0.3 request-handler methods and the v0.3 JSON-RPC method each serves. */
const LEGACY_METHODS: Readonly<Record<string, string>> = {
  sendMessage: 'message/send',
  sendMessageStream: 'message/stream',
  getTask: 'tasks/get',
  cancelTask: 'tasks/cancel',
  resubscribe: 'tasks/resubscribe',
  setTaskPushNotificationConfig: 'tasks/pushNotificationConfig/set',
  getTaskPushNotificationConfig: 'tasks/pushNotificationConfig/get',
  listTaskPushNotificationConfigs: 'tasks/pushNotificationConfig/list',
  deleteTaskPushNotificationConfig: 'tasks/pushNotificationConfig/delete',
  getAuthenticatedExtendedAgentCard: 'agent/getAuthenticatedExtendedCard',
};

/**
 * Each request the handler acted on (as a v0.3 JSON-RPC payload) must mean what one approved
 * payload means (a2a-facts: operation, ids, parts, webhook), each approval used once.
 */
export function payloadProblems(acted: readonly unknown[], approved: readonly unknown[]): string[] {
  const readings = approved.map(approvedReading).filter((r): r is ApprovedReading => r !== undefined);
  const problems: string[] = [];
  for (const payload of acted) {
    const r = approvedReading(payload);
    if (r === undefined) continue; // not an A2A operation: the agent refuses it itself
    const facts: HandlerFacts =
      r.kind === 'facts' ? { ...r.facts, paramsTenant: '' } : { op: r.op, tenant: '', paramsTenant: '', fields: { ambiguous: r.why } };
    const at = readings.findIndex((a) => differences(facts, a).length === 0);
    if (at < 0) problems.push(`the handler acted on ${JSON.stringify(payload).slice(0, 240)}, which no approval matches`);
    else readings.splice(at, 1);
  }
  return problems;
}

function legacyActed(recorder: HandlerRecorder): unknown[] {
  return recorder.calls
    .filter((c) => LEGACY_METHODS[c.method] !== undefined)
    .map((c) => ({ jsonrpc: '2.0', id: 0, method: LEGACY_METHODS[c.method], params: c.params }));
}

/* ------------------------------------------------------------------------------------------ */
/* @a2a-js/sdk 0.2.5 and 0.3.x agents                                                         */
/* ------------------------------------------------------------------------------------------ */

export interface LegacyAgent extends InteropAgent {
  readonly received: ReceivedRequest[];
  readonly recorder: HandlerRecorder;
  /** URL of the JSON-RPC endpoint. */
  readonly jsonRpcUrl: string;
}

const now = (): string => new Date().toISOString();

/** The echo executor, in v0.3 event shapes (the same for both SDK lines). */
function legacyExecutor(isClosed: () => boolean) {
  const cancelled = new Set<string>();
  return {
    cancelled,
    async cancelTask(taskId: string): Promise<void> {
      cancelled.add(taskId);
    },
    async execute(
      ctx: { taskId: string; contextId: string; userMessage: Obj; task?: Obj },
      bus: { publish(e: unknown): void; finished(): void },
    ): Promise<void> {
      const { taskId, contextId, userMessage, task } = ctx;
      const input = (userMessage['parts'] as Obj[]).map((p) => (p['kind'] === 'text' ? String(p['text']) : '')).join(' ');
      if (input.includes('reply')) {
        bus.publish({ kind: 'message', role: 'agent', messageId: crypto.randomUUID(), contextId, parts: [{ kind: 'text', text: `echo: ${input}` }] });
        bus.finished();
        return;
      }
      if (task === undefined) bus.publish({ kind: 'task', id: taskId, contextId, status: { state: 'submitted', timestamp: now() }, history: [userMessage] });
      bus.publish({ kind: 'status-update', taskId, contextId, status: { state: 'working', timestamp: now() }, final: false });
      if (input.includes('wait-for-cancel')) {
        while (!cancelled.has(taskId) && !isClosed()) await new Promise((r) => setTimeout(r, 20));
      }
      if (cancelled.has(taskId)) {
        bus.publish({ kind: 'status-update', taskId, contextId, status: { state: 'canceled', timestamp: now() }, final: true });
      } else {
        bus.publish({
          kind: 'artifact-update',
          taskId,
          contextId,
          artifact: { artifactId: 'echo-1', name: 'echo', parts: [{ kind: 'text', text: `echo: ${input}` }] },
          lastChunk: true,
        });
        bus.publish({ kind: 'status-update', taskId, contextId, status: { state: 'completed', timestamp: now() }, final: true });
      }
      bus.finished();
    },
  };
}

/** A real @a2a-js/sdk 0.2.5 or 0.3.x agent. */
export async function startLegacySdkAgent(line: '0.2' | '0.3'): Promise<LegacyAgent> {
  const received: ReceivedRequest[] = [];
  const recorder = handlerRecorder();
  let closed = false;
  const app = express();
  const server = http.createServer((req, res) => {
    tapRequest(req, received);
    app(req, res);
  });
  const origin = await listen(server);
  const executor = legacyExecutor(() => closed);
  const skills = [{ id: 'echo', name: 'echo', description: 'echo', tags: ['test'] }];
  let jsonRpcUrl: string;
  if (line === '0.2') {
    const s = require('a2a-sdk-02/server') as Obj;
    jsonRpcUrl = `${origin}/`;
    const card = {
      name: 'Echo Agent 0.2',
      description: 'echo',
      url: jsonRpcUrl,
      version: '0.2.5',
      protocolVersion: '0.2.5',
      capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: false },
      defaultInputModes: ['text'],
      defaultOutputModes: ['text'],
      skills,
    };
    const handler = new s['DefaultRequestHandler'](card, new s['InMemoryTaskStore'](), executor);
    recorder.wrap(handler);
    new s['A2AExpressApp'](handler).setupRoutes(app, '');
  } else {
    const s = require('a2a-sdk-03/server') as Obj;
    const e = require('a2a-sdk-03/server/express') as Obj;
    jsonRpcUrl = `${origin}/a2a/jsonrpc`;
    const card = {
      name: 'Echo Agent 0.3',
      description: 'echo',
      url: jsonRpcUrl,
      version: '0.3.14',
      protocolVersion: '0.3.0',
      preferredTransport: 'JSONRPC',
      additionalInterfaces: [
        { url: jsonRpcUrl, transport: 'JSONRPC' },
        { url: `${origin}/a2a/rest`, transport: 'HTTP+JSON' },
      ],
      capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: false },
      defaultInputModes: ['text'],
      defaultOutputModes: ['text'],
      skills,
    };
    const pushSender = { send: async (): Promise<void> => undefined };
    const handler = new s['DefaultRequestHandler'](
      card,
      new s['InMemoryTaskStore'](),
      executor,
      undefined,
      new s['InMemoryPushNotificationStore'](),
      pushSender,
    );
    recorder.wrap(handler);
    const userBuilder = e['UserBuilder'].noAuthentication;
    app.use('/.well-known/agent-card.json', e['agentCardHandler']({ agentCardProvider: handler }));
    app.use('/a2a/jsonrpc', e['jsonRpcHandler']({ requestHandler: handler, userBuilder }));
    app.use('/a2a/rest', e['restHandler']({ requestHandler: handler, userBuilder }));
  }
  return {
    origin,
    received,
    recorder,
    jsonRpcUrl,
    rpcBodies: () => received.filter((r) => r.method === 'POST' && isRpc(r.body)).map((r) => r.body),
    handlerProblems: (approved) => payloadProblems(legacyActed(recorder), approved),
    clear() {
      received.length = 0;
      recorder.clear();
    },
    async close() {
      closed = true;
      await closeServer(server);
    },
  };
}

/* ------------------------------------------------------------------------------------------ */
/* VoltAgent                                                                                  */
/* ------------------------------------------------------------------------------------------ */

export const VOLT_AGENT_ID = 'supportagent';

export interface VoltAgentRun extends InteropAgent {
  readonly received: ReceivedRequest[];
  /** What A2AServer.handleRequest was called with: the JSON-RPC request and the context. */
  readonly handled: Array<{ request: unknown; context: unknown }>;
  readonly cardPath: string;
  readonly rpcPath: string;
}

/** The last user text of an ai SDK prompt (LanguageModelV3Prompt). */
function lastUserText(prompt: unknown): string {
  const msgs = Array.isArray(prompt) ? (prompt as Obj[]) : [];
  const user = [...msgs].reverse().find((m) => m['role'] === 'user');
  const content = user?.['content'];
  if (typeof content === 'string') return content;
  return Array.isArray(content)
    ? (content as Obj[])
        .filter((c) => c['type'] === 'text')
        .map((c) => String(c['text']))
        .join('')
    : '';
}

function mockModel(): unknown {
  const { MockLanguageModelV3, simulateReadableStream } = require('ai/test') as Obj;
  const usage = { inputTokens: { total: 3, noCache: 3, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 4, text: 4, reasoning: 0 } };
  const finishReason = { unified: 'stop', raw: 'stop' };
  return new MockLanguageModelV3({
    doGenerate: async (o: Obj) => ({ content: [{ type: 'text', text: `echo: ${lastUserText(o['prompt'])}` }], finishReason, usage, warnings: [] }),
    doStream: async (o: Obj) => ({
      stream: simulateReadableStream({
        chunks: [
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 't1' },
          { type: 'text-delta', id: 't1', delta: 'echo: ' },
          { type: 'text-delta', id: 't1', delta: lastUserText(o['prompt']) },
          { type: 'text-end', id: 't1' },
          { type: 'finish', finishReason, usage },
        ],
      }),
    }),
  });
}

function parseContextCandidate(c: unknown): Obj | undefined {
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return undefined;
  const { userId, sessionId, metadata } = c as Obj;
  const out: Obj = {};
  if (typeof userId === 'string') out['userId'] = userId;
  if (typeof sessionId === 'string') out['sessionId'] = sessionId;
  if (metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata)) out['metadata'] = metadata;
  return Object.keys(out).length > 0 ? out : undefined;
}

function mergeContexts(base: Obj | undefined, next: Obj | undefined): Obj | undefined {
  if (base === undefined) return next;
  if (next === undefined) return base;
  return { ...base, ...next, ...(base['metadata'] || next['metadata'] ? { metadata: { ...(base['metadata'] ?? {}), ...(next['metadata'] ?? {}) } } : {}) };
}

/** VoltAgent's A2A server over a scripted model. */
export async function startVoltAgent(): Promise<VoltAgentRun> {
  const { Agent, AgentRegistry, VoltAgentObservability } = require('@voltagent/core') as Obj;
  const a2a = require('@voltagent/a2a-server') as Obj;
  // The AI SDK warns about system messages on every call; VoltAgent puts its instructions there.
  (globalThis as Obj)['AI_SDK_LOG_WARNINGS'] = false;
  // Without VoltOps sync (no remote exporters polling for a client); close() stops the store's cleanup timer.
  const observability = new VoltAgentObservability({ voltOpsSync: { sampling: { strategy: 'never' } } });
  AgentRegistry.getInstance().setGlobalObservability(observability);
  const agent = new Agent({ id: VOLT_AGENT_ID, name: 'Support Agent', purpose: 'Echoes its input', instructions: 'Echo the user.', model: mockModel() });
  const a2aServer = new a2a['A2AServer']({ id: 'support', name: 'support', version: '0.1.0', agents: { [VOLT_AGENT_ID]: agent } });
  a2aServer.initialize({ agentRegistry: { getAllAgents: () => [] } });
  const handled: Array<{ request: unknown; context: unknown }> = [];
  const received: ReceivedRequest[] = [];
  const cardPath = `/.well-known/${VOLT_AGENT_ID}/agent-card.json`;
  const rpcPath = `/a2a/${VOLT_AGENT_ID}`;
  const sendJson = (res: http.ServerResponse, status: number, body: unknown): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  const server = http.createServer((req, res) => {
    tapRequest(req, received);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const url = new URL(req.url ?? '/', 'http://agent');
        const agentId = decodeURIComponent(url.pathname.split('/')[2] ?? '');
        if (req.method === 'GET' && /^\/\.well-known\/[^/]+\/agent-card\.json$/.test(url.pathname)) {
          try {
            // Hono's c.req.url: the URL as the request named it (Host header included).
            sendJson(res, 200, a2aServer.getAgentCard(agentId, { requestUrl: `http://${req.headers.host ?? 'agent'}${req.url ?? ''}` }));
          } catch (error) {
            const r = a2a['normalizeError'](null, error) as Obj;
            sendJson(res, r['error']?.code === -32601 ? 404 : 400, r);
          }
          return;
        }
        if (req.method !== 'POST' || !/^\/a2a\/[^/]+$/.test(url.pathname)) {
          sendJson(res, 404, { success: false, message: 'Not Found' });
          return;
        }
        let request: Obj;
        let context: Obj | undefined;
        try {
          const q = url.searchParams.get('context') ?? url.searchParams.get('runtimeContext');
          if (q) {
            let parsed: unknown;
            try {
              parsed = JSON.parse(q);
            } catch {
              throw new SyntaxError("Invalid 'context' query parameter; expected JSON");
            }
            context = mergeContexts(context, parseContextCandidate(parsed));
          }
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
          let payload = body;
          if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
            const { context: bodyContext, ...rest } = body as Obj;
            if (bodyContext !== undefined) context = mergeContexts(context, parseContextCandidate(bodyContext));
            payload = rest;
          }
          if (!a2a['isJsonRpcRequest'](payload)) throw new a2a['VoltA2AError'](-32600, 'Body is not a valid JSON-RPC request');
          if ((payload as Obj)['id'] === undefined) throw new a2a['VoltA2AError'](-32600, "JSON-RPC request 'id' must be provided");
          request = payload as Obj;
        } catch (error) {
          sendJson(res, 400, a2a['normalizeError'](null, error));
          return;
        }
        handled.push({ request: JSON.parse(JSON.stringify(request)) as unknown, context: context ?? {} });
        const response = (await a2aServer.handleRequest(agentId, request, context ?? {})) as Obj;
        if (response['kind'] === 'stream') {
          res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
          const stream = response['stream'] as AsyncGenerator<unknown>;
          res.once('close', () => void stream.return(undefined));
          try {
            for await (const chunk of stream) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
          } catch (error) {
            res.write(`data: ${JSON.stringify(a2a['normalizeError'](response['id'], error))}\n\n`);
          }
          res.end();
          return;
        }
        sendJson(res, response['error'] ? 400 : 200, response);
      })().catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { error: String(err) });
        else res.destroy();
      });
    });
  });
  const origin = await listen(server);
  return {
    origin,
    received,
    handled,
    cardPath,
    rpcPath,
    rpcBodies: () => received.filter((r) => r.method === 'POST' && isRpc(r.body)).map((r) => r.body),
    handlerProblems: (approved) =>
      payloadProblems(
        handled.map((h) => h.request),
        approved,
      ),
    clear() {
      received.length = 0;
      handled.length = 0;
    },
    async close() {
      await closeServer(server);
      // Not observability.shutdown(): its OpenTelemetry providers leave 30 s timers behind.
      observability.storage.destroy();
    },
  };
}
