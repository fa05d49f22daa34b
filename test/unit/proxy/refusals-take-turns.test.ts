/**
 * A caller past FAIR_QUEUE_PER_CALLER is refused, and each refusal (a response written, counted and logged) is
 * written in that caller's own turn: a flood's hundreds of refusals take one turn per round, and another caller's
 * waiting work runs between them instead of behind all of them. Socket-free: the fair queue polled by hand.
 */
import { FairQueue, type Leaving } from '../../../src/core/fair-queue';
import { END } from '../../../src/proxy/stages';
import { takeTurn, type Turns } from '../../../src/proxy/fair';

function turns(maxQueued: number): { turns: Turns; poll: () => void; limited: string[] } {
  const deferred: Array<() => void> = [];
  let now = 0;
  // Every turn taken at once uses up the slice: the next ones wait for a round.
  const fair = new FairQueue({ maxQueuedPerCaller: maxQueued, sliceMs: 1, now: () => (now += 1), defer: (fn) => void deferred.push(fn) });
  const limited: string[] = [];
  return {
    turns: {
      fair,
      metrics: { callerLimited: { inc: (l: { resource: string }) => void limited.push(l.resource) } } as unknown as Turns['metrics'],
      max: maxQueued,
    },
    poll: () => {
      for (const fn of deferred.splice(0)) fn();
    },
    limited,
  };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A caller that can leave; `dropped` counts its connection ended without an answer. */
function leaving(dropped?: { n: number }): Leaving & { leave(): void } {
  const fns: Array<() => void> = [];
  return {
    onCancel(fn) {
      fns.push(fn);
      return () => void fns.splice(fns.indexOf(fn) >>> 0, 1);
    },
    leave: () => fns.splice(0).forEach((fn) => fn()),
    ...(dropped === undefined ? {} : { drop: () => void dropped.n++ }),
  };
}

test("a flood's refusals are written one per round in its caller's turns; another caller's waiting work runs before most of them", async () => {
  const t = turns(4);
  const log: string[] = [];
  const step = (key: string, name: string) =>
    Promise.resolve(
      takeTurn(t.turns, key, leaving(), (err) => {
        log.push(`${name} refused ${err.kind}`);
        return END;
      }),
    ).then((s) => {
      if (s !== END) log.push(`${name} ran`);
    });
  // The attacker: one turn at once, four waiting, then four past its bound, all in one batch of parsed requests.
  const attack = Array.from({ length: 9 }, (_v, i) => step('A', `a${i}`));
  // No refusal is written while the requests are parsed.
  await settle();
  expect(log).toEqual(['a0 ran']);
  expect(t.limited).toHaveLength(4);
  // The victim's work arrives after the flood and waits too (the slice is used up).
  const victim = step('B', 'b');
  for (let i = 0; i < 30; i++) {
    t.poll();
    await settle();
  }
  await Promise.all([...attack, victim]);
  expect(log.filter((l) => l.includes('refused'))).toHaveLength(4);
  expect(log.filter((l) => l.startsWith('a') && l.endsWith('ran'))).toHaveLength(5);
  // One of the attacker's turns per round: the victim ran within the first rounds, before most refusals.
  expect(log.indexOf('b ran')).toBeLessThan(4);
});

test('a refused caller that left first gets no refusal written', async () => {
  const t = turns(2);
  const log: string[] = [];
  const callers = Array.from({ length: 5 }, () => leaving());
  const steps = callers.map((c, i) =>
    Promise.resolve(
      takeTurn(t.turns, 'A', c, () => {
        log.push(`refused ${i}`);
        return END;
      }),
    ),
  );
  for (const c of callers.slice(3)) c.leave();
  for (let i = 0; i < 10; i++) {
    t.poll();
    await settle();
  }
  await Promise.all(steps);
  // Callers 3 and 4 were past the bound (one at once, two waiting) and left before their refusal's turn.
  expect(log).toEqual([]);
  expect(t.limited).toHaveLength(2);
});

test("a flood past its waiting refusals is dropped without an answer: the proxy holds no more of the caller's requests", async () => {
  const t = turns(2);
  const dropped = { n: 0 };
  let refused = 0;
  // One batch of 1,000 parsed requests (a few KiB of pipelined requests): one at once, two waiting, two refusals waiting.
  const flood = Array.from({ length: 1000 }, () =>
    Promise.resolve(
      takeTurn(t.turns, 'A', leaving(dropped), () => {
        refused++;
        return END;
      }),
    ),
  );
  await settle();
  expect(t.turns.fair?.queuedFor('A')).toBe(4);
  expect(dropped.n).toBe(995);
  for (let i = 0; i < 10; i++) {
    t.poll();
    await settle();
  }
  await Promise.all(flood);
  expect(refused).toBe(2);
  expect(t.turns.fair?.size).toBe(0);
});
