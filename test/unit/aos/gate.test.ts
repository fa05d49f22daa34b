/**
 * The line in front of the stream-event guardian connections (src/aos/gate.ts): at most `size`
 * holders, the rest admitted in arrival order as places are given back, callers that leave skipped.
 */
import { Gate } from '../../../src/aos/gate';
import { Cancellation } from '../../../src/core/cancel';

const tick = () => new Promise<void>((r) => setImmediate(r));

test('places are taken at once up to the size, then callers wait in arrival order', async () => {
  const g = new Gate(2);
  expect(g.enter()).toBe(true);
  expect(g.enter()).toBe(true);
  const order: number[] = [];
  const waits = [1, 2, 3].map((n) => (g.enter() as Promise<boolean>).then((ok) => ok && order.push(n)));
  expect(g.waiting).toBe(3);
  await tick();
  expect(order).toEqual([]);
  g.leave();
  await tick();
  expect(order).toEqual([1]);
  g.leave();
  g.leave();
  await Promise.all(waits);
  expect(order).toEqual([1, 2, 3]);
  expect(g.waiting).toBe(0);
});

test('a place given back with nobody waiting is free again; a newcomer never jumps the line', async () => {
  const g = new Gate(1);
  expect(g.enter()).toBe(true);
  const first = g.enter() as Promise<boolean>;
  g.leave(); // passes to `first`, not free
  expect(await first).toBe(true);
  const second = g.enter();
  expect(second).not.toBe(true);
  g.leave();
  expect(await second).toBe(true);
  g.leave();
  expect(g.enter()).toBe(true);
});

test('a caller that leaves the line is skipped and never admitted; one that left before is refused at once', async () => {
  const g = new Gate(1);
  expect(g.enter()).toBe(true);
  const c = new Cancellation();
  const leaving = g.enter(c) as Promise<boolean>;
  const staying = g.enter() as Promise<boolean>;
  expect(g.waiting).toBe(2);
  c.cancel();
  expect(await leaving).toBe(false);
  expect(g.waiting).toBe(1);
  g.leave();
  expect(await staying).toBe(true);
  const gone = new Cancellation();
  gone.cancel();
  expect(await g.enter(gone)).toBe(false);
});

test('thousands waiting: every one admitted exactly once, in order, with at most `size` holding at a time', async () => {
  const g = new Gate(3);
  let holding = 0;
  let max = 0;
  const admitted: number[] = [];
  const run = async (n: number) => {
    const e = g.enter();
    if (e !== true && !(await e)) return;
    holding++;
    max = Math.max(max, holding);
    admitted.push(n);
    await tick();
    holding--;
    g.leave();
  };
  await Promise.all(Array.from({ length: 3000 }, (_, i) => run(i)));
  expect(admitted).toEqual(Array.from({ length: 3000 }, (_, i) => i));
  expect(max).toBe(3);
  expect(g.enter()).toBe(true);
});
