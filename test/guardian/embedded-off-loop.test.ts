/**
 * The embedded guardian judges large envelopes on a worker thread: the proxy's event loop keeps
 * turning and a small call asked meanwhile is answered first; the worker decides as the engine does
 * (the envelope's text or its bytes), with the policy a reload swapped in; a decision that runs for
 * its whole budget is denied as too complex (never "no answer", which FAIL_MODE=open would pass) and
 * the worker replaced; a full queue is denied as busy at once; a caller that leaves is dropped.
 * Ordering and outcomes only: nothing here asserts a duration.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JsonObject } from '../../src/aos/schemas';
import { envelopeBytes } from '../../src/aos/envelope';
import type { GuardianOutcome } from '../../src/aos/outcome';
import { Cancellation } from '../../src/core/cancel';
import { embeddedGuardian, INLINE_MAX_CHARS, type EmbeddedGuardian } from '../../src/guardian/embedded';
import { createEngine } from '../../src/guardian/engine';
import { PART_SIZE } from '../../src/guardian/off-loop';
import { parsePolicy } from '../../src/guardian/policy';
import { requestEnvelope } from './fixtures/envelopes';
import * as pieces from '../../src/core/json-pieces';

jest.setTimeout(60_000);

const POLICY = {
  deny: [{ id: 'forbidden', message: 'forbidden content', patterns: ['forbidden\\W+plan'] }],
  mask: [{ id: 'pii', detectors: ['email', 'card'] }],
};

let dir: string;
const guardians: EmbeddedGuardian[] = [];

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-off-loop-'));
});
afterAll(async () => {
  await Promise.all(guardians.map((g) => g.close()));
  fs.rmSync(dir, { recursive: true, force: true });
});

function policyFile(name: string, policy: unknown): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(policy));
  return file;
}

function guardian(file: string, opts: Parameters<typeof embeddedGuardian>[1] = {}): EmbeddedGuardian {
  const g = embeddedGuardian(file, { timeoutMs: 30_000, ...opts });
  guardians.push(g);
  return g;
}

const send = (text: string): JsonObject => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text }] } },
});

/** An envelope as the proxy hands it over: the object and its JSON text. */
function call(text: string): { envelope: ReturnType<typeof requestEnvelope>; body: string } {
  const envelope = requestEnvelope(send(text));
  return { envelope, body: JSON.stringify(envelope) };
}

const LARGE = `write to eve@example.com, card 4111 1111 1111 1111; ${'1 '.repeat(INLINE_MAX_CHARS)}`;

const decision = (o: GuardianOutcome): string => (o.ok ? o.result.decision : `failed:${o.kind}`);

/** Ask for a decision and count the event loop's turns until it is answered. */
async function turnsWhile<T>(pending: Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let waiting = true;
  const turn = (): void => {
    if (!waiting) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  const value = await pending;
  waiting = false;
  return { value, turns };
}

/** A decision judged off the loop: the loop turned while it was pending. */
async function offLoop(pending: Promise<GuardianOutcome>): Promise<GuardianOutcome> {
  const { value, turns } = await turnsWhile(pending);
  expect(turns).toBeGreaterThan(1);
  return value;
}

describe('large envelopes are judged off the event loop', () => {
  it('the loop turns while a large envelope is judged, and a small call asked meanwhile is answered first', async () => {
    const g = guardian(policyFile('order.json', POLICY));
    const big = call(LARGE);
    const small = call('hello');
    const order: string[] = [];
    const bigDone = g.decide(big.envelope, big.body).then((o) => (order.push('large'), o));
    const smallDone = g.decide(small.envelope, small.body).then((o) => (order.push('small'), o));
    const bigOutcome = await offLoop(bigDone);
    expect(order).toEqual(['small', 'large']);
    expect(decision(await smallDone)).toBe('allow');
    // The worker's answer is the engine's.
    const engine = createEngine(parsePolicy(POLICY, 'test'));
    expect(bigOutcome).toEqual({ ok: true, result: engine.decide(big.envelope) });
    expect(decision(bigOutcome)).toBe('modify');
  });

  it('decides on the bytes the proxy sends for a large payload, as on the text', async () => {
    const g = guardian(policyFile('bytes.json', POLICY));
    const { envelope, body } = call(LARGE);
    const bytes = envelopeBytes(envelope, Buffer.from(JSON.stringify(envelope.params.payload), 'utf8'), JSON.stringify(envelope.params.context));
    expect(Buffer.concat(bytes.chunks).toString('utf8')).toBe(body);
    const fromBytes = await offLoop(g.decide(envelope, bytes));
    expect(fromBytes).toEqual(await offLoop(g.decide(envelope, body)));
    expect(decision(fromBytes)).toBe('modify');
  });

  it("a large modify's payload comes back as the engine's, with its serialization's bytes to forward as they are", async () => {
    const g = guardian(policyFile('large-modify.json', POLICY));
    const { envelope, body } = call(`write to eve@example.com ${'1 '.repeat(PART_SIZE)}`);
    const outcome = await offLoop(g.decide(envelope, body));
    const expected = createEngine(parsePolicy(POLICY, 'test')).decide(envelope);
    expect(outcome.ok && outcome.result).toEqual(expected);
    const payload = expected.modifiedRequest?.params.payload;
    expect(JSON.stringify(payload)).toContain('write to [EMAIL]');
    expect(outcome.ok && outcome.payloadBytes?.equals(Buffer.from(JSON.stringify(payload)))).toBe(true);
  });

  it('close() settles a decision whose large modify is still being parsed: nothing is approved after the guardian closed', async () => {
    const g = guardian(policyFile('close-while-parsing.json', POLICY));
    const { envelope, body } = call(`write to eve@example.com ${'1 '.repeat(PART_SIZE)}`);
    const parse = pieces.parseJsonInPieces;
    // Closed at the parse's first turn: the worker has moved on, the decision is not settled yet.
    const spy = jest.spyOn(pieces, 'parseJsonInPieces').mockImplementation((bytes, turn, sizes) =>
      parse(
        bytes,
        () => {
          void g.close();
          return turn();
        },
        sizes,
      ),
    );
    try {
      expect(await g.decide(envelope, body)).toEqual({ ok: false, kind: 'internal', detail: 'the embedded guardian is closed' });
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it('a policy reload reaches the worker before the next decision', async () => {
    const file = policyFile('reload.json', POLICY);
    const g = guardian(file);
    const { envelope, body } = call(`the forbidden plan ${LARGE}`);
    expect(decision(await offLoop(g.decide(envelope, body)))).toBe('deny');
    fs.writeFileSync(file, JSON.stringify({ mask: POLICY.mask }));
    expect(g.policy.reload('test')).toMatchObject({ ok: true, changed: true });
    expect(decision(await offLoop(g.decide(envelope, body)))).toBe('modify');
    // An invalid file keeps the policy in force, there as here.
    fs.writeFileSync(file, '{ not json');
    expect(g.policy.reload('test').ok).toBe(false);
    expect(decision(await offLoop(g.decide(envelope, body)))).toBe('modify');
  });
});

describe('bounded work on the worker', () => {
  it('a decision that runs for its whole budget is denied as too complex, and the next one is answered by a new worker', async () => {
    // A policy pattern that backtracks for hours on 40 letters and a '!'.
    const file = policyFile('stuck.json', { deny: [{ id: 'stuck', message: 'stuck', patterns: ['^(a+)+$'] }] });
    const g = guardian(file, { inlineMaxChars: 0, timeoutMs: 15_000 });
    // The worker is started (and, under ts-jest, compiled) outside the budget of the decisions below.
    expect(decision(await g.decide(call('warm up').envelope, call('warm up').body))).toBe('allow');
    const stuck = call(`${'a'.repeat(40)}!`);
    const first = g.decide(stuck.envelope, stuck.body);
    const next = g.decide(call('hello').envelope, call('hello').body);
    expect(await first).toEqual({ ok: true, result: expect.objectContaining({ decision: 'deny', reasonCode: ['PAYLOAD_TOO_COMPLEX'] }) });
    expect(decision(await next)).toMatch(/^(allow|deny)$/);
    expect(decision(await g.decide(call('hello').envelope, call('hello').body))).toBe('allow');
  });

  it('a full queue is denied as busy at once; a caller that leaves is dropped from the queue', async () => {
    const g = guardian(policyFile('queue.json', POLICY), { maxQueue: 1 });
    const a = call(`${LARGE} a`);
    const b = call(`${LARGE} b`);
    const c = call(`${LARGE} c`);
    const leaving = new Cancellation();
    const first = g.decide(a.envelope, a.body); // being decided
    const second = g.decide(b.envelope, b.body, leaving); // waiting
    const third = await g.decide(c.envelope, c.body); // no room
    expect(third).toEqual({ ok: true, result: expect.objectContaining({ decision: 'deny', reasonCode: ['GUARDIAN_BUSY'] }) });
    leaving.cancel();
    expect(await second).toMatchObject({ ok: false, kind: 'cancelled' });
    expect(decision(await first)).toBe('modify');
    // The place the caller left is free again.
    expect(decision(await g.decide(c.envelope, c.body))).toBe('modify');
  });
});

describe("one caller's large envelopes never refuse or hold up another's", () => {
  it('decisions wait in a line per caller, served round-robin', async () => {
    const g = guardian(policyFile('lines.json', POLICY), { maxQueue: 8 });
    const order: string[] = [];
    const ask = (label: string, key: string): Promise<GuardianOutcome> => {
      const c = call(`${LARGE} ${label}`);
      return g.decide(c.envelope, c.body, undefined, undefined, 'call', key).then((o) => (order.push(label), o));
    };
    // The attacker's first is being decided while its next three and then the victim's wait.
    const asked = [ask('a1', 'attacker'), ask('a2', 'attacker'), ask('a3', 'attacker'), ask('a4', 'attacker'), ask('v1', 'victim')];
    expect((await Promise.all(asked)).map(decision)).toEqual(['modify', 'modify', 'modify', 'modify', 'modify']);
    expect(order).toEqual(['a1', 'a2', 'v1', 'a3', 'a4']);
  });

  it('a full queue refuses the caller holding the most: its own newest, never another caller', async () => {
    const g = guardian(policyFile('full.json', POLICY), { maxQueue: 2 });
    const ask = (label: string, key: string): Promise<GuardianOutcome> => {
      const c = call(`${LARGE} ${label}`);
      return g.decide(c.envelope, c.body, undefined, undefined, 'call', key);
    };
    const a1 = ask('a1', 'attacker'); // being decided
    const a2 = ask('a2', 'attacker'); // waiting
    const a3 = ask('a3', 'attacker'); // waiting: the queue is full
    const a4 = await ask('a4', 'attacker');
    expect(a4).toEqual({ ok: true, result: expect.objectContaining({ decision: 'deny', reasonCode: ['GUARDIAN_BUSY'] }) });
    // The victim's takes the place of the attacker's newest.
    const v1 = ask('v1', 'victim');
    expect(await a3).toEqual({ ok: true, result: expect.objectContaining({ decision: 'deny', reasonCode: ['GUARDIAN_BUSY'] }) });
    expect((await Promise.all([a1, a2, v1])).map(decision)).toEqual(['modify', 'modify', 'modify']);
  });
});

describe('the worker yields the cores to the proxy thread', () => {
  /** Nice value of every thread of this process (Linux /proc). */
  const threadNices = (): number[] =>
    fs.readdirSync(`/proc/${process.pid}/task`).map((tid) => {
      const stat = fs.readFileSync(`/proc/${process.pid}/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    });

  (process.platform === 'linux' ? it : it.skip)('the worker thread runs at a lower CPU priority than the proxy thread, which keeps its own', async () => {
    const mine = os.getPriority(0);
    const before = threadNices();
    const g = guardian(policyFile('nice.json', POLICY));
    const { envelope, body } = call(LARGE);
    expect(decision(await offLoop(g.decide(envelope, body)))).toBe('modify');
    expect(os.getPriority(0)).toBe(mine);
    const lowered = Math.min(19, mine + 10);
    expect(threadNices().filter((n) => n === lowered).length).toBe(before.filter((n) => n === lowered).length + 1);
  });
});
