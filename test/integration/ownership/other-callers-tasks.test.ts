/**
 * Task ownership: what a verified caller B learns about, or can do with, the
 * tasks and contexts of another verified caller A. Real SDK agent (its handler recorded), real
 * guardian, a ROLE=server a2a-guard with IDENTITY_POLICY=required, OIDC callers A and B.
 */
import { rawRpc, type TestAgent } from '../../helpers/agent';
import type { TestGuardian } from '../../helpers/guardian';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { startOwnershipStack, type Caller, type OwnershipStack, type TestIdentities } from '../../helpers/identities';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { Agent as UndiciAgent, fetch as undiciFetch } from 'undici';
import { bindTo, makeKey, signAssertion, writeJwks, type TestKey } from '../../helpers/keys';
import { createPki, type Issued } from '../../helpers/pki';

const rec = handlerRecorder();
let stack: OwnershipStack;
let agent: TestAgent;
let guardian: TestGuardian;
let ids: TestIdentities;
let proxy: TestProxy;

beforeAll(async () => {
  stack = await startOwnershipStack({ wrapRequestHandler: rec.wrap });
  ({ agent, guardian, ids, proxy } = stack);
});
afterAll(() => stack?.close());
beforeEach(() => rec.clear());

const V1 = { 'a2a-version': '1.0' };

/** v1.0 SendMessage as `who`; returns the task id and context id of the answer. */
async function send(base: string, who: Caller, text: string, extra: Record<string, unknown> = {}): Promise<{ task: string; context: string; error: unknown }> {
  const r = await rawRpc(
    `${base}/a2a/jsonrpc`,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }], ...extra } },
    },
    { ...ids.headersAs(who), ...V1 },
  );
  return { task: r.json?.result?.task?.id, context: r.json?.result?.task?.contextId, error: r.json?.error };
}

/** Every page of B's task list (JSON-RPC ListTasks, pageSize 1): the results and the raw answers. */
async function listAllAs(who: Caller): Promise<{ results: any[]; texts: string[] }> {
  const results: any[] = [];
  const texts: string[] = [];
  let token: string | undefined;
  for (let i = 0; i < 20; i++) {
    const r = await rawRpc(
      `${proxy.url}/a2a/jsonrpc`,
      { jsonrpc: '2.0', id: 2, method: 'ListTasks', params: { pageSize: 1, ...(token ? { pageToken: token } : {}) } },
      { ...ids.headersAs(who), ...V1 },
    );
    results.push(r.json?.result);
    texts.push(r.text);
    token = r.json?.result?.nextPageToken;
    if (!token) break;
  }
  return { results, texts };
}

/** The text of an answer with every base64-looking token decoded next to it (page tokens are opaque to callers, not to attackers). */
const withDecodedTokens = (text: string): string =>
  text + [...text.matchAll(/"(?:nextPageToken|next_page_token)":"([^"]+)"/g)].map((m) => Buffer.from(m[1] as string, 'base64').toString('utf8')).join('\n');

describe('tasks/list', () => {
  test("totalSize never counts the tasks of other callers (also on a page of the caller's own tasks)", async () => {
    await send(proxy.url, 'A', 'A one');
    await send(proxy.url, 'A', 'A two');
    const mine = await send(proxy.url, 'B', 'B one');
    const { results } = await listAllAs('B');
    const listed = results.flatMap((r) => (r?.tasks ?? []).map((t: { id: string }) => t.id));
    expect(listed).toContain(mine.task);
    for (const r of results) expect(Number(r?.totalSize ?? 0)).toBeLessThanOrEqual((r?.tasks ?? []).length);
    // The REST binding as well.
    const rest = await fetch(`${proxy.url}/a2a/rest/tasks?pageSize=1`, { headers: { ...ids.headersAs('B'), ...V1 } });
    const body = (await rest.json()) as { tasks?: unknown[]; totalSize?: number };
    expect(Number(body.totalSize ?? 0)).toBeLessThanOrEqual((body.tasks ?? []).length);
  });

  // Was open: the agent's nextPageToken was relayed as is, and the SDK's token is base64("<timestamp>|<last task id of
  // the unfiltered page>"): paging with pageSize=1 gave B the id and time of every task of every caller. Now the
  // proxy seals the agent's token for the caller and unseals it before the guardian and the agent see the next call
  // (ownership/page-tokens.test.ts covers the bindings, refusals and replicas).
  test("no page of B's task list names a task of A, not even inside a page token", async () => {
    const a = await send(proxy.url, 'A', 'A private');
    await send(proxy.url, 'B', 'B mine');
    const { texts } = await listAllAs('B');
    expect(texts.map(withDecodedTokens).join('\n')).not.toContain(a.task);
  });
});

describe('the owner store', () => {
  // Was open: the in-memory store evicted the oldest bindings when full (TASK_STORE_MAX_ENTRIES), so any verified
  // caller could flush A's bindings and then continue A's now-unknown context as its own. Now the largest holder
  // gives up its own oldest binding: a flooder evicts itself.
  test("a caller cannot flood the store to take over another caller's context (TASK_STORE_MAX_ENTRIES=100)", async () => {
    const small = await startTestProxy({ UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server', TASK_STORE_MAX_ENTRIES: '100', ...ids.env });
    try {
      const a = await send(small.url, 'A', 'A private');
      expect(a.task).toBeDefined();
      let flood: string | undefined;
      for (let i = 0; i < 100; i++) flood = (await send(small.url, 'B', `flood ${i}`, flood === undefined ? {} : { contextId: flood })).context;
      rec.clear();
      const takeover = await send(small.url, 'B', 'B continues A', { contextId: a.context });
      expect(rec.calls.filter((c) => (c.params as { message?: { contextId?: string } }).message?.contextId === a.context)).toEqual([]);
      expect(takeover.error).toBeDefined();
      // And A still has its task.
      const get = await rawRpc(
        `${small.url}/a2a/jsonrpc`,
        { jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: a.task } },
        { ...ids.headersAs('A'), ...V1 },
      );
      expect(get.json?.result?.id).toBe(a.task);
    } finally {
      await small.close();
    }
  });
});

describe('key and CA rotation: the caller keeps its tasks; another caller cannot take them', () => {
  // Was open: the owner key of an assertion caller was `assertion:<kid>:<agent id>`. Following README's key rotation
  // (new key trusted, then the signing sidecar switches to it), every task and context the agent created before the
  // switch belonged to the old kid: the same agent's own tasks were "not found" for up to TASK_OWNERSHIP_TTL_SECONDS.
  // Now a trusted key names the agents it may assert (`"agents"` in its JWK), and the owner of such an assertion is
  // the agent id alone; a key bound to one agent cannot assert another, and an unbound key cannot assert a bound agent.
  const audience = 'http://baker-guard.test';
  const assistant = { id: 'cooking-assistant', name: 'Cooking assistant', url: 'http://assistant.test', version: '1.0.0' };
  const baker = { id: 'cake-baker', name: 'Cake baker', url: 'http://baker.test', version: '1.0.0' };
  type Agent = typeof assistant;

  async function withAssertionProxy(
    keys: TestKey[],
    run: (call: (key: TestKey, as: Agent, method: string, params: object) => Promise<any>) => Promise<void>,
  ): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), 'key-rotation-'));
    const p = await startTestProxy({
      UPSTREAM_URL: agent.origin,
      GUARDIAN_URL: guardian.url,
      ROLE: 'server',
      IDENTITY_POLICY: 'required',
      ASSERTION_TRUST_JWKS_FILE: await writeJwks(dir, keys),
      ASSERTION_AUDIENCE: audience,
    });
    try {
      await run(async (key, as, method, params) => {
        const headers = { 'x-aos-agent-assertion': await signAssertion(key, as, audience), ...V1 };
        return (await rawRpc(`${p.url}/a2a/jsonrpc`, { jsonrpc: '2.0', id: 1, method, params }, headers)).json;
      });
    } finally {
      await p.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
  const message = (text: string, extra: object = {}) => ({ message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }], ...extra } });

  test('the same agent keeps its tasks and contexts across a signing-key rotation (keys bound to it)', async () => {
    const [oldKey, newKey] = [bindTo(await makeKey('k-old'), assistant.id), bindTo(await makeKey('k-new'), assistant.id)];
    await withAssertionProxy([oldKey, newKey], async (call) => {
      const created = await call(oldKey, assistant, 'SendMessage', message('before rotation'));
      const { id: task, contextId } = created?.result?.task ?? {};
      expect(task).toBeDefined();
      expect((await call(oldKey, assistant, 'GetTask', { id: task }))?.result?.id).toBe(task);
      expect((await call(newKey, assistant, 'GetTask', { id: task }))?.result?.id).toBe(task);
      expect((await call(newKey, assistant, 'SendMessage', message('after rotation', { contextId })))?.result?.task?.contextId).toBe(contextId);
    });
  });

  test('a key bound to another agent cannot assert this one, nor reach its tasks; an unbound key cannot assert a bound agent', async () => {
    const [assistantKey, bakerKey, loose] = [
      bindTo(await makeKey('k-assistant'), assistant.id),
      bindTo(await makeKey('k-baker'), baker.id),
      await makeKey('k-loose'),
    ];
    await withAssertionProxy([assistantKey, bakerKey, loose], async (call) => {
      const task = (await call(assistantKey, assistant, 'SendMessage', message("the assistant's")))?.result?.task?.id as string;
      expect(task).toBeDefined();
      rec.clear();
      // The baker's key signing as the assistant, and a key bound to nobody signing as the assistant: not verified.
      for (const key of [bakerKey, loose]) {
        const r = await call(key, assistant, 'GetTask', { id: task });
        expect(r?.error).toMatchObject({
          code: -31401,
          data: expect.arrayContaining([
            expect.objectContaining({ metadata: expect.objectContaining({ problem: 'is signed by a key the trusted keys do not let assert this agent' }) }),
          ]),
        });
      }
      // The baker as itself: another caller, so "task not found".
      expect((await call(bakerKey, baker, 'GetTask', { id: task }))?.error).toMatchObject({ code: -32001, message: `Task not found: ${task}` });
      expect(rec.calls).toEqual([]);
    });
  });

  test('mTLS: a SPIFFE ID keeps its tasks when the issuing CA rotates; a bare CN is the same caller only under the same CA', async () => {
    const pki = await createPki('Kitchen CA 2026-01');
    const next = await pki.otherCa();
    const dispatchers: UndiciAgent[] = [];
    try {
      const bundle = join(pki.dir, 'client-cas.pem');
      await writeFile(bundle, pki.caCert + next.caCert);
      const server = await pki.issue({ cn: 'baker-guard', server: true, name: 'rot-server' });
      const spiffe = 'spiffe://kitchen.test/agent/assistant';
      const [spiffeOld, spiffeNew, cnOld, cnNew] = await Promise.all([
        pki.issue({ cn: 'assistant', spiffe, name: 'rot-spiffe-old' }),
        next.issue({ cn: 'assistant', spiffe, name: 'rot-spiffe-new' }),
        pki.issue({ cn: 'legacy', name: 'rot-cn-old' }),
        next.issue({ cn: 'legacy', name: 'rot-cn-new' }),
      ]);
      const p = await startTestProxy({
        UPSTREAM_URL: agent.origin,
        GUARDIAN_URL: guardian.url,
        ROLE: 'server',
        IDENTITY_POLICY: 'required',
        TLS_CERT_FILE: server.certFile,
        TLS_KEY_FILE: server.keyFile,
        TLS_CLIENT_CA_FILE: bundle,
      });
      try {
        const call = async (client: Issued, method: string, params: object): Promise<any> => {
          const dispatcher = new UndiciAgent({ connect: { ca: pki.caCert, cert: client.cert, key: client.key } });
          dispatchers.push(dispatcher);
          const res = await undiciFetch(`${p.url}/a2a/jsonrpc`, {
            method: 'POST',
            dispatcher,
            headers: { 'content-type': 'application/json', ...V1 },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
          });
          return res.json();
        };
        const bySpiffe = (await call(spiffeOld, 'SendMessage', message('spiffe before')))?.result?.task?.id as string;
        expect((await call(spiffeNew, 'GetTask', { id: bySpiffe }))?.result?.id).toBe(bySpiffe);
        const byCn = (await call(cnOld, 'SendMessage', message('cn before')))?.result?.task?.id as string;
        expect((await call(cnOld, 'GetTask', { id: byCn }))?.result?.id).toBe(byCn);
        expect((await call(cnNew, 'GetTask', { id: byCn }))?.error).toMatchObject({ code: -32001 });
      } finally {
        await p.close();
      }
    } finally {
      for (const d of dispatchers) await d.close();
      await pki.close();
    }
  });
});
