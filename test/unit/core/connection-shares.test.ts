import fc from 'fast-check';
import { ConnectionShares } from '../../../src/core/connection-shares';

/** Shares of named connections; `dropped` lists what was given up, in order. */
function shares(max: number): { s: ConnectionShares<string>; dropped: string[] } {
  const dropped: string[] = [];
  const s = new ConnectionShares<string>(max, (c) => void dropped.push(c));
  return { s, dropped };
}

test('under the bound every connection opens; nothing is given up', () => {
  const { s, dropped } = shares(3);
  expect(['a1', 'a2', 'b1'].map((c) => s.open(c, c, c[0] as string))).toEqual(['open', 'open', 'open']);
  expect(dropped).toEqual([]);
  expect(s.size).toBe(3);
});

test("at the bound, the caller holding the most gives up its oldest idle connection for another caller's new one", () => {
  const { s, dropped } = shares(6);
  for (const c of ['a1', 'a2', 'a3', 'b1', 'b2', 'd1']) s.open(c, c, c[0] as string);
  s.callStarted('a1');
  expect(s.open('c1', 'c1', 'c')).toBe('open');
  // a1 carries a call: never cut; a2 is the oldest idle.
  expect(dropped).toEqual(['a2']);
  expect([s.heldBy('a'), s.heldBy('b'), s.heldBy('c'), s.size]).toEqual([2, 2, 1, 6]);
  // Its 'close' then comes, and is ignored.
  s.closed('a2', 'a2');
  expect(s.size).toBe(6);
});

test('a caller holding as many as any gives up its own idle connection for its new one', () => {
  const { s, dropped } = shares(4);
  for (const c of ['a1', 'a2', 'b1', 'b2']) s.open(c, c, c[0] as string);
  expect(s.open('b3', 'b3', 'b')).toBe('open');
  expect(dropped).toEqual(['b1']);
  expect([s.heldBy('a'), s.heldBy('b')]).toEqual([2, 2]);
});

test('the caller holding the most with none idle is refused its new one; others are not cut for it', () => {
  const { s, dropped } = shares(3);
  for (const c of ['a1', 'a2', 'b1']) s.open(c, c, c[0] as string);
  s.callStarted('a1');
  s.callStarted('a2');
  expect(s.open('a3', 'a3', 'a')).toBe('refused');
  // Another caller's new one: the top holder has nothing idle, so it is refused too (no busy connection is cut).
  expect(s.open('c1', 'c1', 'c')).toBe('refused');
  expect(dropped).toEqual([]);
  // A call ends: that connection is idle again and may be given up.
  s.callEnded('a1');
  expect(s.open('c1', 'c1', 'c')).toBe('open');
  expect(dropped).toEqual(['a1']);
});

test('a closed connection leaves its place; a newer connection under the same id is not forgotten by the old one', () => {
  const { s } = shares(2);
  s.open('x', 'old', 'a');
  s.open('x', 'new', 'a');
  expect(s.size).toBe(1);
  s.closed('x', 'old');
  expect(s.size).toBe(1);
  s.closed('x', 'new');
  expect(s.size).toBe(0);
  expect(s.heldBy('a')).toBe(0);
});

test('property: the bound holds, busy connections are never given up, and only the biggest holder (or the caller itself) gives one up', () => {
  type Op = { kind: 'open'; key: number } | { kind: 'start' | 'end' | 'close'; pick: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('open' as const), key: fc.integer({ min: 0, max: 3 }) }),
    fc.record({ kind: fc.constantFrom('start' as const, 'end' as const, 'close' as const), pick: fc.nat() }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 6 }), fc.array(op, { maxLength: 60 }), (max, ops) => {
      const dropped: string[] = [];
      const s = new ConnectionShares<string>(max, (c) => void dropped.push(c));
      const open = new Map<string, { key: string; calls: number }>();
      let n = 0;
      for (const o of ops) {
        if (o.kind === 'open') {
          const id = `c${n++}`;
          const key = `k${o.key}`;
          const held = new Map<string, number>();
          for (const v of open.values()) held.set(v.key, (held.get(v.key) ?? 0) + 1);
          const before = dropped.length;
          if (s.open(id, id, key) === 'open') open.set(id, { key, calls: 0 });
          for (const d of dropped.slice(before)) {
            const gone = open.get(d);
            expect(gone?.calls).toBe(0);
            const most = Math.max(held.get(key) ?? 0, ...held.values());
            expect(held.get(gone?.key as string)).toBe(most);
            open.delete(d);
          }
        } else {
          const ids = [...open.keys()];
          if (ids.length === 0) continue;
          const id = ids[o.pick % ids.length] as string;
          const e = open.get(id) as { key: string; calls: number };
          if (o.kind === 'start') {
            s.callStarted(id);
            e.calls++;
          } else if (o.kind === 'end' && e.calls > 0) {
            s.callEnded(id);
            e.calls--;
          } else if (o.kind === 'close') {
            s.closed(id, id);
            open.delete(id);
          }
        }
        expect(s.size).toBe(open.size);
        expect(s.size).toBeLessThanOrEqual(max);
      }
    }),
  );
});

test("a caller holds at most half the bound: past it its own oldest idle one is given up, or with none idle its new one is refused, and another caller's still opens", () => {
  const { s, dropped } = shares(4);
  for (const c of ['a1', 'a2']) s.open(c, c, 'a');
  expect(s.open('a3', 'a3', 'a')).toBe('open');
  expect(dropped).toEqual(['a1']);
  s.callStarted('a2');
  s.callStarted('a3');
  expect(s.open('a4', 'a4', 'a')).toBe('refused');
  expect([s.open('b1', 'b1', 'b'), s.open('b2', 'b2', 'b')]).toEqual(['open', 'open']);
  expect(dropped).toEqual(['a1']);
  expect([s.heldBy('a'), s.heldBy('b'), s.size]).toEqual([2, 2, 4]);
});
