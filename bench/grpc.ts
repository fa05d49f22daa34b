/**
 * `npm run bench:grpc`: what the gRPC binding adds per call, against the JSON-RPC binding measured in
 * the same run.
 *
 *   agent      a real @a2a-js/sdk agent in this process, serving JSON-RPC (express) and gRPC (@grpc/grpc-js)
 *              on the same request handler; every message is answered with a COMPLETED task at once
 *   guardian   bench/guardian-child.ts (instant allow), its own process
 *   a2a-guard  bench/proxy-child.ts with GRPC_PORT set, its own process (CPU read over IPC)
 *   clients    the SDK's gRPC and JSON-RPC clients, created from the agent's and the proxy's cards
 *
 * Interleaved rounds (the order rotates; medians over rounds) of BENCH_SEQ sequential SendMessage calls
 * on four paths: gRPC direct, gRPC through a2a-guard, JSON-RPC direct, JSON-RPC through a2a-guard.
 * Printed: latency per path, the latency each binding's proxy adds, the proxy's CPU per call per
 * binding, and the gRPC/JSON-RPC ratios (the machine is noisy: read ratios, not absolutes).
 *
 * Then the inspected-stream phase: a second a2a-guard (INSPECT_RESPONSES=true, default
 * STREAM_INSPECT_WINDOW) asking a guardian that answers every call after 5 ms; BENCH_STREAM_ROUNDS
 * rounds of one SendStreamingMessage "stream 100" (a task, 100 artifact updates, a final status)
 * per path: gRPC direct, gRPC through it, JSON-RPC through it. Printed: the stream's duration and
 * duration / (100 events x 5 ms) (the HTTP target, bench/run.ts, is <= 0.4x; serial judging is >= 1x).
 * Env: BENCH_ROUNDS (default 8), BENCH_SEQ (calls per path per round, default 200), BENCH_STREAM_ROUNDS
 * (default 8; 0 skips the phase), BENCH_LOG_LEVEL, BENCH_PROFILE_DIR (a --cpu-prof of a2a-guard, its
 * top functions printed).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type * as A2AServer from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import type * as A2AExpress from '@a2a-js/sdk/server/express' with { 'resolution-mode': 'import' };
import type * as A2AGrpcServer from '@a2a-js/sdk/server/grpc' with { 'resolution-mode': 'import' };
import type * as A2AClient from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import type * as A2AGrpcClient from '@a2a-js/sdk/client/grpc' with { 'resolution-mode': 'import' };
import * as grpcJs from '@grpc/grpc-js';
import fs from 'node:fs';
import type { ReadyMessage, StatsReply, StatsRequest } from './ipc';
import { summarizeProfile } from './profile';

const sdk: typeof A2A = require('@a2a-js/sdk');
const sdkServer: typeof A2AServer = require('@a2a-js/sdk/server');
const sdkExpress: typeof A2AExpress = require('@a2a-js/sdk/server/express');
const sdkGrpcServer: typeof A2AGrpcServer = require('@a2a-js/sdk/server/grpc');
const sdkClient: typeof A2AClient = require('@a2a-js/sdk/client');
const sdkGrpcClient: typeof A2AGrpcClient = require('@a2a-js/sdk/client/grpc');

const num = (name: string, def: number): number => (process.env[name] ? Number(process.env[name]) : def);
const ROUNDS = num('BENCH_ROUNDS', 8);
const SEQ = num('BENCH_SEQ', 200);
const STREAM_ROUNDS = num('BENCH_STREAM_ROUNDS', 8);
/** Artifact events per stream, and the inspecting guardian's answer delay (as in bench/run.ts). */
const STREAM_EVENTS = 100;
const SLOW_GUARDIAN_MS = 5;
/** BENCH_PROFILE_DIR: write a --cpu-prof of a2a-guard there (and print its top functions). */
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR || undefined;

type PathName = 'grpc direct' | 'grpc proxy' | 'jsonrpc direct' | 'jsonrpc proxy';
const PATHS: readonly PathName[] = ['grpc direct', 'grpc proxy', 'jsonrpc direct', 'jsonrpc proxy'];

/* ---------------------------------------------------------------------------------------------- */

async function startAgent(): Promise<{ origin: string; close: () => Promise<void> }> {
  const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = sdkServer;
  const app = express();
  const server = http.createServer({ keepAliveTimeout: 65_000 }, app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const grpcServer = new grpcJs.Server();
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpcJs.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const card: A2A.AgentCard = {
    name: 'bench-grpc-agent',
    description: 'instant agent for npm run bench:grpc',
    version: '1.0.0',
    provider: { organization: 'a2a-guard bench', url: 'https://example.invalid' },
    signatures: [],
    supportedInterfaces: [
      { url: `${origin}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `127.0.0.1:${grpcPort}`, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'bench', name: 'bench', description: 'bench', tags: [], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  };
  const status = (state: A2A.TaskState) => ({ state, message: undefined, timestamp: new Date().toISOString() });
  const executor: A2AServer.AgentExecutor = {
    cancelTask: async () => undefined,
    execute: async ({ taskId, contextId, userMessage }, bus) => {
      const part = userMessage.parts[0]?.content;
      const n = part?.$case === 'text' ? /^stream (\d+)$/.exec(part.value)?.[1] : undefined;
      if (n === undefined) {
        bus.publish(
          AgentEvent.task({
            id: taskId,
            contextId,
            status: status(sdk.TaskState.TASK_STATE_COMPLETED),
            artifacts: [],
            history: [userMessage],
            metadata: undefined,
          }),
        );
        return;
      }
      // "stream N": a task, N artifact updates, a final status, published at once (a burst).
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: status(sdk.TaskState.TASK_STATE_WORKING),
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        }),
      );
      for (let i = 0; i < Number(n); i++) {
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            append: i > 0,
            lastChunk: i === Number(n) - 1,
            metadata: undefined,
            artifact: {
              artifactId: 'a',
              name: 'bench',
              description: '',
              parts: [{ content: { $case: 'text', value: `chunk ${i}` }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
              metadata: undefined,
              extensions: [],
            },
          }),
        );
      }
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(sdk.TaskState.TASK_STATE_COMPLETED), metadata: undefined }));
    },
  };
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const { agentCardHandler, jsonRpcHandler, UserBuilder } = sdkExpress;
  app.use(`/${sdk.AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  grpcServer.addService(sdkGrpcServer.A2AService, sdkGrpcServer.grpcService({ requestHandler, userBuilder: sdkGrpcServer.UserBuilder.noAuthentication }));
  return {
    origin,
    close: async () => {
      grpcServer.forceShutdown();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

interface Child {
  readonly proc: ChildProcess;
  readonly url: string;
  stats(): Promise<StatsReply>;
}

async function startChild(file: string, env: Record<string, string>): Promise<Child> {
  // Only the variables given: the proxy refuses unknown look-alikes (SSL_CERT_FILE ~ TLS_CERT_FILE) in a developer's environment.
  const flags = PROFILE_DIR !== undefined && file === 'proxy-child.js' ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const proc = spawn(process.execPath, [...flags, path.join(__dirname, file)], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
    proc.on('message', (m: ReadyMessage) => {
      if (m?.t === 'ready') resolve(m.url);
    });
  });
  let seq = 0;
  return {
    proc,
    url,
    stats: () =>
      new Promise((resolve) => {
        const mine = ++seq;
        const on = (m: StatsReply) => {
          if (m?.t !== 'stats' || m.seq !== mine) return;
          proc.off('message', on);
          resolve(m);
        };
        proc.on('message', on);
        const req: StatsRequest = { t: 'stats', seq: mine };
        proc.send(req);
      }),
  };
}

async function client(cardBase: string, binding: 'GRPC' | 'JSONRPC'): Promise<A2AClient.Client> {
  const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } = sdkClient;
  const card = await new DefaultAgentCardResolver().resolve(cardBase);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      preferredTransports: [binding],
      transports: [new sdkGrpcClient.GrpcTransportFactory(), new JsonRpcTransportFactory()],
    }),
  );
  const bound = card.supportedInterfaces.filter((i) => i.protocolBinding === binding);
  if (bound.length === 0) throw new Error(`${cardBase} has no ${binding} interface`);
  return factory.createFromAgentCard({ ...card, supportedInterfaces: bound });
}

const message = (text = 'bench'): A2A.SendMessageRequest => ({
  tenant: '',
  message: {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: '',
    role: sdk.Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: undefined,
  metadata: undefined,
});

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.floor((s.length - 1) / 2)] as number);
};
const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.min(s.length - 1, Math.floor(p * s.length))] as number);
};

async function main(): Promise<void> {
  const agent = await startAgent();
  const guardian = await startChild('guardian-child.js', { PORT: '0' });
  const proxy = await startChild('proxy-child.js', {
    UPSTREAM_URL: agent.origin,
    GUARDIAN_URL: guardian.url,
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    GRPC_PORT: '0',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
  });
  const clients: Record<PathName, A2AClient.Client> = {
    'grpc direct': await client(agent.origin, 'GRPC'),
    'grpc proxy': await client(proxy.url, 'GRPC'),
    'jsonrpc direct': await client(agent.origin, 'JSONRPC'),
    'jsonrpc proxy': await client(proxy.url, 'JSONRPC'),
  };
  const latency: Record<PathName, number[]> = { 'grpc direct': [], 'grpc proxy': [], 'jsonrpc direct': [], 'jsonrpc proxy': [] };
  const medians: Record<PathName, number[]> = { 'grpc direct': [], 'grpc proxy': [], 'jsonrpc direct': [], 'jsonrpc proxy': [] };
  const cpuPerCall: Record<'grpc proxy' | 'jsonrpc proxy', number[]> = { 'grpc proxy': [], 'jsonrpc proxy': [] };

  // Warm-up: connections, JIT, the proxy's card cache.
  for (const p of PATHS) for (let i = 0; i < 50; i++) await clients[p].sendMessage(message());

  for (let round = 0; round < ROUNDS; round++) {
    const order = PATHS.map((_, i) => PATHS[(i + round) % PATHS.length] as PathName);
    for (const p of order) {
      const before = p.endsWith('proxy') ? await proxy.stats() : undefined;
      const lat: number[] = [];
      for (let i = 0; i < SEQ; i++) {
        const t0 = process.hrtime.bigint();
        await clients[p].sendMessage(message());
        lat.push(Number(process.hrtime.bigint() - t0) / 1000);
      }
      latency[p].push(...lat);
      medians[p].push(median(lat));
      if (before !== undefined) {
        const after = await proxy.stats();
        cpuPerCall[p as 'grpc proxy' | 'jsonrpc proxy'].push((after.user + after.system - before.user - before.system) / SEQ);
      }
    }
    process.stderr.write(`round ${round + 1}/${ROUNDS}\n`);
  }

  const m = (p: PathName) => median(medians[p]);
  const rows = PATHS.map((p) => `| ${p} | ${m(p).toFixed(0)} | ${pct(latency[p], 0.9).toFixed(0)} |`);
  const addedGrpc = m('grpc proxy') - m('grpc direct');
  const addedJson = m('jsonrpc proxy') - m('jsonrpc direct');
  const cpuGrpc = median(cpuPerCall['grpc proxy']);
  const cpuJson = median(cpuPerCall['jsonrpc proxy']);
  process.stdout.write(
    [
      `a2a-guard gRPC binding, ${ROUNDS} rounds x ${SEQ} sequential SendMessage per path (medians over rounds)`,
      '',
      '| path | latency median (us) | p90 (us) |',
      '|---|---|---|',
      ...rows,
      '',
      '| binding | latency added by a2a-guard (us) | a2a-guard CPU per call (us) |',
      '|---|---|---|',
      `| gRPC | ${addedGrpc.toFixed(0)} | ${cpuGrpc.toFixed(0)} |`,
      `| JSON-RPC | ${addedJson.toFixed(0)} | ${cpuJson.toFixed(0)} |`,
      `| ratio gRPC / JSON-RPC | ${(addedGrpc / addedJson).toFixed(2)} | ${(cpuGrpc / cpuJson).toFixed(2)} |`,
      '',
    ].join('\n'),
  );

  if (STREAM_ROUNDS > 0) await streamPhase(agent.origin);

  const proxyExited = new Promise((r) => proxy.proc.once('exit', r));
  for (const c of [proxy, guardian]) c.proc.kill('SIGTERM');
  await agent.close();
  if (PROFILE_DIR !== undefined) {
    await proxyExited;
    const file = fs
      .readdirSync(PROFILE_DIR)
      .filter((f) => f.endsWith('.cpuprofile'))
      .sort()
      .at(-1);
    if (file !== undefined) process.stdout.write(`${JSON.stringify(summarizeProfile(path.join(PROFILE_DIR, file), 25), null, 1)}\n`);
  }
  process.exit(0);
}

type StreamPath = 'grpc direct' | 'grpc inspected' | 'jsonrpc inspected';
const STREAM_PATHS: readonly StreamPath[] = ['grpc direct', 'grpc inspected', 'jsonrpc inspected'];

/** Inspected streams: duration of a 100-event stream against events x guardian latency, per binding. */
async function streamPhase(agentOrigin: string): Promise<void> {
  const slowGuardian = await startChild('guardian-child.js', { PORT: '0', DELAY_MS: String(SLOW_GUARDIAN_MS) });
  const inspecting = await startChild('proxy-child.js', {
    UPSTREAM_URL: agentOrigin,
    GUARDIAN_URL: slowGuardian.url,
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    GRPC_PORT: '0',
    INSPECT_RESPONSES: 'true',
    PUSH_RELAY_PORT: '0',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
  });
  const clients: Record<StreamPath, A2AClient.Client> = {
    'grpc direct': await client(agentOrigin, 'GRPC'),
    'grpc inspected': await client(inspecting.url, 'GRPC'),
    'jsonrpc inspected': await client(inspecting.url, 'JSONRPC'),
  };
  const durations: Record<StreamPath, number[]> = { 'grpc direct': [], 'grpc inspected': [], 'jsonrpc inspected': [] };
  const decisions: Record<StreamPath, number[]> = { 'grpc direct': [], 'grpc inspected': [], 'jsonrpc inspected': [] };
  const once = async (p: StreamPath): Promise<number> => {
    const t0 = process.hrtime.bigint();
    let events = 0;
    for await (const _ of clients[p].sendMessageStream(message(`stream ${STREAM_EVENTS}`))) events++;
    if (events !== STREAM_EVENTS + 2) throw new Error(`${p}: ${events} events, expected ${STREAM_EVENTS + 2}`);
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  for (const p of STREAM_PATHS) await once(p); // warm-up
  for (let round = 0; round < STREAM_ROUNDS; round++) {
    const order = STREAM_PATHS.map((_, i) => STREAM_PATHS[(i + round) % STREAM_PATHS.length] as StreamPath);
    for (const p of order) {
      const before = (await slowGuardian.stats()).count;
      durations[p].push(await once(p));
      decisions[p].push((await slowGuardian.stats()).count - before);
    }
    process.stderr.write(`stream round ${round + 1}/${STREAM_ROUNDS}\n`);
  }
  const budget = STREAM_EVENTS * SLOW_GUARDIAN_MS;
  process.stdout.write(
    [
      `inspected streams: ${STREAM_ROUNDS} rounds x 1 SendStreamingMessage "stream ${STREAM_EVENTS}" (${STREAM_EVENTS + 2} messages) per path;`,
      `guardian answers after ${SLOW_GUARDIAN_MS} ms; events x latency = ${STREAM_EVENTS} x ${SLOW_GUARDIAN_MS} ms = ${budget} ms (HTTP target <= 0.4x)`,
      '',
      '| path | stream median (ms) | min (ms) | max (ms) | x events x latency | guardian calls / stream |',
      '|---|---|---|---|---|---|',
      ...STREAM_PATHS.map((p) => {
        const d = durations[p];
        return `| ${p} | ${median(d).toFixed(1)} | ${Math.min(...d).toFixed(1)} | ${Math.max(...d).toFixed(1)} | ${p.endsWith('inspected') ? `${(median(d) / budget).toFixed(2)}x` : '—'} | ${median(decisions[p])} |`;
      }),
      '',
    ].join('\n'),
  );
  for (const c of [inspecting, slowGuardian]) c.proc.kill('SIGTERM');
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:grpc: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
