/**
 * Response hooks on streams (design sections 4 and 5; wire reference sections 4 and 7), with a real
 * @a2a-js/sdk agent streaming "stream N" (a task, N artifact updates, a final COMPLETED status)
 * through the proxy to a real SDK client, in v1.0 and v0.3, JSON-RPC and REST:
 *   - every event arrives in order, with INSPECT_RESPONSES on and off (N=1000 in two cases);
 *   - with inspection on, the guardian saw every event exactly once and in order (what it saw is
 *     what the client got); envelope: same AOS method as the request, from = server, to = client,
 *     no reasoning; JSON-RPC: the payload is exactly the event's JSON-RPC response object (same id,
 *     same bytes); REST: {jsonrpc:"2.0", id:<the minted id of the request hook>, result:<event>};
 *   - deny at event k: events 1..k-1, then an error carrying -31403 (REST: the 403 Status); raw SSE
 *     ends with `event: error` (JSON-RPC error with the caller's id / {error:{...}} for REST); the
 *     guardian sees at most the window's worth of events after k (calls already in flight, then
 *     cancelled) and none started later, and the upstream request is closed (agent side 'close'
 *     while the agent would have kept streaming);
 * Events are judged several at a time (STREAM_INSPECT_WINDOW, default 16), so the guardian may
 * receive them out of order: scripts pick events by content (eventPosition), never by arrival.
 *   - modify at event k: the client sees the replacement, every other event unchanged;
 *   - a modify that changes the id of an event: no valid answer, -31503 ends the stream;
 *   - guardian failure at event k: FAIL_MODE=closed ends the stream with -31503; open keeps it flowing.
 */
import type http from 'node:http';
import {
  collect,
  makeClient,
  rawSse,
  sendReq,
  textOf,
  TaskState,
  type A2AVersion,
  type Binding,
  type Client,
  type StreamResponse,
  type TestAgent,
} from '../../helpers/agent';
import { BINDING_VERSIONS } from '../../helpers/agent';
import { type Envelope, type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { isResponseEnvelope } from '../../helpers/guardian';
import { sleep, waitFor } from '../../helpers/net';
import { type TestProxy, startTestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;

const stack = useStack({ name: 'Stream Agent', version: '4.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let on: Proxy; // INSPECT_RESPONSES=true, FAIL_MODE=closed
let off: Proxy; // INSPECT_RESPONSES=false
let open: Proxy; // INSPECT_RESPONSES=true, FAIL_MODE=open
let direct: Client;

/** Every HTTP exchange the agent served, as seen from the agent's side of the socket. */
interface AgentExchange {
  method: string;
  path: string;
  closed: boolean;
  /** res.writableFinished when 'close' fired: false = the connection went away mid-answer. */
  finished: boolean | undefined;
}
const agentExchanges: AgentExchange[] = [];

beforeAll(async () => {
  ({ agent, guardian } = stack);
  agent.server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const x: AgentExchange = { method: req.method ?? '', path: req.url ?? '', closed: false, finished: undefined };
    agentExchanges.push(x);
    res.once('close', () => {
      x.closed = true;
      x.finished = res.writableFinished;
    });
  });
  const base = { UPSTREAM_URL: agent.origin, GUARDIAN_URL: guardian.url, ROLE: 'server' };
  on = await startTestProxy({ ...base, INSPECT_RESPONSES: 'true', INSPECT_CARDS: 'false' });
  off = await startTestProxy({ ...base, INSPECT_RESPONSES: 'false' });
  open = await startTestProxy({ ...base, INSPECT_RESPONSES: 'true', INSPECT_CARDS: 'false', FAIL_MODE: 'open' });
  direct = await makeClient(agent.origin, 'JSONRPC', '1.0');
});
afterAll(async () => {
  await on?.close();
  await off?.close();
  await open?.close();
});
beforeEach(() => {
  agentExchanges.length = 0;
});

/* ---------------------------------------------------------------------------------------------- */

const CASES = BINDING_VERSIONS;

const isResponseEnv = isResponseEnvelope;
const requestEnvs = (): Envelope[] => guardian.calls().filter((e) => !isResponseEnv(e));
const responseEnvs = (): Envelope[] => guardian.calls().filter(isResponseEnv);
const chunks = (n: number): string[] => Array.from({ length: n }, (_, i) => `chunk ${i}`);
const ALLOW: GuardianReply = { decision: 'allow' };
/** STREAM_INSPECT_WINDOW's default: events judged at once per stream. */
const WINDOW = 16;

/**
 * 1-based position of an event of a "stream N" answer, from its content: 1 = the task, i + 2 =
 * "chunk i", Infinity = a status update (the last event; "wait-for-cancel": the second).
 */
function eventPosition(env: Envelope): number {
  const result = env.params.payload.result ?? {};
  const kind = wireKind(result);
  if (kind === 'task') return 1;
  const m = /^chunk (\d+)$/.exec(textOf(env.params.payload));
  if (m?.[1] !== undefined) return Number(m[1]) + 2;
  return Infinity;
}
/** The response envelopes in stream order (the guardian may have received them out of order). */
const inStreamOrder = (envs: Envelope[]): Envelope[] => [...envs].sort((a, b) => eventPosition(a) - eventPosition(b));

/** Answer `reply(env)` for the event at position k (see eventPosition), allow everything else. */
function atEvent(k: number, reply: (env: Envelope) => GuardianReply): void {
  guardian.script((env) => (isResponseEnv(env) && eventPosition(env) === k ? reply(env) : ALLOW));
}

/** v1 wrapper key of a wire stream result (v0.3 JSON-RPC: from its `kind`). */
function wireKind(result: any): string {
  const byKind: Record<string, string> = { task: 'task', message: 'message', 'status-update': 'statusUpdate', 'artifact-update': 'artifactUpdate' };
  if (typeof result?.kind === 'string') return byKind[result.kind] ?? result.kind;
  return Object.keys(result ?? {}).join(',');
}

/** Events an SDK stream yielded before it ended, and the error it ended with (if any). */
async function drain<T>(it: AsyncIterable<T>): Promise<{ events: T[]; error: any }> {
  const events: T[] = [];
  try {
    for await (const e of it) events.push(e);
  } catch (error) {
    return { events, error };
  }
  return { events, error: undefined };
}

/** The code an SDK error carries: JSON-RPC envelope code (directly or as cause), or the HTTP status (REST). */
const sdkCode = (err: any): unknown => err?.envelopeCode ?? err?.cause?.envelopeCode ?? err?.statusCode;

/** Asserts the SDK error that ended a stream: JSON-RPC -> `code`; REST -> the Status with `httpStatus` / `reason`. */
function expectStreamError(binding: Binding, version: A2AVersion, err: any, code: number, httpStatus: number, reason: string, text: string): void {
  expect(err).toBeDefined();
  expect(String(err.message)).toContain(text);
  if (binding === 'JSONRPC') {
    expect(sdkCode(err)).toBe(code);
    return;
  }
  if (version === '1.0') {
    // The v1 REST client turns the mid-stream {error:{...}} Status into an A2AError carrying its message (its
    // statusCode is the stream's 200, and it takes `reason` only from a2a-protocol.org ErrorInfos).
    expect(err.name).toMatch(/Error/);
  } else {
    // The v0.3 REST client quotes the whole frame.
    expect(String(err.message)).toContain(`"code":${httpStatus}`);
    expect(String(err.message)).toContain(`"reason":"${reason}"`);
  }
}

/** SDK stream events -> v1 kind names and texts, for comparing with what the guardian saw. */
const sdkKinds = (events: StreamResponse[]): string[] => events.map((e) => String(e.payload?.$case));
const sdkTexts = (events: StreamResponse[]): string[] => events.map(textOf);

function rawStreamCall(
  binding: Binding,
  version: A2AVersion,
  base: string,
  id: string,
  text: string,
): { url: string; body: unknown; headers: Record<string, string> } {
  const v1 = version === '1.0';
  const headers: Record<string, string> = v1 ? { 'a2a-version': '1.0' } : {};
  if (binding === 'JSONRPC') {
    const message = v1
      ? { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] }
      : { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] };
    return { url: `${base}/a2a/jsonrpc`, body: { jsonrpc: '2.0', id, method: v1 ? 'SendStreamingMessage' : 'message/stream', params: { message } }, headers };
  }
  const message = v1 ? { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } : { messageId: `m-${id}`, role: 'ROLE_USER', content: [{ text }] };
  return { url: `${base}/a2a/rest/${v1 ? '' : 'v1/'}message:stream`, body: { message }, headers };
}

/* ---------------------------------------------------------------------------------------------- */
/* All events, in order, inspected exactly once                                                   */
/* ---------------------------------------------------------------------------------------------- */

describe.each(CASES)('SDK %s %s sendMessageStream through the proxy', (binding, version) => {
  const big = version === '1.0'; // N=1000 for the v1.0 cases (JSON-RPC and REST), 100 otherwise

  test.each([true, false])('inspection %p: every event arrives in order; the guardian saw each exactly once, in order', async (inspect) => {
    const n = big && inspect ? 1000 : 100;
    const client = await makeClient((inspect ? on : off).url, binding, version);
    const events = await collect(client.sendMessageStream(sendReq(`stream ${n}`)));

    expect(sdkKinds(events)).toEqual(['task', ...Array(n).fill('artifactUpdate'), 'statusUpdate']);
    expect(sdkTexts(events.slice(1, n + 1))).toEqual(chunks(n));
    const last = events[n + 1]!.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const taskId = (events[0]!.payload as { value: { id: string } }).value.id;

    const reqs = requestEnvs();
    expect(reqs).toHaveLength(1);
    expect(reqs[0].method).toBe('message/stream');
    const resps = responseEnvs();
    if (!inspect) {
      expect(resps).toEqual([]);
      return;
    }
    expect(resps).toHaveLength(n + 2);
    // In stream order, the same sequence of events as the client got (several are judged at once, so
    // they may reach the guardian out of order; each exactly once).
    expect(inStreamOrder(resps).map((e) => wireKind(e.params.payload.result))).toEqual(sdkKinds(events));
    expect(inStreamOrder(resps).map((e) => textOf(e.params.payload))).toEqual(sdkTexts(events));
    const callerId = reqs[0].params.payload.id; // JSON-RPC: the SDK's request id; REST: the id the proxy minted
    expect(callerId).toBeDefined();
    const envIds = new Set<string>();
    for (const e of resps) {
      expect(e.method).toBe('message/stream');
      expect(Object.keys(e.params).sort()).toEqual(['context', 'payload']); // no reasoning on response hooks
      expect(e.params.context.from.role).toBe('server');
      expect(e.params.context.to.role).toBe('client');
      expect(e.params.context.from.agent).toMatchObject({ name: 'Stream Agent', version: '4.0.0' });
      expect(Object.keys(e.params.payload).sort()).toEqual(['id', 'jsonrpc', 'result']);
      expect(e.params.payload.jsonrpc).toBe('2.0');
      expect(e.params.payload.id).toBe(callerId);
      envIds.add(e.id);
    }
    expect(envIds.size).toBe(n + 2); // one envelope per event, none repeated
    const firstTask = inStreamOrder(resps)[0].params.payload.result;
    expect(firstTask.id ?? firstTask.task?.id).toBe(taskId);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Raw wire: the guardian saw exactly what went out                                               */
/* ---------------------------------------------------------------------------------------------- */

describe.each(CASES)('raw %s %s stream, inspection on', (binding, version) => {
  test('each event the client got is exactly the payload the guardian saw, in order', async () => {
    const id = `raw-${binding}-${version}`;
    const call = rawStreamCall(binding, version, on.url, id, 'stream 20');
    const res = await rawSse(call.url, call.body, call.headers);
    expect(res.status).toBe(200);
    expect(res.contentType).toMatch(/^text\/event-stream/);
    expect(res.events).toHaveLength(22);
    for (const e of res.events) expect(e.event).toBeUndefined();

    const reqs = requestEnvs();
    expect(reqs).toHaveLength(1);
    const resps = inStreamOrder(responseEnvs());
    expect(resps).toHaveLength(22);
    if (binding === 'JSONRPC') {
      resps.forEach((env, i) => {
        const ev = res.events[i]!;
        expect(ev.json.id).toBe(id);
        // The payload is the event's JSON-RPC response object itself...
        expect(env.params.payload).toEqual(ev.json);
        // ...and its JSON text went to the guardian byte for byte.
        const raw = guardian.rawBodies.find((b) => b.includes(`"id":${JSON.stringify(env.id)}`));
        expect(raw).toContain(`"params":{"payload":${ev.data},"context":`);
      });
    } else {
      const minted = reqs[0].params.payload.id;
      expect(typeof minted).toBe('string');
      resps.forEach((env, i) => expect(env.params.payload).toEqual({ jsonrpc: '2.0', id: minted, result: res.events[i]!.json }));
    }
    expect(res.events.slice(1, 21).map((e) => textOf(e.json))).toEqual(chunks(20));
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Deny at event k                                                                                */
/* ---------------------------------------------------------------------------------------------- */

const DENY: GuardianReply = { decision: 'deny', message: 'event refused', reasonCode: ['NO_EVENT'] };

describe.each(CASES)('deny at event k, SDK %s %s', (binding, version) => {
  test('"stream 1000", deny at event 5: events 1..4, then -31403; no guardian call starts after it', async () => {
    atEvent(5, () => DENY);
    const client = await makeClient(on.url, binding, version);
    const { events, error } = await drain(client.sendMessageStream(sendReq('stream 1000')));
    expect(sdkKinds(events)).toEqual(['task', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate']);
    expect(sdkTexts(events.slice(1))).toEqual(chunks(3));
    expectStreamError(binding, version, error, -31403, 403, 'GUARDIAN_DENIED', 'event refused');

    // The upstream request is over (closed by the proxy, or finished writing into socket buffers)...
    const stream = agentExchanges.filter((x) => x.method === 'POST');
    expect(stream).toHaveLength(1);
    await waitFor(() => stream[0]!.closed, 10_000, 'upstream stream closed');
    // ...and past the calls already in flight when the deny landed (at most the window), no event
    // after the denied one reaches the guardian, however long we wait. Calls sent before the deny
    // can still reach the guardian after the upstream closed (a loaded machine), so the bound is
    // what is checked, twice: a proxy that kept judging the 1000 events would pass it at once.
    await sleep(300);
    expect(responseEnvs().length).toBeLessThanOrEqual(5 + WINDOW - 1);
    await sleep(300);
    expect(responseEnvs().length).toBeLessThanOrEqual(5 + WINDOW - 1);
  });

  test('deny at event 2 of a task that keeps running: the proxy closes the upstream stream', async () => {
    // "wait-for-cancel": task, WORKING, then nothing until cancelled; the agent would keep the stream open.
    guardian.script((env) => (isResponseEnv(env) && wireKind(env.params.payload.result) === 'statusUpdate' ? DENY : ALLOW));
    const client = await makeClient(on.url, binding, version);
    const { events, error } = await drain(client.sendMessageStream(sendReq('wait-for-cancel')));
    expect(sdkKinds(events)).toEqual(['task']);
    expectStreamError(binding, version, error, -31403, 403, 'GUARDIAN_DENIED', 'event refused');
    const stream = agentExchanges.filter((x) => x.method === 'POST');
    expect(stream).toHaveLength(1);
    await waitFor(() => stream[0]!.closed, 10_000, 'agent side of the stream closed');
    expect(stream[0]!.finished).toBe(false); // cut by the proxy, not ended by the agent
    expect(responseEnvs()).toHaveLength(2);
    const taskId = (events[0]!.payload as { value: { id: string } }).value.id;
    await direct.cancelTask({ tenant: '', id: taskId, metadata: undefined });
  });
});

describe.each(CASES)('deny at event k, raw %s %s', (binding, version) => {
  test('events 1..k-1, then one `event: error` frame, then the end', async () => {
    atEvent(4, () => DENY);
    const id = `deny-${binding}-${version}`;
    const call = rawStreamCall(binding, version, on.url, id, 'stream 10');
    const res = await rawSse(call.url, call.body, call.headers);
    expect(res.status).toBe(200);
    expect(res.events).toHaveLength(4);
    expect(res.events.slice(0, 3).map((e) => e.event)).toEqual([undefined, undefined, undefined]);
    expect(res.events.slice(1, 3).map((e) => textOf(e.json))).toEqual(chunks(2));
    const last = res.events[3]!;
    expect(last.event).toBe('error');
    const info = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'GUARDIAN_DENIED', domain: 'a2a-guard' };
    if (binding === 'JSONRPC') {
      expect(last.json).toMatchObject({ jsonrpc: '2.0', id, error: { code: -31403, data: [info] } });
      expect(last.json.error.message).toContain('event refused');
      expect(last.json.error.data[0].metadata).toMatchObject({
        envelopeId: inStreamOrder(responseEnvs())[3].id,
        message: 'event refused',
        reasonCode: 'NO_EVENT',
      });
    } else {
      expect(last.json).toEqual({
        error: { code: 403, status: 'PERMISSION_DENIED', message: expect.stringContaining('event refused'), details: [expect.objectContaining(info)] },
      });
    }
    expect(res.text.endsWith('\n\n')).toBe(true);
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* Modify at event k                                                                              */
/* ---------------------------------------------------------------------------------------------- */

describe.each(CASES)('modify at event k, SDK %s %s', (binding, version) => {
  test('the client sees the replacement; every other event is unchanged', async () => {
    // Event 5 is the artifact update "chunk 3".
    atEvent(5, (env) => ({
      decision: 'modify',
      message: 'redacted',
      modifiedPayload: JSON.parse(JSON.stringify(env.params.payload).replace('"chunk 3"', '"[redacted 3]"')),
    }));
    const client = await makeClient(on.url, binding, version);
    const events = await collect(client.sendMessageStream(sendReq('stream 8')));
    const want = chunks(8);
    want[3] = '[redacted 3]';
    expect(sdkKinds(events)).toEqual(['task', ...Array(8).fill('artifactUpdate'), 'statusUpdate']);
    expect(sdkTexts(events.slice(1, 9))).toEqual(want);
    // This stream's events only: a stream cut by an earlier test may still have an event on its way to the guardian.
    const taskId = (events[0]!.payload as { value: { id: string } }).value.id;
    const mine = responseEnvs().filter((e) => JSON.stringify(e.params.payload).includes(taskId));
    expect(mine).toHaveLength(10);
    // The guardian saw the original.
    expect(textOf(inStreamOrder(mine)[4].params.payload)).toBe('chunk 3');
  });
});

test('raw JSON-RPC: a modified event replaces exactly one frame; the others pass byte for byte', async () => {
  atEvent(3, (env) => ({
    decision: 'modify',
    message: 'm',
    modifiedPayload: JSON.parse(JSON.stringify(env.params.payload).replace('"chunk 1"', '"CHUNK ONE"')),
  }));
  const call = rawStreamCall('JSONRPC', '1.0', on.url, 'mod-raw', 'stream 4');
  const res = await rawSse(call.url, call.body, call.headers);
  expect(res.events).toHaveLength(6);
  expect(res.events.map((e) => wireKind(e.json.result))).toEqual([
    'task',
    'artifactUpdate',
    'artifactUpdate',
    'artifactUpdate',
    'artifactUpdate',
    'statusUpdate',
  ]);
  expect(res.events.slice(1, 5).map((e) => textOf(e.json))).toEqual(['chunk 0', 'CHUNK ONE', 'chunk 2', 'chunk 3']);
  const resps = inStreamOrder(responseEnvs());
  // Unmodified frames carry the guardian's payload text unchanged; the modified one the replacement.
  res.events.forEach((e, i) => {
    if (i === 2) expect(e.json).toEqual(JSON.parse(JSON.stringify(resps[2].params.payload).replace('"chunk 1"', '"CHUNK ONE"')));
    else expect(e.json).toEqual(resps[i].params.payload);
  });
  for (const e of res.events) expect(e.json.id).toBe('mod-raw');
});

test('a modify that changes the event id is no valid answer: -31503 ends the stream (FAIL_MODE=closed)', async () => {
  atEvent(3, (env) => ({ decision: 'modify', message: 'm', modifiedPayload: { ...env.params.payload, id: 'someone-else' } }));
  const call = rawStreamCall('JSONRPC', '1.0', on.url, 'mod-id', 'stream 6');
  const res = await rawSse(call.url, call.body, call.headers);
  expect(res.events).toHaveLength(3);
  expect(res.events[2]!.event).toBe('error');
  expect(res.events[2]!.json).toMatchObject({ jsonrpc: '2.0', id: 'mod-id', error: { code: -31503, data: [{ reason: 'GUARDIAN_UNAVAILABLE' }] } });
  expect(res.text).not.toContain('someone-else');

  guardian.clear();
  atEvent(3, (env) => ({ decision: 'modify', message: 'm', modifiedPayload: { ...env.params.payload, id: 'someone-else' } }));
  const client = await makeClient(on.url, 'JSONRPC', '1.0');
  const { events, error } = await drain(client.sendMessageStream(sendReq('stream 6')));
  expect(events).toHaveLength(2);
  expect(sdkCode(error)).toBe(-31503);
});

/* ---------------------------------------------------------------------------------------------- */
/* Guardian failure mid-stream                                                                    */
/* ---------------------------------------------------------------------------------------------- */

describe.each(CASES)('guardian fails at event k, SDK %s %s', (binding, version) => {
  test('FAIL_MODE=closed: an error event -31503 ends the stream', async () => {
    atEvent(4, () => ({ fault: 'http500' }));
    const client = await makeClient(on.url, binding, version);
    const { events, error } = await drain(client.sendMessageStream(sendReq('stream 20')));
    expect(sdkKinds(events)).toEqual(['task', 'artifactUpdate', 'artifactUpdate']);
    expectStreamError(binding, version, error, -31503, 503, 'GUARDIAN_UNAVAILABLE', 'Guardian unavailable');
    // Checks already sent in the window may still arrive on a loaded machine; none beyond it, ever.
    expect(responseEnvs().length).toBeLessThanOrEqual(4 + WINDOW - 1);
    await sleep(200);
    expect(responseEnvs().length).toBeLessThanOrEqual(4 + WINDOW - 1);
  });

  test('FAIL_MODE=open: events keep flowing', async () => {
    guardian.script((env) => {
      if (!isResponseEnv(env)) return ALLOW;
      const k = eventPosition(env);
      return k >= 4 && k <= 6 ? { fault: k === 5 ? 'garbage' : 'http500' } : ALLOW;
    });
    const client = await makeClient(open.url, binding, version);
    const events = await collect(client.sendMessageStream(sendReq('stream 20')));
    expect(sdkKinds(events)).toEqual(['task', ...Array(20).fill('artifactUpdate'), 'statusUpdate']);
    expect(sdkTexts(events.slice(1, 21))).toEqual(chunks(20));
    expect(responseEnvs()).toHaveLength(22);
  });
});

/** From response event k on (by position), the guardian drops every connection (the proxy's one retry included). */
function refuseFrom(k: number): void {
  guardian.script((env) => (isResponseEnv(env) && eventPosition(env) >= k ? { fault: 'refuse' } : ALLOW));
}

test("raw: guardian unreachable mid-stream (FAIL_MODE=closed): `event: error` -31503 with the caller's id", async () => {
  // "stream 1": the events after the task fail together (several are judged at once), and fewer than
  // the breaker's 5 consecutive failures keep the second half of the test independent of the first.
  refuseFrom(2);
  const call = rawStreamCall('JSONRPC', '0.3', on.url, 'gone-1', 'stream 1');
  const res = await rawSse(call.url, call.body, call.headers);
  expect(res.events).toHaveLength(2);
  expect(res.events[0]!.json.result.kind).toBe('task');
  expect(res.events[1]!.event).toBe('error');
  expect(res.events[1]!.json).toMatchObject({
    jsonrpc: '2.0',
    id: 'gone-1',
    error: { code: -31503, data: [{ reason: 'GUARDIAN_UNAVAILABLE', domain: 'a2a-guard' }] },
  });

  guardian.clear();
  refuseFrom(2);
  const rest = rawStreamCall('HTTP+JSON', '1.0', on.url, 'gone-2', 'stream 1');
  const r2 = await rawSse(rest.url, rest.body, rest.headers);
  expect(r2.events).toHaveLength(2);
  expect(r2.events[1]!.event).toBe('error');
  expect(r2.events[1]!.json).toMatchObject({ error: { code: 503, status: 'UNAVAILABLE', details: [{ reason: 'GUARDIAN_UNAVAILABLE' }] } });
});

/* ---------------------------------------------------------------------------------------------- */
/* The agent's own errors on streaming calls                                                      */
/* ---------------------------------------------------------------------------------------------- */

describe('agent errors on streaming calls are response payloads', () => {
  test('v0.3 tasks/resubscribe of an unknown task (the SDK answers SSE + `event: error`): inspected; allowed unchanged; denied replaced', async () => {
    const body = { jsonrpc: '2.0', id: 'rs-1', method: 'tasks/resubscribe', params: { id: 'no-such-task' } };
    const res = await rawSse(`${on.url}/a2a/jsonrpc`, body);
    expect(res.contentType).toMatch(/^text\/event-stream/);
    expect(res.events).toHaveLength(1);
    expect(res.events[0]!.event).toBe('error');
    expect(res.events[0]!.json).toMatchObject({ jsonrpc: '2.0', id: 'rs-1', error: { code: -32001 } });
    const resps = responseEnvs();
    expect(resps).toHaveLength(1);
    expect(resps[0].method).toBe('tasks/resubscribe');
    expect(resps[0].params.payload).toEqual(res.events[0]!.json);

    guardian.clear();
    guardian.script((env) => (isResponseEnv(env) ? DENY : ALLOW));
    const denied = await rawSse(`${on.url}/a2a/jsonrpc`, body);
    expect(denied.events).toHaveLength(1);
    expect(denied.events[0]!.event).toBe('error');
    expect(denied.events[0]!.json).toMatchObject({ jsonrpc: '2.0', id: 'rs-1', error: { code: -31403, data: [{ reason: 'GUARDIAN_DENIED' }] } });
    expect(denied.text).not.toContain('-32001');
  });

  test('v1.0 SubscribeToTask of an unknown task (a JSON error, not SSE): inspected; denied replaced with -31403', async () => {
    const body = { jsonrpc: '2.0', id: 'rs-2', method: 'SubscribeToTask', params: { id: 'no-such-task' } };
    const res = await rawSse(`${on.url}/a2a/jsonrpc`, body, { 'a2a-version': '1.0' });
    expect(res.contentType).toMatch(/^application\/json/);
    const answer = JSON.parse(res.text);
    expect(answer).toMatchObject({ jsonrpc: '2.0', id: 'rs-2', error: { code: -32001 } });
    expect(responseEnvs().map((e) => e.params.payload)).toEqual([answer]);

    guardian.clear();
    guardian.script((env) => (isResponseEnv(env) ? DENY : ALLOW));
    const denied = await rawSse(`${on.url}/a2a/jsonrpc`, body, { 'a2a-version': '1.0' });
    expect(JSON.parse(denied.text)).toMatchObject({ jsonrpc: '2.0', id: 'rs-2', error: { code: -31403 } });
  });
});
