import { FairQueue, type Turn } from '../../../src/core/fair-queue';
import { Cancellation } from '../../../src/core/cancel';

/** A queue whose loop iterations are run by hand: `tick()` runs what the loop would run once it polled for I/O. */
function queue(maxQueuedPerCaller = 8, sliceMs = 5) {
  let t = 0;
  let deferred: Array<() => void> = [];
  const q = new FairQueue({ maxQueuedPerCaller, sliceMs, now: () => t, defer: (fn) => void deferred.push(fn) });
  const tick = async (): Promise<void> => {
    const run = deferred;
    deferred = [];
    for (const fn of run) fn();
    // Granted turns run their continuations (as their microtasks would) before the next iteration.
    await new Promise<void>((r) => setImmediate(r));
  };
  return { q, tick, advance: (ms: number) => void (t += ms) };
}

/** Record the order in which waiting turns are granted. */
function track(turn: Turn, served: string[], label: string): Promise<boolean> | boolean | 'full' {
  if (turn === true || turn === 'full') return turn;
  return turn.then((granted) => {
    if (granted) served.push(label);
    return granted;
  });
}

describe('fair turns per caller', () => {
  it('takes a turn at once while nobody waits and the slice is not spent', () => {
    const { q, advance } = queue();
    expect(q.turn('a')).toBe(true);
    advance(2);
    expect(q.turn('b')).toBe(true);
    expect(q.size).toBe(0);
  });

  it('while others wait, a caller takes one turn at once per loop iteration; its next waits while a caller with none still takes its own', async () => {
    const { q, tick, advance } = queue();
    // Someone waits (two turns of x queued, one granted), and the loop begins a new iteration.
    q.turn('x');
    advance(10);
    q.turn('x');
    q.turn('x');
    await tick();
    expect(q.size).toBe(1);
    expect(q.turn('attacker')).toBe(true);
    const next = q.turn('attacker');
    expect(next).toBeInstanceOf(Promise);
    expect(q.turn('victim')).toBe(true);
    await tick();
    expect(await next).toBe(true);
  });

  it('once the slice is spent, turns wait and are granted one per loop iteration, round-robin across callers', async () => {
    const { q, tick, advance } = queue(100);
    expect(q.turn('attacker')).toBe(true);
    advance(6);
    const served: string[] = [];
    // The attacker queues 5 turns before the victim's first arrives, then the victim 2.
    for (let i = 0; i < 5; i++) track(q.turn('attacker'), served, `attacker${i}`);
    track(q.turn('victim'), served, 'victim0');
    track(q.turn('victim'), served, 'victim1');
    expect(q.size).toBe(7);
    for (let i = 0; i < 8; i++) await tick();
    expect(served).toEqual(['attacker0', 'victim0', 'attacker1', 'victim1', 'attacker2', 'attacker3', 'attacker4']);
    expect(q.size).toBe(0);
  });

  it('a caller arriving while others wait is served within one round of the callers waiting, whatever their queues hold', async () => {
    const { q, tick, advance } = queue(1000);
    q.turn('x');
    advance(10);
    const served: string[] = [];
    for (const c of ['a', 'b', 'c']) for (let i = 0; i < 200; i++) track(q.turn(c), served, c);
    await tick();
    await tick();
    const before = served.length;
    // The victim already had its turn this iteration: its next one waits for a round.
    q.turn('victim');
    track(q.turn('victim'), served, 'victim');
    for (let i = 0; i < 5; i++) await tick();
    // A round of the three flooders at most before it.
    expect(served.indexOf('victim') - before).toBeLessThanOrEqual(3);
  });

  it('no starvation: every waiting turn is granted, in each caller’s own order', async () => {
    const { q, tick, advance } = queue(50);
    q.turn('x');
    advance(10);
    const served: string[] = [];
    const all: Array<Promise<boolean> | boolean | 'full'> = [];
    for (let i = 0; i < 30; i++) all.push(track(q.turn('a'), served, `a${i}`));
    for (let i = 0; i < 3; i++) all.push(track(q.turn('b'), served, `b${i}`));
    for (let i = 0; i < 40; i++) await tick();
    expect(await Promise.all(all)).toEqual(Array(33).fill(true));
    expect(served.filter((s) => s.startsWith('a'))).toEqual(Array.from({ length: 30 }, (_v, i) => `a${i}`));
    expect(served.filter((s) => s.startsWith('b'))).toEqual(['b0', 'b1', 'b2']);
  });

  it('a caller with its bound of turns waiting is refused the next one; other callers are not', async () => {
    const { q, tick, advance } = queue(3);
    q.turn('x');
    advance(10);
    const turns = [q.turn('a'), q.turn('a'), q.turn('a')];
    expect(turns.every((t) => t instanceof Promise)).toBe(true);
    expect(q.turn('a')).toBe('full');
    expect(q.turn('b')).toBeInstanceOf(Promise);
    expect(q.queuedFor('a')).toBe(3);
    for (let i = 0; i < 6; i++) await tick();
    // Served: room again.
    expect(q.queuedFor('a')).toBe(0);
  });

  it('a caller that leaves is dropped from its queue: its turn resolves false and is never granted', async () => {
    const { q, tick, advance } = queue();
    q.turn('x');
    advance(10);
    const served: string[] = [];
    const leaving = new Cancellation();
    const gone = track(q.turn('a', leaving), served, 'a-gone');
    track(q.turn('b'), served, 'b');
    leaving.cancel();
    expect(await gone).toBe(false);
    expect(q.queuedFor('a')).toBe(0);
    for (let i = 0; i < 3; i++) await tick();
    expect(served).toEqual(['b']);
    expect(q.size).toBe(0);
  });

  it('a turn asked for a caller already gone resolves false at once', async () => {
    const { q, advance } = queue();
    q.turn('x');
    advance(10);
    const leaving = new Cancellation();
    leaving.cancel();
    const t = q.turn('a', leaving);
    expect(await t).toBe(false);
    expect(q.size).toBe(0);
  });

  it('once every waiting turn is granted and the loop moved on, turns are taken at once again', async () => {
    const { q, tick, advance } = queue();
    q.turn('x');
    advance(10);
    const waiting = q.turn('a');
    for (let i = 0; i < 3; i++) await tick();
    expect(await waiting).toBe(true);
    expect(q.turn('a')).toBe(true);
  });

  it('FAIR_QUEUE_PER_CALLER=0 never queues: a turn is taken at once or refused', () => {
    const { q, advance } = queue(0);
    expect(q.turn('a')).toBe(true);
    advance(10);
    expect(q.turn('a')).toBe('full');
  });

  it("a large body's step waits for the loop to poll for I/O even on an idle queue: never at once", async () => {
    const { q, tick } = queue();
    let granted = false;
    const later = q.later('a').then((g) => (granted = g));
    await Promise.resolve();
    expect(granted).toBe(false);
    expect(q.size).toBe(1);
    await tick();
    await later;
    expect(granted).toBe(true);
  });

  it("a caller's many large-body steps take one per round, round-robin with others, and are not refused when its queue is full", async () => {
    const { q, tick } = queue(2);
    const served: string[] = [];
    for (let i = 0; i < 5; i++) track(q.later('attacker'), served, `attacker${i}`);
    expect(q.turn('attacker')).toBe('full');
    track(q.later('victim'), served, 'victim');
    await tick();
    expect(served).toEqual(['attacker0', 'victim']);
    for (let i = 0; i < 4; i++) await tick();
    expect(served).toEqual(['attacker0', 'victim', 'attacker1', 'attacker2', 'attacker3', 'attacker4']);
  });

  it('a large-body step of a caller that left resolves false and leaves the queue', async () => {
    const { q } = queue();
    const leaving = new Cancellation();
    const t = q.later('a', leaving);
    leaving.cancel();
    expect(await t).toBe(false);
    expect(q.size).toBe(0);
  });
});
