/**
 * Interop harness: one operation of a third-party A2A implementation, run three ways and compared.
 *
 *   direct   the caller talks to the agent itself
 *   server   through a2a-guard ROLE=server in front of the agent
 *   client   through a2a-guard ROLE=client beside the caller
 *
 * Both proxies ask one allow-all guardian (test/helpers/guardian.ts). A case passes on a proxied
 * path when the caller's outcome (result, error, event sequence; ids, times and origins
 * normalised) equals the direct outcome, and the oracle holds: every A2A JSON-RPC body that reached
 * the agent is, byte for byte after canonical key order, a payload the guardian approved (each
 * approval used once), and, where the agent's handler is recorded, every operation it acted on is
 * an approved one (test/helpers/a2a-facts.ts).
 *
 *   const suite = interopSuite('voltagent', startVoltAgent);
 *   suite.op('message/send', async ({ base }) => client(base).sendMessage(...));
 *
 * INTEROP_REPORT=<file> appends one JSON line per case and path: {impl, op, path, result}.
 */
import fs from 'node:fs';
import { startGuardian, type TestGuardian } from './guardian';
import type { HandlerRecorder } from './handler-recorder';
import { rawRpc, rawSse, type TestAgent } from './agent';
import { approvedReading, differences, handlerFacts, type ApprovedReading } from './a2a-facts';
import { startTestProxy, type TestProxy } from './proxy-harness';

export type Path = 'direct' | 'server' | 'client';
export const PATHS: readonly Path[] = ['direct', 'server', 'client'];

/** An agent under test, with what reached it. */
export interface InteropAgent {
  /** http://127.0.0.1:<port> (the proxies' UPSTREAM_URL). */
  readonly origin: string;
  /** Bodies of the JSON-RPC requests that reached the agent over HTTP since clear(), parsed. */
  rpcBodies(): unknown[];
  /** Where the agent's handler is recorded: how its calls differ from the approved payloads ([] = none). */
  handlerProblems?(approved: readonly unknown[]): string[];
  clear(): void;
  close(): Promise<void>;
}

export type Outcome = { readonly ok: unknown } | { readonly error: unknown };

export interface OpContext {
  /** Origin the caller uses: the agent's, or a proxy's. */
  readonly base: string;
  readonly path: Path;
}

export interface OpOptions {
  /** The direct outcome is an error (e.g. task not found): the case compares errors. */
  readonly expectError?: boolean;
  /**
   * A deliberate refusal: the call carries input the guardian cannot see, so a proxy must answer it
   * itself (ErrorInfo REQUEST_REJECTED, domain a2a-guard) and nothing may reach the agent. The
   * reason is listed in the README's Interoperability section.
   */
  readonly refusedByProxy?: string;
}

export interface InteropSuite {
  readonly guardian: TestGuardian;
  readonly agent: InteropAgent;
  base(path: Path): string;
  proxy(path: Exclude<Path, 'direct'>): TestProxy;
  /** Register one operation: `run` performs it against ctx.base and returns what the caller got. */
  op(name: string, run: (ctx: OpContext) => Promise<unknown>, opts?: OpOptions): void;
}

const REPORT = process.env.INTEROP_REPORT;

/** The ROLE=client proxy's observed agent (the caller). */
const CLIENT_ENV = {
  OBSERVED_AGENT_ID: 'interop-caller',
  OBSERVED_AGENT_NAME: 'Interop caller',
  OBSERVED_AGENT_URL: 'https://interop-caller.example',
  OBSERVED_AGENT_VERSION: '1.0.0',
};

/* ------------------------------------------------------------------------------------------ */
/* Normalising outcomes                                                                       */
/* ------------------------------------------------------------------------------------------ */

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const ISO_TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g;
const ORIGIN = /http:\/\/127\.0\.0\.1:\d+/g;
const HOSTPORT = /127\.0\.0\.1:\d+/g;
/** Millisecond clock readings used as ids (Date.now()). */
const EPOCH_MS = /(?<!\d)1[6-9]\d{11}(?!\d)/g;

/** A value with ids, times and local origins replaced by placeholders, as plain JSON data. */
export function normalise(x: unknown): unknown {
  const text = JSON.stringify(x ?? null, (_k, v: unknown) => {
    if (typeof v === 'bigint') return `${v}n`;
    if (isErrorLike(v)) return errorShape(v);
    if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
    return v;
  });
  return JSON.parse(
    text.replace(UUID, '<uuid>').replace(ISO_TIME, '<time>').replace(ORIGIN, '<origin>').replace(HOSTPORT, '<host>').replace(EPOCH_MS, '<ms>'),
  ) as unknown;
}

/** An Error from any realm (jest runs tests in their own; fetch throws from Node's). */
const isErrorLike = (v: unknown): v is Error =>
  v instanceof Error ||
  (typeof v === 'object' && v !== null && typeof (v as Error).message === 'string' && typeof (v as Error).name === 'string' && 'stack' in v);

function errorShape(e: Error): Record<string, unknown> {
  const x = e as Error & { code?: unknown; envelopeCode?: unknown; statusCode?: unknown };
  return {
    name: e.name,
    message: e.message,
    ...(e.cause !== undefined && isErrorLike(e.cause) ? { cause: e.cause.message } : {}),
    ...(x.code !== undefined ? { code: x.code } : {}),
    ...(x.envelopeCode !== undefined ? { envelopeCode: x.envelopeCode } : {}),
    ...(x.statusCode !== undefined ? { statusCode: x.statusCode } : {}),
  };
}

export async function outcomeOf(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: normalise(await run()) };
  } catch (e) {
    return { error: normalise(isErrorLike(e) ? errorShape(e) : e) };
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The oracle                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/** JSON text with object keys sorted at every level. */
export function canonical(x: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
      );
    return v;
  };
  return JSON.stringify(sort(x));
}

const short = (s: string, n = 240): string => (s.length > n ? `${s.slice(0, n)}...` : s);

/** What reached the agent, against what the guardian approved: [] when every request was approved. */
export function oracle(agent: InteropAgent, approvedTexts: readonly string[]): string[] {
  const approved = approvedTexts.map((t) => JSON.parse(t) as unknown);
  const pool = approved.map(canonical);
  const problems: string[] = [];
  for (const body of agent.rpcBodies()) {
    const c = canonical(body);
    const at = pool.indexOf(c);
    if (at < 0)
      problems.push(`the agent received a JSON-RPC body the guardian did not approve: ${short(c)}; approved: ${short(JSON.stringify(approvedTexts))}`);
    else pool.splice(at, 1);
  }
  return [...problems, ...(agent.handlerProblems?.(approved) ?? [])];
}

/** handlerProblems for an @a2a-js/sdk 1.x agent whose handler a HandlerRecorder wraps. */
export function sdkHandlerProblems(recorder: HandlerRecorder): (approved: readonly unknown[]) => string[] {
  return (approved) => {
    const readings = approved.map(approvedReading).filter((r): r is ApprovedReading => r !== undefined);
    const problems: string[] = [];
    for (const call of recorder.calls) {
      const facts = handlerFacts(call);
      const at = readings.findIndex((r) => differences(facts, r).length === 0);
      if (at < 0) problems.push(`the handler acted on ${call.method}(${short(JSON.stringify(call.params))}), which no approval matches`);
      else readings.splice(at, 1);
    }
    return problems;
  };
}

/** An @a2a-js/sdk 1.x test agent (test/helpers/agent.ts) as an interop agent. */
export function sdkAgent(agent: TestAgent, recorder: HandlerRecorder): InteropAgent {
  return {
    origin: agent.origin,
    rpcBodies: () => agent.received.filter((r) => r.method === 'POST' && isRpc(r.body)).map((r) => r.body),
    handlerProblems: sdkHandlerProblems(recorder),
    clear: () => {
      agent.clear();
      recorder.clear();
    },
    close: () => agent.close(),
  };
}

export const isRpc = (b: unknown): boolean => typeof b === 'object' && b !== null && !Array.isArray(b) && (b as { jsonrpc?: unknown }).jsonrpc === '2.0';

/* ------------------------------------------------------------------------------------------ */
/* Suites                                                                                     */
/* ------------------------------------------------------------------------------------------ */

export type CaseResult = 'pass' | 'fail' | 'refused';

function report(impl: string, op: string, path: Path, result: CaseResult, detail?: string): void {
  if (REPORT === undefined || REPORT === '') return;
  fs.appendFileSync(REPORT, `${JSON.stringify({ impl, op, path, result, ...(detail === undefined ? {} : { detail }) })}\n`);
}

/** Requests the agent is still handling after the caller got its answer get a moment to arrive. */
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 30));

/**
 * Register an interop suite in the calling test file: starts the agent, a guardian and both
 * proxies before the file, stops them after it.
 */
export function interopSuite(impl: string, start: () => Promise<InteropAgent>, opts: { proxyEnv?: Record<string, string> } = {}): InteropSuite {
  let agent: InteropAgent | undefined;
  let guardian: TestGuardian | undefined;
  const proxies: Partial<Record<Exclude<Path, 'direct'>, TestProxy>> = {};
  const must = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`interopSuite(${impl}): ${what} is not started`);
    return v;
  };

  beforeAll(async () => {
    agent = await start();
    guardian = await startGuardian();
    const common = { UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ...(opts.proxyEnv ?? {}) };
    proxies.server = await startTestProxy({ ...common, ROLE: 'server' });
    proxies.client = await startTestProxy({ ...common, ROLE: 'client', ...CLIENT_ENV });
  });
  afterAll(async () => {
    await proxies.client?.close();
    await proxies.server?.close();
    await guardian?.close();
    await agent?.close();
  });

  const suite: InteropSuite = {
    get guardian() {
      return must(guardian, 'the guardian');
    },
    get agent() {
      return must(agent, 'the agent');
    },
    base(path) {
      return path === 'direct' ? must(agent, 'the agent').origin : must(proxies[path], `the ROLE=${path} proxy`).url;
    },
    proxy(path) {
      return must(proxies[path], `the ROLE=${path} proxy`);
    },
    op(name, run, opOpts = {}) {
      describe(name, () => {
        let direct: Outcome | undefined;
        const runOn = async (path: Path): Promise<{ outcome: Outcome; problems: string[] }> => {
          const a = suite.agent;
          a.clear();
          suite.guardian.clear();
          const outcome = await outcomeOf(() => run({ base: suite.base(path), path }));
          await settle();
          return { outcome, problems: path === 'direct' ? [] : oracle(a, suite.guardian.approved()) };
        };
        const directOutcome = async (): Promise<Outcome> => (direct ??= (await runOn('direct')).outcome);

        test('direct', async () => {
          const d = await directOutcome();
          const ok = opOpts.expectError === true ? 'error' in d : 'ok' in d;
          report(impl, name, 'direct', ok ? 'pass' : 'fail');
          expect(d).toHaveProperty(opOpts.expectError === true ? 'error' : 'ok');
        });
        for (const path of ['server', 'client'] as const) {
          const what = opOpts.refusedByProxy === undefined ? 'matches direct' : 'is refused by the proxy, nothing reaches the agent';
          test(`ROLE=${path} ${what}`, async () => {
            const d = await directOutcome();
            const got = await runOn(path);
            if (opOpts.refusedByProxy !== undefined) {
              const text = JSON.stringify(got.outcome);
              const refused = text.includes('"reason":"REQUEST_REJECTED"') && text.includes('"domain":"a2a-guard"');
              const reached = suite.agent.rpcBodies().length;
              report(impl, name, path, refused && reached === 0 ? 'refused' : 'fail', opOpts.refusedByProxy);
              expect({ refused, reached }).toEqual({ refused: true, reached: 0 });
              return;
            }
            const same = JSON.stringify(got.outcome) === JSON.stringify(d) && got.problems.length === 0;
            report(
              impl,
              name,
              path,
              same ? 'pass' : 'fail',
              same ? undefined : short(JSON.stringify({ got: got.outcome, direct: d, problems: got.problems }), 2000),
            );
            expect({ outcome: got.outcome, oracle: got.problems }).toEqual({ outcome: d, oracle: [] });
          });
        }
      });
    },
  };
  return suite;
}

/* ------------------------------------------------------------------------------------------ */
/* Raw calls, as a caller sees them                                                           */
/* ------------------------------------------------------------------------------------------ */

/** Status, media type and JSON body of a unary answer (what a raw-fetch caller reads). */
export async function unary(
  url: string,
  body: unknown,
  headers: Record<string, string | undefined> = {},
  method = 'POST',
): Promise<{ status: number; type: string; body: unknown }> {
  const r = await rawRpc(url, body, headers, { method });
  return { status: r.status, type: (r.headers['content-type'] ?? '').split(';')[0] ?? '', body: r.json ?? r.text };
}

/** Status, media type and the SSE events (event name and JSON data) of a streaming answer. */
export async function streamed(
  url: string,
  body: unknown,
  headers: Record<string, string | undefined> = {},
  method = 'POST',
): Promise<{ status: number; type: string; events: unknown[]; body?: unknown }> {
  const r = await rawSse(url, body, headers, { method });
  const type = r.contentType.split(';')[0] ?? '';
  if (type !== 'text/event-stream') return { status: r.status, type, events: [], body: safeJson(r.text) };
  return { status: r.status, type, events: r.events.map((e) => ({ ...(e.event === undefined ? {} : { event: e.event }), data: e.json ?? e.data })) };
}

function safeJson(t: string): unknown {
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return t;
  }
}
