/**
 * The bounds on a JSON request body's shape (MAX_JSON_OBJECT_MEMBERS, MAX_JSON_VALUES, MAX_JSON_DEPTH),
 * read on the bytes before the body is parsed: a body over one is refused in the binding's own terms
 * (JSON-RPC error with the caller's id, REST problem) and never reaches the agent; a body at the bound is
 * carried intact. Both readings are proved: a small body (read at once) and a body over 1 MiB (read in
 * turns of the event loop). Real SDK agent (handler recorder), real SDK client, real HTTP guardian.
 */
import { makeClient, rawRpc, sendReq } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { useStack, type TestProxy } from '../../helpers/proxy-harness';

jest.setTimeout(60_000);

const rec = handlerRecorder();
const s = useStack({ wrapRequestHandler: rec.wrap });

const MEMBERS = 40;
const BIG = 'x'.repeat(1536 * 1024);
let proxy: TestProxy;
beforeAll(async () => {
  proxy = await s.proxy({ MAX_JSON_OBJECT_MEMBERS: String(MEMBERS), MAX_JSON_VALUES: '2000', MAX_JSON_DEPTH: '16' });
});
beforeEach(() => rec.clear());

const wide = (n: number): Record<string, number> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
const nested = (depth: number): unknown => (depth === 0 ? 'leaf' : { d: nested(depth - 1) });
const rpcSend = (id: string, data: unknown, text = 'hi') => ({
  jsonrpc: '2.0',
  id,
  method: 'SendMessage',
  params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }, { data }] } },
});
const restSend = (data: unknown, text = 'hi') => ({ message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }, { data }] } });

/** The first object holding `k0` in `v`, or undefined. */
function dataIn(v: unknown): Record<string, unknown> | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  if (!Array.isArray(v) && Object.hasOwn(v, 'k0')) return v as Record<string, unknown>;
  for (const x of Object.values(v)) {
    const f = dataIn(x);
    if (f !== undefined) return f;
  }
  return undefined;
}

/** What the agent received over HTTP (its SDK refuses bodies over 100 KB, so a large one is read here). */
const posted = () => s.agent.received.filter((r) => r.method === 'POST');

const jsonRpc = (body: unknown) => rawRpc(`${proxy.url}/a2a/jsonrpc`, body, { 'a2a-version': '1.0' });
const rest = (body: unknown) => rawRpc(`${proxy.url}/a2a/rest/message:send`, body, { 'a2a-version': '1.0' });

test("an object at MAX_JSON_OBJECT_MEMBERS reaches the agent's handler intact (SDK client)", async () => {
  const client = await makeClient(proxy.url, 'JSONRPC');
  const req = sendReq('hi', false, { parts: [] });
  req.message?.parts.push({ content: { $case: 'data', value: wide(MEMBERS) }, metadata: undefined, filename: '', mediaType: 'application/json' });
  await client.sendMessage(req);
  expect(rec.calls.map((c) => c.method)).toEqual(['sendMessage']);
  expect(dataIn(rec.calls[0]?.params)).toEqual(wide(MEMBERS));
});

describe.each([
  ['a small body', 'hi'],
  ['a body over 1 MiB', BIG],
])('%s', (_name, text) => {
  test('an object at MAX_JSON_OBJECT_MEMBERS is forwarded intact', async () => {
    const r = await jsonRpc(rpcSend('wide-0', wide(MEMBERS), text));
    expect(r.json?.error?.code).not.toBe(-31400);
    expect(posted()).toHaveLength(1);
    expect(dataIn(posted()[0]?.body)).toEqual(wide(MEMBERS));
    expect(posted()[0]?.bodyText).toContain(text);
  });

  test("an object over MAX_JSON_OBJECT_MEMBERS is refused with the caller's id and reaches nothing", async () => {
    const r = await jsonRpc(rpcSend('wide-1', wide(MEMBERS + 1), text));
    expect(r.status).toBe(200);
    expect(r.json.id).toBe('wide-1');
    expect(r.json.error.code).toBe(-31400);
    expect(r.json.error.message).toMatch(new RegExp(`object with more than ${MEMBERS} members`));
    expect(posted()).toEqual([]);
    expect(s.guardian.calls()).toEqual([]);
  });

  test('over MAX_JSON_OBJECT_MEMBERS on REST: a problem answer, nothing reaches the agent', async () => {
    const r = await rest(restSend(wide(MEMBERS + 1), text));
    expect(r.status).toBe(400);
    expect(r.text).toMatch(new RegExp(`object with more than ${MEMBERS} members`));
    expect(posted()).toEqual([]);
    expect(s.guardian.calls()).toEqual([]);
  });

  test('at the bound on REST: carried intact', async () => {
    await rest(restSend(wide(MEMBERS), text));
    expect(posted()).toHaveLength(1);
    expect(dataIn(posted()[0]?.body)).toEqual(wide(MEMBERS));
  });

  test('MAX_JSON_VALUES and MAX_JSON_DEPTH bound the body as configured', async () => {
    // 40 objects of 30 members: every object within its bound, 2,400 values in all.
    const many = await jsonRpc(
      rpcSend(
        'many-1',
        Array.from({ length: MEMBERS }, () => wide(30)),
        text,
      ),
    );
    expect(many.json.id).toBe('many-1');
    expect(many.json.error.message).toMatch(/more than 2000 members or elements/);
    const deep = await jsonRpc(rpcSend('deep-1', nested(16), text));
    expect(deep.json.id).toBe('deep-1');
    expect(deep.json.error.message).toMatch(/nested deeper than 16/);
    expect(posted()).toEqual([]);
    await jsonRpc(rpcSend('deep-2', nested(8), text));
    expect(posted()).toHaveLength(1);
  });
});

test('a large body not in its canonical form reaches the guardian and the agent canonical, never as the caller spelled it', async () => {
  const body = rpcSend('spelled-1', wide(3), BIG);
  // Spacing and an escaped letter: the same value, other bytes.
  const spelled = JSON.stringify(body, null, 1).replace('"k0"', '"\\u006b0"');
  await rawRpc(`${proxy.url}/a2a/jsonrpc`, spelled, { 'a2a-version': '1.0' });
  expect(posted()).toHaveLength(1);
  expect(posted()[0]?.bodyText).toBe(JSON.stringify(body));
  expect(JSON.stringify(s.guardian.calls()[0]?.params.payload)).toBe(JSON.stringify(body));
});
