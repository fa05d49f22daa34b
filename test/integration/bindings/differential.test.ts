/**
 * Differential test of the proxy's core promise (design sections 2 and 5): the agent acts
 * only on what the guardian approved, whatever bytes carry the call.
 *
 * A real @a2a-js/sdk 1.3.0 agent (JSON-RPC and REST, v1.0 and v0.3 compat, tenant routes, an
 * extended card) sits behind two in-process proxies: one asks a deny-all guardian, one an
 * allow-all guardian that records every payload it approved (both real HTTP guardians). The SDK's
 * request handler itself (not the HTTP server) records every operation it acts on, with its
 * parameters and the tenant the SDK resolved (test/helpers/handler-recorder.ts). Generated
 * variants of real A2A calls (test/helpers/a2a-variants.ts) go through the proxies as raw bytes.
 *
 * Oracles:
 * - deny-all: the handler acts on nothing; nothing but plain card reads reaches the agent at all
 *   (unknown traffic is refused by default); every request is answered, in its binding's terms.
 * - allow-all: every handler call equals (operation, tenant, task/config/context ids, message
 *   parts, webhook) a payload the guardian approved, each approval used once; the agent receives
 *   no more requests than the guardian approved.
 * - standard codes: where the SDK agent itself refuses a request (-32700, -32600, -32601, -32005;
 *   REST 400/404), the caller of the allow-all proxy gets the same code: from the proxy, with its
 *   ErrorInfo (REQUEST_REJECTED, domain a2a-guard), or from the agent after a judged forward.
 *   (Not for application/a2a+json on JSON-RPC, which the JS SDK agent refuses and the proxy takes.)
 *
 * Each search first runs every case once and sorts what it saw into classes; each class is then
 * replayed from its first batch and shrunk by fast-check to a minimal request, printed with the
 * seed and replay path. A failure lists every class with its count.
 *
 * Knobs: DIFF_CASES (total generated cases over the three searches, default 3000; e.g. 50000 for a
 * long local run), DIFF_SEED (replay a run), DIFF_CONCURRENCY (requests in flight, default 6),
 * DIFF_SHRINK (classes shrunk per oracle, default 3), DIFF_SHRINK_MS (time per shrink, default 20000),
 * DIFF_CLASS (a regular expression: shrink the classes it matches first), DIFF_REPORT=1 (print each
 * search's ledger: cases, handler calls, the classes found; a failure prints its classes anyway).
 */
import fc from 'fast-check';
import { type ReceivedRequest } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { handlerRecorder, type HandlerCall } from '../../helpers/handler-recorder';
import { approvedReading, differences, handlerFacts, type ApprovedReading } from '../../helpers/a2a-facts';
import { caseArb, defectArb, describeCase, handCase, toJ, type Case, type Defect } from '../../helpers/a2a-variants';
import { exchange, header, type WireOutcome } from '../../helpers/wire';
import { startReferenceProxy, type ReferenceProxy } from '../../helpers/reference-proxy';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

const TOTAL = Number(process.env.DIFF_CASES ?? 3000);
const SEED = process.env.DIFF_SEED !== undefined ? Number(process.env.DIFF_SEED) : Math.floor(Math.random() * 2 ** 31);
const CONCURRENCY = Math.max(1, Number(process.env.DIFF_CONCURRENCY ?? 6));
const SHRINK_CLASSES = Number(process.env.DIFF_SHRINK ?? 3);
const SHRINK_MS = Number(process.env.DIFF_SHRINK_MS ?? 20_000);
const CLASS_FOCUS = process.env.DIFF_CLASS !== undefined ? new RegExp(process.env.DIFF_CLASS, 'i') : undefined;
/** Generous: a request that is not answered in this time is a hang, not a slow answer. */
const ANSWER_TIMEOUT_MS = 15_000;
const SEARCH_CASES = { deny: Math.ceil(TOTAL * 0.45), allow: Math.ceil(TOTAL * 0.45), codes: Math.ceil(TOTAL * 0.1) };
/** Each self-check of the oracles (against the reference proxy) runs this many more. */
const SELF_CASES = Math.ceil(TOTAL * 0.05);
/** Generous hang guard for a whole search (it also covers the shrinking of failures). */
const SEARCH_TIMEOUT_MS = 60_000 + TOTAL * 60 + SHRINK_CLASSES * 3 * (SHRINK_MS + 5000);

const recorder = handlerRecorder();
const stack = useStack({ name: 'Differential Agent', extendedAgentCard: true, wrapRequestHandler: recorder.wrap });
let denyGuardian: TestGuardian;
let denyProxy: TestProxy;
let allowProxy: TestProxy;
let agentInFlight = 0;
const idleWaiters: Array<() => void> = [];

/** Resolves once the agent has no request in progress (rejects after the answer time limit: a hang). */
function agentIdle(): Promise<void> {
  if (agentInFlight === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the agent did not finish its requests in time')), ANSWER_TIMEOUT_MS);
    idleWaiters.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const portOf = (url: string): number => Number(new URL(url).port);

beforeAll(async () => {
  // The SDK logs every refused call and tenant mismatch with console.error/warn; thousands of them
  // through jest's console capture would dominate the run time.
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
  jest.spyOn(console, 'warn').mockImplementation(() => undefined);
  denyGuardian = await startGuardian();
  denyGuardian.script(() => ({ decision: 'deny', reasonCode: ['DENY_ALL'], message: 'deny-all guardian' }));
  denyProxy = await stack.proxy({ GUARDIAN_URL: denyGuardian.url });
  allowProxy = await stack.proxy();
  stack.guardian.script(() => ({ decision: 'allow', message: 'allow-all guardian' }));
  // Count requests the agent is still working on, so a batch ends only when the agent is idle.
  stack.agent.server.on('request', (_req, res) => {
    agentInFlight++;
    res.once('close', () => {
      agentInFlight--;
      if (agentInFlight === 0) for (const wake of idleWaiters.splice(0)) wake();
    });
  });
});

afterAll(async () => {
  await denyGuardian?.close();
  jest.restoreAllMocks();
});

/* ------------------------------------------------------------------------------------------ */
/* Running a batch                                                                            */
/* ------------------------------------------------------------------------------------------ */

interface Observed {
  readonly outcomes: readonly WireOutcome[];
  /** Operations the agent's request handler acted on during the batch. */
  readonly calls: readonly HandlerCall[];
  /** HTTP requests the agent received during the batch. */
  readonly agentRequests: readonly ReceivedRequest[];
  /** A2A payloads the allow-all guardian approved during the batch (JSON text). */
  readonly approvals: readonly string[];
}

/** Send a batch concurrently through the proxy at `port`; return once every answer is in and the agent is idle. */
async function runBatch(port: number, cases: readonly Case[]): Promise<Observed> {
  recorder.clear();
  stack.agent.clear();
  stack.guardian.clear();
  denyGuardian.clear();
  const outcomes = await Promise.all(cases.map((c) => exchange(port, c.wire, ANSWER_TIMEOUT_MS)));
  // A request the proxy forwards after answering its caller would still arrive: give it a turn.
  await new Promise((r) => setImmediate(r));
  await agentIdle();
  const obs = { outcomes, calls: [...recorder.calls], agentRequests: [...stack.agent.received], approvals: stack.guardian.approved() };
  acted.calls += obs.calls.length;
  acted.approvals += obs.approvals.length;
  return obs;
}

/** Handler calls and approvals seen so far: a search that never reaches the handler would pass vacuously. */
const acted = { calls: 0, approvals: 0 };

/* ------------------------------------------------------------------------------------------ */
/* Oracles                                                                                    */
/* ------------------------------------------------------------------------------------------ */

type Kind = 'bypass' | 'unjudged' | 'hang' | 'terms' | 'mismatch' | 'code' | 'harness';

interface Violation {
  readonly kind: Kind;
  /** Class of the violation: stable under shrinking, used to group and to replay. */
  readonly sig: string;
  readonly detail: string;
}

const CARD_PATHS = new Set(['/.well-known/agent-card.json', '/.well-known/agent.json']);
const pathOf = (target: string): string => target.split('?')[0] ?? target;

/** A plain card read: the only traffic that reaches the agent without a judged call. */
const isCardRead = (r: ReceivedRequest): boolean => (r.method === 'GET' || r.method === 'HEAD') && CARD_PATHS.has(pathOf(r.path));

/** Where on the agent a request landed, coarsely (a class name must not change while a case shrinks). */
function area(path: string): string {
  const p = pathOf(path).toLowerCase();
  if (p.startsWith('/a2a/jsonrpc')) return '/a2a/jsonrpc';
  if (p.startsWith('/a2a/rest')) return '/a2a/rest';
  if (p.includes('well-known')) return 'a card path variant';
  return 'another path';
}

/** One line, cut at `n` characters (answers may be HTML pages). */
const short = (v: unknown, n = 300): string => {
  const s = (typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v))).replace(/\s*\n\s*/g, ' ');
  return s.length > n ? `${s.slice(0, n)}...` : s;
};

function describeCall(c: HandlerCall): string {
  return `handler.${c.method}(${short(c.params)}) context.tenant=${JSON.stringify(c.contextTenant)} A2A-Version=${JSON.stringify(c.requestedVersion)}`;
}

function describeAgentRequest(r: ReceivedRequest): string {
  const h = Object.entries(r.headers).filter(([k]) => ['a2a-version', 'content-type', 'content-encoding', 'transfer-encoding'].includes(k));
  return `${r.method} ${r.path} [${h.map(([k, v]) => `${k}: ${v}`).join('; ')}] ${short(r.bodyText, 200)}`;
}

/** Every request got a complete HTTP answer within the time limit. */
function answered(outcomes: readonly WireOutcome[]): Violation[] {
  return outcomes.flatMap((o): Violation[] =>
    o.kind === 'answer'
      ? []
      : [
          {
            kind: 'hang',
            sig: `hang: ${o.kind === 'timeout' ? 'no answer within the time limit' : 'connection closed without an answer'}`,
            detail: `${o.kind} after ${o.ms} ms; received: ${JSON.stringify(o.partial)}`,
          },
        ],
  );
}

const REASONS = new Set(['GUARDIAN_DENIED', 'GUARDIAN_UNAVAILABLE', 'REQUEST_REJECTED', 'UPSTREAM_UNAVAILABLE']);
type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

function jsonOf(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The proxy's ErrorInfo in a JSON-RPC `error.data` or a REST `error.details`, if any. */
function proxyErrorInfo(json: unknown): Obj | undefined {
  const err = isObj(json) ? json['error'] : undefined;
  if (!isObj(err)) return undefined;
  const list = Array.isArray(err['data']) ? err['data'] : Array.isArray(err['details']) ? err['details'] : [];
  return list.find((e): e is Obj => isObj(e) && e['domain'] === 'a2a-guard' && String(e['@type']).endsWith('google.rpc.ErrorInfo'));
}

/** An answer the proxy wrote itself must be well formed, in the caller's binding (design section 5). */
function termsProblem(c: Case, o: WireOutcome): string | undefined {
  if (o.kind !== 'answer') return undefined;
  const json = jsonOf(o.body);
  const info = proxyErrorInfo(json);
  if (info === undefined || !isObj(json)) return undefined; // not a proxy answer (card, or relayed: judged by the other oracles)
  const ct = (header(o.headers, 'content-type') ?? '').toLowerCase();
  if (!/^application\/(a2a\+)?json\b/.test(ct)) return `proxy error answered with Content-Type ${JSON.stringify(ct)}`;
  if (!REASONS.has(String(info['reason']))) return `ErrorInfo reason ${JSON.stringify(info['reason'])} is not one of the documented ones`;
  const err = json['error'] as Obj;
  const isRpc = 'jsonrpc' in json;
  if (isRpc) {
    if (json['jsonrpc'] !== '2.0' || !Number.isInteger(err['code']) || typeof err['message'] !== 'string' || !('id' in json))
      return 'malformed JSON-RPC error object';
    if (info['reason'] === 'GUARDIAN_DENIED' && o.status !== 200) return `JSON-RPC denial with HTTP ${o.status}`;
    if (info['reason'] === 'GUARDIAN_DENIED' && c.rpcId !== undefined && json['id'] !== c.rpcId) return 'JSON-RPC denial does not echo the caller id';
  } else if (err['code'] !== o.status || typeof err['status'] !== 'string' || typeof err['message'] !== 'string') {
    return 'malformed google.rpc.Status error';
  }
  // The caller's binding is certain only for a real call whose request line no mutation touched.
  if (c.pathIntact && c.family.startsWith('jsonrpc') && c.jsonRpcBody && !isRpc) return 'JSON-RPC call answered in REST form';
  if (c.pathIntact && c.family.startsWith('rest') && !c.jsonRpcBody && isRpc) return 'REST call answered in JSON-RPC form';
  return undefined;
}

/** Deny-all: nothing is acted on, nothing unjudged reaches the agent, everything is answered properly. */
function checkDeny(cases: readonly Case[], obs: Observed): Violation[] {
  const out: Violation[] = [];
  for (const call of obs.calls) {
    out.push({ kind: 'bypass', sig: `bypass: the handler ran ${call.method}`, detail: `${describeCall(call)}; the guardian approved nothing` });
  }
  for (const r of obs.agentRequests) {
    if (!isCardRead(r)) out.push({ kind: 'unjudged', sig: `unjudged: ${r.method} ${area(r.path)}`, detail: `agent received ${describeAgentRequest(r)}` });
  }
  out.push(...answered(obs.outcomes));
  cases.forEach((c, i) => {
    const o = obs.outcomes[i] as WireOutcome;
    const p = termsProblem(c, o);
    if (p !== undefined && o.kind === 'answer')
      out.push({ kind: 'terms', sig: `terms: ${p}`, detail: `${p}: HTTP ${o.status} ${short(o.body.toString('utf8'))}` });
  });
  return out;
}

function describeReading(a: ApprovedReading): string {
  return a.kind === 'ambiguous' ? `ambiguous ${a.op} (${a.why})` : `${a.facts.op} tenant=${JSON.stringify(a.facts.tenant)} ${short(a.facts.fields, 400)}`;
}

/** Allow-all: every handler call is one approved payload (each approval used once). */
function checkAllow(obs: Observed): Violation[] {
  const out: Violation[] = [];
  const approvals = obs.approvals
    .map((text) => ({ text, reading: approvedReading(jsonOf(Buffer.from(text, 'utf8'))) }))
    .filter((a): a is { text: string; reading: ApprovedReading } => a.reading !== undefined);
  const used = new Set<number>();
  // First every call that equals an approval takes it; then each remaining call is a mismatch.
  const unmatched = obs.calls.filter((call) => {
    const h = handlerFacts(call);
    const idx = approvals.findIndex((a, i) => !used.has(i) && differences(h, a.reading).length === 0);
    if (idx < 0) return true;
    used.add(idx);
    return false;
  });
  for (const call of unmatched) {
    const h = handlerFacts(call);
    // The nearest approval of the same operation that no call used: what the guardian was asked instead.
    const near = approvals
      .map((a, i) => ({ a, i, diff: differences(h, a.reading) }))
      .filter((x) => !used.has(x.i) && !x.diff.includes('op'))
      .sort((x, y) => x.diff.length - y.diff.length)[0];
    const what = near === undefined ? 'no approval of this operation' : `differs in ${near.diff.join(' + ')}`;
    out.push({
      kind: 'mismatch',
      sig: `mismatch: handler ran ${h.op}, ${what}`,
      detail: `${describeCall(call)}\n      acted on: ${h.op} tenant=${JSON.stringify(h.tenant)} ${short(h.fields, 400)}\n      approved: ${near === undefined ? obs.approvals.map((t) => short(t, 200)).join(' | ') || '(nothing)' : `${describeReading(near.a.reading)}\n      payload:  ${short(near.a.text, 400)}`}`,
    });
  }
  const forwarded = obs.agentRequests.filter((r) => !isCardRead(r));
  if (forwarded.length > obs.approvals.length) {
    out.push({
      kind: 'unjudged',
      sig: 'unjudged: the agent received more requests than the guardian approved',
      detail: `${forwarded.length} requests, ${obs.approvals.length} approvals: ${forwarded.map(describeAgentRequest).join(' | ')}`,
    });
  }
  out.push(...answered(obs.outcomes));
  return out;
}

/* ------------------------------------------------------------------------------------------ */
/* Search: run everything once, sort into classes, shrink each class                          */
/* ------------------------------------------------------------------------------------------ */

interface ClassEntry {
  readonly kind: Kind;
  count: number;
  readonly firstRun: number;
  readonly firstDetail: string;
  readonly firstBatch: string;
}

interface Ledger {
  readonly name: string;
  readonly seed: number;
  runs: number;
  cases: number;
  ms: number;
  /** Operations the handler acted on and payloads the guardian approved during the search. */
  calls: number;
  approvals: number;
  readonly classes: Map<string, ClassEntry>;
}

interface Search<T> {
  readonly name: string;
  readonly arb: fc.Arbitrary<T>;
  /** Batches run before the generated ones (known doors), each a one-request batch. */
  readonly examples?: readonly T[];
  readonly cases: number;
  readonly run: (batch: readonly T[]) => Promise<Violation[]>;
  readonly describe: (t: T) => string;
}

/**
 * A batch of CONCURRENCY cases sent together. Every slot is optional but almost never empty when
 * generated; shrinking empties slots, so a counterexample is the one request that shows the class.
 */
function batchArb<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T[]> {
  const slots = Array.from({ length: CONCURRENCY }, () => fc.option(arb, { nil: undefined, freq: 1000 }));
  return fc
    .tuple(...slots)
    .map((xs) => xs.filter((x): x is T => x !== undefined))
    .filter((xs) => xs.length > 0);
}

const examplesOf = <T>(s: Search<T>): Array<[T[]]> => (s.examples ?? []).map((e) => [[e]]);

async function explore<T>(s: Search<T>): Promise<Ledger> {
  const ledger: Ledger = { name: s.name, seed: SEED, runs: 0, cases: 0, ms: 0, calls: 0, approvals: 0, classes: new Map() };
  const started = performance.now();
  const before = { ...acted };
  const prop = fc.asyncProperty(batchArb(s.arb), async (batch) => {
    const run = ledger.runs++;
    ledger.cases += batch.length;
    let found: Violation[];
    try {
      found = await s.run(batch);
    } catch (err) {
      found = [{ kind: 'harness', sig: `harness: ${(err as Error).message}`, detail: String((err as Error).stack) }];
    }
    for (const v of found) {
      const e = ledger.classes.get(v.sig);
      if (e !== undefined) e.count++;
      else ledger.classes.set(v.sig, { kind: v.kind, count: 1, firstRun: run, firstDetail: v.detail, firstBatch: batch.map(s.describe).join('\n') });
    }
    return true; // exploration never fails: classes are shrunk and reported afterwards
  });
  await fc.assert(prop, { seed: SEED, numRuns: Math.ceil(s.cases / CONCURRENCY), examples: examplesOf(s) });
  ledger.ms = Math.round(performance.now() - started);
  ledger.calls = acted.calls - before.calls;
  ledger.approvals = acted.approvals - before.approvals;
  logLedger(ledger);
  return ledger;
}

/** Replay the first batch of a class and let fast-check shrink it to a minimal request that still shows the class. */
async function shrinkClass<T>(s: Search<T>, ledger: Ledger, sig: string): Promise<string> {
  const entry = ledger.classes.get(sig) as ClassEntry;
  let lastDetail = entry.firstDetail;
  const prop = fc.asyncProperty(batchArb(s.arb), async (batch) => {
    let found: Violation[];
    try {
      found = await s.run(batch);
    } catch {
      return true; // a harness error is not this class: shrink past it
    }
    const v = found.find((x) => x.sig === sig);
    if (v !== undefined) lastDetail = v.detail;
    return v === undefined;
  });
  const details = await fc.check(prop, {
    seed: ledger.seed,
    path: String(entry.firstRun),
    examples: examplesOf(s),
    interruptAfterTimeLimit: SHRINK_MS,
    markInterruptAsFailure: false,
  });
  if (!details.failed || details.counterexample === null) {
    return `  (did not reproduce on replay; first seen in batch ${entry.firstRun}:)\n${entry.firstBatch}\n      ${entry.firstDetail}`;
  }
  const [batch] = details.counterexample as [T[]];
  return `${batch.map(s.describe).join('\n')}\n      => ${lastDetail}\n      (replay: DIFF_SEED=${ledger.seed}, path ${details.counterexamplePath}, ${details.numShrinks} shrinks)`;
}

/** Fail with every class of the given kinds: the first DIFF_SHRINK shrunk to a minimal request, the rest as first seen. */
async function expectNoClasses<T>(s: Search<T>, ledger: Ledger | undefined, kinds: readonly Kind[], promise: string): Promise<void> {
  if (ledger === undefined) throw new Error(`the ${s.name} search did not run`);
  // Most frequent first; DIFF_CLASS (a regular expression) moves the classes it matches to the front, to shrink those.
  const focus = (sig: string): number => (CLASS_FOCUS !== undefined && CLASS_FOCUS.test(sig) ? 1 : 0);
  const found = [...ledger.classes.entries()]
    .filter(([, e]) => kinds.includes(e.kind) || e.kind === 'harness')
    .sort((a, b) => focus(b[0]) - focus(a[0]) || b[1].count - a[1].count);
  if (found.length === 0) return;
  const parts: string[] = [];
  for (const [i, [sig, e]] of found.entries()) {
    const body =
      i < SHRINK_CLASSES
        ? await shrinkClass(s, ledger, sig)
        : `      => ${e.firstDetail}\n      (not shrunk: raise DIFF_SHRINK, replay with DIFF_SEED=${ledger.seed})`;
    parts.push(`[${i + 1}] ${sig}  (${e.count} times)\n${body}`);
  }
  throw new Error(
    `${promise}: ${found.length} class(es) of violations in ${ledger.cases} generated cases (${ledger.name} search, DIFF_SEED=${ledger.seed}, ${ledger.ms} ms)\n\n${parts.join('\n\n')}`,
  );
}

function logLedger(l: Ledger): void {
  if (process.env.DIFF_REPORT === undefined) return;
  const classes = [...l.classes.entries()].map(([sig, e]) => `  ${String(e.count).padStart(5)}  ${sig}`).join('\n');
  process.stdout.write(
    `differential ${l.name}: ${l.cases} cases in ${l.runs} batches, ${l.ms} ms, ${l.calls} handler calls, ${l.approvals} approvals, DIFF_SEED=${l.seed}${classes === '' ? ', no violations' : `\n${classes}`}\n`,
  );
}

/* ------------------------------------------------------------------------------------------ */
/* Deny-all                                                                                   */
/* ------------------------------------------------------------------------------------------ */

const HOST = '127.0.0.1';
const cases = caseArb(() => HOST);

/**
 * The known doors, always tried first (the generators reach them and their neighbours too):
 * a UTF-7 body the proxy reads as UTF-8, a REST id with a custom-verb suffix, a Connection header
 * that removes A2A-Version after routing, and a path tenant that contradicts the body's.
 */
const KNOWN_DOORS: readonly Case[] = [
  handCase('method name hidden in UTF-7 ("+AG0-essage/send")', { family: 'jsonrpc-0.3', op: 'send' }, () => ({
    ctParams: '; charset=utf-7',
    json: toJ({
      jsonrpc: '2.0',
      id: 1,
      method: '+AG0-essage/send',
      params: { message: { kind: 'message', messageId: 'm-utf7', role: 'user', parts: [{ kind: 'text', text: 'hello' }] } },
    }),
  })),
  handCase('content hidden in UTF-7 ("+AG0-olotov")', { family: 'jsonrpc-0.3', op: 'send' }, () => ({
    ctParams: '; charset=utf-7',
    json: toJ({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'm-utf7', role: 'user', parts: [{ kind: 'text', text: '+AG0-olotov' }] } },
    }),
  })),
  handCase('config id with a custom verb, GET', { family: 'rest-1.0', op: 'pushGet' }, (d) => ({ segs: [...d.segs.slice(0, -1), 'cfg:cancel'] })),
  handCase('config id with a custom verb, DELETE', { family: 'rest-1.0', op: 'pushDelete' }, (d) => ({ segs: [...d.segs.slice(0, -1), 'cfg:cancel'] })),
  handCase('Connection: a2a-version on the v0.3 extended card', { family: 'rest-0.3', op: 'extCard' }, (d) => ({
    headers: [...d.headers, ['A2A-Version', '1.0'], ['Connection', 'a2a-version']],
  })),
  handCase('path tenant "restricted", body tenant "public"', { family: 'rest-1.0', op: 'send', tenant: 'restricted' }, () => ({
    json: toJ({ tenant: 'public', message: { messageId: 'm-tenant', role: 'ROLE_USER', parts: [{ text: 'hello' }] } }),
  })),
];

/** The deny-all search through the proxy whose URL `proxyUrl` gives (read when the search runs). */
const denySearchVia = (name: string, proxyUrl: () => string, n: number): Search<Case> => ({
  name,
  arb: cases,
  examples: KNOWN_DOORS,
  cases: n,
  run: async (b) => checkDeny(b, await runBatch(portOf(proxyUrl()), b)),
  describe: describeCase,
});
const allowSearchVia = (name: string, proxyUrl: () => string, n: number, arb: fc.Arbitrary<Case> = cases): Search<Case> => ({
  name,
  arb,
  examples: KNOWN_DOORS,
  cases: n,
  run: async (b) => checkAllow(await runBatch(portOf(proxyUrl()), b)),
  describe: describeCase,
});

const denySearch = denySearchVia('deny-all', () => denyProxy.url, SEARCH_CASES.deny);

describe('deny-all guardian', () => {
  let ledger: Ledger | undefined;
  beforeAll(async () => {
    ledger = await explore(denySearch);
  }, SEARCH_TIMEOUT_MS);

  test(
    "the agent's request handler acts on nothing",
    async () => {
      await expectNoClasses(denySearch, ledger, ['bypass'], "Operations reached the agent's request handler although the guardian denied everything");
    },
    SEARCH_TIMEOUT_MS,
  );

  test(
    'nothing but plain card reads reaches the agent (unknown traffic is refused)',
    async () => {
      await expectNoClasses(denySearch, ledger, ['unjudged'], 'Requests reached the agent without a guardian decision');
    },
    SEARCH_TIMEOUT_MS,
  );

  test(
    'every request gets an answer, within a generous time limit',
    async () => {
      await expectNoClasses(denySearch, ledger, ['hang'], 'Requests were not answered');
    },
    SEARCH_TIMEOUT_MS,
  );

  test(
    "the proxy's own answers are well formed and in the caller's binding",
    async () => {
      await expectNoClasses(denySearch, ledger, ['terms'], "Proxy answers not in the binding's terms");
    },
    SEARCH_TIMEOUT_MS,
  );
});

/* ------------------------------------------------------------------------------------------ */
/* Allow-all                                                                                  */
/* ------------------------------------------------------------------------------------------ */

const allowSearch = allowSearchVia('allow-all', () => allowProxy.url, SEARCH_CASES.allow);

describe('allow-all guardian', () => {
  let ledger: Ledger | undefined;
  beforeAll(async () => {
    stack.guardian.script(() => ({ decision: 'allow', message: 'allow-all guardian' }));
    ledger = await explore(allowSearch);
  }, SEARCH_TIMEOUT_MS);

  beforeEach(() => stack.guardian.script(() => ({ decision: 'allow', message: 'allow-all guardian' })));

  test(
    'every operation the handler acts on is one the guardian approved (same operation, ids, content, tenant)',
    async () => {
      await expectNoClasses(allowSearch, ledger, ['mismatch'], 'The agent acted on something other than what the guardian approved');
    },
    SEARCH_TIMEOUT_MS,
  );

  test(
    'the agent receives no request the guardian did not approve',
    async () => {
      await expectNoClasses(allowSearch, ledger, ['unjudged'], 'Requests reached the agent without a guardian decision');
    },
    SEARCH_TIMEOUT_MS,
  );

  test(
    'every request gets an answer, within a generous time limit',
    async () => {
      await expectNoClasses(allowSearch, ledger, ['hang'], 'Requests were not answered');
    },
    SEARCH_TIMEOUT_MS,
  );
});

/* ------------------------------------------------------------------------------------------ */
/* Standard codes                                                                             */
/* ------------------------------------------------------------------------------------------ */

const STANDARD_RPC = new Set([-32700, -32600, -32601, -32005]);
const STANDARD_REST = new Set([400, 404]);

/** What the SDK agent answers directly, when it is a standard refusal: the JSON-RPC code or REST status. */
function agentRefusal(d: Defect, o: WireOutcome): { code: number; id: unknown } | undefined {
  if (o.kind !== 'answer') return undefined;
  if (d.binding === 'jsonrpc') {
    const json = jsonOf(o.body);
    const err = isObj(json) ? json['error'] : undefined;
    const code = isObj(err) ? err['code'] : undefined;
    return o.status === 200 && typeof code === 'number' && STANDARD_RPC.has(code) ? { code, id: (json as Obj)['id'] } : undefined;
  }
  return STANDARD_REST.has(o.status) ? { code: o.status, id: undefined } : undefined;
}

/**
 * The proxy's answer to a request the agent refuses. Through the allow-all proxy either the proxy
 * refuses it itself (same code, with its REQUEST_REJECTED ErrorInfo) or, for an A2A call it could
 * read (a known method of the other version, an unsupported Content-Type), the call was judged and
 * forwarded and the agent's own refusal comes back. Anything else (another code, a relayed answer
 * to something nothing could judge, an answer outside the binding's forms) is a difference.
 */
function codeProblem(d: Defect, direct: WireOutcome, proxied: WireOutcome): Violation | undefined {
  const want = agentRefusal(d, direct);
  if (want === undefined) return undefined; // the agent does not refuse it with a standard code: nothing to compare
  // The A2A media type on JSON-RPC: the JS SDK agent refuses it, the proxy takes it (as the Python SDK's agent does)
  // and forwards application/json; what the agent then acts on is the allow-all oracle's to check.
  if (
    d.binding === 'jsonrpc' &&
    want.code === -32005 &&
    (header(d.wire.headers, 'content-type') ?? '').split(';')[0]?.trim().toLowerCase() === 'application/a2a+json'
  )
    return undefined;
  const v = (got: string, detail: string): Violation => ({ kind: 'code', sig: `code: ${d.binding} agent ${want.code}, proxy ${got}`, detail });
  if (proxied.kind !== 'answer') return v('no answer', `proxy: ${proxied.kind}`);
  const json = jsonOf(proxied.body);
  const info = proxyErrorInfo(json);
  const said = `agent: HTTP ${direct.kind === 'answer' ? `${direct.status} ${short(direct.body.toString('utf8'), 200)}` : direct.kind}\n      proxy: HTTP ${proxied.status} ${short(proxied.body.toString('utf8'), 300)}`;
  const err = isObj(json) ? json['error'] : undefined;
  if (info !== undefined && info['reason'] !== 'REQUEST_REJECTED') return v(`${String(info['reason'])}`, said);
  // Nothing a guardian could judge can be read out of it: the answer must be the proxy's own refusal.
  if (d.unjudgeable && info === undefined) {
    return v(
      `HTTP ${proxied.status} without the proxy's REQUEST_REJECTED ErrorInfo (the agent, not the proxy, refused something no A2A call can be read from)`,
      said,
    );
  }
  if (d.binding === 'jsonrpc') {
    const code = isObj(err) ? err['code'] : undefined;
    if (proxied.status !== 200 || code !== want.code) return v(`HTTP ${proxied.status} ${String(code)}`, said);
    if (info !== undefined && want.code === -32601 && (json as Obj)['id'] !== want.id) return v('-32601 with another id', said);
    return undefined;
  }
  if (proxied.status !== want.code) return v(`HTTP ${proxied.status}`, said);
  // The proxy's own refusal is a google.rpc.Status; a relayed agent error is JSON too (v1 Status, v0.3 flat {code,message}).
  if (info !== undefined && (!isObj(err) || err['code'] !== want.code || typeof err['status'] !== 'string'))
    return v(`HTTP ${proxied.status} refusal not in google.rpc.Status form`, said);
  if (info === undefined && !isObj(json)) return v(`HTTP ${proxied.status} with a body that is not JSON`, said);
  return undefined;
}

/** The standard-codes search: each defect straight to the agent and through the allow-all proxy at `proxyUrl`. */
const codeSearchVia = (name: string, proxyUrl: () => string, n: number): Search<Defect> => ({
  name,
  arb: defectArb,
  cases: n,
  describe: (d) => String((d as unknown as { [fc.toStringMethod]: () => string })[fc.toStringMethod]()),
  run: async (batch) => {
    const agentPort = portOf(stack.agent.origin);
    const proxyPort = portOf(proxyUrl());
    const results = await Promise.all(
      batch.map(async (d) => [d, await exchange(agentPort, d.wire, ANSWER_TIMEOUT_MS), await exchange(proxyPort, d.wire, ANSWER_TIMEOUT_MS)] as const),
    );
    await agentIdle();
    return results.flatMap(([d, direct, proxied]) => {
      const p = codeProblem(d, direct, proxied);
      return [...(p === undefined ? [] : [p]), ...answered([proxied])];
    });
  },
});

const codeSearch = codeSearchVia('standard-codes', () => allowProxy.url, SEARCH_CASES.codes);

describe('standard codes', () => {
  let ledger: Ledger | undefined;
  beforeAll(async () => {
    stack.guardian.script(() => ({ decision: 'allow', message: 'allow-all guardian' }));
    ledger = await explore(codeSearch);
  }, SEARCH_TIMEOUT_MS);

  test(
    "where the SDK agent refuses a request, the caller gets the same standard code (the proxy's own refusals carry its ErrorInfo)",
    async () => {
      await expectNoClasses(codeSearch, ledger, ['code', 'hang'], 'The proxy does not answer in the standard terms the agent uses');
    },
    SEARCH_TIMEOUT_MS,
  );
});

/* ------------------------------------------------------------------------------------------ */
/* Self-check of the oracles                                                                  */
/* ------------------------------------------------------------------------------------------ */

/**
 * The oracles are only worth their failures if a proxy that keeps the promise passes them and one
 * that does not is caught. test/helpers/reference-proxy.ts is a minimal positive-model proxy
 * (JSON-RPC only, everything else refused) and a plain relay; the same searches run through them.
 */
describe('self-check of the oracles', () => {
  let refDeny: ReferenceProxy | undefined;
  let refAllow: ReferenceProxy | undefined;
  let relay: ReferenceProxy | undefined;
  const must = (p: ReferenceProxy | undefined): string => {
    if (p === undefined) throw new Error('reference proxy not started');
    return p.url;
  };
  beforeAll(async () => {
    const upstream = stack.agent.origin;
    refDeny = await startReferenceProxy({ upstream, guardianUrl: denyGuardian.url, mode: 'positive' });
    refAllow = await startReferenceProxy({ upstream, guardianUrl: stack.guardian.url, mode: 'positive' });
    relay = await startReferenceProxy({ upstream, guardianUrl: stack.guardian.url, mode: 'relay' });
  });
  afterAll(async () => {
    for (const p of [refDeny, refAllow, relay]) await p?.close();
  });
  beforeEach(() => stack.guardian.script(() => ({ decision: 'allow', message: 'allow-all guardian' })));

  const ALL: readonly Kind[] = ['bypass', 'unjudged', 'hang', 'terms', 'mismatch', 'code'];

  test(
    'a minimal positive-model proxy passes every deny-all oracle',
    async () => {
      const s = denySearchVia('reference deny-all', () => must(refDeny), SELF_CASES);
      const ledger = await explore(s);
      await expectNoClasses(s, ledger, ALL, 'The deny-all oracles fail a proxy that keeps the promise (a harness bug)');
    },
    SEARCH_TIMEOUT_MS,
  );

  test(
    'a minimal positive-model proxy passes every allow-all oracle',
    async () => {
      // One mutation a case: most JSON-RPC calls stay readable, so the reference forwards them and the readings are compared.
      const s = allowSearchVia(
        'reference allow-all',
        () => must(refAllow),
        SELF_CASES,
        caseArb(() => HOST, 1),
      );
      const ledger = await explore(s);
      await expectNoClasses(s, ledger, ALL, 'The allow-all oracles fail a proxy that keeps the promise (a harness bug)');
      // Not vacuous: the reference forwards the calls it can read, and the handler acts on them.
      expect(ledger.calls).toBeGreaterThan(0);
      expect(ledger.approvals).toBeGreaterThanOrEqual(ledger.calls);
    },
    SEARCH_TIMEOUT_MS,
  );

  test(
    'a minimal positive-model proxy passes the standard-codes oracle',
    async () => {
      const s = codeSearchVia('reference standard-codes', () => must(refAllow), SELF_CASES);
      const ledger = await explore(s);
      await expectNoClasses(s, ledger, ALL, 'The standard-codes oracle fails a proxy that answers like the agent (a harness bug)');
    },
    SEARCH_TIMEOUT_MS,
  );

  test(
    'a relaying proxy is caught: with a deny-all guardian the handler acts',
    async () => {
      const ledger = await explore(denySearchVia('relay deny-all', () => must(relay), CONCURRENCY * 4));
      const kinds = new Set([...ledger.classes.values()].map((e) => e.kind));
      expect(kinds).toContain('bypass');
      expect(kinds).toContain('unjudged');
    },
    SEARCH_TIMEOUT_MS,
  );
});
