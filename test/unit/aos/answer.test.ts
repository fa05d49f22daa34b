import fc from 'fast-check';
import { guardianSuccess, pingAnswer } from '../../../src/aos/answer';
import { GuardianSuccess, PingAnswer } from '../../../src/aos/schemas';

/** Each member either absent, valid, or wrong in one of the ways a guardian gets it wrong. */
const absent = Symbol('absent');
/** Mostly valid, so that both verdicts come up often: one wrong member makes an answer invalid. */
const member = <T>(valid: fc.Arbitrary<T>, ...wrong: fc.Arbitrary<unknown>[]) =>
  fc.oneof({ arbitrary: fc.constant(absent), weight: 1 }, { arbitrary: valid, weight: 12 }, ...wrong.map((w) => ({ arbitrary: w, weight: 1 })));
const object = (entries: Record<string, fc.Arbitrary<unknown>>) =>
  fc.record(entries).map((r) => {
    const o: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r)) if (v !== absent) o[k] = v;
    return o;
  });
const junk = fc.oneof(fc.constant(null), fc.integer(), fc.double(), fc.boolean(), fc.string(), fc.constant([]), fc.constant({}), fc.jsonValue());
const jsonObject = fc.dictionary(fc.string(), fc.jsonValue());

const modifiedRequest = fc.oneof(
  { weight: 6, arbitrary: object({ params: member(object({ payload: member(jsonObject, junk), extra: member(junk) }), junk), method: member(fc.string()) }) },
  { weight: 1, arbitrary: junk },
);
const result = fc.oneof(
  {
    weight: 10,
    arbitrary: object({
      decision: member(fc.constantFrom('allow', 'deny', 'modify'), fc.constantFrom('Allow', 'block', ''), junk),
      message: member(fc.string(), junk),
      reasoning: member(fc.oneof(fc.string(), fc.constant(undefined)), junk),
      reasonCode: member(fc.array(fc.string()), fc.array(fc.oneof(fc.string(), junk)), junk),
      data: member(jsonObject, junk),
      modifiedRequest: member(modifiedRequest),
      extension: member(fc.jsonValue()),
    }),
  },
  { weight: 1, arbitrary: junk },
);
/** A JSON-RPC answer around `result` (good and bad jsonrpc and id members), and now and then any JSON value. */
const rpcAnswer = (result: fc.Arbitrary<unknown>, other: Record<string, fc.Arbitrary<unknown>>) =>
  fc.oneof(
    {
      weight: 10,
      arbitrary: object({
        jsonrpc: member(fc.constant('2.0'), fc.constantFrom('2', '1.0', 2), junk),
        id: member(fc.oneof(fc.string(), fc.integer(), fc.double()), fc.constantFrom(Infinity, -Infinity, NaN, null), junk),
        result: member(result),
        ...other,
      }),
    },
    { weight: 1, arbitrary: fc.jsonValue() },
  );
const answer = rpcAnswer(result, { error: fc.oneof({ arbitrary: fc.constant(absent), weight: 10 }, { arbitrary: junk, weight: 1 }) });

describe('guardianSuccess (hand-written) accepts exactly what the zod schema GuardianSuccess accepts', () => {
  test('generated answers, valid and near-miss: same verdict, and an accepted answer is the value zod returns', () => {
    let accepted = 0;
    fc.assert(
      fc.property(answer, (v) => {
        const ours = guardianSuccess(v);
        const zod = GuardianSuccess.safeParse(v);
        expect(ours !== undefined).toBe(zod.success);
        if (ours !== undefined && zod.success) {
          accepted++;
          expect(ours).toBe(v);
          // zod's copy of a record leaves out an own "__proto__" member (see the test below); any
          // other answer is the value zod returns.
          if (!JSON.stringify(v).includes('"__proto__"')) expect(ours).toEqual(zod.data);
        }
      }),
      { numRuns: 10_000 },
    );
    // The generators reach both verdicts (a property that only ever rejects proves little).
    expect(accepted).toBeGreaterThan(200);
  });

  test('the same through JSON text (what a guardian sends)', () => {
    fc.assert(
      fc.property(answer, (v) => {
        const text = JSON.stringify(v);
        if (text === undefined) return;
        const parsed: unknown = JSON.parse(text);
        expect(guardianSuccess(parsed) !== undefined).toBe(GuardianSuccess.safeParse(parsed).success);
      }),
      { numRuns: 5_000 },
    );
  });

  test('an own "__proto__" member stays a plain member, as sent (zod\'s copy leaves it out)', () => {
    const v: unknown = JSON.parse(
      '{"jsonrpc":"2.0","id":"a","result":{"decision":"modify","message":"","modifiedRequest":{"params":{"payload":{"__proto__":{"id":5},"method":"m"}}}}}',
    );
    const ours = guardianSuccess(v);
    const zod = GuardianSuccess.safeParse(v);
    expect(zod.success).toBe(true);
    const payload = ours?.result.modifiedRequest?.params.payload;
    expect(Object.keys(payload ?? {})).toEqual(['__proto__', 'method']);
    expect(payload?.id).toBeUndefined(); // a member, never a prototype
    expect(Object.keys(zod.data?.result.modifiedRequest?.params.payload ?? {})).toEqual(['method']);
  });

  test('hand-picked cases', () => {
    const ok = { jsonrpc: '2.0', id: 'x', result: { decision: 'allow', message: 'ok' } };
    const cases: unknown[] = [
      ok,
      { ...ok, id: 7 },
      { ...ok, id: 1.5 },
      { ...ok, id: Infinity },
      { ...ok, id: NaN },
      { ...ok, id: null },
      { ...ok, result: [] },
      [ok],
      null,
      { ...ok, result: { ...ok.result, reasonCode: ['a', 1] } },
      { ...ok, result: { ...ok.result, data: [] } },
      { ...ok, result: { ...ok.result, modifiedRequest: { params: { payload: [] } } } },
      { ...ok, result: { ...ok.result, modifiedRequest: { params: { payload: {} } } } },
      { ...ok, result: { ...ok.result, reasoning: undefined } },
      JSON.parse('{"jsonrpc":"2.0","id":1e400,"result":{"decision":"allow","message":""}}'),
      JSON.parse('{"jsonrpc":"2.0","id":"a","result":{"decision":"allow","message":"","__proto__":{"x":1}}}'),
    ];
    for (const v of cases) expect([v, guardianSuccess(v) !== undefined]).toEqual([v, GuardianSuccess.safeParse(v).success]);
  });
});

/**
 * Answers as JSON text, as a guardian sends them: duplicated members (the last wins), prototype
 * names, look-alike and near-miss decisions ('allow ', Cyrillic 'а', 'ALLOW'), 1e400 (Infinity once
 * parsed), deep values; the proxy must read exactly what zod reads, or reject.
 */
describe('guardianSuccess over hostile JSON text', () => {
  const KEYS = [
    'decision',
    'message',
    'reasoning',
    'reasonCode',
    'data',
    'modifiedRequest',
    'params',
    'payload',
    'jsonrpc',
    'id',
    'result',
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'valueOf',
    'hasOwnProperty',
    'Decision',
    'decision\u0000',
    'decis\u0131on',
    '\uff44ecision',
  ];
  const lit = fc.oneof(
    fc.constantFrom('allow', 'deny', 'modify', 'Allow', 'allow ', '\u0430llow', 'ALLOW', 'modify\u0000', '2.0', '2', '').map((s) => JSON.stringify(s)),
    fc.constantFrom(
      'null',
      'true',
      '0',
      '-0',
      '1.5',
      '1e400',
      '-1e400',
      '{}',
      '[]',
      '["a"]',
      '["a",1]',
      '{"params":{"payload":{}}}',
      '{"params":{"payload":[]}}',
    ),
    fc.string({ maxLength: 4 }).map((s) => JSON.stringify(s)),
  );
  const key = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...KEYS) }, { weight: 1, arbitrary: fc.string({ maxLength: 3 }) });
  const { node } = fc.letrec<{ node: string }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      { weight: 3, arbitrary: lit },
      {
        weight: 2,
        arbitrary: fc.array(fc.tuple(key, tie('node')), { maxLength: 5 }).map((es) => `{${es.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
      },
      { weight: 1, arbitrary: fc.array(tie('node'), { maxLength: 3 }).map((xs) => `[${xs.join(',')}]`) },
    ),
  }));
  const members = fc.array(fc.tuple(key, node), { maxLength: 3 }).map((es) => es.map(([k, v]) => `,${JSON.stringify(k)}:${v}`).join(''));
  const payload = fc.oneof(
    node,
    fc.constantFrom('{"id":1,"method":"message/send"}', '{"__proto__":{"id":1},"method":"m"}', '{"id":1,"__proto__":{"result":1}}'),
  );
  const result = fc
    .tuple(
      fc.boolean(),
      fc.oneof(fc.constantFrom('"allow"', '"deny"', '"modify"'), lit),
      fc.oneof(fc.constant('"m"'), lit),
      members,
      fc.option(
        fc.oneof(
          payload.map((p) => `{"params":{"payload":${p}}}`),
          node,
        ),
      ),
    )
    .map(
      ([dup, d, m, more, mod]) =>
        `{${dup ? '"decision":"allow",' : ''}"decision":${d},"message":${m}${more}${mod === null ? '' : `,"modifiedRequest":${mod}`}}`,
    );
  const answerText = fc
    .tuple(
      fc.oneof(fc.constant('"2.0"'), lit),
      fc.oneof(fc.constant('1'), lit),
      fc.oneof({ weight: 4, arbitrary: result }, { weight: 1, arbitrary: node }),
      members,
    )
    .map(([j, id, r, more]) => `{"jsonrpc":${j},"id":${id},"result":${r}${more}}`);
  /** What the proxy reads from an answer (enforce.ts): an own "__proto__" member aside (see above). */
  const read = (a: { result: Record<string, unknown> }) => {
    const r = a.result as {
      decision: unknown;
      message: unknown;
      reasoning?: unknown;
      reasonCode?: unknown;
      modifiedRequest?: { params: { payload: Record<string, unknown> } };
    };
    const p = r.modifiedRequest?.params.payload;
    const own =
      p === undefined
        ? undefined
        : Object.keys(p)
            .filter((k) => k !== '__proto__')
            .map((k) => [k, p[k]]);
    return [r.decision, r.message, r.reasoning, r.reasonCode, own];
  };

  test('the same verdict as zod, and the same decision, message, reasons and payload', () => {
    let accepted = 0;
    fc.assert(
      fc.property(answerText, (text) => {
        const v: unknown = JSON.parse(text);
        const ours = guardianSuccess(v);
        const zod = GuardianSuccess.safeParse(v);
        expect([text, ours !== undefined]).toEqual([text, zod.success]);
        if (ours === undefined || !zod.success) return;
        accepted++;
        expect(read(ours)).toEqual(read(zod.data));
      }),
      { numRuns: 6000 },
    );
    expect(accepted).toBeGreaterThan(100); // about 5% of the answers are valid
  });
});

/** The ping's answer (spec 5.3): pingAnswer is checked by hand so that the start's ping does not load zod. */
describe('pingAnswer (hand-written) accepts exactly what the zod schema PingAnswer accepts', () => {
  const pingResult = fc.oneof(
    {
      weight: 10,
      arbitrary: object({
        status: member(fc.constantFrom('connected', 'error'), fc.constantFrom('Connected', 'ok', ''), junk),
        version: member(fc.string(), junk),
        timestamp: member(fc.string(), junk),
        extension: member(fc.jsonValue()),
      }),
    },
    { weight: 1, arbitrary: junk },
  );
  const ping = rpcAnswer(pingResult, { extra: member(fc.jsonValue()) });

  test('generated answers, valid and near-miss: same verdict, and the id and status zod reads', () => {
    let accepted = 0;
    fc.assert(
      fc.property(ping, (v) => {
        const ours = pingAnswer(v);
        const zod = PingAnswer.safeParse(v);
        expect(ours !== undefined).toBe(zod.success);
        if (ours !== undefined && zod.success) {
          accepted++;
          expect(ours).toEqual({ id: zod.data.id, status: zod.data.result.status });
        }
      }),
      { numRuns: 10_000 },
    );
    expect(accepted).toBeGreaterThan(200);
  });

  test('the same through JSON text (1e400, duplicated members, "__proto__")', () => {
    const texts = fc.oneof(
      ping.map((v) => JSON.stringify(v)).filter((t): t is string => t !== undefined),
      fc.constantFrom(
        '{"jsonrpc":"2.0","id":1e400,"result":{"status":"connected","version":"1","timestamp":"t"}}',
        '{"jsonrpc":"2.0","id":"a","result":{"status":"connected","status":"ok","version":"1","timestamp":"t"}}',
        '{"jsonrpc":"2.0","id":"a","result":{"__proto__":{"status":"connected"},"version":"1","timestamp":"t"}}',
        '{"jsonrpc":"2.0","id":"a","__proto__":{"result":{"status":"connected","version":"1","timestamp":"t"}}}',
      ),
    );
    fc.assert(
      fc.property(texts, (text) => {
        const parsed: unknown = JSON.parse(text);
        expect(pingAnswer(parsed) !== undefined).toBe(PingAnswer.safeParse(parsed).success);
      }),
      { numRuns: 3_000 },
    );
  });
});
