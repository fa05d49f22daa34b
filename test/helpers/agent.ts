/**
 * A real @a2a-js/sdk 1.3.0 A2A agent (server) and SDK client helpers for integration tests.
 *
 * The agent speaks JSON-RPC and HTTP+JSON (REST), both in v1.0 and (legacy compat) v0.3:
 *   card     GET  <origin>/.well-known/agent-card.json
 *   JSON-RPC POST <origin>/a2a/jsonrpc
 *   REST          <origin>/a2a/rest/...        (v1.0: /message:send ..., v0.3: /v1/message:send ...)
 *
 * Executor behaviour, driven by the user's text:
 *   default            task(SUBMITTED, history [userMessage]) → WORKING → artifact "echo: <input>" → COMPLETED
 *   "slow"             task → WORKING → works in `stepMs` steps up to `slowMs`, checking for cancel → echo + COMPLETED
 *                      (on cancel: TASK_STATE_CANCELED)
 *   "stream N"         task → N artifactUpdates ("chunk i", append=true after the first, lastChunk on the last) → COMPLETED
 *   "wait-for-cancel"  task → WORKING → waits until cancelled (→ CANCELED) or until the agent is closed
 *
 * SDK quirk: the SDK is an ESM package whose `exports` "types" entry points at ESM `.d.ts`
 * files, so a CommonJS (module: Node16) TypeScript file cannot `import` it without TS1479.
 * We therefore import types with `resolution-mode: "import"` and load the values with
 * `require()`, which resolves to the package's CJS build at run time.
 */
import http from 'node:http';
import express from 'express';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type * as A2AServer from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import type * as A2AExpress from '@a2a-js/sdk/server/express' with { 'resolution-mode': 'import' };
import type * as A2ACompat from '@a2a-js/sdk/compat/v0_3' with { 'resolution-mode': 'import' };
import type * as A2AClient from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import type * as A2AGrpcServer from '@a2a-js/sdk/server/grpc' with { 'resolution-mode': 'import' };
import type * as A2AGrpcServerV03 from '@a2a-js/sdk/compat/v0_3/server/grpc' with { 'resolution-mode': 'import' };
import type * as GrpcJs from '@grpc/grpc-js';
import { closeServer, listen } from './net';

const sdk: typeof A2A = require('@a2a-js/sdk');
const sdkServer: typeof A2AServer = require('@a2a-js/sdk/server');
const sdkExpress: typeof A2AExpress = require('@a2a-js/sdk/server/express');
const sdkCompat: typeof A2ACompat = require('@a2a-js/sdk/compat/v0_3');
const sdkClient: typeof A2AClient = require('@a2a-js/sdk/client');

export const { Role, TaskState, AGENT_CARD_PATH } = sdk;
export type Role = A2A.Role;
export type TaskState = A2A.TaskState;
export type AgentCard = A2A.AgentCard;
export type Message = A2A.Message;
export type Part = A2A.Part;
export type Task = A2A.Task;
export type StreamResponse = A2A.StreamResponse;
export type SendMessageRequest = A2A.SendMessageRequest;
export type Client = A2AClient.Client;
type AgentExecutor = A2AServer.AgentExecutor;
type ExecutionEventBus = A2AServer.ExecutionEventBus;
type TaskStateT = A2A.TaskState;

/* ------------------------------------------------------------------------------------------ */
/* Agent                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/** One HTTP request as it reached the agent, recorded before the SDK handles it. */
export interface ReceivedRequest {
  method: string;
  /** req.url as received (path + query), e.g. `/a2a/jsonrpc` or `/a2a/rest/tasks/abc:cancel`. */
  path: string;
  /** Lower-cased header names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** Raw request body as UTF-8 ('' when there is none). Filled in once the body has been read. */
  bodyText: string;
  /** The same body's bytes, as they arrived. */
  bodyBytes: Buffer;
  /** `bodyText` parsed as JSON, or undefined when empty / not JSON. */
  body: unknown;
  /** The caller's port of the connection it came on: requests with the same one came on one connection. */
  connection?: number | undefined;
}

export interface AgentOptions {
  /** Maps the agent origin to the origin written into the card URLs (e.g. a proxy). Default: identity. */
  advertise?: (origin: string) => string;
  name?: string;
  version?: string;
  description?: string;
  /** AgentCard.provider (SDK v1 shape is {organization, url}). `null` = no provider in the card. */
  provider?: { organization: string; url: string } | null;
  documentationUrl?: string;
  /** Total work time of a "slow" task (default 20000 ms). */
  slowMs?: number;
  /** Work step of "slow" / "wait-for-cancel" tasks (default 100 ms). */
  stepMs?: number;
  /** capabilities.streaming (default true). */
  streaming?: boolean;
  /** capabilities.pushNotifications (default true; configs are stored, deliveries are only recorded). */
  pushNotifications?: boolean;
  /** Deliver push notifications over the network with the SDK's own sender (v1.0 and v0.3 serializers), besides recording them. */
  sdkPushSender?: boolean;
  /** capabilities.extendedAgentCard with a provider serving this card plus an "(extended)" name (default false). */
  extendedAgentCard?: boolean;
  /**
   * Called with the SDK request handler before the express handlers are built on it, e.g. to record
   * every operation the handler acts on (test/helpers/handler-recorder.ts).
   */
  wrapRequestHandler?: (handler: A2AServer.DefaultRequestHandler) => void;
  /**
   * Also serve the A2A gRPC binding (@a2a-js/sdk/server/grpc over @grpc/grpc-js) on 127.0.0.1:0, on the
   * same request handler, with a v1.0 GRPC interface in the card (`advertiseGrpc` maps its host:port).
   */
  grpc?: boolean;
  /**
   * The gRPC services served (with `grpc: true`) and named in the card, each as a GRPC interface of its
   * protocolVersion: '1.0' `lf.a2a.v1.A2AService`, '0.3' `a2a.v1.A2AService` (the SDK's legacyGrpcService). Default ['1.0'].
   */
  grpcVersions?: ReadonlyArray<'1.0' | '0.3'>;
  advertiseGrpc?: (address: string) => string;
  /** More interfaces for the card's supportedInterfaces (another endpoint of the agent, say). */
  extraInterfaces?: AgentCard['supportedInterfaces'];
  /** Serve gRPC over TLS with this certificate and key (PEM) instead of h2c. */
  grpcTls?: { cert: string; key: string };
  /** Sign every card the agent serves (its own and the extended one) with the SDK's generateAgentCardSignature (ES256). */
  signCards?: { key: Parameters<typeof sdk.generateAgentCardSignature>[0]; kid: string };
  /**
   * The extended card per caller: the agent names its caller by the `sub` of the caller's bearer token
   * (read, not verified: the proxy verified it) and serves the card this returns (given the SDK caller's user name).
   */
  extendedCardFor?: (caller: string | undefined, card: AgentCard) => AgentCard;
  /** capabilities.extensions: URIs the agent declares (the SDK keeps only declared ones in requestedExtensions). */
  extensions?: readonly string[];
  /** Serve the card at this path instead of the standard one (as VoltAgent does: `/.well-known/{agentId}/agent-card.json`). */
  cardPath?: string;
}

export interface TestAgent {
  /** http://127.0.0.1:<port> */
  origin: string;
  /** Same as origin (card base URL). */
  url: string;
  /** The origin written into the card (advertise(origin)). */
  advertisedOrigin: string;
  jsonRpcUrl: string;
  restUrl: string;
  card: AgentCard;
  /** Every HTTP request that reached the agent, in arrival order. */
  received: ReceivedRequest[];
  /** Task ids for which cancelTask was called. */
  cancelled: Set<string>;
  /** Push notifications the SDK tried to deliver (never sent over the network). */
  pushed: unknown[];
  server: http.Server;
  /** host:port of the gRPC server (only with `grpc: true`). */
  grpcAddress?: string;
  /** gRPC service methods whose call the caller cancelled, in order. */
  grpcCancelled: string[];
  /** Forget recorded requests, cancellations and pushes. */
  clear(): void;
  /** Stop running tasks, destroy open sockets, close the server. */
  close(): Promise<void>;
}

const textPart = (t: string): Part => ({
  content: { $case: 'text', value: t },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});

const status = (state: TaskStateT) => ({ state, message: undefined, timestamp: new Date().toISOString() });

function headerRecord(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/**
 * Record the request and tap its body without consuming it: every body chunk reaches the
 * IncomingMessage through `push()` (called by the HTTP parser), so wrapping `push` in the
 * 'request' listener (which runs before the parser delivers any body byte) sees the raw bytes
 * while the SDK's own express.json() still reads the untouched stream. This keeps the SDK's
 * exact behaviour (content-type checks, -32700 on bad JSON, 100 KB limit / 413, strict mode).
 */
export function tapRequest(req: http.IncomingMessage, into: ReceivedRequest[]): void {
  const rec: ReceivedRequest = {
    method: req.method ?? '',
    path: req.url ?? '',
    headers: headerRecord(req.headers),
    bodyText: '',
    bodyBytes: Buffer.alloc(0),
    body: undefined,
    connection: req.socket.remotePort,
  };
  into.push(rec);
  const chunks: Buffer[] = [];
  const origPush = req.push.bind(req);
  req.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
    if (chunk === null) {
      rec.bodyBytes = Buffer.concat(chunks);
      rec.bodyText = rec.bodyBytes.toString('utf8');
      if (rec.bodyText !== '') {
        try {
          rec.body = JSON.parse(rec.bodyText);
        } catch {
          rec.body = undefined;
        }
      }
    } else if (Buffer.isBuffer(chunk)) {
      chunks.push(chunk);
    } else if (typeof chunk === 'string') {
      chunks.push(Buffer.from(chunk, encoding));
    } else if (chunk instanceof Uint8Array) {
      chunks.push(Buffer.from(chunk));
    }
    return origPush(chunk, encoding);
  };
}

/**
 * Copy a task deeply enough for the SDK's in-place edits (task fields, status, history and
 * artifact/part arrays) while sharing the immutable part objects. The SDK's InMemoryTaskStore
 * structuredClone()s the whole task on every load and save, which makes an N-chunk artifact
 * stream O(N^2) in deep copies (1000 appended chunks took ~1.7 s); this keeps it cheap.
 */
function cheapCloneTask(t: Task): Task {
  return {
    ...t,
    status: t.status ? { ...t.status } : t.status,
    history: [...(t.history ?? [])],
    artifacts: (t.artifacts ?? []).map((a) => ({ ...a, parts: [...(a.parts ?? [])] })),
    metadata: t.metadata ? { ...t.metadata } : t.metadata,
  };
}

/** InMemoryTaskStore with cheap copies (uses the SDK store's internal `_scopedStore`; falls back to the SDK's own code). */
function makeTaskStore(): A2AServer.TaskStore {
  const store = new sdkServer.InMemoryTaskStore();
  type Bucket = Map<string, Task>;
  const scoped = (store as unknown as { _scopedStore?: { getBucket(c: unknown): Bucket | undefined; getOrCreateBucket(c: unknown): Bucket } })._scopedStore;
  if (!scoped || typeof scoped.getBucket !== 'function' || typeof scoped.getOrCreateBucket !== 'function') return store;
  const origLoad = store.load.bind(store);
  store.load = async (taskId, context) => {
    const entry = scoped.getBucket(context)?.get(taskId);
    return entry ? cheapCloneTask(entry) : origLoad(taskId, context);
  };
  store.save = async (task, context) => {
    scoped.getOrCreateBucket(context).set(task.id, cheapCloneTask(task));
  };
  return store;
}

/** Start a real SDK agent on 127.0.0.1:0. */
/** POST requests the agent received, optionally only those whose JSON-RPC method is one of `methods`. */
export function postsTo(agent: TestAgent, ...methods: string[]): ReceivedRequest[] {
  const posts = agent.received.filter((r) => r.method === 'POST');
  return methods.length === 0 ? posts : posts.filter((r) => methods.includes((r.body as { method?: string } | undefined)?.method ?? ''));
}

export async function startAgent(opts: AgentOptions = {}): Promise<TestAgent> {
  const { AgentEvent, DefaultRequestHandler, InMemoryPushNotificationStore } = sdkServer;
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = sdkExpress;
  const slowMs = opts.slowMs ?? 20_000;
  const stepMs = opts.stepMs ?? 100;

  const received: ReceivedRequest[] = [];
  const cancelled = new Set<string>();
  const pushed: unknown[] = [];
  let closed = false;
  const running = new Set<Promise<void>>();
  /** Sleepers that cancel/close can wake early: taskId -> wake functions. */
  const sleepers = new Map<string, Set<() => void>>();

  const nap = (taskId: string, ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      let set = sleepers.get(taskId);
      if (!set) sleepers.set(taskId, (set = new Set()));
      const s = set;
      const wake = (): void => {
        clearTimeout(timer);
        s.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      s.add(wake);
    });
  const wakeTask = (taskId: string): void => {
    for (const w of [...(sleepers.get(taskId) ?? [])]) w();
  };
  const wakeAll = (): void => {
    for (const id of [...sleepers.keys()]) wakeTask(id);
  };

  /** Tasks a "release <taskId>" message let go on (see "ask-input" in run). */
  const released = new Set<string>();
  const run = async (taskId: string, contextId: string, input: string, first: Task, bus: ExecutionEventBus) => {
    const release = /\brelease (\S+)/.exec(input);
    if (release !== null) {
      released.add(release[1] as string);
      wakeTask(release[1] as string);
    }
    const publishStatus = (state: TaskStateT): void => bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(state), metadata: undefined }));
    const publishArtifact = (text: string, append: boolean, lastChunk: boolean): void =>
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          append,
          lastChunk,
          metadata: undefined,
          artifact: { artifactId: 'echo-1', name: 'echo', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] },
        }),
      );
    bus.publish(AgentEvent.task(first));

    const streamMatch = /\bstream (\d+)/.exec(input);
    if (streamMatch && !input.includes('wait-for-cancel')) {
      const n = Number(streamMatch[1]);
      for (let i = 0; i < n; i++) {
        if (closed || cancelled.has(taskId)) break;
        publishArtifact(`chunk ${i}`, i > 0, i === n - 1);
        // Let the SDK/socket drain now and then so big streams stay smooth.
        if (i % 100 === 99) await new Promise((r) => setImmediate(r));
      }
      if (cancelled.has(taskId)) return publishStatus(sdk.TaskState.TASK_STATE_CANCELED);
      if (closed) return;
      return publishStatus(sdk.TaskState.TASK_STATE_COMPLETED);
    }

    publishStatus(sdk.TaskState.TASK_STATE_WORKING);
    // "ask-input" / "ask-auth": the task asks its caller, then waits until a later message says "release <taskId>".
    const ask = /\bask-(input|auth)\b/.exec(input);
    if (ask !== null) {
      publishStatus(ask[1] === 'input' ? sdk.TaskState.TASK_STATE_INPUT_REQUIRED : sdk.TaskState.TASK_STATE_AUTH_REQUIRED);
      while (!closed && !cancelled.has(taskId) && !released.has(taskId)) await nap(taskId, stepMs);
      released.delete(taskId);
    }
    if (input.includes('wait-for-cancel')) {
      while (!closed && !cancelled.has(taskId)) await nap(taskId, stepMs);
    } else if (input.includes('slow')) {
      const end = Date.now() + slowMs;
      while (!closed && !cancelled.has(taskId) && Date.now() < end) await nap(taskId, Math.min(stepMs, Math.max(1, end - Date.now())));
    }
    if (cancelled.has(taskId)) return publishStatus(sdk.TaskState.TASK_STATE_CANCELED);
    if (closed) return;
    publishArtifact(`echo: ${input}`, false, true);
    publishStatus(sdk.TaskState.TASK_STATE_COMPLETED);
  };

  const executor: AgentExecutor = {
    cancelTask: async (taskId) => {
      cancelled.add(taskId);
      wakeTask(taskId);
    },
    execute: async (ctx, bus) => {
      const { taskId, contextId, userMessage, task } = ctx;
      const input = userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
      const first: Task = task ?? {
        id: taskId,
        contextId,
        status: status(sdk.TaskState.TASK_STATE_SUBMITTED),
        artifacts: [],
        history: [userMessage],
        metadata: undefined,
      };
      const p = run(taskId, contextId, input, first, bus).finally(() => {
        running.delete(p);
        sleepers.delete(taskId);
      });
      running.add(p);
      await p;
    },
  };

  const app = express();
  const server = http.createServer((req, res) => {
    tapRequest(req, received);
    app(req, res);
  });
  server.keepAliveTimeout = 5000;
  const origin = await listen(server);
  const pub = (opts.advertise ? opts.advertise(origin) : origin).replace(/\/+$/, '');
  const grpcServer = opts.grpc === true ? new (require('@grpc/grpc-js') as typeof GrpcJs).Server() : undefined;
  const grpcVersions = opts.grpcVersions ?? ['1.0'];
  let grpcAddress: string | undefined;
  const grpcCancelled: string[] = [];
  if (grpcServer !== undefined) {
    const grpcJs = require('@grpc/grpc-js') as typeof GrpcJs;
    const port = await new Promise<number>((resolve, reject) =>
      grpcServer.bindAsync(
        '127.0.0.1:0',
        opts.grpcTls === undefined
          ? grpcJs.ServerCredentials.createInsecure()
          : grpcJs.ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(opts.grpcTls.cert), private_key: Buffer.from(opts.grpcTls.key) }], false),
        (err, p) => (err ? reject(err) : resolve(p)),
      ),
    );
    grpcAddress = `127.0.0.1:${port}`;
  }

  const card: AgentCard = {
    name: opts.name ?? 'Echo Agent',
    description: opts.description ?? 'Echoes its input; test agent for a2a-guard',
    version: opts.version ?? '1.2.3',
    provider: opts.provider === null ? undefined : (opts.provider ?? { organization: 'Test Org', url: 'https://test-org.example' }),
    ...(opts.documentationUrl !== undefined ? { documentationUrl: opts.documentationUrl } : {}),
    signatures: [],
    supportedInterfaces: sdkCompat
      .duplicateInterfacesForLegacy(
        [
          { url: `${pub}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
          { url: `${pub}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
        ],
        ['JSONRPC', 'HTTP+JSON'],
      )
      .concat(
        grpcAddress === undefined
          ? []
          : grpcVersions.map((protocolVersion) => ({
              url: opts.advertiseGrpc ? opts.advertiseGrpc(grpcAddress as string) : (grpcAddress as string),
              protocolBinding: 'GRPC',
              tenant: '',
              protocolVersion,
            })),
      )
      .concat(opts.extraInterfaces ?? []),
    capabilities: {
      streaming: opts.streaming ?? true,
      pushNotifications: opts.pushNotifications ?? true,
      extensions: (opts.extensions ?? []).map((uri) => ({ uri, description: 'test extension', required: false, params: undefined })),
      extendedAgentCard: opts.extendedAgentCard ?? false,
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'echo', name: 'echo', description: 'echo', tags: ['test'], examples: ['hello'], inputModes: [], outputModes: [], securityRequirements: [] }],
  };

  const pushStore = new InMemoryPushNotificationStore();
  const sdkSender =
    opts.sdkPushSender === true
      ? (
          require('@a2a-js/sdk/compat/v0_3/server') as typeof import('@a2a-js/sdk/compat/v0_3/server', { with: { 'resolution-mode': 'import' } })
        ).createLegacyAwarePushNotificationSender(pushStore)
      : undefined;
  const pushSender: A2AServer.PushNotificationSender = {
    send: async (streamResponse, ...rest) => {
      pushed.push(streamResponse);
      await sdkSender?.send(streamResponse, ...rest);
    },
  };
  const requestHandler = new DefaultRequestHandler(
    card,
    makeTaskStore(),
    executor,
    undefined,
    pushStore,
    pushSender,
    opts.extendedCardFor !== undefined
      ? async (context?: A2AServer.ServerCallContext) =>
          (opts.extendedCardFor as NonNullable<AgentOptions['extendedCardFor']>)(context?.user?.isAuthenticated ? context.user.userName : undefined, card)
      : opts.extendedAgentCard === true
        ? { ...card, name: `${card.name} (extended)` }
        : undefined,
    opts.signCards === undefined ? undefined : sdk.generateAgentCardSignature(opts.signCards.key, { alg: 'ES256', kid: opts.signCards.kid, typ: 'JOSE' }),
  );
  // Callers named by their bearer token's subject (for extendedCardFor); anonymous without one.
  const userBuilder =
    opts.extendedCardFor === undefined
      ? UserBuilder.noAuthentication
      : async (req: express.Request) => {
          const sub = bearerSubject(req.headers.authorization);
          return sub === undefined ? new sdkServer.UnauthenticatedUser() : { isAuthenticated: true, userName: sub };
        };
  opts.wrapRequestHandler?.(requestHandler);
  const legacyCompat = { enabled: true };
  app.use(opts.cardPath ?? `/${sdk.AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder, legacyCompat }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder, legacyCompat }));
  if (grpcServer !== undefined) {
    const sdkGrpc = require('@a2a-js/sdk/server/grpc') as typeof A2AGrpcServer;
    // Record calls the caller cancelled (RST_STREAM CANCEL reaches grpc-js as 'cancelled').
    const recorded = <T extends object>(impl: T): T =>
      Object.fromEntries(
        Object.entries(impl).map(([name, fn]) => [
          name,
          (call: GrpcJs.ServerUnaryCall<unknown, unknown>, ...rest: unknown[]) => {
            call.on('cancelled', () => grpcCancelled.push(name));
            return (fn as (...a: unknown[]) => unknown)(call, ...rest);
          },
        ]),
      ) as T;
    if (grpcVersions.includes('1.0'))
      grpcServer.addService(sdkGrpc.A2AService, recorded(sdkGrpc.grpcService({ requestHandler, userBuilder: sdkGrpc.UserBuilder.noAuthentication })));
    if (grpcVersions.includes('0.3')) {
      const legacy = require('@a2a-js/sdk/compat/v0_3/server/grpc') as typeof A2AGrpcServerV03;
      grpcServer.addService(legacy.LegacyA2AService, recorded(legacy.legacyGrpcService({ requestHandler, userBuilder: sdkGrpc.UserBuilder.noAuthentication })));
    }
  }

  let closing: Promise<void> | undefined;
  return {
    origin,
    url: origin,
    advertisedOrigin: pub,
    jsonRpcUrl: `${origin}/a2a/jsonrpc`,
    restUrl: `${origin}/a2a/rest`,
    card,
    received,
    cancelled,
    pushed,
    server,
    ...(grpcAddress === undefined ? {} : { grpcAddress }),
    grpcCancelled,
    clear() {
      received.length = 0;
      cancelled.clear();
      pushed.length = 0;
      grpcCancelled.length = 0;
    },
    close() {
      closing ??= (async () => {
        closed = true;
        wakeAll();
        grpcServer?.forceShutdown();
        await closeServer(server);
        // Running executors notice `closed` at once (sleepers were woken); wait for them briefly.
        await Promise.race([Promise.allSettled([...running]), new Promise((r) => setTimeout(r, 1000).unref())]);
      })();
      return closing;
    },
  };
}

/* ------------------------------------------------------------------------------------------ */
/* SDK client helpers                                                                         */
/* ------------------------------------------------------------------------------------------ */

export type Binding = 'JSONRPC' | 'HTTP+JSON';
export type A2AVersion = '1.0' | '0.3';

/** The four ways an SDK client can talk to an agent: JSON-RPC / REST x v1.0 / v0.3. */
export const BINDING_VERSIONS: ReadonlyArray<readonly [Binding, A2AVersion]> = [
  ['JSONRPC', '1.0'],
  ['JSONRPC', '0.3'],
  ['HTTP+JSON', '1.0'],
  ['HTTP+JSON', '0.3'],
];

/**
 * An SDK client for `cardBaseUrl` (agent or proxy origin) that uses `binding` in protocol
 * `version`. '0.3' forces the SDK's compat transports (v0.3 wire format, `A2A-Version: 0.3`).
 * The card is fetched from `<cardBaseUrl>/.well-known/agent-card.json` (or `opts.cardPath`); the
 * client then calls the URL written in the card.
 */
/** The `sub` of a bearer JWT, read without verifying it. */
function bearerSubject(authorization: string | undefined): string | undefined {
  const token = /^Bearer (\S+)$/i.exec(authorization ?? '')?.[1];
  try {
    const sub: unknown = JSON.parse(Buffer.from(token?.split('.')[1] ?? '', 'base64url').toString('utf8')).sub;
    return typeof sub === 'string' ? sub : undefined;
  } catch {
    return undefined;
  }
}

export async function makeClient(
  cardBaseUrl: string,
  binding: Binding,
  version: A2AVersion = '1.0',
  opts: { fetchImpl?: typeof fetch; cardPath?: string } = {},
): Promise<Client> {
  const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } = sdkClient;
  // `fetchImpl`: e.g. a fetch over TLS with a test CA and client certificate, or one that adds a bearer token.
  const compat = { legacyCompat: { enabled: true }, ...(opts.fetchImpl === undefined ? {} : { fetchImpl: opts.fetchImpl }) };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver(compat),
      preferredTransports: [binding],
      transports: [new JsonRpcTransportFactory(compat), new RestTransportFactory(compat)],
    }),
  );
  const card = await new DefaultAgentCardResolver(compat).resolve(cardBaseUrl, opts.cardPath);
  const interfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === version && i.protocolBinding === binding);
  if (interfaces.length === 0) throw new Error(`card at ${cardBaseUrl} has no ${binding} ${version} interface`);
  return factory.createFromAgentCard({ ...card, supportedInterfaces: interfaces });
}

/** A v1 SDK user Message with one text part. */
export const userMsg = (text: string, extra: Partial<Message> = {}): Message => ({
  messageId: crypto.randomUUID(),
  contextId: '',
  taskId: '',
  role: sdk.Role.ROLE_USER,
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
  ...extra,
});

/** A SendMessageRequest for client.sendMessage / sendMessageStream. */
export const sendReq = (text: string, returnImmediately = false, extra: Partial<Message> = {}): SendMessageRequest => ({
  tenant: '',
  message: userMsg(text, extra),
  metadata: undefined,
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately },
});

/** Gather every item of an async iterable (e.g. a stream of SDK events) into an array. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function partsText(parts: unknown): string {
  if (!Array.isArray(parts)) return '';
  return parts
    .map((p) => {
      if (!isObj(p)) return '';
      const c = p['content'];
      if (isObj(c) && c['$case'] === 'text' && typeof c['value'] === 'string') return c['value']; // SDK v1 object
      if (typeof p['text'] === 'string') return p['text']; // wire JSON (v1, v0.3, v0.3 REST)
      return '';
    })
    .join('');
}

/**
 * Concatenated text of an SDK result object, or of its wire-JSON equivalent:
 * - Task: text of all artifacts (falls back to status.message when there is none);
 * - Message: its parts (`content[]` for v0.3 REST);
 * - StreamResponse ({payload:{$case,value}}) / wire wrappers ({task}|{message}|{statusUpdate}|{artifactUpdate}|{result});
 * - artifact update: artifact parts; status update: status.message parts;
 * - arrays: texts of the elements joined.
 */
export function textOf(x: unknown): string {
  if (Array.isArray(x)) return x.map(textOf).join('');
  if (!isObj(x)) return '';
  if (isObj(x['payload']) && typeof x['payload']['$case'] === 'string') return textOf(x['payload']['value']);
  if ('payload' in x && x['payload'] === undefined && Object.keys(x).length === 1) return '';
  for (const k of ['result', 'task', 'message', 'statusUpdate', 'artifactUpdate']) {
    if (isObj(x[k])) return textOf(x[k]);
  }
  if (isObj(x['artifact'])) return partsText(x['artifact']['parts']); // artifact update
  const isTask = x['kind'] === 'task' || Array.isArray(x['artifacts']) || (typeof x['id'] === 'string' && 'status' in x && !('taskId' in x));
  if (isTask) {
    const arts = Array.isArray(x['artifacts']) ? x['artifacts'] : [];
    if (arts.length > 0) return arts.map((a) => (isObj(a) ? partsText(a['parts']) : '')).join('');
    const st = x['status'];
    return isObj(st) ? textOf(st['message']) : '';
  }
  if (isObj(x['status'])) return textOf(x['status']['message']); // status update
  if (Array.isArray(x['parts'])) return partsText(x['parts']); // message
  if (Array.isArray(x['content'])) return partsText(x['content']); // v0.3 REST message
  return '';
}

/* ------------------------------------------------------------------------------------------ */
/* Raw HTTP helpers                                                                           */
/* ------------------------------------------------------------------------------------------ */

export interface RawResponse {
  status: number;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  text: string;
  /** `text` parsed as JSON, or undefined. */
  json: any;
}

export interface RawOptions {
  /** HTTP method (default POST). */
  method?: string;
  signal?: AbortSignal;
}

function bodyInit(body: unknown): string | undefined {
  if (body === undefined) return undefined;
  return typeof body === 'string' ? body : JSON.stringify(body);
}

function resHeaders(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    out[k.toLowerCase()] = v;
  });
  return out;
}

/**
 * POST `body` (objects are JSON-encoded, strings sent as is, undefined = no body) with
 * `Content-Type: application/json` (override via `headers`). Never throws on HTTP errors.
 */
export async function rawRpc(url: string, body: unknown, headers: Record<string, string | undefined> = {}, opts: RawOptions = {}): Promise<RawResponse> {
  const h: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...lower(headers) };
  const data = bodyInit(body);
  if (data === undefined) delete h['content-type'];
  const res = await fetch(url, { method: opts.method ?? 'POST', headers: h, body: data, signal: opts.signal ?? null });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: resHeaders(res), text, json };
}

export interface SseEvent {
  event?: string;
  id?: string;
  /** data lines joined with "\n". */
  data: string;
  /** `data` parsed as JSON, or undefined. */
  json: any;
}

export interface RawSseResponse {
  status: number;
  contentType: string;
  headers: Record<string, string>;
  /** The whole raw body. */
  text: string;
  events: SseEvent[];
}

/** Parse an SSE body (WHATWG-style: CRLF/CR/LF, comments, multi-line data, event/id fields). */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  const blocks = text.replace(/\r\n?/g, '\n').split(/\n\n+/);
  for (const block of blocks) {
    if (block.trim() === '') continue;
    const data: string[] = [];
    let event: string | undefined;
    let id: string | undefined;
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? '' : line.slice(i + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
      else if (field === 'id') id = value;
    }
    if (data.length === 0 && event === undefined) continue;
    const d = data.join('\n');
    let json: unknown;
    try {
      json = JSON.parse(d);
    } catch {
      json = undefined;
    }
    events.push({ ...(event !== undefined ? { event } : {}), ...(id !== undefined ? { id } : {}), data: d, json });
  }
  return events;
}

/**
 * Send a streaming request (default POST, `Accept: text/event-stream`) and read the whole
 * response. Non-SSE responses (e.g. a JSON-RPC error) come back with `events: []` and the body in `text`.
 */
export async function rawSse(url: string, body: unknown, headers: Record<string, string | undefined> = {}, opts: RawOptions = {}): Promise<RawSseResponse> {
  const h: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream', ...lower(headers) };
  const data = bodyInit(body);
  if (data === undefined) delete h['content-type'];
  const res = await fetch(url, { method: opts.method ?? 'POST', headers: h, body: data, signal: opts.signal ?? null });
  const text = await res.text();
  const contentType = res.headers.get('content-type') ?? '';
  return {
    status: res.status,
    contentType,
    headers: resHeaders(res),
    text,
    events: contentType.startsWith('text/event-stream') ? parseSse(text) : [],
  };
}

export interface OpenSse {
  status: number;
  contentType: string;
  headers: Record<string, string>;
  /** Events as they arrive; ends when the server ends the response (or after abort()). */
  events: AsyncGenerator<SseEvent, void, undefined>;
  /** Abort the request (client disconnect). */
  abort(): void;
}

/**
 * Like rawSse, but incremental: resolves once the response headers arrive and yields each SSE
 * event as soon as its terminating blank line has been received. Use it to act mid-stream
 * (cancel, disconnect, deny after N events).
 */
export async function openSse(url: string, body: unknown, headers: Record<string, string | undefined> = {}, opts: RawOptions = {}): Promise<OpenSse> {
  const ac = new AbortController();
  if (opts.signal) opts.signal.addEventListener('abort', () => ac.abort(opts.signal?.reason), { once: true });
  const h: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream', ...lower(headers) };
  const data = bodyInit(body);
  if (data === undefined) delete h['content-type'];
  const res = await fetch(url, { method: opts.method ?? 'POST', headers: h, body: data, signal: ac.signal });
  async function* events(): AsyncGenerator<SseEvent, void, undefined> {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
        let at: number;
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          yield* parseSse(`${block}\n\n`);
        }
      }
    } catch (err) {
      if (!ac.signal.aborted) throw err;
      return;
    }
    buf += decoder.decode();
    if (buf.trim() !== '') yield* parseSse(buf);
  }
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    headers: resHeaders(res),
    events: events(),
    abort: () => ac.abort(),
  };
}

/** Lower-case header names; undefined values are dropped (so `{ 'a2a-version': undefined }` sends no header). */
function lower(h: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = v;
  return out;
}
