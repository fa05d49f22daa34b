/**
 * An agent that decodes member names case-insensitively. Go's encoding/json (the Go A2A
 * SDKs) matches `ID`, `TaskId` or `CONTEXTID` to the fields `id`, `taskId`, `contextId`; the guardian,
 * task ownership and a JavaScript agent read only the exact names. A call naming a task under such a
 * spelling meant one task to the proxy (none) and another to the agent.
 *
 * A real SDK agent behind a front that records every request as a case-insensitive decoder reads it
 * (the oracle: what a Go agent would act on). Two proxies: one with task ownership (callers A and B),
 * one whose guardian denies every call that names a forbidden task or context in the exact names.
 * Generated calls: each operation that names a task or context (JSON-RPC v1.0 and v0.3, REST), the
 * member in spellings a case-insensitive or separator-folding decoder takes (UPPER, Pascal, random
 * case, snake and kebab in other cases), at its place in the call. Oracle: the recorded reading never
 * names A's task or context for B's calls, nor a forbidden id past the guardian. Control: the exact
 * spelling of B's own task reaches the agent. CASE_X_CASES (default 80) sets the cases.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { closeServer } from '../../helpers/net';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(180_000);

const CASES = Number(process.env.CASE_X_CASES ?? 80);
const s = useStack();

/** The request bodies the agent got, read as a case-insensitive decoder reads them: names folded, ids under the id-bearing names. */
const goReads: { path: string; ids: string[] }[] = [];
const ID_NAMES = new Set(['id', 'taskid', 'contextid', 'referencetaskids']);

function idsAsGoReads(v: unknown, into: string[]): void {
  if (Array.isArray(v)) return v.forEach((e) => idsAsGoReads(e, into));
  if (typeof v !== 'object' || v === null) return;
  for (const [k, child] of Object.entries(v)) {
    if (k.toLowerCase() === 'metadata') continue;
    if (ID_NAMES.has(k.toLowerCase())) {
      for (const x of Array.isArray(child) ? child : [child]) if (typeof x === 'string') into.push(x);
    }
    idsAsGoReads(child, into);
  }
}

let front: http.Server;
let ids: TestIdentities;
let owning: TestProxy;
let judged: TestProxy;
let aTask = '';
let aContext = '';
let bTask = '';

beforeAll(async () => {
  front = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const read: string[] = [];
      // The REST path names a task too (`/tasks/{id}`): a Go router reads it exactly as written.
      for (const m of (req.url ?? '').matchAll(/\/tasks\/([^/:?]+)/g)) read.push(decodeURIComponent(m[1] as string));
      try {
        idsAsGoReads(body.length > 0 ? JSON.parse(body.toString('utf8')) : {}, read);
      } catch {
        /* not JSON: nothing read */
      }
      if (req.method !== 'GET' || !(req.url ?? '').includes('.well-known')) goReads.push({ path: req.url ?? '', ids: read });
      const up = http.request(`${s.agent.origin}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      });
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  const upstream = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  ids = await startIdentities();
  owning = await s.proxy({ ROLE: 'server', UPSTREAM_URL: upstream, ...ids.env });
  judged = await s.proxy({ ROLE: 'server', UPSTREAM_URL: upstream });
  const make = async (who: Caller): Promise<{ id: string; contextId: string }> => {
    const r = await fetch(`${owning.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs(who) },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: { messageId: `mk-${who}`, role: 'ROLE_USER', parts: [{ text: 'hello' }] } },
      }),
    }).then((x) => x.json() as Promise<{ result: { task: { id: string; contextId: string } } }>);
    return r.result.task;
  };
  ({ id: aTask, contextId: aContext } = await make('A'));
  bTask = (await make('B')).id;
});

afterAll(async () => {
  await ids?.close();
  await closeServer(front);
});

type Spelling = 'exact' | 'upper' | 'pascal' | 'random' | 'snakeUpper' | 'kebab';
function spell(name: string, how: Spelling, seed: number): string {
  const snake = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  switch (how) {
    case 'exact':
      return name;
    case 'upper':
      return name.toUpperCase();
    case 'pascal':
      return name[0]!.toUpperCase() + name.slice(1);
    case 'random': {
      const out = [...name].map((c, i) => (((seed >> (i % 16)) & 1) === 1 ? c.toUpperCase() : c.toLowerCase())).join('');
      return out === name ? name.toUpperCase() : out;
    }
    case 'snakeUpper':
      return snake.toUpperCase();
    case 'kebab':
      return snake.replace(/_/g, '-').replace(/^./, (c) => c.toUpperCase());
  }
}

type Op = 'get' | 'cancel' | 'subscribe' | 'sendTask' | 'sendContext' | 'sendRef' | 'pushGet' | 'list';
interface Call {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/** B's call naming `target` under the spelled member, in the chosen binding. */
function call(op: Op, binding: 'jsonrpc1' | 'jsonrpc03' | 'rest', how: Spelling, seed: number, target: { task: string; context: string }): Call {
  const n = (name: string) => spell(name, how, seed);
  const msg = (extra: Record<string, unknown>) => ({
    messageId: `m-${seed}`,
    role: binding === 'jsonrpc03' ? 'user' : 'ROLE_USER',
    parts: binding === 'jsonrpc03' ? [{ kind: 'text', text: 'hi' }] : [{ text: 'hi' }],
    ...(binding === 'jsonrpc03' ? { kind: 'message' } : {}),
    ...extra,
  });
  const params: Record<Op, Record<string, unknown>> = {
    get: { [n('id')]: target.task },
    cancel: { [n('id')]: target.task },
    subscribe: { [n('id')]: target.task },
    sendTask: { message: msg({ [n('taskId')]: target.task }) },
    sendContext: { message: msg({ [n('contextId')]: target.context }) },
    sendRef: { message: msg({ [n('referenceTaskIds')]: [target.task] }) },
    pushGet: binding === 'jsonrpc03' ? { [n('id')]: target.task, pushNotificationConfigId: 'cfg' } : { [n('taskId')]: target.task, id: 'cfg' },
    list: { [n('contextId')]: target.context },
  };
  const v1: Record<Op, string> = {
    get: 'GetTask',
    cancel: 'CancelTask',
    subscribe: 'SubscribeToTask',
    sendTask: 'SendMessage',
    sendContext: 'SendMessage',
    sendRef: 'SendMessage',
    pushGet: 'GetTaskPushNotificationConfig',
    list: 'ListTasks',
  };
  const v03: Record<Op, string> = {
    get: 'tasks/get',
    cancel: 'tasks/cancel',
    subscribe: 'tasks/resubscribe',
    sendTask: 'message/send',
    sendContext: 'message/send',
    sendRef: 'message/send',
    pushGet: 'tasks/pushNotificationConfig/get',
    list: 'tasks/get',
  };
  if (binding !== 'rest') {
    const method = binding === 'jsonrpc1' ? v1[op] : v03[op];
    return {
      path: '/a2a/jsonrpc',
      headers: binding === 'jsonrpc1' ? { 'a2a-version': '1.0' } : {},
      body: { jsonrpc: '2.0', id: seed, method, params: params[op] },
    };
  }
  // REST carries the other operations' task ids in the path, spelled by nobody: its bodies are the messages.
  return {
    path: '/a2a/rest/message:send',
    headers: { 'a2a-version': '1.0' },
    body: op.startsWith('send') ? params[op] : { message: msg({ [n('taskId')]: target.task }) },
  };
}

async function send(proxy: TestProxy, c: Call, who: Caller | undefined): Promise<void> {
  await fetch(`${proxy.url}${c.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...c.headers, ...(who === undefined ? {} : ids.headersAs(who)) },
    body: JSON.stringify(c.body),
    signal: AbortSignal.timeout(5000),
  })
    .then((r) => r.text())
    .catch(() => undefined);
}

const caseArb = fc.record({
  op: fc.constantFrom<Op>('get', 'cancel', 'subscribe', 'sendTask', 'sendContext', 'sendRef', 'pushGet', 'list'),
  binding: fc.constantFrom('jsonrpc1' as const, 'jsonrpc03' as const, 'rest' as const),
  how: fc.constantFrom<Spelling>('upper', 'pascal', 'random', 'snakeUpper', 'kebab'),
  seed: fc.nat(65535),
});

test("task ownership: B naming A's task or context in any spelling never makes a case-insensitive agent act on it", async () => {
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      goReads.length = 0;
      await send(owning, call(c.op, c.binding, c.how, c.seed, { task: aTask, context: aContext }), 'B');
      const named = goReads.flatMap((r) => r.ids).filter((x) => x === aTask || x === aContext);
      expect({ case: c, named }).toEqual({ case: c, named: [] });
    }),
    { numRuns: CASES },
  );
  // Control: B's own task in the exact spelling reaches the agent.
  goReads.length = 0;
  await send(owning, call('get', 'jsonrpc1', 'exact', 1, { task: bTask, context: '' }), 'B');
  expect(goReads.flatMap((r) => r.ids)).toContain(bTask);
});

test('guardian: a call the guardian would deny in the exact spelling never reaches a case-insensitive agent in another', async () => {
  const FORBIDDEN = { task: 'forbidden-task-0001', context: 'forbidden-ctx-0001' };
  // A JavaScript guardian policy: it reads the exact member names, as the payload gives them.
  s.guardian.script((env) => {
    const p = env?.params?.payload?.params as Record<string, unknown> | undefined;
    const m = (p?.message ?? {}) as Record<string, unknown>;
    const named = [p?.id, p?.taskId, p?.contextId, m.taskId, m.contextId, ...(Array.isArray(m.referenceTaskIds) ? m.referenceTaskIds : [])];
    return named.some((x) => x === FORBIDDEN.task || x === FORBIDDEN.context) ? { decision: 'deny', message: 'forbidden task' } : { decision: 'allow' };
  });
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      goReads.length = 0;
      await send(judged, call(c.op, c.binding, c.how, c.seed, FORBIDDEN), undefined);
      const named = goReads.flatMap((r) => r.ids).filter((x) => x === FORBIDDEN.task || x === FORBIDDEN.context);
      expect({ case: c, named }).toEqual({ case: c, named: [] });
    }),
    { numRuns: CASES },
  );
  // Control: an allowed task in the exact spelling reaches the agent.
  goReads.length = 0;
  await send(judged, call('get', 'jsonrpc1', 'exact', 2, { task: 'some-other-task', context: '' }), undefined);
  expect(goReads.flatMap((r) => r.ids)).toContain('some-other-task');
});
