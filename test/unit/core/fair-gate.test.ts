/** Places shared by every caller, handed round-robin by caller while all are taken. */
import { Cancellation } from '../../../src/core/cancel';
import { FairGate } from '../../../src/core/fair-gate';

/** Enter and record the order in which waiting calls get their place. */
function enterAll(gate: FairGate, keys: string[], order: string[], caller?: Cancellation): Array<true | Promise<boolean>> {
  return keys.map((k, i) => {
    const e = gate.enter(k, caller);
    if (e !== true) void e.then((ok) => ok && order.push(`${k}${i}`));
    return e;
  });
}

const settle = () => new Promise((r) => setImmediate(r));

test('places are taken at once while free; past them, a freed place goes to the callers waiting round-robin', async () => {
  const gate = new FairGate(2);
  expect(gate.enter('a')).toBe(true);
  expect(gate.enter('a')).toBe(true);
  const order: string[] = [];
  // a queues four before b and c queue one each.
  enterAll(gate, ['a', 'a', 'a', 'a', 'b', 'c'], order);
  expect(gate.waiting).toBe(6);
  for (let i = 0; i < 6; i++) gate.leave();
  await settle();
  expect(order).toEqual(['a0', 'b4', 'c5', 'a1', 'a2', 'a3']);
  expect(gate.taken).toBe(2);
  gate.leave();
  gate.leave();
  expect(gate.taken).toBe(0);
  expect(gate.enter('z')).toBe(true);
});

test('a call that leaves while waiting gets false and takes no place; nobody waits behind it', async () => {
  const gate = new FairGate(1);
  expect(gate.enter('a')).toBe(true);
  const gone = new Cancellation();
  const waiting = gate.enter('b', gone);
  const next = gate.enter('c');
  gone.cancel();
  expect(await waiting).toBe(false);
  expect(gate.waiting).toBe(1);
  gate.leave();
  expect(await next).toBe(true);
  expect(gate.taken).toBe(1);
  // A caller already gone does not queue.
  const late = new Cancellation();
  late.cancel();
  expect(await gate.enter('d', late)).toBe(false);
  expect(gate.waiting).toBe(0);
});

test('a caller waiting never takes a place before the callers already waiting get theirs', async () => {
  const gate = new FairGate(1);
  expect(gate.enter('a')).toBe(true);
  const order: string[] = [];
  enterAll(gate, ['b'], order);
  gate.leave();
  // The place went to b: a newcomer does not take it at once, even though nobody waits now.
  expect(gate.enter('c')).not.toBe(true);
  await settle();
  expect(order).toEqual(['b0']);
});

test('size must be a positive integer', () => {
  expect(() => new FairGate(0)).toThrow(RangeError);
  expect(() => new FairGate(1.5)).toThrow(RangeError);
});
