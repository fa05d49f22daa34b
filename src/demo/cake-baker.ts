/**
 * The demo's server agent: "Cake Baker", a real @a2a-js/sdk A2A agent (JSON-RPC and HTTP+JSON,
 * v1.0 and v0.3 compat) that knows a few recipes.
 *
 *   "... cheese cake ..."         answers a cheesecake recipe (task -> artifact -> completed)
 *   "... steps ..."               streams the steps of a chocolate cake, one artifact chunk per step
 *   "... wedding cake ..."        a slow task (bakes for up to `slowMs`) that can be cancelled
 *   anything else                 "Order noted", quoting back exactly what reached the baker
 *
 * It records what reached it (message texts, cancels, and the request headers that matter to the
 * proxy: the reasoning header must never arrive here), so the demo can show and check it.
 *
 * Standalone (docker-compose service `cake-baker`): `node dist/src/demo/cake-baker.js` with
 *   PORT (8000), HOST (0.0.0.0), PUBLIC_URL (URL written into its agent card; default http://localhost:PORT).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import {
  type AgentCard,
  type AgentExecutor,
  type ExecutionEventBus,
  type Message,
  type Task,
  type TaskState,
  messageText,
  sdk,
  sdkCompat,
  sdkExpress,
  sdkServer,
  textPart,
} from './sdk';

export const BAKER_NAME = 'Cake Baker';

/** One user message as the baker's executor got it. */
export interface BakerMessage {
  readonly taskId: string;
  readonly text: string;
}

/** One HTTP request as it reached the baker (headers only; the SDK reads the body). */
export interface BakerRequest {
  readonly method: string;
  readonly path: string;
  /** Value of the X-AOS-Reasoning header, if one arrived (it never should through the proxies). */
  readonly reasoningHeader: string | undefined;
  /** X-AOS-Agent-* headers that arrived (the ROLE=server sidecar removes them). */
  readonly agentHeaders: Readonly<Record<string, string>>;
}

export interface BakerOptions {
  /** Listen port (default 0 = ephemeral). */
  readonly port?: number;
  /** Listen address (default 127.0.0.1). */
  readonly host?: string;
  /** URL written into the agent card (default: the listen origin). */
  readonly publicUrl?: string;
  /** How long a wedding cake bakes unless cancelled (default 60 s). */
  readonly slowMs?: number;
  /** Pause between streamed steps (default 40 ms), so they travel as separate events. */
  readonly stepDelayMs?: number;
  /** One line per received message / cancel (standalone mode logs to stdout). */
  readonly log?: (line: string) => void;
  /** Largest JSON body taken (default: the SDK's, 100 KB), for an agent that takes large messages. */
  readonly maxBodyBytes?: number;
}

export interface CakeBaker {
  /** http://host:port the baker listens on. */
  readonly origin: string;
  readonly card: AgentCard;
  readonly messages: BakerMessage[];
  readonly requests: BakerRequest[];
  /** Task ids whose cancel reached the baker. */
  readonly cancels: string[];
  close(): Promise<void>;
}

const CHEESECAKE =
  'Cheesecake (serves 8): 1) Crush 200 g digestive biscuits, mix with 80 g melted butter and press into a 23 cm tin. ' +
  '2) Beat 600 g cream cheese with 150 g sugar, 3 eggs, 200 ml sour cream and a little vanilla. ' +
  '3) Pour onto the base and bake at 160 C for 50 minutes. 4) Let it cool in the oven with the door ajar, then chill overnight.';

const CHOCOLATE_STEPS = [
  'Step 1: Heat the oven to 180 C and butter two 20 cm tins.',
  'Step 2: Whisk 200 g flour, 60 g cocoa, 250 g sugar and 2 tsp baking powder.',
  'Step 3: Beat in 3 eggs, 180 ml milk and 150 g melted butter.',
  'Step 4: Bake for 30 minutes, until a skewer comes out clean.',
  'Step 5: Cool, then fill and cover with chocolate ganache.',
];

const WEDDING_TIERS = ['bottom tier', 'middle tier', 'top tier'];

export async function startCakeBaker(opts: BakerOptions = {}): Promise<CakeBaker> {
  const { DefaultRequestHandler, InMemoryTaskStore } = sdkServer;
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = sdkExpress;
  const log = opts.log ?? (() => undefined);

  const messages: BakerMessage[] = [];
  const requests: BakerRequest[] = [];
  const cancels: string[] = [];
  const oven = new Oven(opts.slowMs ?? 60_000, opts.stepDelayMs ?? 40);

  const executor: AgentExecutor = {
    cancelTask: async (taskId) => {
      cancels.push(taskId);
      oven.cancelled.add(taskId);
      log(`cancel received for task ${taskId}`);
      oven.wake(taskId);
    },
    execute: async (ctx, bus) => {
      const { taskId, contextId, userMessage, task } = ctx;
      const input = messageText(userMessage);
      messages.push({ taskId, text: input });
      log(`received: ${JSON.stringify(input)}`);
      const first: Task = task ?? {
        id: taskId,
        contextId,
        status: status(sdk.TaskState.TASK_STATE_SUBMITTED),
        artifacts: [],
        history: [userMessage],
        metadata: undefined,
      };
      const p = work(oven, first, input, bus).finally(() => oven.running.delete(p));
      oven.running.add(p);
      await p;
    },
  };

  const app = express();
  app.disable('x-powered-by');
  app.use(recordRequests(requests));
  // Parsed here first, the SDK's own parser (100 KB) leaves the body as it is.
  if (opts.maxBodyBytes !== undefined) app.use(express.json({ limit: opts.maxBodyBytes }));
  const server = http.createServer(app);
  server.keepAliveTimeout = 5000;
  const origin = await listen(server, opts.port ?? 0, opts.host ?? '127.0.0.1');
  const card = bakerCard((opts.publicUrl ?? origin).replace(/\/+$/, ''));

  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const legacyCompat = { enabled: true };
  app.use(`/${sdk.AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));

  let closing: Promise<void> | undefined;
  return {
    origin,
    card,
    messages,
    requests,
    cancels,
    close() {
      closing ??= (async () => {
        oven.closed = true;
        oven.wakeAll();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await Promise.race([Promise.allSettled([...oven.running]), new Promise((r) => setTimeout(r, 1000).unref())]);
      })();
      return closing;
    },
  };
}

/** The tasks being baked: a cancel (or close) cuts their naps short and stops them at the next step. */
class Oven {
  closed = false;
  readonly cancelled = new Set<string>();
  readonly running = new Set<Promise<void>>();
  private readonly wakers = new Map<string, () => void>();

  constructor(
    readonly slowMs: number,
    readonly stepDelayMs: number,
  ) {}

  /** Sleep that a cancel (or close) cuts short. */
  nap(taskId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const wakers = this.wakers;
      function done(): void {
        clearTimeout(timer);
        wakers.delete(taskId);
        resolve();
      }
      wakers.set(taskId, done);
    });
  }

  wake(taskId: string): void {
    this.wakers.get(taskId)?.();
  }

  wakeAll(): void {
    for (const wake of [...this.wakers.values()]) wake();
  }
}

function status(state: TaskState, text?: string, taskId = '', contextId = '') {
  return {
    state,
    message: text === undefined ? undefined : agentMessage(text, taskId, contextId),
    timestamp: new Date().toISOString(),
  };
}

/** One task from its first event to its end: which recipe the message asks for decides the events. */
async function work(oven: Oven, first: Task, input: string, bus: ExecutionEventBus): Promise<void> {
  const { AgentEvent } = sdkServer;
  const { cancelled, slowMs, stepDelayMs } = oven;
  const taskId = first.id;
  const contextId = first.contextId;
  const publishStatus = (state: TaskState, text?: string): void =>
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(state, text, taskId, contextId), metadata: undefined }));
  const publishArtifact = (name: string, text: string, append: boolean, lastChunk: boolean): void =>
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        append,
        lastChunk,
        metadata: undefined,
        artifact: { artifactId: `${name}-1`, name, description: '', parts: [textPart(text)], metadata: undefined, extensions: [] },
      }),
    );

  bus.publish(AgentEvent.task(first));
  const lower = input.toLowerCase();

  if (/\bsteps?\b/.test(lower)) {
    publishStatus(sdk.TaskState.TASK_STATE_WORKING, 'Getting the chocolate cake steps ready...');
    for (let i = 0; i < CHOCOLATE_STEPS.length; i++) {
      if (oven.closed || cancelled.has(taskId)) break;
      await oven.nap(taskId, stepDelayMs);
      publishArtifact('chocolate-cake', CHOCOLATE_STEPS[i] ?? '', i > 0, i === CHOCOLATE_STEPS.length - 1);
    }
  } else if (/wedding cake/.test(lower)) {
    publishStatus(sdk.TaskState.TASK_STATE_WORKING, `Baking the ${WEDDING_TIERS[0]} of the wedding cake...`);
    const stepMs = Math.max(1, Math.floor(slowMs / WEDDING_TIERS.length));
    for (let i = 1; i <= WEDDING_TIERS.length && !oven.closed && !cancelled.has(taskId); i++) {
      await oven.nap(taskId, stepMs);
      if (i < WEDDING_TIERS.length && !oven.closed && !cancelled.has(taskId)) {
        publishStatus(sdk.TaskState.TASK_STATE_WORKING, `Baking the ${WEDDING_TIERS[i]} of the wedding cake...`);
      }
    }
    if (!oven.closed && !cancelled.has(taskId)) publishArtifact('wedding-cake', 'Your three-tier wedding cake is ready.', false, true);
  } else if (/cheese ?cake/.test(lower) && /\b(how|recipe|prepare|make)\b/.test(lower)) {
    publishArtifact('recipe', CHEESECAKE, false, true);
  } else {
    publishArtifact('order', `Order noted. This is exactly what reached me: "${input}"`, false, true);
  }

  if (cancelled.has(taskId)) return publishStatus(sdk.TaskState.TASK_STATE_CANCELED, 'Cancelled: the oven is off.');
  if (oven.closed) return;
  publishStatus(sdk.TaskState.TASK_STATE_COMPLETED);
}

/** Keeps the headers that matter to the demo's checks of every request that reaches the baker. */
function recordRequests(requests: BakerRequest[]): express.RequestHandler {
  return (req, _res, next) => {
    const agentHeaders: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (k.startsWith('x-aos-agent-') && typeof v === 'string') agentHeaders[k] = v;
    }
    const reasoning = req.headers['x-aos-reasoning'];
    requests.push({ method: req.method, path: req.originalUrl, reasoningHeader: typeof reasoning === 'string' ? reasoning : undefined, agentHeaders });
    next();
  };
}

/** Listens and gives the origin to call it at (a wildcard address is called on 127.0.0.1). */
async function listen(server: http.Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const listenHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return `http://${listenHost === '0.0.0.0' || listenHost === '[::]' ? '127.0.0.1' : listenHost}:${addr.port}`;
}

function bakerCard(pub: string): AgentCard {
  return {
    name: BAKER_NAME,
    description: 'Bakes cakes and answers baking questions.',
    version: '1.0.0',
    provider: { organization: 'Demo Bakery', url: 'https://bakery.example' },
    signatures: [],
    supportedInterfaces: sdkCompat.duplicateInterfacesForLegacy(
      [
        { url: `${pub}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
        { url: `${pub}/a2a/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
      ],
      ['JSONRPC', 'HTTP+JSON'],
    ),
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [
      {
        id: 'recipes',
        name: 'Recipes',
        description: 'Cake recipes, step by step',
        tags: ['baking'],
        examples: ['how to prepare a cheese cake?'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
      {
        id: 'orders',
        name: 'Orders',
        description: 'Takes cake orders, including slow ones such as wedding cakes',
        tags: ['baking'],
        examples: ['Bake a three-tier wedding cake'],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
  };
}

function agentMessage(text: string, taskId: string, contextId: string): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId,
    taskId,
    role: sdk.Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** Standalone: configured by PORT, HOST and PUBLIC_URL; stops on SIGTERM / SIGINT. */
async function standalone(env: NodeJS.ProcessEnv): Promise<void> {
  const port = Number(env['PORT'] ?? '8000');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`cake-baker: PORT must be a port number, got ${JSON.stringify(env['PORT'])}\n`);
    process.exit(2);
  }
  const host = env['HOST'] ?? '0.0.0.0';
  const publicUrl = env['PUBLIC_URL'] ?? `http://localhost:${port}`;
  const line = (s: string): void => void process.stdout.write(`cake-baker: ${s}\n`);
  const baker = await startCakeBaker({ port, host, publicUrl, log: line });
  line(`listening on ${host}:${port}, card URL ${publicUrl}`);
  const stop = (signal: string): void => {
    line(`${signal}: stopping`);
    void baker.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

if (require.main === module) {
  standalone(process.env).catch((err: unknown) => {
    process.stderr.write(`cake-baker: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
