import fc from 'fast-check';
import { encodePath, encodeSegment, parseGeneral, parseTarget } from '../../../src/a2a/target';

/** Paths near the fast path's edge: plain characters, and every character it must leave to the general loop. */
const segmentChar = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(..."abcXYZ019-._~!$&'()*+,=:@".split('')) },
  { weight: 1, arbitrary: fc.constantFrom('%', '%2F', '%2e', '%41', '%25', ';', '?', '#', '\\', '\x00', '\x7f', ' ', 'é', '[', '"', '/', '', '.', '..') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 2 }) },
);
const target = fc
  .tuple(
    fc.array(
      fc.array(segmentChar, { maxLength: 5 }).map((cs) => cs.join('')),
      { maxLength: 5 },
    ),
    fc.boolean(),
    fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
  )
  .map(([segs, slash, query]) => `/${segs.join('/')}${slash ? '/' : ''}${query === undefined ? '' : `?${query}`}`);

describe('parseTarget fast path: the same result as the general loop', () => {
  test('generated targets', () => {
    fc.assert(
      fc.property(fc.oneof(target, fc.string()), (raw) => {
        expect(parseTarget(raw)).toEqual(parseGeneral(raw));
      }),
      { numRuns: 20_000 },
    );
  });

  test('hand-picked targets', () => {
    for (const raw of [
      '/',
      '//',
      '/a',
      '/a/',
      '/a//b',
      '/./a',
      '/a/..',
      '/a/.../b',
      '/.well-known/agent-card.json',
      '/a2a/jsonrpc',
      '/a2a/jsonrpc/',
      '/a;b',
      '/a%2Fb',
      '/a?x=1',
      '/a:b@c',
      "/!$&'()*+,=",
      '/a/b/c/d/e/f/g',
    ]) {
      expect([raw, parseTarget(raw)]).toEqual([raw, parseGeneral(raw)]);
    }
  });
});

describe('parseTarget over hostile targets', () => {
  // Encoded dots, slashes, backslashes and percents, double encoding, separators, controls, non-ASCII.
  const hostile = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(..."aZ09-._~!$&'()*+,=:@".split('')) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '%',
        '%2e',
        '%2E',
        '%2f',
        '%2F',
        '%5c',
        '%25',
        '%252e',
        '%3b',
        '%00',
        '%7f',
        '%C3%A9',
        '%ff',
        ';',
        '?',
        '#',
        '\\',
        '.',
        '..',
        '\t',
        ' ',
        'é',
        '\u2028',
        '[',
        '"',
        '+',
        '\u0130',
      ),
    },
  );
  const seg = fc.oneof(
    fc.array(hostile, { maxLength: 5 }).map((c) => c.join('')),
    fc.constantFrom('.', '..', '', '.%2e', '%2e%2e', '..a'),
  );
  const raw = fc
    .tuple(fc.array(seg, { maxLength: 5 }), fc.boolean(), fc.option(fc.constantFrom('a=1', '', 'x=%2F')))
    .map(([segs, slash, q]) => `/${segs.join('/')}${slash ? '/' : ''}${q === null ? '' : `?${q}`}`);

  test('the same result as the general loop, and an accepted path re-encodes to one that reads the same', () => {
    fc.assert(
      fc.property(raw, (r) => {
        const p = parseTarget(r);
        expect([r, p]).toEqual([r, parseGeneral(r)]);
        if (!p.ok) return;
        const again = parseTarget(encodePath(p.target.segments, p.target.trailingSlash));
        expect([r, again.ok && again.target.segments]).toEqual([r, p.target.segments]);
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('encodeSegment: plain segments are their own encoding', () => {
  test('generated segments: what encodeURIComponent (with ":" and "@" literal) writes', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(segmentChar).map((cs) => cs.join('')),
          fc.string({ unit: 'grapheme' }),
        ),
        (s) => {
          expect(encodeSegment(s)).toBe(encodeURIComponent(s).replace(/%3A/gi, ':').replace(/%40/g, '@'));
        },
      ),
      { numRuns: 20_000 },
    );
  });
});
