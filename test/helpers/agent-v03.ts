/**
 * A native A2A v0.3 gRPC agent and client: @a2a-js/sdk 0.3.14 (the dev dependency `a2a-sdk-03`), whose
 * request handler acts on v0.3 JSON-RPC objects that its gRPC server makes from the protobuf it reads
 * (`a2a.v1.A2AService`). Its card is a v0.3 card whose main endpoint is gRPC.
 *
 *   card  GET <origin>/.well-known/agent-card.json   (url = the gRPC host:port, preferredTransport GRPC)
 *   gRPC  <grpcAddress>
 *
 * Executor, by the user's text: default -> task(submitted) -> working -> artifact "echo: <text>" -> completed;
 * "stream N" -> task -> N artifact updates ("chunk i") -> completed; "wait-for-cancel" -> task -> working, then
 * canceled when cancelled.
 */
import http from 'node:http';
import express from 'express';
import type * as A2A03 from 'a2a-sdk-03' with { 'resolution-mode': 'import' };
import type * as A2A03Server from 'a2a-sdk-03/server' with { 'resolution-mode': 'import' };
import type * as A2A03Express from 'a2a-sdk-03/server/express' with { 'resolution-mode': 'import' };
import type * as A2A03Grpc from 'a2a-sdk-03/server/grpc' with { 'resolution-mode': 'import' };
import type * as A2A03Client from 'a2a-sdk-03/client' with { 'resolution-mode': 'import' };
import type * as A2A03GrpcClient from 'a2a-sdk-03/client/grpc' with { 'resolution-mode': 'import' };
import type * as GrpcJs from '@grpc/grpc-js';
import { closeServer, listen } from './net';

export type ClientV03 = A2A03Client.Client;
export type MessageV03 = A2A03.Message;

export interface AgentV03 {
  readonly origin: string;
  readonly grpcAddress: string;
  readonly card: A2A03.AgentCard;
  close(): Promise<void>;
}

const now = () => new Date().toISOString();

/** Start a native v0.3 gRPC agent on 127.0.0.1:0 (gRPC) and its card on another port. */
export async function startAgentV03(opts: { wrapRequestHandler?: (handler: A2A03Server.DefaultRequestHandler) => void } = {}): Promise<AgentV03> {
  const server03 = require('a2a-sdk-03/server') as typeof A2A03Server;
  const express03 = require('a2a-sdk-03/server/express') as typeof A2A03Express;
  const grpc03 = require('a2a-sdk-03/server/grpc') as typeof A2A03Grpc;
  const grpcJs = require('@grpc/grpc-js') as typeof GrpcJs;

  const grpcServer = new grpcJs.Server();
  const port = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpcJs.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const grpcAddress = `127.0.0.1:${port}`;
  const card: A2A03.AgentCard = {
    name: 'Native v0.3 Agent',
    description: 'Echoes its input over v0.3 gRPC',
    version: '0.3.14',
    protocolVersion: '0.3.0',
    url: grpcAddress,
    preferredTransport: 'GRPC',
    additionalInterfaces: [{ url: grpcAddress, transport: 'GRPC' }],
    capabilities: { streaming: true, pushNotifications: true },
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'echo', name: 'echo', description: 'echo', tags: ['test'] }],
    supportsAuthenticatedExtendedCard: true,
  };

  const cancels = new Map<string, () => void>();
  const executor: A2A03Server.AgentExecutor = {
    cancelTask: async (taskId) => cancels.get(taskId)?.(),
    execute: async (ctx, bus) => {
      const { taskId, contextId, userMessage } = ctx;
      const text = userMessage.parts.map((p) => (p.kind === 'text' ? p.text : '')).join(' ');
      const status = (state: A2A03.TaskState, final: boolean): A2A03.TaskStatusUpdateEvent => ({
        kind: 'status-update',
        taskId,
        contextId,
        status: { state, timestamp: now() },
        final,
      });
      const artifact = (t: string, append: boolean, lastChunk: boolean): A2A03.TaskArtifactUpdateEvent => ({
        kind: 'artifact-update',
        taskId,
        contextId,
        append,
        lastChunk,
        artifact: { artifactId: 'echo-1', parts: [{ kind: 'text', text: t }] },
      });
      bus.publish(ctx.task ?? { kind: 'task', id: taskId, contextId, status: { state: 'submitted', timestamp: now() }, history: [userMessage] });
      const n = /\bstream (\d+)/.exec(text);
      if (n !== null) {
        for (let i = 0; i < Number(n[1]); i++) bus.publish(artifact(`chunk ${i}`, i > 0, i === Number(n[1]) - 1));
      } else {
        bus.publish(status('working', false));
        if (text.includes('wait-for-cancel')) {
          await new Promise<void>((resolve) => cancels.set(taskId, resolve));
          bus.publish(status('canceled', true));
          bus.finished();
          return;
        }
        bus.publish(artifact(`echo: ${text}`, false, true));
      }
      bus.publish(status('completed', true));
      bus.finished();
    },
  };
  const requestHandler = new server03.DefaultRequestHandler(
    card,
    new server03.InMemoryTaskStore(),
    executor,
    undefined,
    new server03.InMemoryPushNotificationStore(),
    { send: async () => undefined },
    { ...card, name: 'Native v0.3 Agent (extended)' },
  );
  // Before the gRPC service binds the handler's methods.
  opts.wrapRequestHandler?.(requestHandler);
  grpcServer.addService(grpc03.A2AService, grpc03.grpcService({ requestHandler, userBuilder: grpc03.UserBuilder.noAuthentication }));

  const app = express();
  app.use('/.well-known/agent-card.json', express03.agentCardHandler({ agentCardProvider: requestHandler }));
  const server = http.createServer(app);
  const origin = await listen(server);
  return {
    origin,
    grpcAddress,
    card,
    async close() {
      for (const wake of cancels.values()) wake();
      grpcServer.forceShutdown();
      await closeServer(server);
    },
  };
}

/** The native v0.3 SDK client, created from the card at `cardBaseUrl`, preferring gRPC; `grpcUrl` is where it calls. */
export async function makeClientV03(cardBaseUrl: string): Promise<{ client: ClientV03; grpcUrl: string }> {
  const client03 = require('a2a-sdk-03/client') as typeof A2A03Client;
  const grpc03 = require('a2a-sdk-03/client/grpc') as typeof A2A03GrpcClient;
  const card = await new client03.DefaultAgentCardResolver().resolve(cardBaseUrl);
  const factory = new client03.ClientFactory(
    client03.ClientFactoryOptions.createFrom(client03.ClientFactoryOptions.default, {
      transports: [new grpc03.GrpcTransportFactory()],
      preferredTransports: ['GRPC'],
    }),
  );
  return { client: await factory.createFromAgentCard(card), grpcUrl: card.url };
}

/** The native v0.3 gRPC transport itself at host:port (GetAgentCard, which the client answers from the card it has). */
export function grpcTransportV03(address: string): A2A03GrpcClient.GrpcTransport {
  const { GrpcTransport } = require('a2a-sdk-03/client/grpc') as typeof A2A03GrpcClient;
  return new GrpcTransport({ endpoint: address });
}

/** A v0.3 user message. */
export const userMsgV03 = (text: string, extra: Partial<MessageV03> = {}): MessageV03 => ({
  kind: 'message',
  messageId: `m-${Math.random().toString(36).slice(2)}`,
  role: 'user',
  parts: [{ kind: 'text', text }],
  ...extra,
});
