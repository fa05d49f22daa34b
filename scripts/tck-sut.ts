/**
 * A System Under Test for the official A2A TCK (github.com/a2aproject/a2a-tck, branch 1.0-dev), built on
 * real @a2a-js/sdk 1.3.0 servers: JSON-RPC (`/`), HTTP+JSON (`/a2a/rest`) and gRPC (`lf.a2a.v1.A2AService`,
 * HTTP port + 1) on one agent card and one request handler. It behaves like the TCK's own reference SUT
 * (sut/a2a-python/sut_agent.py, generated from scenarios/*.feature): the message's `messageId` prefix
 * picks what the executor does. Used to run the TCK directly and through a2a-guard (docs in
 * /work/notes/tck.md of the project notes; CI cannot run the TCK, it needs Python and its dependencies).
 *
 *   npm run build && SUT_PORT=9999 node dist/scripts/tck-sut.js
 *
 * SUT_PORT (default 9999) is the HTTP port, GRPC_PORT (default SUT_PORT + 1) the gRPC port,
 * SUT_HOST (default 127.0.0.1) the address written into the card and listened on. SUT_FULL=true also declares push
 * notifications and an extended card (see TckSutOptions.full).
 */
import http from 'node:http';
import express from 'express';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type * as A2AServer from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import type * as A2AExpress from '@a2a-js/sdk/server/express' with { 'resolution-mode': 'import' };
import type * as A2AGrpcServer from '@a2a-js/sdk/server/grpc' with { 'resolution-mode': 'import' };
import type * as GrpcJs from '@grpc/grpc-js';

// The SDK is ESM-typed; its CJS build is what require() loads at run time (see test/helpers/agent.ts).
const sdk: typeof A2A = require('@a2a-js/sdk');
const sdkServer: typeof A2AServer = require('@a2a-js/sdk/server');
const sdkExpress: typeof A2AExpress = require('@a2a-js/sdk/server/express');
const sdkGrpc: typeof A2AGrpcServer = require('@a2a-js/sdk/server/grpc');
const grpcJs: typeof GrpcJs = require('@grpc/grpc-js');

const { AgentEvent, DefaultPushNotificationSender, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore } = sdkServer;
const { TaskState, Role } = sdk;
type Part = A2A.Part;
type Task = A2A.Task;
type Message = A2A.Message;

/** The TCK's TCK_STREAMING_TIMEOUT (seconds): a resubscribe task works for twice that. */
const STREAMING_TIMEOUT_S = Number(process.env['TCK_STREAMING_TIMEOUT'] ?? '2');

const part = (content: Part['content'], extra: { filename?: string; mediaType?: string } = {}): Part => ({
  content,
  metadata: undefined,
  filename: extra.filename ?? '',
  mediaType: extra.mediaType ?? '',
});
const text = (t: string): Part => part({ $case: 'text', value: t });

export interface TckSut {
  httpUrl: string;
  grpcAddress: string;
  close(): Promise<void>;
}

export interface TckSutOptions {
  host?: string;
  port?: number;
  grpcPort?: number;
  /**
   * Also declare and serve push notifications (the SDK's store and sender, which POSTs to the webhook) and an
   * extended agent card, so the TCK's push-notification and extended-card tests run instead of being skipped.
   * The TCK's reference SUT declares neither.
   */
  full?: boolean;
}

export async function startTckSut(opts: TckSutOptions = {}): Promise<TckSut> {
  const host = opts.host ?? '127.0.0.1';
  const cancelled = new Set<string>();
  const contexts = new Map<string, string>();
  const sleep = (taskId: string, ms: number): Promise<void> =>
    new Promise((resolve) => {
      const end = Date.now() + ms;
      const tick = (): void => {
        if (cancelled.has(taskId) || Date.now() >= end) resolve();
        else setTimeout(tick, 50);
      };
      tick();
    });

  const executor: A2AServer.AgentExecutor = {
    cancelTask: async (taskId, bus) => {
      cancelled.add(taskId);
      // The executor stops publishing once it sees the flag; the final canceled status comes from here.
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: contexts.get(taskId) ?? '',
          status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
          metadata: undefined,
        }),
      );
    },
    execute: async (ctx, bus) => {
      const { taskId, contextId, userMessage } = ctx;
      const id = userMessage.messageId;
      contexts.set(taskId, contextId);
      const agentMessage = (t: string): Message => ({
        messageId: crypto.randomUUID(),
        contextId,
        taskId,
        role: Role.ROLE_AGENT,
        parts: [text(t)],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      });
      if (id.startsWith('tck-message-response')) {
        bus.publish(AgentEvent.message({ ...agentMessage('Direct message response'), taskId: '' }));
        return;
      }
      if (id.startsWith('tck-reject-task')) throw new Error('rejected');
      const first: Task = ctx.task ?? {
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [userMessage],
        metadata: undefined,
      };
      bus.publish(AgentEvent.task(first));
      const live = (): boolean => !cancelled.has(taskId);
      const status = (state: A2A.TaskState, message?: Message): void => {
        if (live())
          bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined }));
      };
      let artifactN = 0;
      const artifact = (parts: Part[], append = false, lastChunk = false, artifactId?: string): void => {
        if (!live()) return;
        const aid = artifactId ?? `artifact-${++artifactN}`;
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            append,
            lastChunk,
            metadata: undefined,
            artifact: { artifactId: aid, name: '', description: '', parts, metadata: undefined, extensions: [] },
          }),
        );
      };
      const working = (): void => status(TaskState.TASK_STATE_WORKING);
      const complete = (message?: Message): void => status(TaskState.TASK_STATE_COMPLETED, message);
      const fileRaw = part({ $case: 'raw', value: Buffer.from('tck') }, { filename: 'output.txt', mediaType: 'text/plain' });

      // Longer prefixes first where one is a prefix of another (tck-artifact-file-url / tck-artifact-file).
      if (id.startsWith('tck-stream-artifact-chunked')) {
        working();
        artifact([text('chunk-1 ')], true, false, 'chunked');
        artifact([text('chunk-2')], true, true, 'chunked');
        return complete();
      }
      if (id.startsWith('test-resubscribe-message-id')) {
        working();
        await sleep(taskId, 2 * STREAMING_TIMEOUT_S * 1000);
        return complete();
      }
      const streamed: Array<[string, string]> = [
        ['tck-stream-artifact-text', 'Streamed text content'],
        ['tck-stream-ordering-001', 'Ordered output'],
        ['tck-stream-001', 'Stream hello from TCK'],
        ['tck-stream-003', 'Stream task lifecycle'],
      ];
      for (const [prefix, t] of streamed) {
        if (id.startsWith(prefix)) {
          working();
          artifact([text(t)]);
          return complete();
        }
      }
      if (id.startsWith('tck-stream-artifact-file')) {
        working();
        artifact([fileRaw]);
        return complete();
      }
      if (id.startsWith('tck-stream-002')) return complete();
      if (id.startsWith('tck-artifact-file-url')) {
        artifact([part({ $case: 'url', value: 'https://example.com/output.txt' }, { filename: 'output.txt', mediaType: 'text/plain' })]);
        return complete();
      }
      if (id.startsWith('tck-input-required')) return status(TaskState.TASK_STATE_INPUT_REQUIRED);
      if (id.startsWith('tck-complete-task')) return complete(agentMessage('Hello from TCK'));
      if (id.startsWith('tck-artifact-text')) {
        artifact([text('Generated text content')]);
        return complete();
      }
      if (id.startsWith('tck-artifact-file')) {
        artifact([fileRaw]);
        return complete();
      }
      if (id.startsWith('tck-artifact-data')) {
        artifact([part({ $case: 'data', value: { key: 'value', count: 42 } })]);
        return complete();
      }
      return complete(agentMessage(`Unhandled messageId prefix: ${id}`));
    },
  };

  const app = express();
  const server = http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const httpPort = (server.address() as { port: number }).port;
  const grpcServer = new grpcJs.Server();
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync(`${host}:${opts.grpcPort ?? 0}`, grpcJs.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const origin = `http://${host}:${httpPort}`;
  const card: A2A.AgentCard = {
    name: 'a2a-js SDK 1.3.0 System Under Test (SUT)',
    description: 'TCK SUT on @a2a-js/sdk 1.3.0 (behaves like the TCK reference SUT)',
    version: '1.0.0',
    provider: { organization: 'a2a-guard', url: 'https://github.com/a2aproject' },
    signatures: [],
    supportedInterfaces: [
      { url: origin, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${origin}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
      { url: `${host}:${grpcPort}`, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true, pushNotifications: opts.full === true, extensions: [], extendedAgentCard: opts.full === true },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [
      {
        id: 'tck',
        name: 'TCK Conformance',
        description: 'Handles TCK conformance test messages',
        tags: ['tck'],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
  };
  const pushStore = opts.full === true ? new InMemoryPushNotificationStore() : undefined;
  const requestHandler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    executor,
    undefined,
    pushStore,
    pushStore === undefined ? undefined : new DefaultPushNotificationSender(pushStore),
    opts.full === true ? { ...card, name: `${card.name} (extended)` } : undefined,
  );
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = sdkExpress;
  app.use(`/${sdk.AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  app.use('/', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  grpcServer.addService(sdkGrpc.A2AService, sdkGrpc.grpcService({ requestHandler, userBuilder: sdkGrpc.UserBuilder.noAuthentication }));

  return {
    httpUrl: origin,
    grpcAddress: `${host}:${grpcPort}`,
    close: async () => {
      grpcServer.forceShutdown();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

if (require.main === module) {
  const port = Number(process.env['SUT_PORT'] ?? '9999');
  const grpcPort = Number(process.env['GRPC_PORT'] ?? String(port + 1));
  startTckSut({ host: process.env['SUT_HOST'] ?? '127.0.0.1', port, grpcPort, full: process.env['SUT_FULL'] === 'true' }).then(
    (sut) => {
      process.stdout.write(`TCK SUT: HTTP ${sut.httpUrl} (JSON-RPC /, REST /a2a/rest), gRPC ${sut.grpcAddress}\n`);
      const stop = (): void => void sut.close().then(() => process.exit(0));
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    },
    (err: unknown) => {
      process.stderr.write(`TCK SUT failed to start: ${String(err)}\n`);
      process.exit(1);
    },
  );
}
