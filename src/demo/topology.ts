/**
 * The demo topology on 127.0.0.1, ephemeral ports, all in this process:
 *
 *   Cooking assistant -> cooking-assistant-guard (ROLE=client) -> cake-baker-guard (ROLE=server) -> Cake Baker
 *                               \______________________ guardian _____________________/
 *
 * The guardian is the reference guardian's own HTTP server (src/guardian) with the demo policy;
 * the sidecars are a2a-guard instances started with `startProxy`, configured from the same
 * config/*.env files the containers use (only ports and URLs differ).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAbsolute, join } from 'node:path';
import type { Logger } from 'pino';
import { configFrom } from '../config/config';
import { createLogger } from '../runtime/log';
import { startProxy, type ProxyInstance } from '../server';
import { loadPolicy } from '../guardian/policy';
import { createGuardianServer } from '../guardian/server';
import { describeHook, type PeerView } from '../guardian/engine';
import type { Envelope } from '../aos/schemas';
import type { Phase, Side } from '../aos/hook-points';
import { startCakeBaker, type CakeBaker } from './cake-baker';
import { projectRoot, readEnvFile } from './envfile';

/** One guardian decision, as the guardian received and answered it. */
export interface GuardianCall {
  readonly seq: number;
  /** AOS method (message/send, tasks/cancel, ...). */
  readonly method: string;
  /** The observed agent's side: client = cooking-assistant-guard, server = cake-baker-guard. */
  readonly side: Side;
  readonly phase: Phase;
  /** The envelope's `reasoning` (client side only, from X-AOS-Reasoning). */
  readonly reasoning: string | undefined;
  /** The peer agent as the guardian saw it, and whether (and how) a sidecar verified it. */
  readonly peer: PeerView;
  readonly decision: string;
  readonly message: string;
  readonly reasonCode: readonly string[];
  /** The A2A payload the guardian judged. */
  readonly payload: unknown;
  /** For modify: the payload forwarded instead. */
  readonly modifiedPayload: unknown;
}

export interface DemoGuardian {
  readonly url: string;
  readonly policyFile: string;
  readonly calls: GuardianCall[];
  readonly server: Server;
  close(): Promise<void>;
}

export interface Topology {
  readonly guardian: DemoGuardian;
  readonly baker: CakeBaker;
  /** ROLE=server sidecar in front of the Cake Baker. */
  readonly bakerGuard: ProxyInstance;
  /** ROLE=client sidecar of the Cooking assistant: the only URL the assistant knows. */
  readonly assistantGuard: ProxyInstance;
  close(): Promise<void>;
}

export interface TopologyOptions {
  /** Policy for the guardian (default config/demo-policy.json). */
  readonly policyFile?: string;
  /** pino level for the sidecars and the guardian (default silent: the transcript is the output). */
  readonly logLevel?: string;
  /** Environment overrides for both sidecars (e.g. INSPECT_RESPONSES=true). */
  readonly sidecarEnv?: Record<string, string>;
}

export function defaultPolicyFile(): string {
  return join(projectRoot(), 'config', 'demo-policy.json');
}

/** The reference guardian over HTTP on 127.0.0.1:0, with every request and answer recorded. */
export async function startDemoGuardian(policyFile: string, logger: Logger): Promise<DemoGuardian> {
  const policy = loadPolicy(policyFile);
  const server = createGuardianServer({ policy, logger });
  const calls: GuardianCall[] = [];
  let seq = 0;
  // Listen in front of the guardian's own handler: the body is read by both (data events go to
  // every listener), and the answer is captured as it is written. The guardian is unchanged.
  server.prependListener('request', (req, res) => {
    if (req.method !== 'POST') return;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    const end = res.end.bind(res) as (...args: unknown[]) => unknown;
    (res as unknown as { end: (...args: unknown[]) => unknown }).end = (...args: unknown[]) => {
      try {
        const first = args[0];
        const answer = typeof first === 'string' || Buffer.isBuffer(first) ? first.toString() : undefined;
        const call = toCall(++seq, Buffer.concat(chunks).toString('utf8'), answer);
        if (call !== undefined) calls.push(call);
      } catch {
        // Recording is best effort; the guardian's answer is never affected.
      }
      return end(...args);
    };
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    policyFile,
    calls,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function toCall(seq: number, requestText: string, answerText: string | undefined): GuardianCall | undefined {
  if (answerText === undefined) return undefined;
  const request = JSON.parse(requestText) as Envelope;
  if (request.method === 'ping') return undefined;
  const answer = JSON.parse(answerText) as { result?: Record<string, unknown>; error?: { message?: string } };
  const hook = describeHook(request);
  const result = answer.result ?? {};
  const modified = result['modifiedRequest'] as { params?: { payload?: unknown } } | undefined;
  return {
    seq,
    method: hook.method,
    side: hook.side,
    phase: hook.phase,
    reasoning: typeof request.params.reasoning === 'string' ? request.params.reasoning : undefined,
    peer: hook.peer,
    decision: typeof result['decision'] === 'string' ? result['decision'] : 'error',
    message: typeof result['message'] === 'string' ? result['message'] : (answer.error?.message ?? ''),
    reasonCode: Array.isArray(result['reasonCode']) ? (result['reasonCode'] as string[]) : [],
    payload: request.params.payload,
    modifiedPayload: modified?.params?.payload,
  };
}

/** A sidecar's env file, with relative *_FILE paths (the demo keys) resolved against the project root. */
function sidecarEnvFile(root: string, name: string): Record<string, string> {
  const env = readEnvFile(join(root, 'config', name));
  for (const [k, v] of Object.entries(env)) if (k.endsWith('_FILE') && v !== '' && !isAbsolute(v)) env[k] = join(root, v);
  return env;
}

export async function startTopology(opts: TopologyOptions = {}): Promise<Topology> {
  const root = projectRoot();
  const logLevel = opts.logLevel ?? 'silent';
  const logger = createLogger(logLevel);
  const started: Array<{ close(): Promise<void> }> = [];
  const closeAll = async (): Promise<void> => {
    // Reverse start order: callers first, so nothing talks to a component that is already gone.
    for (const c of started.reverse()) await c.close().catch(() => undefined);
  };
  try {
    const guardian = await startDemoGuardian(opts.policyFile ?? defaultPolicyFile(), logger.child({ service: 'guardian' }));
    started.push(guardian);
    const baker = await startCakeBaker();
    started.push(baker);

    const local = { PORT: '0', HOST: '127.0.0.1', GUARDIAN_URL: guardian.url, LOG_LEVEL: logLevel, ...opts.sidecarEnv };
    const bakerGuardConfig = configFrom({ ...sidecarEnvFile(root, 'cake-baker-guard.env'), ...local, UPSTREAM_URL: baker.origin });
    const bakerGuard = await startProxy({ config: bakerGuardConfig, logger: logger.child({ sidecar: 'cake-baker-guard' }) });
    started.push(bakerGuard);

    const assistantGuardConfig = configFrom({ ...sidecarEnvFile(root, 'cooking-assistant-guard.env'), ...local, UPSTREAM_URL: bakerGuard.url });
    const assistantGuard = await startProxy({ config: assistantGuardConfig, logger: logger.child({ sidecar: 'cooking-assistant-guard' }) });
    started.push(assistantGuard);

    return { guardian, baker, bakerGuard, assistantGuard, close: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
