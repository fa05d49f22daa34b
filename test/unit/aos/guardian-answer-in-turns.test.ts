/**
 * A large guardian answer read in turns (interpretInTurns: parsed, scanned for duplicate members and a modify's payload
 * serialized, a piece per turn) comes to the same outcome as interpret() of its whole text, on generated answers:
 * duplicates at any depth under any spelling, long strings, whitespace runs, invalid JSON, another id, schema
 * failures, JSON-RPC errors; pieces of every size from a few bytes. A modify's payload comes with its bytes,
 * JSON.stringify's to the byte. The reading stops at the first turn that refuses (a call answered meanwhile).
 */
import fc from 'fast-check';
import { duplicateKey, duplicateKeyInPieces } from '../../../src/aos/duplicate-keys';
import { interpret, interpretInTurns, readingTurn } from '../../../src/aos/guardian';
import { Cancellation } from '../../../src/core/cancel';
import { monotonicMs } from '../../../src/core/clock';
import type { GuardianOutcome } from '../../../src/aos/outcome';
import { json, objects, spell, withDuplicate } from '../../helpers/json-duplicates';
import { countedTurns, piecesOf } from '../../helpers/json-pieces';

const ID = 'e-7';
const RUNS = 600;

const sizes = fc.record({ piece: fc.integer({ min: 1, max: 300 }), stringPiece: fc.integer({ min: 4, max: 64 }) });
const long = fc
  .array(fc.constantFrom('a', 'é', '🍰', '\\', '"', '\n', '\u2028', 'x y', ' '), { minLength: 1, maxLength: 8 })
  .chain((units) => fc.integer({ min: 1, max: 400 }).map((n) => units.join('').repeat(n)));
const payloadValue = fc.oneof(json.value, long, fc.array(long, { maxLength: 3 }), fc.dictionary(long, json.value, { maxKeys: 2 }));

/** An answer object as a guardian may write it: a decision (a modify of `v`), an error, a schema failure, another id. */
const answer = fc.tuple(payloadValue, fc.constantFrom('modify', 'allow', 'deny', 'error', 'schema', 'noMessage', 'wrongId', 'noPayload')).map(([v, kind]) => {
  const payload = { jsonrpc: '2.0', id: 3, method: 'message/send', params: { message: { parts: [{ kind: 'data', data: v }] } } };
  const result = (decision: string, more: object = {}) => ({ decision, message: 'm', ...more });
  switch (kind) {
    case 'modify':
      return { jsonrpc: '2.0', id: ID, result: result('modify', { modifiedRequest: { method: 'message/send', params: { payload, context: {} } } }) };
    case 'noPayload':
      return { jsonrpc: '2.0', id: ID, result: result('modify', { modifiedRequest: { params: { context: v } } }) };
    case 'error':
      return { jsonrpc: '2.0', id: ID, error: { code: -32603, message: 'no', data: v } };
    case 'schema':
      return { jsonrpc: '2.0', id: ID, result: result('maybe', { data: { v } }) };
    case 'noMessage':
      return { jsonrpc: '2.0', id: ID, result: { decision: 'allow', data: { v } } };
    case 'wrongId':
      return { jsonrpc: '2.0', id: 'other', result: result('allow', { data: { v } }) };
    default:
      return { jsonrpc: '2.0', id: ID, result: result(kind, { data: { v } }) };
  }
});

/** Its text: as JSON.stringify writes it, indented, with runs of JSON whitespace, cut short or followed by more. */
const text = fc.tuple(answer, fc.constantFrom('plain', 'indent', 'spaces', 'cut', 'trailing', 'after'), fc.nat()).map(([a, how, n]) => {
  const t = JSON.stringify(a);
  switch (how) {
    case 'indent':
      return JSON.stringify(a, null, '\t');
    case 'spaces':
      return `  \n${JSON.stringify(a, null, 1).replaceAll('\n', ` \r\n${' '.repeat(n % 40)}`)}\t `;
    case 'cut':
      return t.slice(0, n % t.length);
    case 'trailing':
      return `${t} x`;
    case 'after':
      return `${t},`;
    default:
      return t;
  }
});

/** The same answer with one member of one of its objects written again (after the others), spelt by `mask`. */
const duplicated = fc.tuple(answer, fc.nat(), fc.nat(), fc.nat({ max: 255 })).map(([a, pick, keyPick, mask]) => {
  const candidates = objects(a).filter((o) => Object.keys(o).length > 0);
  const target = candidates[pick % candidates.length] as Record<string, unknown>;
  const keys = Object.keys(target);
  return withDuplicate(a, target, keys[keyPick % keys.length] as string, mask);
});

/** Both readings of `t`: the outcomes (the one in turns without its payload bytes) and those bytes. */
async function both(t: string, piece?: { piece: number; stringPiece: number }): Promise<{ whole: GuardianOutcome; inTurns: GuardianOutcome; bytes?: Buffer }> {
  const whole = interpret({ status: 200, body: t }, ID);
  const read = await interpretInTurns({ status: 200, bytes: Buffer.from(t) }, ID, countedTurns().turn, piece);
  if (!read.ok || read.payloadBytes === undefined) return { whole, inTurns: read };
  const { payloadBytes, ...inTurns } = read;
  return { whole, inTurns, bytes: payloadBytes };
}

function expectSame(r: { whole: GuardianOutcome; inTurns: GuardianOutcome; bytes?: Buffer }): void {
  expect(r.inTurns).toEqual(r.whole);
  const modify = r.whole.ok && r.whole.result.decision === 'modify' ? r.whole.result.modifiedRequest?.params.payload : undefined;
  if (modify !== undefined) expect(r.bytes?.toString()).toBe(JSON.stringify(modify));
  else expect(r.bytes).toBeUndefined();
}

describe('interpretInTurns: the outcome of interpret(), read a piece per turn', () => {
  test('generated answers, in any layout, whole or broken', async () => {
    let inPieces = 0;
    await fc.assert(
      fc.asyncProperty(text, sizes, async (t, s) => {
        expectSame(await both(t, s));
        if ((await piecesOf(Buffer.from(t), countedTurns().turn, s)) !== undefined) inPieces++;
      }),
      { numRuns: RUNS },
    );
    // Most are read in pieces (the rest, a number or name longer than a piece, take the whole parse, as before).
    expect(inPieces).toBeGreaterThan(RUNS / 3);
  });

  test('generated answers with a member written twice at any depth, under any spelling, are refused alike', async () => {
    await fc.assert(
      fc.asyncProperty(duplicated, sizes, async (t, s) => {
        const r = await both(t, s);
        expectSame(r);
        expect(r.inTurns).toMatchObject({ ok: false, kind: 'json' });
      }),
      { numRuns: RUNS },
    );
  });

  test('a modify of 2 MiB at the default pieces: the payload and its bytes; a duplicate decision or a long name twice is refused', async () => {
    const big = 'a@b.co \\ "é🍰" '.repeat(140_000);
    const payload = { jsonrpc: '2.0', id: 3, method: 'message/send', params: { message: { parts: [{ kind: 'text', text: big }] } } };
    const modify = { jsonrpc: '2.0', id: ID, result: { decision: 'modify', message: 'm', modifiedRequest: { params: { payload } } } };
    const t = JSON.stringify(modify);
    const r = await both(t);
    expectSame(r);
    expect(r.bytes?.toString()).toBe(JSON.stringify(payload));

    const twice = `${t.slice(0, -2)},"dec\\u0069sion":"allow"}}`;
    expectSame(await both(twice));
    expect((await both(twice)).inTurns).toMatchObject({ ok: false, kind: 'json', detail: expect.stringContaining('"decision" twice') });

    // A name longer than a piece, written twice (once escaped): taken from the parser's slices, not decoded again.
    const name = `k${'é'.repeat(200_000)}`;
    const longNames = `{"jsonrpc":"2.0","id":"${ID}","result":{"decision":"allow","message":"m","data":{${JSON.stringify(name)}:1,${spell(name, 1)}:2}}}`;
    expectSame(await both(longNames));
    expect((await both(longNames)).inTurns).toMatchObject({ ok: false, kind: 'json' });
  });

  test('an answer that is not UTF-8, or not 2xx, is read as before', async () => {
    const t = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: ID, result: { decision: 'allow', message: 'm', data: { x: 'y'.repeat(300_000) } } }));
    const bad = Buffer.concat([t.subarray(0, 100), Buffer.from([0xff]), t.subarray(100)]);
    const whole = interpret({ status: 200, body: bad.toString() }, ID);
    expect(await interpretInTurns({ status: 200, bytes: bad }, ID, countedTurns().turn)).toEqual(whole);
    expect(await interpretInTurns({ status: 503, bytes: t }, ID, countedTurns().turn)).toEqual({ ok: false, kind: 'http', detail: 'HTTP 503' });
  });

  test('the reading stops at the first turn that refuses (a call answered meanwhile), and takes no turn after it', async () => {
    const t = Buffer.from(
      JSON.stringify({
        jsonrpc: '2.0',
        id: ID,
        result: { decision: 'allow', message: 'm', data: { rows: Array.from({ length: 20_000 }, (_, i) => `row ${i}`) } },
      }),
    );
    const all = countedTurns();
    await interpretInTurns({ status: 200, bytes: t }, ID, all.turn, { piece: 4096, stringPiece: 4096 });
    expect(all.count).toBeGreaterThan(20);
    for (const stopAt of [1, 5, all.count - 1]) {
      let turns = 0;
      const turn = (): Promise<void> => (++turns >= stopAt ? Promise.reject(new Error('answered')) : Promise.resolve());
      await expect(interpretInTurns({ status: 200, bytes: t }, ID, turn, { piece: 4096, stringPiece: 4096 })).rejects.toThrow('answered');
      expect(turns).toBe(stopAt);
    }
  });
});

describe("the guardian client's turn between pieces (readingTurn)", () => {
  test('refuses once the caller has gone, at the turn after it went', async () => {
    const caller = new Cancellation();
    const turn = readingTurn(monotonicMs() + 60_000, 60_000, caller);
    await turn();
    const next = turn();
    caller.cancel();
    await expect(next).rejects.toMatchObject({ kind: 'cancelled', reading: true });
    await expect(turn()).rejects.toMatchObject({ kind: 'cancelled' });
  });

  test('refuses once the time budget (GUARDIAN_TIMEOUT_MS, the reading included) is spent', async () => {
    await expect(readingTurn(monotonicMs() - 1, 5000, undefined)()).rejects.toMatchObject({
      kind: 'timeout',
      message: 'guardian answer not read within 5000 ms',
    });
    await expect(readingTurn(monotonicMs() + 60_000, 60_000, undefined)()).resolves.toBeUndefined();
  });
});

describe('duplicateKeyInPieces: duplicateKey over bytes, a piece per turn', () => {
  test('the same verdict for any JSON text and piece size', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(duplicated, text.filter(isJson)), fc.integer({ min: 1, max: 200 }), async (t, piece) => {
        const bytes = Buffer.from(t);
        const parsed = await piecesOf(bytes, countedTurns().turn, { piece, stringPiece: 16 });
        expect(await duplicateKeyInPieces(bytes, countedTurns().turn, parsed?.longStrings, piece)).toBe(duplicateKey(t));
      }),
      { numRuns: RUNS },
    );
  });
});

function isJson(t: string): boolean {
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}
