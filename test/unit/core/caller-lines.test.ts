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
});
