import { BoundedBytes } from '../../../src/core/bounded';

const b = (s: string) => Buffer.from(s, 'utf8');

describe('BoundedBytes', () => {
  it('keeps chunks up to the limit, inclusive, and joins them', () => {
    const kept = new BoundedBytes(6);
    expect(kept.push(b('abc'))).toBe(true);
    expect(kept.push(b('def'))).toBe(true);
    expect(kept.overflowed).toBe(false);
    expect(kept.length).toBe(6);
    expect(kept.text()).toBe('abcdef');
  });

  it('refuses the chunk that passes the limit and every later one, keeping what came before', () => {
    const kept = new BoundedBytes(5);
    expect(kept.push(b('abc'))).toBe(true);
    expect(kept.push(b('def'))).toBe(false);
    // A small chunk after the overflow would fit the remaining room: still refused, the body is cut.
    expect(kept.push(b('g'))).toBe(false);
    expect(kept.overflowed).toBe(true);
    expect(kept.length).toBe(3);
    expect(kept.text()).toBe('abc');
  });

  it('hands back a single chunk without copying it', () => {
    const only = b('{"a":1}');
    const kept = new BoundedBytes(100);
    kept.push(only);
    expect(kept.buffer()).toBe(only);
  });

  it('is empty before any chunk, and with a zero limit takes only empty chunks', () => {
    expect(new BoundedBytes(10).buffer()).toEqual(Buffer.alloc(0));
    const none = new BoundedBytes(0);
    expect(none.push(Buffer.alloc(0))).toBe(true);
    expect(none.push(b('x'))).toBe(false);
  });

  it('counts bytes, not characters', () => {
    const kept = new BoundedBytes(3);
    expect(kept.push(b('é'))).toBe(true); // 2 bytes
    expect(kept.push(b('é'))).toBe(false);
    expect(kept.text()).toBe('é');
  });
});
