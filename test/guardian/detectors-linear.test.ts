/**
 * The detectors are linear scans: the same output as the regular expressions they replace
 * (fixtures/regex-detectors.ts) on generated texts, and work within DETECTOR_STEP_BOUND steps per
 * input character on generated worst cases (digit runs, separators, long tokens, many starts).
 */
import fc from 'fast-check';
import { DETECTOR_STEP_BOUND, DETECTORS, work } from '../../src/guardian/detectors';
import type { Detector } from '../../src/guardian/policy';
import { REGEX_DETECTORS } from './fixtures/regex-detectors';

const ALL: readonly Detector[] = ['email', 'card', 'nationalId', 'phone'];

/** Pieces that make and break matches of every detector. */
const PIECES = [
  '0',
  '1',
  '4',
  '5',
  '6',
  '7',
  '9',
  '00',
  '078',
  '05',
  '1120',
  '4111',
  '1111',
  '4111 1111 1111 1111',
  '4111-1111-1111-1111',
  '79927398713',
  ' ',
  '  ',
  '-',
  '--',
  '.',
  '(',
  ')',
  '+',
  '+1',
  '+44',
  ',',
  '_',
  '%',
  '@',
  'a@b.co',
  'x_y@ex-ample.io',
  'a.b+c@mail.example.co.uk',
  'a',
  'x',
  'Z',
  'A',
  'B',
  'C',
  'D',
  'J',
  'G',
  'N',
  'Q',
  'JG',
  'AB',
  'GB',
  'ZZ',
  'JG 10 37 58 A',
  'AB123456C',
  'é',
  'ﬁ',
  '\n',
  '555',
  '123',
  '4567',
  '(555) 123-4567',
  '555.123.4567',
  '01 23 45 67 89',
  '020 7946 0958',
  '07700 900123',
  '+1 (555) 123-4567',
  '078-05-1120',
  '000-12-3456',
  '666-12-3456',
  'com',
  'co',
  'abcdefghijklmnopqrstuvwxyz',
  'x'.repeat(63),
  'x'.repeat(64),
  '+1234567',
  '+12345678',
  '+1 234 567 8',
  '+123456789012345',
  '+1234567890123456',
  'a@b.' + 'x'.repeat(24),
  'a@b.' + 'x'.repeat(25),
  `a@${'x'.repeat(63)}.com`,
  `a@${'x'.repeat(64)}.com`,
  '4111111111111111110',
  '4111111111119',
  '411111111111',
  '4111 1111 1111 1111 1111',
];
/** Whole forms, each between the characters that decide whether it starts or ends a match. */
const FORMS = [
  '4111 1111 1111 1111',
  '4111111111111111',
  '078-05-1120',
  'JG 10 37 58 A',
  'AB123456C',
  '+44 20 7946 0958',
  '+33612345678',
  '(555) 123-4567',
  '555-123-4567',
  '555.123.4567',
  '01 23 45 67 89',
  '020 7946 0958',
  '07700 900123',
  'a.b+c@mail.example.co.uk',
  'x_y@ex-ample.io',
];
const EDGES = ['', ' ', '.', '-', '+', '_', '%', 'a', 'Z', 'D', '1', '0', '@', '(', ')', ',', 'é'];
const framed = fc.tuple(fc.constantFrom(...EDGES), fc.constantFrom(...FORMS), fc.constantFrom(...EDGES)).map((parts) => parts.join(''));
const text = fc.array(fc.oneof(fc.constantFrom(...PIECES), framed), { maxLength: 24 }).map((parts) => parts.join(''));
const replacement = fc.constantFrom('[X]', '[CARD]', '', '$&', '1', 'a@b.co', ' 4111 ', '+1', 'A');

describe('the scans give what the regular expressions give', () => {
  it.each(ALL)('%s', (detector) => {
    fc.assert(
      fc.property(text, replacement, (t, rep) => {
        expect(DETECTORS[detector](t, rep)).toBe(REGEX_DETECTORS[detector](t, rep));
      }),
      { numRuns: 3000 },
    );
  });

  it.each(ALL)('%s, on any characters', (detector) => {
    const chars = fc.string({ unit: fc.constantFrom(...'0123456789 -.()+@_%aZABCDJGNQ,é'), maxLength: 40 });
    fc.assert(
      fc.property(chars, replacement, (t, rep) => {
        expect(DETECTORS[detector](t, rep)).toBe(REGEX_DETECTORS[detector](t, rep));
      }),
      { numRuns: 3000 },
    );
  });
});

/** Steps one detector call takes on `t`. */
function steps(detector: Detector, t: string): number {
  const before = work.steps;
  DETECTORS[detector](t, '[X]');
  return work.steps - before;
}

describe('work bound', () => {
  /** A unit repeated up to ~20,000 characters: runs of digits and separators, long tokens, many starts. */
  const unit = fc.array(fc.constantFrom(...PIECES, '1 ', '1-', '+1 ', 'a@', 'a.', '0 ', '(1', 'A '), { minLength: 1, maxLength: 6 }).map((p) => p.join(''));
  const hostile = fc.tuple(unit, fc.integer({ min: 1, max: 20_000 }), text).map(([u, size, tail]) => u.repeat(Math.ceil(size / u.length)) + tail);

  it.each(ALL)('%s takes at most its bound in steps per character', (detector) => {
    fc.assert(
      fc.property(hostile, (t) => {
        expect(steps(detector, t)).toBeLessThanOrEqual(DETECTOR_STEP_BOUND[detector] * t.length + 8);
      }),
      { numRuns: 300 },
    );
  });

  it('the cases that cost seconds as regular expressions cost a few steps per character', () => {
    const cases = [
      '1 '.repeat(100_000),
      '1'.repeat(200_000),
      '1-'.repeat(100_000),
      '+1 '.repeat(70_000),
      'a@'.repeat(100_000),
      'a.'.repeat(100_000) + '@x',
      '0 '.repeat(100_000),
    ];
    for (const t of cases) for (const d of ALL) expect(steps(d, t)).toBeLessThanOrEqual(DETECTOR_STEP_BOUND[d] * t.length + 8);
  });
});
