/**
 * Property-based tests over the two decisions that must never go wrong: what is an A2A call
 * (classify) and what the guardian's answer lets through (enforce).
 */
import fc from 'fast-check';
import type { IncomingHttpHeaders } from 'node:http';
import { classify, type Classified } from '../../src/a2a/classify';
import { OPERATIONS, operationForMethod, type Operation } from '../../src/a2a/operations';
import type { JsonObject, SuccessResult } from '../../src/aos/schemas';
import { enforce, sameId, type GuardianOutcome } from '../../src/proxy/enforce';

const KINDS = ['a2a', 'other', 'reject'];

const verb = fc.constantFrom('POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD');
const headerName = fc.oneof(
  fc.constantFrom('content-type', 'content-encoding', 'a2a-version', 'x-http-method-override', 'x-aos-reasoning', 'accept', 'x-http-method'),
  fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/),
);
const headerValue = fc.oneof(
  fc.constantFrom('application/json', 'text/plain', 'application/octet-stream', 'image/png', '', 'POST', '1.0'),
  fc.string({ maxLength: 20 }),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
);
const headers = fc.dictionary(headerName, headerValue, { maxKeys: 4 }) as fc.Arbitrary<IncomingHttpHeaders>;

const methodName = fc.oneof(
  fc.constantFrom(...OPERATIONS.flatMap((o) => [o.v1Method, o.aosMethod, ...(o.v03Method === null ? [] : [o.v03Method])])),
  fc.constantFrom('Message/Send', ' message/send', 'SENDMESSAGE', 'custom/thing', 'ping', ''),
  fc.string({ maxLength: 30 }),
);
const idValue = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.double(), fc.constant(null), fc.jsonValue({ maxDepth: 1 }));

/** JSON-RPC-ish objects, often with an A2A method. */
const rpcObject = fc.record(
  { jsonrpc: fc.constantFrom('2.0', '1.0'), id: idValue, method: fc.oneof(methodName, fc.jsonValue({ maxDepth: 1 })), params: fc.jsonValue({ maxDepth: 3 }) },
  { requiredKeys: [] },
);

const bodyBytes: fc.Arbitrary<Buffer | null> = fc.oneof(
  fc.constant(null),
  fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
  fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? 'null', 'utf8')),
  rpcObject.map((o) => Buffer.from(JSON.stringify(o), 'utf8')),
  fc.array(rpcObject, { maxLength: 3 }).map((o) => Buffer.from(JSON.stringify(o), 'utf8')),
  // Mutations of JSON-RPC text: cut, spliced with junk, prefixed with a BOM, comments.
  fc.tuple(rpcObject, fc.nat(), fc.string({ maxLength: 4 })).map(([o, at, junk]) => {
    const s = JSON.stringify(o);
    const i = at % (s.length + 1);
    return Buffer.from(s.slice(0, i) + junk + s.slice(i), 'utf8');
  }),
  rpcObject.map((o) => Buffer.from(`\uFEFF${JSON.stringify(o)}`, 'utf8')),
);

const pathArb = fc.oneof(
  fc.string({ maxLength: 30 }).map((p) => `/${p}`),
  fc.constantFrom('/', '/a2a/jsonrpc', '/message:send', '/v1/message:stream', '/t1/tasks/abc:cancel', '/v1/tasks/x:subscribe', '/tasks',
    '/tasks/1/pushNotificationConfigs/2', '/v1/card', '/extendedAgentCard', '/a%2Fb/tasks/x', '/tasks/%E0%A4%A', '/.well-known/agent-card.json'),
);

function checkInvariants(c: Classified, verbUsed: string, body: Buffer | null): void {
  expect(KINDS).toContain(c.kind);
  if (c.kind === 'a2a' && c.binding !== 'jsonrpc') {
    // A REST route (classify also knows the HTTP+JSON binding): the verb is one of the operation's routes.
    const routes = [...c.op.restV1, ...c.op.restV03];
    // HEAD is answered by a server's GET route, so it is that operation too.
    const verb = verbUsed.toUpperCase() === 'HEAD' ? 'GET' : verbUsed.toUpperCase();
    expect(routes.map((r) => r.verb)).toContain(verb);
    expect(operationForMethod(c.request.method as string)).toBe(c.op);
  } else if (c.kind === 'a2a') {
    // Only a POST with an exact A2A method name and a valid id is an A2A call.
    expect(verbUsed).toBe('POST');
    expect(typeof c.request.method).toBe('string');
    expect(operationForMethod(c.request.method as string)).toBe(c.op);
    const id = c.request.id;
    expect(id === undefined || id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))).toBe(true);
    expect(c.id).toBe(id === undefined ? null : id);
    // The request is what strict JSON.parse gives for the body.
    expect(c.request).toEqual(JSON.parse(body!.toString('utf8')));
  } else if (c.kind === 'reject') {
    expect(c.error.kind).toBe('rejected');
    expect(c.id === null || typeof c.id === 'string' || typeof c.id === 'number').toBe(true);
  } else {
    // Forwarded bytes never carry an exact A2A call, however a strict parser reads them.
    if (c.body !== null && c.body.length > 0) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(c.body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
        const m = (parsed as JsonObject).method;
        if (typeof m === 'string') expect(operationForMethod(m)).toBeUndefined();
      }
      if (Array.isArray(parsed)) expect(parsed.some((e) => typeof e === 'object' && e !== null)).toBe(false);
    }
  }
}

describe('classify properties', () => {
  test('never throws and returns one of the three kinds, with consistent facts', () => {
    fc.assert(
      fc.property(verb, pathArb, headers, bodyBytes, (v, path, h, body) => {
        let c: Classified | undefined;
        expect(() => { c = classify({ verb: v, path, headers: h, body }); }).not.toThrow();
        checkInvariants(c!, v, body);
      }),
      { numRuns: 300 },
    );
  });

  test('every strict-JSON A2A call POSTed without override headers is intercepted (or refused when its path is ambiguous), whatever the path and content type', () => {
    const op = fc.constantFrom(...OPERATIONS);
    const id = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.constant(null));
    fc.assert(
      fc.property(op, fc.boolean(), id, fc.jsonValue({ maxDepth: 3 }), fc.string({ maxLength: 20 }), fc.constantFrom('application/json', 'text/plain', 'application/octet-stream', undefined),
        (o, useV1, rid, params, path, ct) => {
          const method = useV1 || o.v03Method === null ? o.v1Method : o.v03Method;
          const request = { jsonrpc: '2.0', id: rid, method, params };
          const body = Buffer.from(JSON.stringify(request), 'utf8');
          const c = classify({ verb: 'POST', path: `/${path}`, headers: ct === undefined ? {} : { 'content-type': ct }, body });
          // Never forwarded without a decision: intercepted, or refused where the path is also a REST route / ambiguous.
          expect(c.kind).not.toBe('other');
          if (c.kind === 'reject') expect(c.error.kind).toBe('rejected');
          if (c.kind === 'a2a') {
            expect(c.op).toBe(o);
            expect(c.id).toBe(rid);
            expect(c.request).toEqual(JSON.parse(JSON.stringify(request)));
          }
        }),
      { numRuns: 300 },
    );
  });

  test('the same A2A call with any other verb is refused', () => {
    fc.assert(
      fc.property(fc.constantFrom(...OPERATIONS), fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'), (o, v) => {
        const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: o.v1Method }));
        expect(classify({ verb: v, path: '/', headers: {}, body }).kind).toBe('reject');
      }),
    );
  });
});

/* ------------------------------------------------------------------------------------------ */

const A2A_ID = fc.oneof(fc.string({ maxLength: 8 }), fc.integer({ min: -5, max: 5 }), fc.constant(null), fc.constant(undefined));

interface Scenario {
  op: Operation;
  payload: JsonObject;
  outcome: GuardianOutcome;
  failMode: 'closed' | 'open';
  shadow: boolean;
  exposeReasoning: boolean;
}

const scenario: fc.Arbitrary<Scenario> = fc
  .record({
    op: fc.constantFrom(...OPERATIONS),
    useV1: fc.boolean(),
    id: A2A_ID,
    params: fc.jsonValue({ maxDepth: 1 }),
    failMode: fc.constantFrom('closed' as const, 'open' as const),
    shadow: fc.boolean(),
    exposeReasoning: fc.boolean(),
    decision: fc.constantFrom('allow' as const, 'deny' as const, 'modify' as const),
    message: fc.string({ maxLength: 10 }),
    reasoning: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
    reasonCode: fc.option(fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 }), { nil: undefined }),
    // How the modify's replacement relates to the original.
    replacement: fc.constantFrom('same', 'otherId', 'otherMethod', 'idTypeChanged', 'missing', 'noId'),
    newParams: fc.jsonValue({ maxDepth: 1 }),
    failure: fc.option(fc.constantFrom('connect', 'timeout', 'http', 'json', 'rpcError', 'schema', 'id', 'breakerOpen', 'internal') as fc.Arbitrary<
      'connect' | 'timeout' | 'http' | 'json' | 'rpcError' | 'schema' | 'id' | 'breakerOpen' | 'internal'>, { nil: undefined }),
  })
  .map((s) => {
    const method = s.useV1 || s.op.v03Method === null ? s.op.v1Method : s.op.v03Method;
    const payload: JsonObject = { jsonrpc: '2.0', method, params: s.params };
    if (s.id !== undefined) payload.id = s.id;
    let outcome: GuardianOutcome;
    if (s.failure !== undefined) {
      outcome = { ok: false, kind: s.failure, detail: `detail ${s.failure}` };
    } else {
      const result: SuccessResult = { decision: s.decision, message: s.message };
      if (s.reasoning !== undefined) result.reasoning = s.reasoning;
      if (s.reasonCode !== undefined) result.reasonCode = s.reasonCode;
      if (s.replacement !== 'missing') {
        const repl: JsonObject = { jsonrpc: '2.0', method, params: s.newParams };
        if (s.id !== undefined) repl.id = s.id;
        if (s.replacement === 'otherId') repl.id = typeof s.id === 'number' ? s.id + 1 : `${String(s.id)}-x`;
        if (s.replacement === 'idTypeChanged') repl.id = typeof s.id === 'number' ? String(s.id) : 7;
        if (s.replacement === 'otherMethod') repl.method = method === 'message/send' ? 'tasks/get' : 'message/send';
        if (s.replacement === 'noId') delete repl.id;
        result.modifiedRequest = { jsonrpc: '2.0', id: 'env', method: s.op.aosMethod, params: { payload: repl } };
      }
      outcome = { ok: true, result };
    }
    return { op: s.op, payload, outcome, failMode: s.failMode, shadow: s.shadow, exposeReasoning: s.exposeReasoning };
  });

/** Independent oracle for design section 5. */
function expectedDecision(s: Scenario): 'allow' | 'deny' | 'modify' | 'failOpen' | 'failClosed' | 'shadow' {
  if (s.shadow) return 'shadow';
  if (s.outcome.ok) {
    const r = s.outcome.result;
    if (r.decision === 'allow') return 'allow';
    if (r.decision === 'deny') return 'deny';
    const repl = r.modifiedRequest?.params.payload;
    const idOf = (o: JsonObject) => (o.id === undefined ? null : o.id);
    const valid = s.op.decisions.includes('modify') && repl !== undefined && repl.method === s.payload.method && idOf(repl) === idOf(s.payload);
    if (valid) return 'modify';
  }
  return s.failMode === 'open' ? 'failOpen' : 'failClosed';
}

describe('enforce properties', () => {
  test('pass carries the original or a valid modified payload; block is denied or guardianUnavailable; nothing else', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const a = enforce({ ...s, phase: 'request', envelopeId: 'env' });
        const want = expectedDecision(s);
        expect(a.decision).toBe(want);
        if (a.type === 'pass') {
          expect(['allow', 'modify', 'failOpen', 'shadow']).toContain(a.decision);
          if (a.decision === 'modify') {
            expect(s.outcome.ok).toBe(true);
            const repl = s.outcome.ok ? s.outcome.result.modifiedRequest?.params.payload : undefined;
            expect(a.payload).toBe(repl);
            expect(a.payload.method).toBe(s.payload.method);
            expect(s.op.decisions).toContain('modify');
          } else {
            expect(a.payload).toBe(s.payload);
          }
        } else {
          expect(a.type).toBe('block');
          expect(['deny', 'failClosed']).toContain(a.decision);
          expect(a.error.kind).toBe(a.decision === 'deny' ? 'denied' : 'guardianUnavailable');
          expect(a.error.metadata.envelopeId).toBe('env');
          if (a.decision === 'deny' && s.outcome.ok) {
            expect(a.error.metadata.message).toBe(s.outcome.result.message);
            const reasoning = s.outcome.result.reasoning;
            if (s.exposeReasoning && reasoning !== undefined) expect(a.error.metadata.reasoning).toBe(reasoning);
            else expect('reasoning' in a.error.metadata).toBe(false);
          }
          // All ErrorInfo metadata values are strings (google.rpc.ErrorInfo).
          for (const v of Object.values(a.error.metadata)) expect(typeof v).toBe('string');
        }
      }),
      { numRuns: 600 },
    );
  });

  test('no outcome ever passes a payload other than the original under FAIL_MODE=closed without a valid allow/modify', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const a = enforce({ ...s, shadow: false, failMode: 'closed', phase: 'request', envelopeId: 'env' });
        if (a.type === 'pass') {
          expect(s.outcome.ok).toBe(true);
          if (s.outcome.ok) expect(a.decision).toBe(s.outcome.result.decision);
          if (a.decision === 'allow') expect(a.payload).toBe(s.payload);
          else {
            // A modify passes only a replacement that keeps the A2A method and id, as the guardian sent it.
            expect(a.decision).toBe('modify');
            expect(a.payload.method).toBe(s.payload.method);
            expect(sameId(a.payload.id, s.payload.id)).toBe(true);
            if (s.outcome.ok) expect(a.payload).toBe(s.outcome.result.modifiedRequest?.params.payload);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
