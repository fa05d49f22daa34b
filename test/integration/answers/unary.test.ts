/**
 * Response hooks on unary answers (design sections 4 and 5), INSPECT_RESPONSES=true, with a real
 * @a2a-js/sdk agent whose answer bytes are recorded on the agent's side of the socket:
 *   - allow: the exact bytes the agent sent reach the caller (JSON-RPC v1.0 / v0.3, REST v1.0 / v0.3);
 *     the guardian saw them as the payload (JSON-RPC: the answer's own text; REST: wrapped as
 *     {jsonrpc:"2.0", id:<the request hook's minted id>, result|error}); from = server, to = client;
 *   - deny: the answer is replaced by -31403 (JSON-RPC, caller's id, HTTP 200) or the REST 403 Status;
 *     SDK clients raise it;
 *   - modify: the replacement is what the caller sees; a replacement with another id, or with
 *     neither result nor error, is no valid answer (FAIL_MODE=closed -> -31503 / REST 503);
 *   - the agent's own error answers (-32001 task not found, REST 404) are response payloads too:
 *     allowed unchanged, denied, modified;
 *   - ROLE=both: the server-side response hook runs first, then the client side, which sees the
 *     first side's modification (unary and per stream event).
 */
import type http from 'node:http';
import { collect, makeClient, rawSse, sendReq, textOf, type A2AVersion, type Binding, type TestAgent } from '../../helpers/agent';
import { BINDING_VERSIONS } from '../../helpers/agent';
import { type Envelope, type GuardianReply, type TestGuardian } from '../../helpers/guardian';
import { isResponseEnvelope } from '../../helpers/guardian';
import { type TestProxy, useStack } from '../../helpers/proxy-harness';

type Proxy = TestProxy;

const stack = useStack({ name: 'Unary Agent', version: '5.0.0' });
let agent: TestAgent;
let guardian: TestGuardian;
let on: Proxy; // ROLE=server, INSPECT_RESPONSES=true, FAIL_MODE=closed
let both: Proxy; // ROLE=both, INSPECT_RESPONSES=true

/** What the agent wrote as the answer to each request, captured on the agent's ServerResponse. */
interface AgentAnswer {
  method: string;
  path: string;
  status: number;
  body: Buffer;
  done: boolean;
}
const answers: AgentAnswer[] = [];

function tapAnswers(server: http.Server): void {
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const a: AgentAnswer = { method: req.method ?? '', path: req.url ?? '', status: 0, body: Buffer.alloc(0), done: false };
    answers.push(a);
    const parts: Buffer[] = [];
    const toBuf = (chunk: unknown, enc?: unknown): Buffer | undefined =>
      chunk === undefined || chunk === null || typeof chunk === 'function'
        ? undefined
        : Buffer.isBuffer(chunk)
          ? chunk
          : typeof chunk === 'string'
            ? Buffer.from(chunk, typeof enc === 'string' ? (enc as BufferEncoding) : 'utf8')
            : Buffer.from(chunk as Uint8Array);
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => http.ServerResponse;
    (res as unknown as { write: (...args: unknown[]) => boolean }).write = (...args: unknown[]) => {
      const b = toBuf(args[0], args[1]);
      if (b) parts.push(b);
      return write(...args);
    };
    (res as unknown as { end: (...args: unknown[]) => http.ServerResponse }).end = (...args: unknown[]) => {
      const b = toBuf(args[0], args[1]);
      if (b) parts.push(b);
      a.status = res.statusCode;
      a.body = Buffer.concat(parts);
      a.done = true;
      return end(...args);
    };
  });
}

beforeAll(async () => {
  ({ agent, guardian } = stack);
  tapAnswers(agent.server);
  on = await stack.proxy({ ROLE: 'server', INSPECT_RESPONSES: 'true', INSPECT_CARDS: 'false' });
  both = await stack.proxy({
    ROLE: 'both',
    INSPECT_RESPONSES: 'true',
    INSPECT_CARDS: 'false',
    OBSERVED_AGENT_ID: 'c-1',
    OBSERVED_AGENT_NAME: 'Cooking assistant',
    OBSERVED_AGENT_URL: 'https://cooking.example/a2a',
    OBSERVED_AGENT_VERSION: '1.0.0',
    OBSERVED_AGENT_INSTRUCTIONS: 'Help with cooking.',
    OBSERVED_AGENT_PROVIDER_NAME: 'OpenAI',
    OBSERVED_AGENT_PROVIDER_URL: 'https://openai.com',
  });
});
beforeEach(() => {
  answers.length = 0;
});

/* ---------------------------------------------------------------------------------------------- */

const CASES = BINDING_VERSIONS;
const isResponseEnv = isResponseEnvelope;
const requestEnvs = (): Envelope[] => guardian.calls().filter((e) => !isResponseEnv(e));
const responseEnvs = (): Envelope[] => guardian.calls().filter(isResponseEnv);
const ALLOW: GuardianReply = { decision: 'allow' };
const DENY: GuardianReply = { decision: 'deny', message: 'answer withheld', reasonCode: ['LEAK'] };
const INFO = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'a2a-guard' };

/** Requests allowed; every response hook answered by `reply`. */
function onResponses(reply: (env: Envelope) => GuardianReply): void {
  guardian.script((env) => (isResponseEnv(env) ? reply(env) : ALLOW));
}
/** A deep copy of `x` with every occurrence of `from` in its JSON text replaced by `to`. */
function swap<T>(x: T, from: string, to: string): T {
  return JSON.parse(JSON.stringify(x).split(from).join(to)) as T;
}

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  bytes: Buffer;
  text: string;
  json: any;
}
async function call(url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<RawAnswer> {
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(init.headers ?? {}),
  };
  const res = await fetch(url, { method: init.method ?? 'POST', headers, ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }) });
  const bytes = Buffer.from(await res.arrayBuffer());
  const text = bytes.toString('utf8');
  const h: Record<string, string> = {};
  res.headers.forEach((v, k) => (h[k] = v));
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: h, bytes, text, json };
}

/** A unary SendMessage "hello <tag>" in the given binding/version, raw. */
function sendCall(base: string, binding: Binding, version: A2AVersion, id: string, text: string) {
  const v1 = version === '1.0';
  const headers: Record<string, string> = v1 ? { 'a2a-version': '1.0' } : {};
  if (binding === 'JSONRPC') {
    const message = v1
      ? { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] }
      : { kind: 'message', messageId: `m-${id}`, role: 'user', parts: [{ kind: 'text', text }] };
    return { url: `${base}/a2a/jsonrpc`, body: { jsonrpc: '2.0', id, method: v1 ? 'SendMessage' : 'message/send', params: { message } }, headers };
  }
  const message = v1 ? { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } : { messageId: `m-${id}`, role: 'ROLE_USER', content: [{ text }] };
  return { url: `${base}/a2a/rest/${v1 ? '' : 'v1/'}message:send`, body: { message }, headers };
}

/** The agent's answer to the one POST (or GET) it got for this test. */
function agentAnswer(method = 'POST'): AgentAnswer {
  const xs = answers.filter((a) => a.method === method && !a.path.includes('agent-card'));
  expect(xs).toHaveLength(1);
  expect(xs[0]!.done).toBe(true);
  return xs[0]!;
}

function expectResponseEnvelope(env: Envelope, aosMethod: string): void {
  expect(env.method).toBe(aosMethod);
  expect(Object.keys(env.params).sort()).toEqual(['context', 'payload']);
  expect(env.params.context.from.role).toBe('server');
  expect(env.params.context.to.role).toBe('client');
}

/** The payload the guardian must have seen for a REST answer (wrapped, with the minted id). */
function restPayload(body: any, ok: boolean): Record<string, unknown> {
  const minted = requestEnvs()[0].params.payload.id;
  expect(typeof minted).toBe('string');
  if (ok) return { jsonrpc: '2.0', id: minted, result: body };
  return { jsonrpc: '2.0', id: minted, error: body && typeof body === 'object' && 'error' in body ? body.error : body };
}

async function sdkError(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the SDK call to fail');
}

/* ---------------------------------------------------------------------------------------------- */
/* allow                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

describe.each(CASES)('raw %s %s SendMessage', (binding, version) => {
  test("allow: the caller gets the agent's exact bytes; the guardian saw that answer", async () => {
    const id = `ok-${binding}-${version}`;
    const c = sendCall(on.url, binding, version, id, 'hello ✓ "quoted" é');
    const res = await call(c.url, { body: c.body, headers: c.headers });
    const a = agentAnswer();
    expect(res.status).toBe(a.status);
    expect(res.status).toBe(binding === 'HTTP+JSON' && version === '0.3' ? 201 : 200); // the v0.3 REST server answers 201 Created
    expect(res.bytes.equals(a.body)).toBe(true);
    expect(Number(res.headers['content-length'])).toBe(a.body.length);
    // The agent's validator stays with its own bytes (the modify case below shows it goes with them).
    expect(res.headers.etag).toMatch(/^W\/"/);
    expect(textOf(res.json)).toContain('echo: hello ✓ "quoted" é');

    const resps = responseEnvs();
    expect(resps).toHaveLength(1);
    expectResponseEnvelope(resps[0], 'message/send');
    if (binding === 'JSONRPC') {
      expect(res.json.id).toBe(id);
      expect(resps[0].params.payload).toEqual(res.json);
      // The answer's own text is the payload the guardian got, byte for byte.
      expect(guardian.rawBodies.some((b) => b.includes(`"params":{"payload":${a.body.toString('utf8')},"context":`))).toBe(true);
    } else {
      expect(resps[0].params.payload).toEqual(restPayload(res.json, true));
    }
  });

  test("deny: the answer is replaced by the proxy's error (JSON-RPC -31403 with the caller's id; REST 403)", async () => {
    onResponses(() => DENY);
    const id = `deny-${binding}-${version}`;
    const c = sendCall(on.url, binding, version, id, 'hello secret');
    const res = await call(c.url, { body: c.body, headers: c.headers });
    expect(agentAnswer().status).toBeLessThan(300); // the agent did answer; the answer was withheld
    expect(res.text).not.toContain('echo:');
    const env = responseEnvs()[0];
    if (binding === 'JSONRPC') {
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        jsonrpc: '2.0',
        id,
        error: {
          code: -31403,
          message: expect.stringContaining('answer withheld'),
          data: [{ ...INFO, reason: 'GUARDIAN_DENIED', metadata: { envelopeId: env.id, message: 'answer withheld', reasonCode: 'LEAK' } }],
        },
      });
    } else {
      expect(res.status).toBe(403);
      expect(res.json).toEqual({
        error: {
          code: 403,
          status: 'PERMISSION_DENIED',
          message: expect.stringContaining('answer withheld'),
          details: [{ ...INFO, reason: 'GUARDIAN_DENIED', metadata: { envelopeId: env.id, message: 'answer withheld', reasonCode: 'LEAK' } }],
        },
      });
    }
  });

  test('modify: the caller sees the replacement', async () => {
    onResponses((env) => ({ decision: 'modify', message: 'rewrote', modifiedPayload: swap(env.params.payload, 'echo: hello', 'echo: [rewritten]') }));
    const id = `mod-${binding}-${version}`;
    const c = sendCall(on.url, binding, version, id, 'hello there');
    const res = await call(c.url, { body: c.body, headers: c.headers });
    expect(res.status).toBe(agentAnswer().status);
    const replacement = swap(responseEnvs()[0].params.payload, 'echo: hello', 'echo: [rewritten]');
    expect(res.json).toEqual(binding === 'JSONRPC' ? replacement : replacement.result);
    expect(textOf(res.json)).toContain('echo: [rewritten] there');
    expect(res.text).not.toContain('echo: hello');
    expect(Number(res.headers['content-length'])).toBe(res.bytes.length);
    // Bytes the proxy wrote: the agent's ETag (allow test above) would name the agent's answer, not this one.
    expect(res.headers.etag).toBeUndefined();
  });

  test('modify that changes the id, or drops result and error: no valid answer -> -31503 / REST 503', async () => {
    for (const bad of [(p: any) => ({ ...p, id: 'not-yours' }), (p: any) => ({ jsonrpc: '2.0', id: p.id })]) {
      guardian.clear();
      answers.length = 0;
      onResponses((env) => ({ decision: 'modify', message: 'bad modify', modifiedPayload: bad(env.params.payload) }));
      const id = `badmod-${binding}-${version}`;
      const c = sendCall(on.url, binding, version, id, 'hello');
      const res = await call(c.url, { body: c.body, headers: c.headers });
      expect(res.text).not.toContain('echo:');
      expect(res.text).not.toContain('not-yours');
      if (binding === 'JSONRPC') {
        expect(res.status).toBe(200);
        expect(res.json).toMatchObject({
          jsonrpc: '2.0',
          id,
          error: { code: -31503, data: [{ ...INFO, reason: 'GUARDIAN_UNAVAILABLE', metadata: { failure: 'invalidModify' } }] },
        });
      } else {
        expect(res.status).toBe(503);
        expect(res.json).toMatchObject({ error: { code: 503, status: 'UNAVAILABLE', details: [{ ...INFO, reason: 'GUARDIAN_UNAVAILABLE' }] } });
      }
    }
  });
});

describe.each(CASES)('SDK %s %s sendMessage', (binding, version) => {
  test('allow / deny / modify as the SDK client sees them', async () => {
    const client = await makeClient(on.url, binding, version);
    expect(textOf(await client.sendMessage(sendReq('hello sdk')))).toContain('echo: hello sdk');

    onResponses(() => DENY);
    const err = await sdkError(client.sendMessage(sendReq('hello sdk')));
    expect(String(err.message)).toContain('answer withheld');
    if (binding === 'JSONRPC') expect(err.envelopeCode).toBe(-31403);
    else if (version === '1.0') expect(err.statusCode).toBe(403);
    else expect(String(err.message)).toContain('403');

    onResponses((env) => ({ decision: 'modify', message: 'm', modifiedPayload: swap(env.params.payload, 'echo: hello sdk', 'echo: [masked]') }));
    expect(textOf(await client.sendMessage(sendReq('hello sdk')))).toContain('echo: [masked]');
  });
});

test('GetTask of an existing task: allowed answer passes byte for byte', async () => {
  const created = await call(`${on.url}/a2a/jsonrpc`, {
    body: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'g1', role: 'ROLE_USER', parts: [{ text: 'for get' }] } } },
    headers: { 'a2a-version': '1.0' },
  });
  const taskId = created.json.result.task.id;
  guardian.clear();
  answers.length = 0;
  const res = await call(`${on.url}/a2a/jsonrpc`, {
    body: { jsonrpc: '2.0', id: 'get-1', method: 'GetTask', params: { id: taskId } },
    headers: { 'a2a-version': '1.0' },
  });
  expect(res.bytes.equals(agentAnswer().body)).toBe(true);
  expect(res.json.result.id).toBe(taskId);
  expect(textOf(res.json)).toBe('echo: for get');
  const resps = responseEnvs();
  expect(resps).toHaveLength(1);
  expectResponseEnvelope(resps[0], 'tasks/get');
  expect(resps[0].params.payload).toEqual(res.json);
});

/* ---------------------------------------------------------------------------------------------- */
/* The agent's error answers                                                                      */
/* ---------------------------------------------------------------------------------------------- */

describe('error answers from the agent are response payloads', () => {
  const jsonRpcCases = [
    ['1.0', 'GetTask', { 'a2a-version': '1.0' }],
    ['0.3', 'tasks/get', {}],
  ] as const;

  test.each(jsonRpcCases)('JSON-RPC %s %s unknown task (-32001): allowed unchanged, guardian saw it, deny replaces it', async (_v, method, headers) => {
    const body = { jsonrpc: '2.0', id: 'nf-1', method, params: { id: 'no-such-task' } };
    const res = await call(`${on.url}/a2a/jsonrpc`, { body, headers });
    const a = agentAnswer();
    expect(res.bytes.equals(a.body)).toBe(true);
    expect(res.json).toMatchObject({ jsonrpc: '2.0', id: 'nf-1', error: { code: -32001 } });
    const resps = responseEnvs();
    expect(resps).toHaveLength(1);
    expectResponseEnvelope(resps[0], 'tasks/get');
    expect(resps[0].params.payload).toEqual(res.json);
    expect(guardian.rawBodies.some((b) => b.includes(`"params":{"payload":${a.body.toString('utf8')},"context":`))).toBe(true);

    guardian.clear();
    onResponses(() => DENY);
    const denied = await call(`${on.url}/a2a/jsonrpc`, { body, headers });
    expect(denied.status).toBe(200);
    expect(denied.json).toMatchObject({ jsonrpc: '2.0', id: 'nf-1', error: { code: -31403, data: [{ ...INFO, reason: 'GUARDIAN_DENIED' }] } });
    expect(denied.text).not.toContain('-32001');
    expect(responseEnvs()[0].params.payload.error.code).toBe(-32001);

    guardian.clear();
    onResponses((env) => ({ decision: 'modify', message: 'm', modifiedPayload: swap(env.params.payload, 'no-such-task', '[id]') }));
    const modified = await call(`${on.url}/a2a/jsonrpc`, { body, headers });
    expect(modified.json).toEqual(swap(res.json, 'no-such-task', '[id]'));
  });

  const restCases = [
    ['1.0', '/a2a/rest/tasks/no-such-task', { 'a2a-version': '1.0' }],
    ['0.3', '/a2a/rest/v1/tasks/no-such-task', {}],
  ] as const;

  test.each(restCases)('REST %s GET unknown task (404): allowed unchanged, guardian saw it as an error payload, deny -> 403', async (_v, path, headers) => {
    const res = await call(`${on.url}${path}`, { method: 'GET', headers });
    const a = agentAnswer('GET');
    expect(res.status).toBe(404);
    expect(a.status).toBe(404);
    expect(res.bytes.equals(a.body)).toBe(true);
    const resps = responseEnvs();
    expect(resps).toHaveLength(1);
    expectResponseEnvelope(resps[0], 'tasks/get');
    expect(resps[0].params.payload).toEqual(restPayload(res.json, false));
    expect(JSON.stringify(resps[0].params.payload.error)).toContain('no-such-task');

    guardian.clear();
    onResponses(() => DENY);
    const denied = await call(`${on.url}${path}`, { method: 'GET', headers });
    expect(denied.status).toBe(403);
    expect(denied.json).toMatchObject({ error: { code: 403, status: 'PERMISSION_DENIED', details: [{ ...INFO, reason: 'GUARDIAN_DENIED' }] } });
    expect(denied.text).not.toContain('no-such-task');
  });

  test("REST v1: a modified error answer keeps the agent's status and carries the replacement Status", async () => {
    onResponses((env) => ({ decision: 'modify', message: 'm', modifiedPayload: swap(env.params.payload, 'no-such-task', '[id]') }));
    const res = await call(`${on.url}/a2a/rest/tasks/no-such-task`, { method: 'GET', headers: { 'a2a-version': '1.0' } });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ error: swap(responseEnvs()[0].params.payload.error, 'no-such-task', '[id]') });
    expect(res.text).toContain('[id]');
  });

  test.each(CASES)("SDK %s %s getTask of an unknown task: the agent's error reaches the client when allowed", async (binding, version) => {
    const client = await makeClient(on.url, binding, version);
    const err = await sdkError(client.getTask({ tenant: '', id: 'no-such-task', historyLength: undefined }));
    expect(String(err.message)).toMatch(/not found/i);
    if (binding === 'JSONRPC') expect(err.envelopeCode ?? err.code).toBe(-32001);
    else if (version === '1.0') expect(err.statusCode).toBe(404);
    const resps = responseEnvs();
    expect(resps).toHaveLength(1);
    expect(resps[0].params.payload.error).toBeDefined();
  });
});

/* ---------------------------------------------------------------------------------------------- */
/* ROLE=both                                                                                      */
/* ---------------------------------------------------------------------------------------------- */

/**
 * Which hook an envelope belongs to: the side whose observed agent (full Agent, with `instructions`) it
 * describes. (Not `id`: a verified caller carries its `id` too.)
 */
function hookOf(env: Envelope): string {
  const ctx = env.params.context;
  const observedIsFrom = 'instructions' in ctx.from.agent;
  const side = observedIsFrom ? ctx.from.role : ctx.to.role;
  return `${isResponseEnv(env) ? 'response' : 'request'}:${side}`;
}

describe('ROLE=both', () => {
  const v1 = { 'a2a-version': '1.0' };
  const send = (id: string, text: string) => ({
    jsonrpc: '2.0',
    id,
    method: 'SendMessage',
    params: { message: { messageId: `b-${id}`, role: 'ROLE_USER', parts: [{ text }] } },
  });

  test('response hooks run server side first, then client side; both see the same answer on allow', async () => {
    const res = await call(`${both.url}/a2a/jsonrpc`, { body: send('both-1', 'hello both'), headers: v1 });
    expect(res.bytes.equals(agentAnswer().body)).toBe(true);
    const envs = guardian.calls();
    expect(envs.map(hookOf)).toEqual(['request:client', 'request:server', 'response:server', 'response:client']);
    expect(envs[2].params.context.from.agent).toMatchObject({ name: 'Unary Agent' });
    expect(envs[3].params.context.to.agent).toMatchObject({ id: 'c-1', name: 'Cooking assistant' });
    expect(envs[2].params.payload).toEqual(res.json);
    expect(envs[3].params.payload).toEqual(res.json);
  });

  test('a modify from the server-side hook is what the client-side hook sees; the client side can modify again', async () => {
    guardian.script((env) => {
      if (!isResponseEnv(env)) return ALLOW;
      if (hookOf(env) === 'response:server')
        return { decision: 'modify', message: 's', modifiedPayload: swap(env.params.payload, 'echo: hello', 'echo: [server]') };
      return { decision: 'modify', message: 'c', modifiedPayload: swap(env.params.payload, 'echo: [server]', 'echo: [server][client]') };
    });
    const res = await call(`${both.url}/a2a/jsonrpc`, { body: send('both-2', 'hello both'), headers: v1 });
    const envs = responseEnvs();
    expect(envs.map(hookOf)).toEqual(['response:server', 'response:client']);
    expect(textOf(envs[0].params.payload)).toBe('echo: hello both');
    expect(textOf(envs[1].params.payload)).toBe('echo: [server] both');
    expect(envs[1].params.payload.id).toBe('both-2');
    expect(res.json.id).toBe('both-2');
    expect(textOf(res.json)).toBe('echo: [server][client] both');
  });

  test('server side modifies, client side denies: -31403 naming the client-side envelope', async () => {
    guardian.script((env) => {
      if (!isResponseEnv(env)) return ALLOW;
      if (hookOf(env) === 'response:server')
        return { decision: 'modify', message: 's', modifiedPayload: swap(env.params.payload, 'echo: hello', 'echo: [server]') };
      return DENY;
    });
    const res = await call(`${both.url}/a2a/jsonrpc`, { body: send('both-3', 'hello both'), headers: v1 });
    const envs = responseEnvs();
    expect(envs.map(hookOf)).toEqual(['response:server', 'response:client']);
    expect(res.json).toMatchObject({ id: 'both-3', error: { code: -31403, data: [{ reason: 'GUARDIAN_DENIED', metadata: { envelopeId: envs[1].id } }] } });
    expect(res.text).not.toContain('echo:');
  });

  test('server side denies: the client-side response hook is not asked', async () => {
    guardian.script((env) => (isResponseEnv(env) && hookOf(env) === 'response:server' ? DENY : ALLOW));
    const res = await call(`${both.url}/a2a/jsonrpc`, { body: send('both-4', 'hello both'), headers: v1 });
    expect(res.json).toMatchObject({ id: 'both-4', error: { code: -31403 } });
    expect(guardian.calls().map(hookOf)).toEqual(['request:client', 'request:server', 'response:server']);
  });

  // Several events are judged at once (STREAM_INSPECT_WINDOW), so envelopes of different events may
  // interleave at the guardian; within one event the server side always comes before the client side.
  /** The event an envelope is about: its kind and text (the server-side modify below renamed "chunk 1"). */
  const eventKey = (env: Envelope): string =>
    `${Object.keys(env.params.payload.result ?? {}).join(',')}|${textOf(env.params.payload).replace('[server 1]', 'chunk 1')}`;
  /** Per event, in the order the caller got them: its [server, client] envelopes; the server one arrived first. */
  function perEvent(envs: Envelope[], callerEvents: unknown[]): Array<[Envelope, Envelope]> {
    return callerEvents.map((e) => {
      const key = eventKey({ params: { payload: e } });
      const mine = envs.filter((x) => eventKey(x) === key);
      expect(mine.map(hookOf)).toEqual(['response:server', 'response:client']);
      return [mine[0], mine[1]] as [Envelope, Envelope];
    });
  }

  test('stream events: each event goes server side then client side; a server-side modify is what the client side and the caller see', async () => {
    guardian.script((env) => {
      if (!isResponseEnv(env) || hookOf(env) !== 'response:server' || textOf(env.params.payload) !== 'chunk 1') return ALLOW;
      return { decision: 'modify', message: 's', modifiedPayload: swap(env.params.payload, '"chunk 1"', '"[server 1]"') };
    });
    const res = await rawSse(
      `${both.url}/a2a/jsonrpc`,
      {
        jsonrpc: '2.0',
        id: 'bs-1',
        method: 'SendStreamingMessage',
        params: { message: { messageId: 'bs', role: 'ROLE_USER', parts: [{ text: 'stream 3' }] } },
      },
      v1,
    );
    expect(res.events.map((e) => textOf(e.json)).slice(1, 4)).toEqual(['chunk 0', '[server 1]', 'chunk 2']);
    const envs = responseEnvs();
    expect(envs).toHaveLength(10);
    perEvent(
      envs,
      res.events.map((e) => e.json),
    ).forEach(([s, c], i) => {
      if (i === 2) {
        expect(textOf(s.params.payload)).toBe('chunk 1');
        expect(textOf(c.params.payload)).toBe('[server 1]');
      } else {
        expect(c.params.payload).toEqual(s.params.payload);
      }
      expect(c.params.payload).toEqual(res.events[i]!.json); // the caller got what the last hook passed
    });
  });

  test('SDK v0.3 JSON-RPC client through ROLE=both: two response hooks per event, server side first', async () => {
    const client = await makeClient(both.url, 'JSONRPC', '0.3');
    const events = await collect(client.sendMessageStream(sendReq('stream 2')));
    expect(events).toHaveLength(4);
    const envs = responseEnvs();
    expect(envs).toHaveLength(8);
    // Each event's two envelopes carry the same payload (nothing modified): pair them by payload.
    const byPayload = new Map<string, string[]>();
    for (const e of envs) byPayload.set(JSON.stringify(e.params.payload), [...(byPayload.get(JSON.stringify(e.params.payload)) ?? []), hookOf(e)]);
    expect([...byPayload.values()]).toEqual(Array.from({ length: 4 }, () => ['response:server', 'response:client']));
  });
});
