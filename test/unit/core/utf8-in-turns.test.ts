import { utf8InTurns } from '../../../src/core/turns';

describe("a large text's UTF-8 bytes, encoded a slice per turn", () => {
  it.each([
    ['ASCII', '1 '.repeat(1_500_000)],
    ['CJK', '漢'.repeat(1_200_000)],
    ['surrogate pairs across every slice boundary', `x${'😀'.repeat(1_100_000)}`],
    ['pairs starting on even offsets', '😀'.repeat(1_100_000)],
    ['lone surrogates', `${'a'.repeat(1024 * 1024 - 1)}\ud800${'b'.repeat(10)}\udc00`],
    ['a short text', 'héllo'],
  ])('%s: the same bytes as Buffer.from, with turns between slices', async (_name, text) => {
    let turns = 0;
    const out = await utf8InTurns(text, () => {
      turns++;
      return Promise.resolve();
    });
    expect(out.equals(Buffer.from(text, 'utf8'))).toBe(true);
    // One turn between two slices of 1 Mi characters (a slice that would cut a pair ends one character early).
    expect(turns).toBeGreaterThanOrEqual(Math.ceil(text.length / (1024 * 1024)) - 1);
    expect(turns).toBeLessThanOrEqual(Math.ceil(text.length / (1024 * 1024 - 1)));
  });
});
