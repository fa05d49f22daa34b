import { operationForMethod, type Operation } from '../../../src/a2a/operations';
import type { JsonObject, SuccessResult } from '../../../src/aos/schemas';
import { checkModified, enforce, sameId, type EnforceInput, type HookAction } from '../../../src/proxy/enforce';
import type { GuardianOutcome } from '../../../src/aos/outcome';
import { jsonRpcErrorObject } from '../../../src/core/errors';

const op = (m: string): Operation => {
  const o = operationForMethod(m);
  if (o === undefined) throw new Error(m);
  return o;
};

const SEND = op('message/send');
const request: JsonObject = {
  jsonrpc: '2.0',
  id: 11,
  method: 'message/send',
  params: { message: { role: 'user', parts: [{ kind: 'text', text: 'my email is a@b.c' }] } },
};
const masked: JsonObject = {
  jsonrpc: '2.0',
  id: 11,
  method: 'message/send',
  params: { message: { role: 'user', parts: [{ kind: 'text', text: 'my email is [EMAIL]' }] } },
};
const EID = 'env-1';

const allow: GuardianOutcome = { ok: true, result: { decision: 'allow', message: 'fine' } };
const deny = (extra: Partial<SuccessResult> = {}): GuardianOutcome => ({ ok: true, result: { decision: 'deny', message: 'no secrets', ...extra } });
const modify = (payload: JsonObject | undefined, extra: Partial<SuccessResult> = {}): GuardianOutcome => ({
  ok: true,
  result: {
    decision: 'modify',
    message: 'masked',
    ...(payload === undefined ? {} : { modifiedRequest: { jsonrpc: '2.0', id: EID, method: 'message/send', params: { payload } } }),
    ...extra,
  },
});
const fail: GuardianOutcome = { ok: false, kind: 'timeout', detail: 'no guardian answer within 5000 ms' };

function run(outcome: GuardianOutcome, over: Partial<EnforceInput> = {}): HookAction {
  return enforce({
    op: SEND,
    payload: request,
    phase: 'request',
    envelopeId: EID,
    outcome,
    failMode: 'closed',
    shadow: false,
    exposeReasoning: false,
    ...over,
  });
}

describe('allow / deny / modify', () => {
  test('allow passes the original payload object', () => {
    const a = run(allow);
    expect(a.type).toBe('pass');
    expect(a.decision).toBe('allow');
    if (a.type === 'pass') expect(a.payload).toBe(request);
    expect(a.outcome).toBe(allow);
  });

  test('deny blocks with a denied error carrying message, reasonCode and envelope id', () => {
    const a = run(deny({ reasonCode: ['SECRET', 'PII'], reasoning: 'contains an e-mail address' }));
    expect(a.type).toBe('block');
    if (a.type !== 'block') return;
    expect(a.decision).toBe('deny');
    expect(a.error.kind).toBe('denied');
    expect(a.error.message).toContain('no secrets');
    expect(a.error.metadata).toEqual({ envelopeId: EID, message: 'no secrets', reasonCode: 'SECRET,PII' });
    const wire = jsonRpcErrorObject(a.error, 11);
    expect(wire.error.code).toBe(-31403);
    expect(wire.id).toBe(11);
  });

  test('guardian reasoning appears only with exposeReasoning', () => {
    const hidden = run(deny({ reasoning: 'secret policy detail' }));
    const shown = run(deny({ reasoning: 'secret policy detail' }), { exposeReasoning: true });
    if (hidden.type !== 'block' || shown.type !== 'block') throw new Error('expected blocks');
    expect(JSON.stringify(hidden.error)).not.toContain('secret policy detail');
    expect(shown.error.metadata.reasoning).toBe('secret policy detail');
  });

  test('deny without reasonCode has no reasonCode key; empty list likewise', () => {
    for (const o of [deny(), deny({ reasonCode: [] })]) {
      const a = run(o);
      if (a.type !== 'block') throw new Error('expected block');
      expect(a.error.metadata).toEqual({ envelopeId: EID, message: 'no secrets' });
    }
  });

  test('valid modify passes the guardian payload', () => {
    const a = run(modify(masked));
    expect(a.type).toBe('pass');
    expect(a.decision).toBe('modify');
    if (a.type === 'pass') expect(a.payload).toEqual(masked);
  });

  test('modify keeping a string id and v1 method name', () => {
    const orig: JsonObject = { jsonrpc: '2.0', id: 'abc', method: 'SendMessage', params: { message: { parts: [{ text: 'x' }] } } };
    const repl: JsonObject = { jsonrpc: '2.0', id: 'abc', method: 'SendMessage', params: { message: { parts: [{ text: 'y' }] } } };
    const a = run(modify(repl), { payload: orig });
    expect(a.decision).toBe('modify');
    if (a.type === 'pass') expect(a.payload).toEqual(repl);
  });

  test('modify of a notification (no id) may use id null', () => {
    const orig: JsonObject = { jsonrpc: '2.0', method: 'message/send', params: {} };
    expect(run(modify({ jsonrpc: '2.0', id: null, method: 'message/send', params: { x: 1 } }), { payload: orig }).decision).toBe('modify');
  });
});

describe('invalid modify = no valid answer', () => {
  const cases: Array<[string, Operation, JsonObject, GuardianOutcome]> = [
    [
      'tasks/cancel does not accept modify',
      op('tasks/cancel'),
      { jsonrpc: '2.0', id: 1, method: 'tasks/cancel', params: { id: 't' } },
      modify({ jsonrpc: '2.0', id: 1, method: 'tasks/cancel', params: { id: 'other' } }),
    ],
    [
      'CancelTask (v1) does not accept modify',
      op('CancelTask'),
      { jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: 't' } },
      modify({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: 't' } }),
    ],
    [
      'tasks/resubscribe does not accept modify',
      op('tasks/resubscribe'),
      { jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: 't' } },
      modify({ jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: 't' } }),
    ],
    [
      'pushNotificationConfig/get does not accept modify',
      op('tasks/pushNotificationConfig/get'),
      { jsonrpc: '2.0', id: 1, method: 'tasks/pushNotificationConfig/get', params: { id: 't' } },
      modify({ jsonrpc: '2.0', id: 1, method: 'tasks/pushNotificationConfig/get', params: { id: 't' } }),
    ],
    ['method changed', SEND, request, modify({ ...masked, method: 'tasks/cancel' })],
    ['method changed to its v1 alias', SEND, request, modify({ ...masked, method: 'SendMessage' })],
    ['method removed', SEND, request, modify({ jsonrpc: '2.0', id: 11, params: {} })],
    ['id changed', SEND, request, modify({ ...masked, id: 12 })],
    ['id type changed', SEND, request, modify({ ...masked, id: '11' })],
    ['id removed', SEND, request, modify({ jsonrpc: '2.0', method: 'message/send', params: {} })],
    ['modifiedRequest missing', SEND, request, modify(undefined)],
  ];

  test.each(cases)('%s -> fail closed', (_n, o, payload, outcome) => {
    const a = run(outcome, { op: o, payload });
    expect(a.type).toBe('block');
    expect(a.decision).toBe('failClosed');
    if (a.type === 'block') {
      expect(a.error.kind).toBe('guardianUnavailable');
      expect(a.error.metadata.envelopeId).toBe(EID);
      expect(a.error.metadata.failure).toBe('invalidModify');
      expect(jsonRpcErrorObject(a.error, 1).error.code).toBe(-31503);
    }
    expect(a.outcome.ok).toBe(false);
    if (!a.outcome.ok) expect(a.outcome.kind).toBe('invalidModify');
  });

  test.each(cases)('%s -> fail open passes the original', (_n, o, payload, outcome) => {
    const a = run(outcome, { op: o, payload, failMode: 'open' });
    expect(a.type).toBe('pass');
    expect(a.decision).toBe('failOpen');
    if (a.type === 'pass') expect(a.payload).toBe(payload);
  });

  test('checkModified reports why', () => {
    const r = (o: GuardianOutcome) => (o.ok ? o.result : undefined) as SuccessResult;
    expect(checkModified(op('tasks/cancel'), 'request', request, r(modify(masked)))).toMatch(/not accepted/);
    expect(checkModified(SEND, 'request', request, r(modify(undefined)))).toMatch(/modifiedRequest/);
    expect(checkModified(SEND, 'request', request, r(modify({ ...masked, id: 2 })))).toMatch(/id/);
    expect(checkModified(SEND, 'request', request, r(modify({ ...masked, method: 'x' })))).toMatch(/method/);
    expect(checkModified(SEND, 'request', request, r(modify(masked)))).toEqual(masked);
  });
});

describe('response phase', () => {
  const response: JsonObject = { jsonrpc: '2.0', id: 11, result: { kind: 'message', parts: [{ kind: 'text', text: 'card 4111 1111 1111 1111' }] } };

  test('modify with the same id and a result passes the replacement', () => {
    const repl: JsonObject = { jsonrpc: '2.0', id: 11, result: { kind: 'message', parts: [{ kind: 'text', text: 'card [PAN]' }] } };
    const a = run(modify(repl), { payload: response, phase: 'response' });
    expect(a.decision).toBe('modify');
    if (a.type === 'pass') expect(a.payload).toEqual(repl);
  });

  test('modify turning the response into an error with the same id is accepted', () => {
    const repl: JsonObject = { jsonrpc: '2.0', id: 11, error: { code: -32000, message: 'redacted' } };
    expect(run(modify(repl), { payload: response, phase: 'response' }).decision).toBe('modify');
  });

  test('modify with another id, or with neither result nor error, is no valid answer', () => {
    expect(run(modify({ jsonrpc: '2.0', id: 99, result: {} }), { payload: response, phase: 'response' }).decision).toBe('failClosed');
    expect(run(modify({ jsonrpc: '2.0', id: 11 }), { payload: response, phase: 'response' }).decision).toBe('failClosed');
  });

  test('deny on a response blocks', () => {
    expect(run(deny(), { payload: response, phase: 'response' }).type).toBe('block');
  });
});

describe('guardian failures and shadow mode', () => {
  test('fail closed: guardianUnavailable with the failure kind', () => {
    const a = run(fail);
    expect(a).toMatchObject({ type: 'block', decision: 'failClosed', outcome: fail });
    if (a.type === 'block') {
      expect(a.error.kind).toBe('guardianUnavailable');
      expect(a.error.metadata).toEqual({ envelopeId: EID, failure: 'timeout' });
      expect(JSON.stringify(a.error)).not.toContain('5000 ms'); // internal detail is not sent to callers
    }
  });

  test('fail open: original payload, decision failOpen, outcome kept for logging', () => {
    const a = run(fail, { failMode: 'open' });
    expect(a).toMatchObject({ type: 'pass', decision: 'failOpen', outcome: fail });
    if (a.type === 'pass') expect(a.payload).toBe(request);
  });

  test.each([
    ['allow', allow],
    ['deny', deny()],
    ['modify', modify(masked)],
    ['invalid modify', modify(undefined)],
    ['failure', fail],
  ])('shadow mode passes the original on %s', (_n, outcome) => {
    for (const failMode of ['closed', 'open'] as const) {
      const a = run(outcome, { shadow: true, failMode });
      expect(a.type).toBe('pass');
      expect(a.decision).toBe('shadow');
      if (a.type === 'pass') expect(a.payload).toBe(request);
    }
  });

  test('fail open does not turn a deny into a pass', () => {
    expect(run(deny(), { failMode: 'open' }).type).toBe('block');
  });
});

describe('sameId', () => {
  test.each([
    [1, 1, true],
    ['1', '1', true],
    [null, null, true],
    [undefined, null, true],
    [null, undefined, true],
    [undefined, undefined, true],
    [1, '1', false],
    [0, null, false],
    ['', null, false],
    [0, false, false],
    [1, 2, false],
  ])('sameId(%p, %p) = %p', (a, b, want) => {
    expect(sameId(a, b)).toBe(want);
  });
});
