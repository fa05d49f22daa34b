import { BoundedBytes, giveBack } from '../../../src/core/bounded';

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

  describe('large bodies are gathered into one buffer as they arrive (no whole copy at the end)', () => {
    const chunksOf = (total: number, size: number): Buffer[] =>
      Array.from({ length: Math.ceil(total / size) }, (_, i) => Buffer.alloc(Math.min(size, total - i * size), i % 251));

    it.each([
      ['the declared length', 1_000_000, 1_000_000],
      ['no declared length (the limit reserved)', 1_000_000, undefined],
      ['a declared length shorter than what came', 1_000_000, 300_000],
    ])('with %s: every byte kept in order, within the limit', (_name, total, expected) => {
      const chunks = chunksOf(total, 65_536);
      const kept = new BoundedBytes(4_000_000, expected);
      for (const c of chunks) expect(kept.push(c)).toBe(true);
      expect(kept.length).toBe(total);
      expect(kept.buffer().equals(Buffer.concat(chunks))).toBe(true);
    });

    it('the limit still cuts the body, and what came before it is kept', () => {
      const chunks = chunksOf(1_000_000, 65_536);
      const kept = new BoundedBytes(500_000, 1_000_000);
      const accepted = chunks.filter((c) => kept.push(c));
      expect(kept.overflowed).toBe(true);
      expect(kept.buffer().equals(Buffer.concat(accepted))).toBe(true);
      expect(kept.length).toBeLessThanOrEqual(500_000);
    });

    it('a body far smaller than its reservation does not keep the reservation allocated', () => {
      const chunks = chunksOf(320_000, 65_536);
      const kept = new BoundedBytes(10 * 1024 * 1024);
      for (const c of chunks) kept.push(c);
      const body = kept.buffer();
      expect(body.equals(Buffer.concat(chunks))).toBe(true);
      expect(body.buffer.byteLength).toBeLessThanOrEqual(4 * 320_000);
      expect(kept.buffer().equals(body)).toBe(true);
      // What comes after it is still kept, in order.
      expect(kept.push(b('tail'))).toBe(true);
      expect(kept.buffer().equals(Buffer.concat([...chunks, b('tail')]))).toBe(true);
    });

    it('a body near its reservation is handed back without a copy', () => {
      const kept = new BoundedBytes(1_000_000);
      for (const c of chunksOf(600_000, 65_536)) kept.push(c);
      const body = kept.buffer();
      expect(body.buffer.byteLength).toBe(1_000_000);
    });

    it('a partial body is only the bytes received (never the rest of the reservation)', () => {
      const kept = new BoundedBytes(4_000_000, 4_000_000);
      for (const c of chunksOf(400_000, 65_536)) kept.push(c);
      expect(kept.buffer().length).toBe(400_000);
    });
  });
});

describe('giveBack', () => {
  it('lets a buffer of its own go (it reads as empty from then on), and leaves a slice of a larger one alone', () => {
    const own = Buffer.allocUnsafeSlow(4 * 1024 * 1024).fill(1);
    const view = own.subarray(10, 20);
    giveBack(own);
    expect([own.length, view.length]).toEqual([0, 0]);
    const pooled = Buffer.from('a small pooled buffer');
    giveBack(pooled);
    expect(pooled.toString()).toBe('a small pooled buffer');
    const whole = Buffer.alloc(64, 2);
    const part = whole.subarray(8, 16);
    giveBack(part);
    expect(whole.length).toBe(64);
  });
});
