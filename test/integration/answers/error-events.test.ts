/**
 * Relaxed spelling checks (event: error data not looked into only
 * when it is a bare error object; ownership's request check only for a guardian's modify; the inspected paths skip
 * the spelling walk when ownership reads the answer), stream blank blocks / empty data / line separators, answers
 * whose status a client ignores.
 * A scripted hostile agent on a raw socket. Each test FAILS on a finding.
 *
 * Oracle for task ownership: a lax reader (Go-style: names matched case-insensitively, the event name not
 * looked at; or splitlines-style SSE line ends) reads a context in the bytes A gets, and B then joins it.
 */
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { startTestProxy, type TestProxy } from '../../helpers/proxy-harness';
import { startIdentities, type TestIdentities } from '../../helpers/identities';

import { answer, messageReaches, useHostileAgent } from '../../helpers/hostile-agent';
import { contextsIn, laxEvents } from '../../helpers/lax-readers';

jest.setTimeout(120_000);

/* ---------------------------------------------------------------------------------------------- */
/* The hostile agent                                                                              */
/* ---------------------------------------------------------------------------------------------- */

const hostile = useHostileAgent();

/* ---------------------------------------------------------------------------------------------- */
/* Oracles                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

let seq = 0;
const mark = () => `probe${++seq}x`;

function laxReadsContext(text: string, context: string, split?: RegExp): boolean {
  return laxEvents(text, split).some((d) => {
    try {
      return contextsIn(JSON.parse(d)).includes(context);
    } catch {
      return false;
    }
  });
}

const guardians: TestGuardian[] = [];
const proxies: TestProxy[] = [];
afterAll(async () => {
  for (const p of proxies) await p.close();
  for (const g of guardians) await g.close();
});

const msg1 = () => ({ message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'hi' }] } });

describe('task ownership', () => {
  let ids: TestIdentities;
  const px: Record<string, TestProxy> = {};
  beforeAll(async () => {
    ids = await startIdentities();
    const g = await startGuardian();
    guardians.push(g);
    const mk = async (env: Record<string, string>) => {
      const p = await startTestProxy({ ROLE: 'server', UPSTREAM_URL: hostile.origin, GUARDIAN_URL: g.url, ...ids.env, ...env });
      proxies.push(p);
      return p;
    };
    px.own = await mk({ FAIL_MODE: 'closed', INSPECT_RESPONSES: 'false' });
    px.ownInspected = await mk({ FAIL_MODE: 'closed', INSPECT_RESPONSES: 'true' });
    px.ownOpen = await mk({ FAIL_MODE: 'open', INSPECT_RESPONSES: 'false' });
    px.ownInspectedOpen = await mk({ FAIL_MODE: 'open', INSPECT_RESPONSES: 'true' });
  });
  afterAll(async () => {
    await ids?.close();
  });

  /** Does B's message naming `context` reach the agent (B joined A's conversation)? */
  const bJoins = (proxy: TestProxy, context: string): Promise<boolean> =>
    messageReaches(hostile, proxy.url, ids.headersAs('B'), { message: { ...msg1().message, contextId: context } }, context);

  async function aStream(proxy: TestProxy, path: string, body: unknown, method: 'POST' | 'GET' = 'POST'): Promise<string> {
    const headers: Record<string, string> = { accept: 'text/event-stream', 'a2a-version': path.includes('/v1/') ? '0.3' : '1.0', ...ids.headersAs('A') };
    if (method === 'POST') headers['content-type'] = 'application/json';
    return fetch(`${proxy.url}${path}`, { method, headers, body: method === 'POST' ? JSON.stringify(body) : undefined, signal: AbortSignal.timeout(20_000) })
      .then((r) => r.text())
      .catch((e: Error) => `FETCH-ERROR ${e.message}`);
  }

  const modes = [
    ['ownership only', 'own'],
    ['ownership + inspection', 'ownInspected'],
  ] as const;

  /** REST stream event data shapes carrying a context under a member an exact reader does not read. */
  const restShapes: Record<string, (task: string, ctx: string) => unknown> = {
    TaskKey: (t, c) => ({ Task: { id: t, contextId: c, status: { state: 'TASK_STATE_WORKING' } } }),
    ContextIdKey: (t, c) => ({ task: { id: t, ContextId: c, status: { state: 'TASK_STATE_WORKING' } } }),
    StatusUpdateKey: (t, c) => ({ StatusUpdate: { taskId: t, contextId: c, status: { state: 'TASK_STATE_WORKING' } } }),
    snakeFoldKey: (t, c) => ({ status_Update: { taskId: t, contextId: c, status: { state: 'TASK_STATE_WORKING' } } }),
  };

  describe.each(modes)('%s', (_n, key) => {
    test.each(Object.keys(restShapes))(
      'REST /message:stream `event: error` data %s (no member folds onto result): a case-folding reader acts on an unbound context',
      async (shape) => {
        const context = `ctx-${mark()}`;
        const task = `task-${mark()}`;
        hostile.script = () =>
          answer(
            200,
            [['content-type', 'text/event-stream']],
            `event: error\ndata: ${JSON.stringify((restShapes[shape] as (t: string, c: string) => unknown)(task, context))}\n\n`,
            'chunked',
          );
        const text = await aStream(px[key] as TestProxy, '/a2a/rest/message:stream', msg1());
        const laxReads = laxReadsContext(text, context, /\r\n|\n|\r/);
        expect({ shape, laxReads, bJoined: laxReads ? await bJoins(px[key] as TestProxy, context) : false }).toEqual({
          shape,
          laxReads: false,
          bJoined: false,
        });
      },
    );

    test.each([
      ['v0.3 POST /v1/message:stream', '/a2a/rest/v1/message:stream', 'POST'],
      ["v1.0 GET /tasks/{id}:subscribe (A's own task)", 'SUB', 'GET'],
    ] as const)('REST %s `event: error` data {"Task": ...}: a case-folding reader acts on an unbound context', async (_n, path, verb) => {
      let target: string = path;
      if (path === 'SUB') {
        const t = `task-${mark()}`;
        hostile.script = (r) =>
          answer(
            200,
            [['content-type', 'application/json']],
            JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { task: { id: t, contextId: `ctx-${mark()}`, status: { state: 'TASK_STATE_WORKING' } } } }),
          );
        await fetch(`${(px[key] as TestProxy).url}/a2a/jsonrpc`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('A') },
          body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendMessage', params: msg1() }),
        }).then((r) => r.text());
        target = `/a2a/rest/tasks/${t}:subscribe`;
      }
      const context = `ctx-${mark()}`;
      const data = path.includes('/v1/')
        ? { Task: { id: `t-${mark()}`, ContextId: context, status: { state: 'TASK_STATE_WORKING' } } }
        : { Task: { id: `t-${mark()}`, contextId: context, status: { state: 'TASK_STATE_WORKING' } } };
      hostile.script = () => answer(200, [['content-type', 'text/event-stream']], `event: error\ndata: ${JSON.stringify(data)}\n\n`, 'chunked');
      const body = path.includes('/v1/') ? { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', content: [{ text: 'hi' }] } } : msg1();
      const text = await aStream(px[key] as TestProxy, target, body, verb);
      const laxReads = laxReadsContext(text, context, /\r\n|\n|\r/);
      expect({ laxReads, bJoined: laxReads ? await bJoins(px[key] as TestProxy, context) : false }).toEqual({ laxReads: false, bJoined: false });
    });

    test('SendMessage answered 500 with a JSON-RPC result naming a context: what a status-ignoring client reads is bound to A', async () => {
      const context = `ctx-${mark()}`;
      hostile.script = (r) =>
        answer(
          500,
          [['content-type', 'application/json']],
          JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { task: { id: `t-${mark()}`, contextId: context, status: { state: 'TASK_STATE_WORKING' } } } }),
        );
      const text = await fetch(`${(px[key] as TestProxy).url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('A') },
        body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendMessage', params: msg1() }),
      }).then((r) => r.text());
      const read = (() => {
        try {
          return contextsIn(JSON.parse(text)).includes(context);
        } catch {
          return false;
        }
      })();
      expect({ read, bJoined: read ? await bJoins(px[key] as TestProxy, context) : false }).toEqual({ read: true, bJoined: false });
    });

    test('REST /message:stream `event: error` data with an `error` member beside a misspelled Task', async () => {
      const context = `ctx-${mark()}`;
      hostile.script = () =>
        answer(
          200,
          [['content-type', 'text/event-stream']],
          `event: error\ndata: ${JSON.stringify({ error: { code: 13, message: 'x' }, Task: { id: `t-${mark()}`, contextId: context, status: { state: 'TASK_STATE_WORKING' } } })}\n\n`,
          'chunked',
        );
      const text = await aStream(px[key] as TestProxy, '/a2a/rest/message:stream', msg1());
      const laxReads = laxReadsContext(text, context, /\r\n|\n|\r/);
      expect({ laxReads, bJoined: laxReads ? await bJoins(px[key] as TestProxy, context) : false }).toEqual({ laxReads: false, bJoined: false });
    });

    test.each([['Result'], ['reſult'], ['RESULT']])('JSON-RPC `event: error` data with %s beside an error (held expected)', async (rk) => {
      const context = `ctx-${mark()}`;
      hostile.script = (r) =>
        answer(
          200,
          [['content-type', 'text/event-stream']],
          `event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: r.id, error: { code: -32000, message: 'x' }, [rk]: { task: { id: `t-${mark()}`, contextId: context, status: { state: 'TASK_STATE_WORKING' } } } })}\n\n`,
          'chunked',
        );
      const text = await aStream(px[key] as TestProxy, '/a2a/jsonrpc', { jsonrpc: '2.0', id: 3, method: 'SendStreamingMessage', params: msg1() });
      const laxReads = laxReadsContext(text, context, /\r\n|\n|\r/);
      expect({ laxReads, bJoined: laxReads ? await bJoins(px[key] as TestProxy, context) : false }).toEqual({ laxReads: false, bJoined: false });
    });

    test('GetTask answer with kind "Task" and a misspelled ContextId (held expected)', async () => {
      const context = `ctx-${mark()}`;
      // A owns a task first.
      const t = `task-${mark()}`;
      hostile.script = (r) =>
        answer(
          200,
          [['content-type', 'application/json']],
          JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { task: { id: t, contextId: `ctx-${mark()}`, status: { state: 'TASK_STATE_WORKING' } } } }),
        );
      await fetch(`${(px[key] as TestProxy).url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('A') },
        body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendMessage', params: msg1() }),
      }).then((r) => r.text());
      hostile.script = (r) =>
        answer(
          200,
          [['content-type', 'application/json']],
          JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { kind: 'Task', id: t, ContextId: context, status: { state: 'TASK_STATE_WORKING' } } }),
        );
      const text = await fetch(`${(px[key] as TestProxy).url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...ids.headersAs('A') },
        body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'GetTask', params: { id: t } }),
      }).then((r) => r.text());
      const read = (() => {
        try {
          return contextsIn(JSON.parse(text)).includes(context);
        } catch {
          return false;
        }
      })();
      expect({ read, bJoined: read ? await bJoins(px[key] as TestProxy, context) : false }).toEqual({ read: false, bJoined: false });
    });
  });

  const openModes = [
    ['ownership only, FAIL_MODE=open', 'ownOpen'],
    ['ownership + inspection, FAIL_MODE=open', 'ownInspectedOpen'],
  ] as const;
  const hiddenBodies: Record<string, (id: unknown, hidden: string) => string> = {
    // JSON the proxy parses: a JSON string (not an object) whose raw U+2028 hide an event from a splitlines reader.
    jsonString: (_id, hidden) => JSON.stringify(`x\u2028\u2028data: ${hidden}\u2028\u2028`),
    // Not JSON at all: the hidden event after the separators.
    notJson: (_id, hidden) => `x\u2028\u2028data: ${hidden}\u2028\u2028`,
    // JSON array of one string.
    jsonArray: (_id, hidden) => JSON.stringify([`\u2029\u2029data: ${hidden}\u2029\u2029`]),
  };
  describe.each(openModes)('%s', (_n, key) => {
    test.each(Object.keys(hiddenBodies))(
      'JSON-RPC stream event data %s with raw line separators: a splitlines reader finds a context ownership never bound',
      async (shape) => {
        const context = `ctx-${mark()}`;
        hostile.script = (r) => {
          const hidden = JSON.stringify({
            jsonrpc: '2.0',
            id: r.id,
            result: { task: { id: `task-${mark()}`, contextId: context, status: { state: 'TASK_STATE_WORKING' } } },
          });
          return answer(
            200,
            [['content-type', 'text/event-stream']],
            `data: ${(hiddenBodies[shape] as (i: unknown, h: string) => string)(r.id, hidden)}\n\n`,
            'chunked',
          );
        };
        const text = await aStream(px[key] as TestProxy, '/a2a/jsonrpc', { jsonrpc: '2.0', id: 3, method: 'SendStreamingMessage', params: msg1() });
        const laxReads = laxReadsContext(text, context);
        expect({ shape, laxReads, bJoined: laxReads ? await bJoins(px[key] as TestProxy, context) : false }).toEqual({
          shape,
          laxReads: false,
          bJoined: false,
        });
      },
    );
  });
});

describe('streams: blank blocks and empty data', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    const g = await startGuardian();
    guardians.push(g);
    proxy = await startTestProxy({ ROLE: 'client', UPSTREAM_URL: hostile.origin, GUARDIAN_URL: g.url, INSPECT_RESPONSES: 'true', FAIL_MODE: 'closed' });
    proxies.push(proxy);
  });

  test('an event after 200k stray line ends (CR, LF, CRLF mixed) still reaches the caller, whole', async () => {
    const m = mark();
    hostile.script = (r) => {
      const ev = (t: string) =>
        `data: ${JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { message: { messageId: t, role: 'ROLE_AGENT', parts: [{ text: t }] } } })}\n\n`;
      return answer(200, [['content-type', 'text/event-stream']], ev(`${m}-first`) + '\r\n\n\r'.repeat(50_000) + ev(`${m}-last`), 'chunked');
    };
    const text = await fetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendStreamingMessage', params: msg1() }),
      signal: AbortSignal.timeout(60_000),
    })
      .then((r) => r.text())
      .catch((e: Error) => `FETCH-ERROR ${e.message}`);
    expect({ first: text.includes(`${m}-first`), last: text.includes(`${m}-last`), small: text.length < 5000 }).toEqual({
      first: true,
      last: true,
      small: true,
    });
  });

  test('`data:` empty then `data: {...}` in one block: the caller reads what the guardian judged (no unjudged event)', async () => {
    const m = mark();
    hostile.script = (r) =>
      answer(
        200,
        [['content-type', 'text/event-stream']],
        `data:\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { message: { messageId: m, role: 'ROLE_AGENT', parts: [{ text: m }] } } })}\n\n`,
        'chunked',
      );
    const text = await fetch(`${proxy.url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendStreamingMessage', params: msg1() }),
      signal: AbortSignal.timeout(20_000),
    })
      .then((r) => r.text())
      .catch((e: Error) => `FETCH-ERROR ${e.message}`);
    // Either refused or passed after judging; it is judged only if the guardian saw the marker.
    const g = guardians[guardians.length - 1] as TestGuardian;
    const judged = g.calls().some((e) => JSON.stringify(e).includes(m));
    expect({ unjudgedLeak: text.includes(m) && !judged }).toEqual({ unjudgedLeak: false });
  });
});
