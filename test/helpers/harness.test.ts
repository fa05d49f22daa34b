/**
 * Proves the test helpers work on their own (no proxy): SDK client -> SDK agent directly,
 * the scripted guardian over real HTTP, and the AOS schema validator.
 */
import {
  collect,
  makeClient,
  openSse,
  rawRpc,
  rawSse,
  sendReq,
  startAgent,
  textOf,
  TaskState,
  type A2AVersion,
  type Binding,
  type StreamResponse,
  type TestAgent,
} from './agent';
import { deadGuardianUrl, GUARDIAN_VERSION, startGuardian, textIn, type TestGuardian } from './guardian';
import { closeServer, listen, waitFor } from './net';
import { SCHEMA_PATCHES, seedAosPayloads, validateAgent, validateAosRequest, validatePingResponse, validateSuccessResponse } from './schema';
import http from 'node:http';

const COMBOS: Array<[Binding, A2AVersion]> = [
  ['JSONRPC', '1.0'],
  ['JSONRPC', '0.3'],
  ['HTTP+JSON', '1.0'],
  ['HTTP+JSON', '0.3'],
];

describe('agent helper (direct client -> agent)', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startAgent({
      name: 'Harness Agent',
      version: '9.9.9',
      description: 'harness',
      provider: { organization: 'Acme', url: 'https://acme.example' },
    });
  });
  afterAll(async () => {
    await agent.close();
  });
  beforeEach(() => agent.clear());

  test('card carries identity, and URLs for both bindings and versions', async () => {
    const v1 = await rawRpc(`${agent.origin}/.well-known/agent-card.json`, undefined, { 'a2a-version': '1.0' }, { method: 'GET' });
    expect(v1.status).toBe(200);
    expect(v1.json).toMatchObject({
      name: 'Harness Agent',
      version: '9.9.9',
      description: 'harness',
      provider: { organization: 'Acme', url: 'https://acme.example' },
    });
    const urls = (v1.json.supportedInterfaces as Array<{ url: string; protocolBinding: string; protocolVersion: string }>).map(
      (i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`,
    );
    expect(urls).toEqual(
      expect.arrayContaining([
        `JSONRPC 1.0 ${agent.origin}/a2a/jsonrpc`,
        `JSONRPC 0.3 ${agent.origin}/a2a/jsonrpc`,
        `HTTP+JSON 1.0 ${agent.origin}/a2a/rest`,
        `HTTP+JSON 0.3 ${agent.origin}/a2a/rest`,
      ]),
    );
    const legacy = await rawRpc(`${agent.origin}/.well-known/agent-card.json`, undefined, {}, { method: 'GET' });
    expect(legacy.json).toMatchObject({ name: 'Harness Agent', url: `${agent.origin}/a2a/jsonrpc`, protocolVersion: '0.3' });
    expect(agent.received.map((r) => r.method + ' ' + r.path)).toEqual(['GET /.well-known/agent-card.json', 'GET /.well-known/agent-card.json']);
  });

  test('advertise rewrites the card origin', async () => {
    const other = await startAgent({ advertise: () => 'http://proxy.example:1234' });
    try {
      const card = await rawRpc(`${other.origin}/.well-known/agent-card.json`, undefined, { 'a2a-version': '1.0' }, { method: 'GET' });
      for (const i of card.json.supportedInterfaces) expect(i.url).toMatch(/^http:\/\/proxy\.example:1234\/a2a\//);
    } finally {
      await other.close();
    }
  });

  describe.each(COMBOS)('%s %s', (binding, version) => {
    const v1 = version === '1.0';
    const rest = binding === 'HTTP+JSON';

    test('sendMessage returns the echo; received holds the raw request', async () => {
      const client = await makeClient(agent.url, binding, version);
      const res = await client.sendMessage(sendReq('hello there'));
      expect(textOf(res)).toBe('echo: hello there');
      expect((res as { status?: { state: number } }).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);

      const calls = agent.received.filter((r) => r.method === 'POST');
      expect(calls).toHaveLength(1);
      const call = calls[0]!;
      expect(call.headers['a2a-version']).toBe(version);
      expect(call.bodyText).not.toBe('');
      expect(JSON.parse(call.bodyText)).toEqual(call.body);
      if (!rest) {
        expect(call.path).toBe('/a2a/jsonrpc');
        expect(call.body).toMatchObject({ jsonrpc: '2.0', method: v1 ? 'SendMessage' : 'message/send' });
        expect(textOf((call.body as { params: unknown }).params)).toBe('hello there');
      } else {
        expect(call.path).toBe(v1 ? '/a2a/rest/message:send' : '/a2a/rest/v1/message:send');
        expect(textOf(call.body)).toBe('hello there');
      }
    });

    test('sendMessageStream "stream 20" yields all events in order', async () => {
      const client = await makeClient(agent.url, binding, version);
      const events: StreamResponse[] = await collect(client.sendMessageStream(sendReq('stream 20')));
      const kinds = events.map((e) => e.payload?.$case);
      expect(kinds[0]).toBe('task');
      expect(kinds.slice(1, 21)).toEqual(Array(20).fill('artifactUpdate'));
      expect(kinds[21]).toBe('statusUpdate');
      expect(events).toHaveLength(22);
      expect(events.slice(1, 21).map(textOf)).toEqual(Array.from({ length: 20 }, (_, i) => `chunk ${i}`));
      const last = events[21]!.payload;
      expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      const taskId = events[0]!.payload?.$case === 'task' ? events[0]!.payload.value.id : '';
      const stored = await client.getTask({ tenant: '', id: taskId, historyLength: undefined });
      expect(textOf(stored)).toBe(Array.from({ length: 20 }, (_, i) => `chunk ${i}`).join(''));
      const call = agent.received.find((r) => r.method === 'POST')!;
      expect(call.headers['accept']).toContain('text/event-stream');
      if (!rest) expect((call.body as { method: string }).method).toBe(v1 ? 'SendStreamingMessage' : 'message/stream');
      else expect(call.path).toBe(v1 ? '/a2a/rest/message:stream' : '/a2a/rest/v1/message:stream');
    });

    test('slow task: returnImmediately, resubscribe, cancel, getTask shows canceled', async () => {
      const client = await makeClient(agent.url, binding, version);
      const task = await client.sendMessage(sendReq('slow job', true));
      const id = (task as { id: string }).id;
      expect(id).toBeTruthy();
      expect((task as { status?: { state: number } }).status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);

      const sub = collect(client.resubscribeTask({ tenant: '', id }));
      // Wait until the agent has received the subscribe call before cancelling.
      const isSubscribe = (r: { path: string; body: unknown }): boolean =>
        r.path.includes(':subscribe') || ['SubscribeToTask', 'tasks/resubscribe'].includes((r.body as { method?: string } | undefined)?.method ?? '');
      await waitFor(() => agent.received.some(isSubscribe), 5000, 'subscribe request');
      await new Promise((r) => setTimeout(r, 50));
      const cancelledTask = await client.cancelTask({ tenant: '', id, metadata: undefined });
      expect(cancelledTask.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      const subEvents = await sub;
      expect(subEvents[0]?.payload?.$case).toBe('task');
      const lastSub = subEvents[subEvents.length - 1]?.payload;
      expect(lastSub?.$case === 'statusUpdate' && lastSub.value.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      expect(agent.cancelled.has(id)).toBe(true);

      const got = await client.getTask({ tenant: '', id, historyLength: undefined });
      expect(got.status?.state).toBe(TaskState.TASK_STATE_CANCELED);

      const posts = agent.received.filter((r) => r.path !== '/.well-known/agent-card.json');
      for (const p of posts) expect(p.headers['a2a-version']).toBe(version);
      if (!rest) {
        expect(posts.map((p) => (p.body as { method: string }).method)).toEqual(
          v1 ? ['SendMessage', 'SubscribeToTask', 'CancelTask', 'GetTask'] : ['message/send', 'tasks/resubscribe', 'tasks/cancel', 'tasks/get'],
        );
      } else {
        const pre = v1 ? '/a2a/rest' : '/a2a/rest/v1';
        expect(posts.map((p) => `${p.method} ${p.path.replace(/\?.*$/, '')}`)).toEqual([
          `POST ${pre}/message:send`,
          `${v1 ? 'POST' : 'GET'} ${pre}/tasks/${id}:subscribe`,
          `POST ${pre}/tasks/${id}:cancel`,
          `GET ${pre}/tasks/${id}`,
        ]);
      }
    });
  });

  test('stream 1000 is fast', async () => {
    const client = await makeClient(agent.url, 'JSONRPC', '1.0');
    const t0 = Date.now();
    const events = await collect(client.sendMessageStream(sendReq('stream 1000')));
    expect(events).toHaveLength(1002);
    expect(textOf(events[1000])).toBe('chunk 999');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  test('wait-for-cancel waits until cancelled (raw JSON-RPC v0.3 without header)', async () => {
    const send = await rawRpc(agent.jsonRpcUrl, {
      jsonrpc: '2.0',
      id: 'a1',
      method: 'message/send',
      params: {
        message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'wait-for-cancel' }] },
        configuration: { blocking: false },
      },
    });
    expect(send.status).toBe(200);
    expect(send.json).toMatchObject({ jsonrpc: '2.0', id: 'a1', result: { kind: 'task' } });
    const id = send.json.result.id as string;
    await new Promise((r) => setTimeout(r, 300));
    const get = await rawRpc(agent.jsonRpcUrl, { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id } });
    expect(get.json.result.status.state).toBe('working');
    const sub = rawSse(agent.jsonRpcUrl, { jsonrpc: '2.0', id: 3, method: 'tasks/resubscribe', params: { id } });
    await waitFor(() => agent.received.some((r) => (r.body as { method?: string } | undefined)?.method === 'tasks/resubscribe'));
    await new Promise((r) => setTimeout(r, 50));
    const cancel = await rawRpc(agent.jsonRpcUrl, { jsonrpc: '2.0', id: 4, method: 'tasks/cancel', params: { id } });
    expect(cancel.json.result.status.state).toBe('canceled');
    const s = await sub;
    expect(s.status).toBe(200);
    expect(s.contentType).toMatch(/^text\/event-stream/);
    expect(s.events.length).toBeGreaterThanOrEqual(2);
    for (const e of s.events) expect(e.json).toMatchObject({ jsonrpc: '2.0', id: 3 });
    expect(s.events[s.events.length - 1]!.json.result).toMatchObject({ kind: 'status-update', final: true, status: { state: 'canceled' } });
    expect(agent.received.find((r) => r.path === '/a2a/jsonrpc')!.headers['a2a-version']).toBeUndefined();
  });

  test('raw v1 JSON-RPC stream via rawSse; malformed JSON still gets the SDK parse error', async () => {
    const s = await rawSse(
      agent.jsonRpcUrl,
      { jsonrpc: '2.0', id: 7, method: 'SendStreamingMessage', params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'stream 3' }] } } },
      { 'A2A-Version': '1.0' },
    );
    expect(s.status).toBe(200);
    expect(s.events.map((e) => Object.keys(e.json.result)[0])).toEqual(['task', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate']);
    expect(textOf(s.events.map((e) => e.json))).toBe('chunk 0chunk 1chunk 2');

    const bad = await rawRpc(agent.jsonRpcUrl, '{"jsonrpc":"2.0",', { 'a2a-version': '1.0' });
    expect(bad.status).toBe(200);
    expect(bad.json).toMatchObject({ id: null, error: { code: -32700 } });
    const rec = agent.received[agent.received.length - 1]!;
    expect(rec.bodyText).toBe('{"jsonrpc":"2.0",');
    expect(rec.body).toBeUndefined();
  });

  test('REST v1 raw request with application/a2a+json is recorded and served', async () => {
    const r = await rawRpc(
      `${agent.restUrl}/message:send`,
      { message: { messageId: 'm2', role: 'ROLE_USER', parts: [{ text: 'rest raw' }] } },
      { 'content-type': 'application/a2a+json', 'a2a-version': '1.0' },
    );
    expect(r.status).toBe(200);
    expect(textOf(r.json)).toBe('echo: rest raw');
    expect(agent.received[0]!.body).toMatchObject({ message: { parts: [{ text: 'rest raw' }] } });
  });
});

describe('agent close() with work in flight', () => {
  test('open SSE streams, blocking sends and wait-for-cancel tasks do not keep it alive', async () => {
    const a = await startAgent();
    const client = await makeClient(a.url, 'JSONRPC', '1.0');
    const it = client.sendMessageStream(sendReq('wait-for-cancel'))[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.value?.payload?.$case).toBe('task');
    const blocking = client.sendMessage(sendReq('wait-for-cancel')).then(
      () => 'resolved',
      () => 'rejected',
    );
    const raw = await openSse(
      a.jsonRpcUrl,
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'SendStreamingMessage',
        params: { message: { messageId: 'w', role: 'ROLE_USER', parts: [{ text: 'wait-for-cancel' }] } },
      },
      { 'a2a-version': '1.0' },
    );
    expect(raw.status).toBe(200);
    const firstRaw = await raw.events.next();
    expect(Object.keys(firstRaw.value?.json.result ?? {})).toEqual(['task']);
    await waitFor(() => a.received.filter((r) => r.method === 'POST').length === 3);
    const t0 = Date.now();
    await a.close();
    expect(Date.now() - t0).toBeLessThan(1500);
    await expect(blocking).resolves.toMatch(/resolved|rejected/);
    // Both streams must finish (normal end or "terminated"), not hang.
    const drain = async (f: () => Promise<unknown>): Promise<string> =>
      f().then(
        () => 'ended',
        () => 'errored',
      );
    expect(
      await drain(async () => {
        for (;;) if ((await it.next()).done) return;
      }),
    ).toMatch(/ended|errored/);
    expect(
      await drain(async () => {
        for await (const _ of raw.events) void _;
      }),
    ).toMatch(/ended|errored/);
  });

  test('openSse yields events incrementally and abort() disconnects', async () => {
    const a = await startAgent({ stepMs: 20 });
    try {
      const s = await openSse(
        `${a.restUrl}/message:stream`,
        { message: { messageId: 'x', role: 'ROLE_USER', parts: [{ text: 'wait-for-cancel' }] } },
        { 'a2a-version': '1.0' },
      );
      expect(s.contentType).toMatch(/^text\/event-stream/);
      const got: string[] = [];
      for await (const e of s.events) {
        got.push(Object.keys(e.json)[0]!);
        if (got.length === 2) s.abort();
      }
      expect(got).toEqual(['task', 'statusUpdate']);
    } finally {
      await a.close();
    }
  });
});

describe('guardian helper', () => {
  let g: TestGuardian;
  beforeAll(async () => {
    g = await startGuardian();
  });
  afterAll(async () => {
    await g.close();
  });
  beforeEach(() => {
    g.clear();
    g.reset();
  });
  const env = (id = 'e-1', text = 'hi') => ({
    jsonrpc: '2.0',
    id,
    method: 'message/send',
    params: { payload: { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { parts: [{ kind: 'text', text }] } } }, context: {} },
  });

  test('default allows, records envelopes and headers; ping works', async () => {
    const r = await rawRpc(g.url, env(), { authorization: 'Bearer t' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ jsonrpc: '2.0', id: 'e-1', result: { decision: 'allow' } });
    expect(typeof r.json.result.message).toBe('string');
    expect(validateSuccessResponse(r.json)).toEqual([]);
    expect(g.envelopes).toEqual([env()]);
    expect(g.headers[0]!['authorization']).toBe('Bearer t');

    const p = await rawRpc(g.url, { jsonrpc: '2.0', id: 'p1', method: 'ping', params: { timestamp: new Date().toISOString() } });
    expect(p.json).toMatchObject({ jsonrpc: '2.0', id: 'p1', result: { status: 'connected', version: GUARDIAN_VERSION } });
    expect(validatePingResponse(p.json)).toEqual([]);
    expect(g.envelopes).toHaveLength(2);
    expect(g.calls()).toHaveLength(1);
  });

  test('deny and modify', async () => {
    g.script((e) =>
      textIn(e).includes('secret')
        ? { decision: 'deny', reasonCode: ['LEAK'], reasoning: 'r' }
        : { decision: 'modify', modifiedPayload: { ...e.params.payload, id: 1 } },
    );
    const d = await rawRpc(g.url, env('e-2', 'my secret'));
    expect(d.json.result).toMatchObject({ decision: 'deny', reasonCode: ['LEAK'], reasoning: 'r' });
    expect(validateSuccessResponse(d.json)).toEqual([]);
    const m = await rawRpc(g.url, env('e-3', 'fine'));
    expect(m.json.result.decision).toBe('modify');
    expect(m.json.result.modifiedRequest).toEqual(env('e-3', 'fine'));
  });

  test('faults', async () => {
    g.script(() => ({ fault: 'refuse' }));
    await expect(rawRpc(g.url, env())).rejects.toThrow();

    g.script(() => ({ fault: 'http500' }));
    expect((await rawRpc(g.url, env())).status).toBe(500);

    g.script(() => ({ fault: 'garbage' }));
    const garbage = await rawRpc(g.url, env());
    expect(garbage.status).toBe(200);
    expect(garbage.json).toBeUndefined();

    g.script(() => ({ fault: 'rpcError' }));
    expect((await rawRpc(g.url, env())).json).toMatchObject({ id: 'e-1', error: { code: -32603 } });

    g.script(() => ({ fault: 'badSchema' }));
    const bad = await rawRpc(g.url, env());
    expect(bad.json.result.decision).toBeUndefined();
    expect(validateSuccessResponse(bad.json)).not.toEqual([]);

    g.script(() => ({ fault: 'wrongId' }));
    const wrong = await rawRpc(g.url, env());
    expect(wrong.json.id).not.toBe('e-1');
    expect(wrong.json.result.decision).toBe('allow');

    g.script(() => ({ raw: { status: 418, body: '{"x":1}' } }));
    const raw = await rawRpc(g.url, env());
    expect(raw.status).toBe(418);
    expect(raw.json).toEqual({ x: 1 });

    g.script(() => ({ fault: 'hang' }));
    const t0 = Date.now();
    await expect(rawRpc(g.url, env(), {}, { signal: AbortSignal.timeout(300) })).rejects.toThrow();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);

    g.script(() => ({ decision: 'allow', delayMs: 200 }));
    const t1 = Date.now();
    expect((await rawRpc(g.url, env())).json.result.decision).toBe('allow');
    expect(Date.now() - t1).toBeGreaterThanOrEqual(180);

    g.scriptPing(() => ({ fault: 'http500' }));
    expect((await rawRpc(g.url, { jsonrpc: '2.0', id: 1, method: 'ping', params: {} })).status).toBe(500);
    expect(g.envelopes).toHaveLength(10);
  });

  test('a hanging guardian still closes cleanly', async () => {
    const h = await startGuardian();
    h.script(() => ({ fault: 'hang' }));
    const pending = rawRpc(h.url, env()).catch((e: unknown) => e);
    await waitFor(() => h.envelopes.length === 1);
    await h.close();
    expect(String(await pending)).toMatch(/TypeError|Error/);
  });

  test('deadGuardianUrl refuses connections', async () => {
    const url = await deadGuardianUrl();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await expect(rawRpc(url, env())).rejects.toThrow();
  });
});

describe('net helper', () => {
  test('listen/closeServer/waitFor', async () => {
    const s = http.createServer((_req, res) => res.end('ok'));
    const origin = await listen(s);
    expect((await fetch(origin)).status).toBe(200);
    await closeServer(s);
    await closeServer(s);
    await expect(waitFor(() => false, 50)).rejects.toThrow(/not met/);
  });
});

describe('schema helper', () => {
  test('patches were applied', () => {
    expect(SCHEMA_PATCHES.length).toBeGreaterThan(0);
  });

  const seeds: Array<[string, string, number]> = [
    ['000_', 'message/send', 2],
    ['001_', 'tasks/cancel', 2],
    ['003_', 'tasks/resubscribe', 2],
    ['004_', 'message/stream', 2],
  ];
  const haveSeeds = seedAosPayloads('000_') !== null;
  (haveSeeds ? test.each(seeds) : test.skip.each(seeds))('seed %s (%s) AOS payloads validate', (prefix, method, count) => {
    const payloads = seedAosPayloads(prefix)!;
    expect(payloads).toHaveLength(count);
    for (const p of payloads) {
      expect(p.method).toBe(method);
      // The seeds' "full" agents lack the required Agent.id, so only the envelope + partial shapes are checked here.
      expect(validateAosRequest(p, method, { fullSide: 'none' })).toEqual([]);
    }
  });

  (haveSeeds ? test : test.skip)('seed full agents only miss Agent.id', () => {
    const [client] = seedAosPayloads('000_')!;
    expect(validateAgent(client.params.context.from.agent)).toEqual([expect.stringContaining('"missingProperty":"id"')]);
    expect(validateAosRequest(client, 'message/send')).toEqual([expect.stringContaining('/params/context/from/agent')]);
  });

  const fullAgent = { id: 'a-1', name: 'Echo', url: 'http://x', version: '1', instructions: 'be nice', provider: { name: 'Acme', url: 'https://acme' } };
  const envelope = (method: string, from: object, to: object) => ({
    jsonrpc: '2.0',
    id: 'f0a3c9a4-2d43-4c8e-9d8e-6f0f0e9f1b8a',
    method,
    params: {
      payload: { jsonrpc: '2.0', id: 1, method, params: { id: 't' } },
      context: { from: { agent: from, role: 'client' }, to: { agent: to, role: 'server' } },
    },
  });

  test('a proxy-style envelope with a full Agent validates (raw schema oneOf would reject it)', () => {
    const partial = { url: 'http://peer', name: 'peer', version: 'unknown' };
    for (const m of [
      'message/send',
      'message/stream',
      'tasks/cancel',
      'tasks/resubscribe',
      'tasks/get',
      'tasks/pushNotificationConfig/set',
      'tasks/pushNotificationConfig/get',
    ]) {
      expect(validateAosRequest(envelope(m, partial, fullAgent), m)).toEqual([]);
      expect(validateAosRequest(envelope(m, partial, fullAgent), m, { fullSide: 'to' })).toEqual([]);
      expect(validateAosRequest(envelope(m, fullAgent, partial), m, { fullSide: 'from' })).toEqual([]);
    }
  });

  test('invalid envelopes are reported', () => {
    const partial = { url: 'http://peer', name: 'peer', version: '1' };
    expect(validateAosRequest(envelope('message/send', partial, fullAgent), 'tasks/cancel')).not.toEqual([]);
    expect(validateAosRequest(envelope('message/send', partial, { ...fullAgent, id: undefined }), 'message/send', { fullSide: 'to' }).join()).toMatch(/id/);
    expect(validateAosRequest(envelope('message/send', { name: 'peer' }, fullAgent), 'message/send').join()).toMatch(/url/);
    const noPayload = envelope('message/send', partial, fullAgent) as { params: Record<string, unknown> };
    delete noPayload.params['payload'];
    expect(validateAosRequest(noPayload, 'message/send').join()).toMatch(/payload/);
    expect(validateAosRequest({ ...envelope('message/send', partial, fullAgent), id: undefined }, 'message/send').join()).toMatch(/id/);
    expect(validateAosRequest(envelope('message/send', partial, fullAgent), 'nope/nope')).toEqual(['unknown AOS A2A method "nope/nope"']);
  });

  test('validateSuccessResponse', () => {
    expect(validateSuccessResponse({ jsonrpc: '2.0', id: 'x', result: { decision: 'allow', message: 'ok' } })).toEqual([]);
    expect(validateSuccessResponse({ jsonrpc: '2.0', id: 'x', result: { decision: 'maybe', message: 'ok' } })).not.toEqual([]);
    expect(validateSuccessResponse({ jsonrpc: '2.0', id: 'x', result: { decision: 'allow' } })).not.toEqual([]);
    const partial = { url: 'http://peer', name: 'peer', version: '1' };
    const modified = envelope('message/send', partial, fullAgent);
    expect(validateSuccessResponse({ jsonrpc: '2.0', id: 'x', result: { decision: 'modify', message: 'masked', modifiedRequest: modified } })).toEqual([]);
  });
});
