/**
 * Races between callers on task ownership. A context is bound to its owner when the
 * agent's answer names it; until then a context id the store does not know is "a new context" for
 * anyone. A client may choose its context ids, and a blocking SendMessage answers only when its task
 * is done: for that whole time the context A opened was nobody's, and B, naming it, had its message
 * delivered into A's conversation (the agent keeps a conversation per context) before A's answer
 * bound it. Now a context the store does not know is held for the caller that names it (provisionally,
 * until the answer binds it), before the guardian and the agent see the call: the second caller to name
 * it is told "not found".
 * Real SDK agent (JSON-RPC and gRPC), real guardian, OIDC callers A and B, ROLE=server.
 */
import { handlerRecorder } from '../../helpers/handler-recorder';
import { grpcFrame, rawGrpc } from '../../helpers/grpc';
import { useIdentityProxy, type Caller } from '../../helpers/identities';
import { useStack } from '../../helpers/proxy-harness';
import { codecFor } from '../../../src/a2a/bindings/grpc/codec';
import { grpcMethodForPath } from '../../../src/a2a/bindings/grpc/methods';

jest.setTimeout(60_000);

const rec = handlerRecorder();
const s = useStack({ grpc: true, wrapRequestHandler: rec.wrap, stepMs: 50, slowMs: 600 });
const fx = useIdentityProxy(s, { GRPC_PORT: '0' });

function sendJsonRpc(who: Caller, contextId: string, text: string, n: number): Promise<{ result?: unknown; error?: { code: number } }> {
  return fetch(`${fx.proxy.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...fx.ids.headersAs(who) },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: n,
      method: 'SendMessage',
      params: { message: { messageId: `race-${who}-${n}`, contextId, role: 'ROLE_USER', parts: [{ text }] } },
    }),
  }).then((r) => r.json() as Promise<{ result?: unknown; error?: { code: number } }>);
}

function sendGrpc(who: Caller, contextId: string, text: string, n: number): Promise<number | undefined> {
  const m = grpcMethodForPath('/lf.a2a.v1.A2AService/SendMessage');
  if (m === undefined) throw new Error('SendMessage');
  const c = codecFor(m).request;
  const frame = grpcFrame(c.encode(c.fromJson({ message: { messageId: `race-g-${who}-${n}`, contextId, role: 'ROLE_USER', parts: [{ text }] } })));
  return rawGrpc(fx.proxy.grpcAddress as string, m.path, frame, { 'a2a-version': '1.0', ...fx.ids.headersAs(who) }).then((a) => a.grpcStatus);
}

const actedInContext = (contextId: string, who: Caller) =>
  rec.calls.filter((c) => JSON.stringify(c.params).includes(contextId) && JSON.stringify(c.params).includes(`-${who}-`));

test("while A's first (blocking) call in a new context runs, B cannot put a message into that context (JSON-RPC)", async () => {
  rec.clear();
  const ctx = `ctx-race-${Date.now()}`;
  const a = sendJsonRpc('A', ctx, 'slow A first turn', 1);
  // A's call has reached the agent (its task is working); its answer, which binds the context, is not back.
  for (let i = 0; i < 100 && actedInContext(ctx, 'A').length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  expect(actedInContext(ctx, 'A')).toHaveLength(1);
  const b = await sendJsonRpc('B', ctx, "B into A's context", 2);
  expect(b.error?.code).toBe(-32001);
  expect(actedInContext(ctx, 'B')).toHaveLength(0);
  expect((await a).result).toBeDefined();
  // A's context stays A's.
  expect((await sendJsonRpc('A', ctx, 'A second turn', 3)).result).toBeDefined();
});

test('the same over gRPC, and both callers at once: at most one of them gets a context', async () => {
  rec.clear();
  const ctx = `ctx-race-g-${Date.now()}`;
  const [a, b] = await Promise.all([sendGrpc('A', ctx, 'slow A', 1), sendGrpc('B', ctx, 'slow B', 2)]);
  // One of them was first: the other is refused as not found, and its message reached nothing.
  expect([a, b].filter((x) => x === 0)).toHaveLength(1);
  expect([a, b].filter((x) => x === 5)).toHaveLength(1);
  const loser: Caller = a === 0 ? 'B' : 'A';
  expect(rec.calls.filter((c) => JSON.stringify(c.params).includes(`race-g-${loser}-`))).toHaveLength(0);
});
