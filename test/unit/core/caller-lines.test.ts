import { CallerLines } from '../../../src/core/caller-lines';

const drain = (q: CallerLines<string>): string[] => {
  const out: string[] = [];
  for (let item = q.shift(); item !== undefined; item = q.shift()) out.push(item);
  return out;
};

describe('work waiting in a line per caller', () => {
  it('is served round-robin: a caller with many items waiting puts one in front of another caller', () => {
    const q = new CallerLines<string>(100);
    for (let i = 0; i < 4; i++) q.push('attacker', `a${i}`);
    q.push('victim', 'v0');
    q.push('victim', 'v1');
    expect(drain(q)).toEqual(['a0', 'v0', 'a1', 'v1', 'a2', 'a3']);
    expect(q.size).toBe(0);
  });

  it('past its bound, the caller holding the most gives up its newest: a newcomer is queued, never refused for it', () => {
    const q = new CallerLines<string>(3);
    expect(q.push('attacker', 'a0')).toBeUndefined();
    expect(q.push('attacker', 'a1')).toBeUndefined();
    expect(q.push('attacker', 'a2')).toBeUndefined();
    // Full: the attacker's own next is refused; the victim's takes the attacker's newest place.
    expect(q.push('attacker', 'a3')).toBe('a3');
    expect(q.push('victim', 'v0')).toBe('a2');
    expect(q.size).toBe(3);
    // Equal holdings: the newcomer's caller holds as many as any, so its item is the one refused.
    expect(q.push('other', 'o0')).toBe('a1');
    expect(q.push('victim', 'v1')).toBe('v1');
    expect(drain(q).sort()).toEqual(['a0', 'o0', 'v0']);
  });

  it('a bound of 0 refuses everything; a caller that leaves is taken out of its line', () => {
    expect(new CallerLines<string>(0).push('a', 'x')).toBe('x');
    const q = new CallerLines<string>(10);
    q.push('a', 'x');
    q.push('a', 'y');
    expect(q.delete('a', 'x')).toBe(true);
    expect(q.delete('a', 'x')).toBe(false);
    expect(q.delete('b', 'y')).toBe(false);
    expect(q.items()).toEqual(['y']);
    expect(drain(q)).toEqual(['y']);
  });

  it('a round takes the head of every caller waiting, once each in round-robin order, and sends each to the back', () => {
    const q = new CallerLines<string>(Infinity);
    for (const item of ['a0', 'a1', 'a2']) q.push('a', item);
    q.push('b', 'b0');
    q.push('c', 'c0');
    q.push('c', 'c1');
    expect([q.sizeOf('a'), q.sizeOf('b'), q.sizeOf('none')]).toEqual([3, 1, 0]);
    const round = (): string[] => {
      const taken: string[] = [];
      q.shiftRound((item, key) => taken.push(`${key}:${item}`));
      return taken;
    };
    expect(round()).toEqual(['a:a0', 'b:b0', 'c:c0']);
    expect([q.size, q.sizeOf('b')]).toEqual([3, 0]);
    // The next round begins with the callers served first last time, and a newcomer comes after them.
    q.push('d', 'd0');
    expect(round()).toEqual(['a:a1', 'c:c1', 'd:d0']);
    expect(q.shift()).toBe('a2');
    expect(round()).toEqual([]);
  });

  it('what a round serves changes the lines: an item queued waits for the next round, a caller that left is skipped', () => {
    const q = new CallerLines<string>(Infinity);
    q.push('a', 'a0');
    q.push('b', 'b0');
    q.push('c', 'c0');
    const taken: string[] = [];
    q.shiftRound((item) => {
      taken.push(item);
      if (item !== 'a0') return;
      // Serving a0: b's only item leaves and comes back, and a queues another.
      q.delete('b', 'b0');
      q.push('b', 'b1');
      q.push('a', 'a1');
    });
    expect(taken).toEqual(['a0', 'c0']);
    expect(q.items().sort()).toEqual(['a1', 'b1']);
    expect(q.size).toBe(2);
  });
});
