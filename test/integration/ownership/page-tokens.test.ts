/**
 * Page tokens under task ownership, with real parts: a real SDK agent (HTTP and gRPC bindings, its
 * handler recorded), a recording guardian, a ROLE=server a2a-guard with IDENTITY_POLICY=required and
 * GRPC_PORT, and two verified callers A and B (OIDC bearer tokens).
 *
 * The SDK agent's page token is base64("<timestamp>|<id of the last task of the unfiltered page>"),
 * so relayed as is it names other callers' tasks. The proxy seals it for the caller and unseals it
 * before the guardian and the agent see the next call; over JSON-RPC, REST and gRPC:
 *   - B pages (pageSize 1) through a run of A's tasks: empty pages carry a token, every one of B's
 *     tasks comes once, none of A's, and no token B sees decodes to anything of the agent's;
 *   - the guardian judges and the agent receives the agent's own token;
 *   - A's token used by B, a tampered token, a token the agent made and a token of another proxy
 *     are refused as invalid parameters, before the guardian and the agent.
 */
import { startAgent, rawRpc, TaskState, type Client, type TestAgent } from '../../helpers/agent';
import { grpcFailure, makeGrpcClient } from '../../helpers/grpc';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { startIdentities, type Caller, type TestIdentities } from '../../helpers/identities';

jest.setTimeout(60_000);

const rec = handlerRecorder();
let agent: TestAgent;
let guardian: TestGuardian;
let ids: TestIdentities;
let proxy: TestProxy;
let grpc: Client;

beforeAll(async () => {
  agent = await startAgent({ grpc: true, wrapRequestHandler: rec.wrap });
  guardian = await startGuardian();
  ids = await startIdentities();
  proxy = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', GRPC_PORT: '0', ...ids.env });
  ({ client: grpc } = await makeGrpcClient(proxy.url, { fetchImpl: ids.fetchAs('A') }));
});
afterAll(async () => {
  await proxy?.close();
  await agent?.close();
  await guardian?.close();
  await ids?.close();
});
beforeEach(() => {
  rec.clear();
  guardian.reset();
  guardian.clear();
});

const V1 = { 'a2a-version': '1.0' };
/** Every task each caller created in this file (the agent lists them all). */
const created: Record<Caller, string[]> = { A: [], B: [] };

async function create(who: Caller, text: string): Promise<string> {
  const r = await rawRpc(
    `${proxy.url}/a2a/jsonrpc`,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] } },
    },
    { ...ids.headersAs(who), ...V1 },
  );
  const id = r.json?.result?.task?.id as string;
  expect(id).toBeTruthy();
  created[who].push(id);
  return id;
}

interface Page {
  readonly ids: string[];
  readonly next: string | undefined;
  /** The answer as the caller received it. */
  readonly text: string;
}

/** One ListTasks call: a page, or the refusal (JSON-RPC error code, HTTP status, gRPC status code). */
type List = (who: Caller, token: string | undefined, pageSize?: number) => Promise<Page | { refused: number }>;

const LISTS: Record<'JSON-RPC' | 'REST' | 'gRPC', List> = {
  'JSON-RPC': async (who, token, pageSize = 1) => {
    const r = await rawRpc(
      `${proxy.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 2, method: 'ListTasks', params: { pageSize, ...(token === undefined ? {} : { pageToken: token }) } },
      { ...ids.headersAs(who), ...V1 },
    );
    if (r.json?.error !== undefined) return { refused: r.json.error.code as number };
    return { ids: (r.json.result.tasks ?? []).map((t: { id: string }) => t.id), next: r.json.result.nextPageToken || undefined, text: r.text };
  },
  REST: async (who, token, pageSize = 1) => {
    const q = new URLSearchParams({ pageSize: String(pageSize), ...(token === undefined ? {} : { pageToken: token }) });
    const res = await fetch(`${proxy.url}/a2a/rest/tasks?${q}`, { headers: { ...ids.headersAs(who), ...V1 } });
    const text = await res.text();
    if (res.status !== 200) return { refused: res.status };
    const body = JSON.parse(text) as { tasks?: Array<{ id: string }>; nextPageToken?: string };
    return { ids: (body.tasks ?? []).map((t) => t.id), next: body.nextPageToken || undefined, text };
  },
  gRPC: async (who, token, pageSize = 1) => {
    const params = {
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize,
      pageToken: token ?? '',
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: undefined,
    };
    try {
      const r = await grpc.listTasks(params, { serviceParameters: ids.headersAs(who) });
      return { ids: r.tasks.map((t) => t.id), next: r.nextPageToken || undefined, text: JSON.stringify(r) };
    } catch {
      return { refused: (await grpcFailure(grpc.listTasks(params, { serviceParameters: ids.headersAs(who) }))).code ?? -1 };
    }
  },
};

/** The refusal of an invalid page token in each binding's own terms: -32602, HTTP 400, INVALID_ARGUMENT. */
const INVALID: Record<keyof typeof LISTS, number> = { 'JSON-RPC': -32602, REST: 400, gRPC: 3 };

function page(p: Page | { refused: number }): Page {
  if ('refused' in p) throw new Error(`list refused (${p.refused})`);
  return p;
}

async function walk(list: List, who: Caller): Promise<Page[]> {
  const pages: Page[] = [];
  let token: string | undefined;
  for (let i = 0; i < 500; i++) {
    const p = page(await list(who, token));
    pages.push(p);
    token = p.next;
    if (token === undefined) return pages;
  }
  throw new Error('the listing does not end');
}

/** What a token tells whoever decodes it as the SDK's cursor. */
const decoded = (token: string): string => Buffer.from(token, 'base64').toString('utf8') + Buffer.from(token, 'base64url').toString('utf8');

/** The page tokens the agent's handler received (what it acts on). */
const agentTokens = (): string[] =>
  rec.calls
    .filter((c) => c.method === 'listTasks')
    .map((c) => (c.params as { pageToken?: string }).pageToken ?? '')
    .filter((t) => t !== '');

describe.each(Object.keys(LISTS) as (keyof typeof LISTS)[])('%s', (binding) => {
  const list = LISTS[binding];

  test("B pages through a run of A's tasks: empty pages carry a token, all of B's tasks come once, none of A's, no token decodes to the agent's", async () => {
    await create('B', 'B older');
    for (const n of [1, 2, 3]) await create('A', `A ${n}`);
    await create('B', 'B newer');
    rec.clear();
    const pages = await walk(list, 'B');
    const seen = pages.flatMap((p) => p.ids);
    expect([...seen].sort()).toEqual([...created.B].sort());
    // Filtering leaves pages short, even empty, and the listing still goes on to B's older tasks.
    expect(pages.some((p) => p.ids.length === 0 && p.next !== undefined)).toBe(true);
    const tokens = pages.flatMap((p) => (p.next === undefined ? [] : [p.next]));
    const real = agentTokens();
    expect(real).toHaveLength(tokens.length);
    for (const t of tokens) {
      expect(real).not.toContain(t);
      for (const a of created.A) expect(decoded(t)).not.toContain(a);
    }
    for (const text of pages.map((p) => p.text)) for (const a of created.A) expect(text).not.toContain(a);
    // The agent acted on its own cursors ("<timestamp>|<task id>"), A's tasks among them.
    expect(real.map((t) => Buffer.from(t, 'base64').toString('utf8'))).toEqual(
      expect.arrayContaining(created.A.slice(-3).map((a) => expect.stringContaining(`|${a}`))),
    );
  });

  test("A's token used by B, a tampered token, a token of the agent and a token of another proxy are refused as invalid, before the guardian and the agent", async () => {
    if (created.A.length < 2) for (const n of [1, 2]) await create('A', `A more ${n}`);
    const first = page(await list('A', undefined));
    const mine = first.next as string;
    expect(mine).toBeDefined();
    const agentMade = agentTokens()[0] ?? Buffer.from(`2026-01-01T00:00:00.000Z|${created.A[0]}`).toString('base64');
    const tampered = `${mine.slice(0, -2)}${mine.endsWith('AA') ? 'BB' : 'AA'}`;
    const other = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', ...ids.env });
    let foreign: string;
    try {
      const r = await rawRpc(
        `${other.url}/a2a/jsonrpc`,
        { jsonrpc: '2.0', id: 3, method: 'ListTasks', params: { pageSize: 1 } },
        { ...ids.headersAs('B'), ...V1 },
      );
      foreign = r.json.result.nextPageToken as string;
    } finally {
      await other.close();
    }
    expect(foreign).toBeTruthy();
    rec.clear();
    guardian.clear();
    expect(await list('B', mine)).toEqual({ refused: INVALID[binding] });
    expect(await list('A', tampered)).toEqual({ refused: INVALID[binding] });
    expect(await list('A', agentMade)).toEqual({ refused: INVALID[binding] });
    expect(await list('B', foreign)).toEqual({ refused: INVALID[binding] });
    expect(rec.calls).toEqual([]);
    expect(guardian.calls()).toEqual([]);
    // The owner goes on with it, and the guardian judges the agent's own token.
    const second = page(await list('A', mine));
    expect(second.ids.every((id) => created.A.includes(id))).toBe(true);
    const judged = guardian.calls().map((e) => e.params.payload.params.pageToken ?? e.params.payload.params.page_token);
    expect(judged).toEqual(agentTokens());
    expect(judged[0]).not.toBe(mine);
  });
});

describe('JSON-RPC details', () => {
  test("the refusal is the binding's invalid-params error and names nobody", async () => {
    const r = await rawRpc(
      `${proxy.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 7, method: 'ListTasks', params: { pageSize: 1, pageToken: 'not-a-token' } },
      { ...ids.headersAs('B'), ...V1 },
    );
    expect(r.json).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Invalid page token' } });
    const rest = await fetch(`${proxy.url}/a2a/rest/tasks?pageToken=not-a-token`, { headers: { ...ids.headersAs('B'), ...V1 } });
    expect(rest.status).toBe(400);
    expect(await rest.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid page token' } });
    expect(rec.calls).toEqual([]);
  });

  test("a guardian modify of a paged call is checked again with the agent's token it saw, not refused as unsealed", async () => {
    await create('A', 'A for modify');
    await create('A', 'A for modify 2');
    const first = page(await LISTS['JSON-RPC']('A', undefined));
    rec.clear();
    guardian.script((env) => {
      const payload = env.params?.payload;
      if (payload?.method !== 'ListTasks') return { decision: 'allow' };
      return { decision: 'modify', modifiedPayload: { ...payload, params: { ...payload.params, pageSize: 2 } } };
    });
    const second = page(await LISTS['JSON-RPC']('A', first.next));
    expect(second.ids.length).toBeGreaterThan(0);
    const acted = rec.calls.filter((c) => c.method === 'listTasks').map((c) => c.params as { pageSize: number; pageToken: string });
    expect(acted).toHaveLength(1);
    expect(acted[0]?.pageSize).toBe(2);
    expect(acted[0]?.pageToken).not.toBe(first.next);
    expect(Buffer.from(acted[0]?.pageToken ?? '', 'base64').toString('utf8')).toMatch(/\|/);
  });

  test('ListTasks filtered to another caller\'s context is "task not found"; to the caller\'s own, its tasks', async () => {
    const r = await rawRpc(
      `${proxy.url}/a2a/jsonrpc`,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'A in its context' }] } },
      },
      { ...ids.headersAs('A'), ...V1 },
    );
    const { id: task, contextId } = r.json.result.task as { id: string; contextId: string };
    created.A.push(task);
    rec.clear();
    const asB = await rawRpc(
      `${proxy.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 2, method: 'ListTasks', params: { contextId, pageSize: 1 } },
      { ...ids.headersAs('B'), ...V1 },
    );
    expect(asB.json.error).toMatchObject({ code: -32001, message: `Task not found: ${contextId}` });
    expect(rec.calls).toEqual([]);
    const asA = await rawRpc(
      `${proxy.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 3, method: 'ListTasks', params: { contextId, pageSize: 1 } },
      { ...ids.headersAs('A'), ...V1 },
    );
    expect(asA.json.result.tasks.map((t: { id: string }) => t.id)).toEqual([task]);
  });

  test('ListTaskPushNotificationConfigs: a page token not sealed here is refused too', async () => {
    const task = await create('A', 'A with configs');
    rec.clear();
    const r = await rawRpc(
      `${proxy.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 4, method: 'ListTaskPushNotificationConfigs', params: { taskId: task, pageToken: 'bm90LW1pbmU=' } },
      { ...ids.headersAs('A'), ...V1 },
    );
    expect(r.json.error).toMatchObject({ code: -32602, message: 'Invalid page token' });
    expect(rec.calls).toEqual([]);
    const ok = await rawRpc(
      `${proxy.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 5, method: 'ListTaskPushNotificationConfigs', params: { taskId: task } },
      { ...ids.headersAs('A'), ...V1 },
    );
    expect(ok.json.error).toBeUndefined();
  });
});
