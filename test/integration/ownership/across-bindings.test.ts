/**
 * Task ownership across callers and bindings. Caller A makes tasks (and a context) over
 * gRPC, JSON-RPC and REST; caller B then names them in every operation that names a task or a
 * context, over every binding and version (JSON-RPC v1.0 and v0.3, REST v1.0 and v0.3, gRPC), with
 * the id in the spellings each binding's parser accepts (camelCase or snake_case members,
 * percent-encoded REST path ids). Controls: B's own task through the same operation and binding.
 *
 * Oracle at the real SDK agent's request handler (one agent serving JSON-RPC, REST and gRPC): while
 * B calls, the handler never acts on a call that names one of A's ids; B's calls on its own task
 * do reach it (the oracle is not vacuous). OWN_X_CASES (default 120) sets the cases; OWN_X_SEED replays.
 */
import fc from 'fast-check';
import { rawSse, sendReq } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFrame, makeGrpcClient, rawGrpc } from '../../helpers/grpc';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(180_000);

const CASES = Number(process.env.OWN_X_CASES ?? 120);
const SEED = process.env.OWN_X_SEED === undefined ? undefined : Number(process.env.OWN_X_SEED);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap, stepMs: 20, pushNotifications: true });

type Binding = 'jsonrpc1' | 'jsonrpc03' | 'rest1' | 'rest03' | 'grpc';
type Op = 'get' | 'cancel' | 'subscribe' | 'pushSet' | 'pushGet' | 'pushList' | 'pushDelete' | 'sendTask' | 'sendContext' | 'sendRef';
type Spelling = 'plain' | 'snake' | 'percent';

interface Case {
  readonly binding: Binding;
  readonly op: Op;
  readonly spelling: Spelling;
  /** Which of A's tasks (made over gRPC, JSON-RPC, REST), or B's own (control). */
  readonly target: 'aGrpc' | 'aJsonrpc' | 'aRest' | 'own';
}

let ids: TestIdentities;
let proxy: TestProxy;
/** Task ids by target, and the context of each. */
const tasks: Record<Case['target'], { id: string; contextId: string }> = {} as Record<Case['target'], { id: string; contextId: string }>;

const GRPC_RPC: Record<Op, string> = {
  get: 'GetTask',
  cancel: 'CancelTask',
  subscribe: 'SubscribeToTask',
  pushSet: 'CreateTaskPushNotificationConfig',
  pushGet: 'GetTaskPushNotificationConfig',
  pushList: 'ListTaskPushNotificationConfigs',
  pushDelete: 'DeleteTaskPushNotificationConfig',
  sendTask: 'SendMessage',
  sendContext: 'SendMessage',
  sendRef: 'SendMessage',
};
const V03_METHOD: Record<Op, string> = {
  get: 'tasks/get',
  cancel: 'tasks/cancel',
  subscribe: 'tasks/resubscribe',
  pushSet: 'tasks/pushNotificationConfig/set',
  pushGet: 'tasks/pushNotificationConfig/get',
  pushList: 'tasks/pushNotificationConfig/list',
  pushDelete: 'tasks/pushNotificationConfig/delete',
  sendTask: 'message/send',
  sendContext: 'message/send',
  sendRef: 'message/send',
};

const key = (name: string, sp: Spelling) => (sp === 'snake' ? name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) : name);

/** The v1.0 request params (JSON-RPC v1.0 and gRPC), naming `id` / `ctx`. */
function v1Params(op: Op, id: string, ctx: string, sp: Spelling, n: number): Record<string, unknown> {
  const msg = (extra: Record<string, unknown>) => ({ message: { [key('messageId', sp)]: `x-${n}`, role: 'ROLE_USER', parts: [{ text: 'hello' }], ...extra } });
  switch (op) {
    case 'get':
    case 'cancel':
    case 'subscribe':
      return { id };
    case 'pushSet':
      return { [key('taskId', sp)]: id, id: 'cfg-x', url: 'https://hooks.example/x' };
    case 'pushGet':
    case 'pushDelete':
      return { [key('taskId', sp)]: id, id: 'cfg-x' };
    case 'pushList':
      return { [key('taskId', sp)]: id };
    case 'sendTask':
      return msg({ [key('taskId', sp)]: id });
    case 'sendContext':
      return msg({ [key('contextId', sp)]: ctx });
    case 'sendRef':
      return msg({ [key('referenceTaskIds', sp)]: [id] });
  }
}

function v03Params(op: Op, id: string, ctx: string, n: number): Record<string, unknown> {
  const msg = (extra: Record<string, unknown>) => ({
    message: { kind: 'message', messageId: `x03-${n}`, role: 'user', parts: [{ kind: 'text', text: 'hello' }], ...extra },
  });
  switch (op) {
    case 'get':
    case 'cancel':
    case 'subscribe':
    case 'pushList':
      return { id };
    case 'pushSet':
      return { taskId: id, pushNotificationConfig: { id: 'cfg-x', url: 'https://hooks.example/x' } };
    case 'pushGet':
    case 'pushDelete':
      return { id, pushNotificationConfigId: 'cfg-x' };
    case 'sendTask':
      return msg({ taskId: id });
    case 'sendContext':
      return msg({ contextId: ctx });
    case 'sendRef':
      return msg({ referenceTaskIds: [id] });
  }
}

function pathId(id: string, sp: Spelling): string {
  return sp === 'percent' ? [...id].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('') : encodeURIComponent(id);
}

/** REST verb, path below the base, and body, for a v1.0 (`prefix` '') or v0.3 (`/v1`) route. */
function restCall(op: Op, id: string, ctx: string, sp: Spelling, n: number, v03: boolean): { verb: string; path: string; body?: unknown } {
  const p = v03 ? '/v1' : '';
  const t = pathId(id, sp);
  const message = (extra: Record<string, unknown>) => ({
    message: v03
      ? { messageId: `r03-${n}`, role: 'ROLE_USER', content: [{ text: 'hello' }], ...extra }
      : { messageId: `r-${n}`, role: 'ROLE_USER', parts: [{ text: 'hello' }], ...extra },
  });
  switch (op) {
    case 'get':
      return { verb: 'GET', path: `${p}/tasks/${t}` };
    case 'cancel':
      return { verb: 'POST', path: `${p}/tasks/${t}:cancel` };
    case 'subscribe':
      return { verb: v03 ? 'GET' : 'POST', path: `${p}/tasks/${t}:subscribe` };
    case 'pushSet':
      return {
        verb: 'POST',
        path: `${p}/tasks/${t}/pushNotificationConfigs`,
        body: v03
          ? { name: `tasks/${id}/pushNotificationConfigs/cfg-x`, pushNotificationConfig: { id: 'cfg-x', url: 'https://hooks.example/x' } }
          : { id: 'cfg-x', url: 'https://hooks.example/x' },
      };
    case 'pushGet':
      return { verb: 'GET', path: `${p}/tasks/${t}/pushNotificationConfigs/cfg-x` };
    case 'pushList':
      return { verb: 'GET', path: `${p}/tasks/${t}/pushNotificationConfigs` };
    case 'pushDelete':
      return { verb: 'DELETE', path: `${p}/tasks/${t}/pushNotificationConfigs/cfg-x` };
    case 'sendTask':
      return { verb: 'POST', path: `${p}/message:send`, body: message({ [key('taskId', sp)]: id }) };
    case 'sendContext':
      return { verb: 'POST', path: `${p}/message:send`, body: message({ [key('contextId', sp)]: ctx }) };
    case 'sendRef':
      return { verb: 'POST', path: `${p}/message:send`, body: message({ [key('referenceTaskIds', sp)]: [id] }) };
  }
}

async function call(c: Case, who: Caller, n: number): Promise<void> {
  const { id, contextId } = tasks[c.target];
  const auth = ids.headersAs(who);
  const streaming = c.op === 'subscribe';
  const signal = AbortSignal.timeout(1500);
  if (c.binding === 'grpc') {
    const m = grpcMethodForPath(`/lf.a2a.v1.A2AService/${GRPC_RPC[c.op]}`);
    if (m === undefined) throw new Error(c.op);
    const codec = codecFor(m).request;
    // gRPC carries bytes: a snake_case JSON member is the same field once encoded.
    const frame = grpcFrame(codec.encode(codec.fromJson(v1Params(c.op, id, contextId, c.spelling === 'snake' ? 'snake' : 'plain', n))));
    await Promise.race([rawGrpc(proxy.grpcAddress as string, m.path, frame, { 'a2a-version': '1.0', ...auth }), new Promise((r) => setTimeout(r, 1500))]);
    return;
  }
  if (c.binding === 'jsonrpc1' || c.binding === 'jsonrpc03') {
    const v03 = c.binding === 'jsonrpc03';
    const body = {
      jsonrpc: '2.0',
      id: n,
      method: v03 ? V03_METHOD[c.op] : GRPC_RPC[c.op],
      params: v03 ? v03Params(c.op, id, contextId, n) : v1Params(c.op, id, contextId, c.spelling, n),
    };
    const headers = { ...auth, ...(v03 ? {} : { 'a2a-version': '1.0' }) };
    if (streaming) await rawSse(`${proxy.url}/a2a/jsonrpc`, body, headers, { signal }).catch(() => undefined);
    else
      await fetch(`${proxy.url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
        signal,
      })
        .then((r) => r.text())
        .catch(() => undefined);
    return;
  }
  const v03 = c.binding === 'rest03';
  const r = restCall(c.op, id, contextId, c.spelling, n, v03);
  const headers: Record<string, string> = {
    ...auth,
    ...(v03 ? {} : { 'a2a-version': '1.0' }),
    ...(r.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(streaming ? { accept: 'text/event-stream' } : {}),
  };
  await fetch(`${proxy.url}/a2a/rest${r.path}`, { method: r.verb, headers, ...(r.body === undefined ? {} : { body: JSON.stringify(r.body) }), signal })
    .then((x) => x.text())
    .catch(() => undefined);
}

/** A's ids (tasks and contexts), which B must never reach. */
const aIds = (): string[] => (['aGrpc', 'aJsonrpc', 'aRest'] as const).flatMap((t) => [tasks[t].id, tasks[t].contextId]);

beforeAll(async () => {
  ids = await startIdentities();
  proxy = await s.proxy({ GRPC_PORT: '0', ...ids.env });
  // A's tasks keep working (wait-for-cancel) so that every operation applies; one per binding.
  const grpcA = (await makeGrpcClient(proxy.url)).client;
  const made = (await grpcA.sendMessage(sendReq('wait-for-cancel A grpc', true), { serviceParameters: ids.headersAs('A') })) as {
    id: string;
    contextId: string;
  };
  tasks.aGrpc = { id: made.id, contextId: made.contextId };
  const viaJsonRpc = await fetch(`${proxy.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('A') },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: 'a-j', role: 'ROLE_USER', parts: [{ text: 'wait-for-cancel A jsonrpc' }] }, configuration: { returnImmediately: true } },
    }),
  }).then((r) => r.json() as Promise<{ result: { task: { id: string; contextId: string } } }>);
  tasks.aJsonrpc = { id: viaJsonRpc.result.task.id, contextId: viaJsonRpc.result.task.contextId };
  const viaRest = await fetch(`${proxy.url}/a2a/rest/message:send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('A') },
    body: JSON.stringify({
      message: { messageId: 'a-r', role: 'ROLE_USER', parts: [{ text: 'wait-for-cancel A rest' }] },
      configuration: { returnImmediately: true },
    }),
  }).then((r) => r.json() as Promise<{ task: { id: string; contextId: string } }>);
  tasks.aRest = { id: viaRest.task.id, contextId: viaRest.task.contextId };
  const own = (await grpcA.sendMessage(sendReq('wait-for-cancel B own', true), { serviceParameters: ids.headersAs('B') })) as { id: string; contextId: string };
  tasks.own = { id: own.id, contextId: own.contextId };
});

afterAll(async () => {
  await ids?.close();
});

const caseArb: fc.Arbitrary<Case> = fc.record({
  binding: fc.constantFrom<Binding>('jsonrpc1', 'jsonrpc03', 'rest1', 'rest03', 'grpc'),
  op: fc.constantFrom<Op>('get', 'cancel', 'subscribe', 'pushSet', 'pushGet', 'pushList', 'pushDelete', 'sendTask', 'sendContext', 'sendRef'),
  spelling: fc.constantFrom<Spelling>('plain', 'snake', 'percent'),
  target: fc.constantFrom<Case['target']>('aGrpc', 'aJsonrpc', 'aRest', 'aGrpc', 'aJsonrpc', 'aRest', 'own'),
});

test("B never reaches A's tasks or contexts, over any binding, version or spelling; B's own calls do reach the agent", async () => {
  let n = 0;
  let ownReached = 0;
  const seen = new Set<string>();
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      rec.clear();
      await call(c, 'B', n++);
      seen.add(`${c.binding}/${c.op}`);
      const foreign = aIds();
      const reached = rec.calls.filter((x) => foreign.some((id) => JSON.stringify(x.params).includes(id)));
      expect({ case: c, reached: reached.map((x) => x.method) }).toEqual({ case: c, reached: [] });
      if (c.target === 'own' && rec.calls.length > 0) ownReached++;
    }),
    { numRuns: CASES, ...(SEED === undefined ? {} : { seed: SEED }) },
  );
  expect(ownReached).toBeGreaterThan(0);
  expect(seen.size).toBeGreaterThan(20);
});
