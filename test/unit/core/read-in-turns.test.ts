/**
 * readInTurns (core/turns.ts): a socket read a slice per turn. After each slice its source is paused until the turn
 * comes; a source whose reading has stopped (ended, cut) is never resumed; the time spent waiting is counted.
 */
import { readInTurns } from '../../../src/core/turns';

function source(): { paused: number; resumed: number; pause(): void; resume(): void } {
  return {
    paused: 0,
    resumed: 0,
    pause() {
      this.paused++;
    },
    resume() {
      this.resumed++;
    },
  };
}

function turns(): { turn: () => Promise<void>; grant(): void; readonly waiting: number } {
  const waiting: (() => void)[] = [];
  return {
    turn: () => new Promise<void>((r) => waiting.push(r)),
    grant: () => waiting.shift()?.(),
    get waiting() {
      return waiting.length;
    },
  };
}

const settle = () => new Promise((r) => setImmediate(r));

test('paused once per slice read, resumed when the turn comes, not before', async () => {
  const s = source();
  const t = turns();
  const paced = readInTurns(s, t.turn, () => false, 100);
  for (let i = 0; i < 9; i++) paced.chunk(10);
  expect(s.paused).toBe(0);
  paced.chunk(10);
  expect([s.paused, t.waiting]).toEqual([1, 1]);
  await settle();
  expect(s.resumed).toBe(0);
  t.grant();
  await settle();
  expect(s.resumed).toBe(1);
  // One large chunk is a slice of its own.
  paced.chunk(250);
  expect(s.paused).toBe(2);
});

test('a source whose reading stopped while it waited is not resumed', async () => {
  const s = source();
  const t = turns();
  let stopped = false;
  const paced = readInTurns(s, t.turn, () => stopped, 100);
  paced.chunk(100);
  stopped = true;
  t.grant();
  await settle();
  expect([s.paused, s.resumed]).toEqual([1, 0]);
});

test('the time waited for turns is counted', async () => {
  const s = source();
  const t = turns();
  const paced = readInTurns(s, t.turn, () => false, 100);
  paced.chunk(100);
  await new Promise((r) => setTimeout(r, 30));
  t.grant();
  await settle();
  expect(paced.waitedMs).toBeGreaterThanOrEqual(25);
});
