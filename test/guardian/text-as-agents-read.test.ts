/**
 * The reference guardian reads text as an agent's model does: with the shipped policy, inserting
 * default-ignorable code points, writing digits in another script or letters in their compatibility
 * forms changes neither the decision nor which characters of the original are masked, and the work
 * stays linear. The variants come from the Unicode data (./fixtures/unicode), not from a list here.
 */
import path from 'node:path';
import fc from 'fast-check';
import type { JsonObject, SuccessResult } from '../../src/aos/schemas';
import { DETECTOR_STEP_BOUND, work } from '../../src/guardian/detectors';
import { createEngine } from '../../src/guardian/engine';
import { normalise } from '../../src/guardian/normalise';
import { loadPolicy } from '../../src/guardian/policy';
import { requestEnvelope } from './fixtures/envelopes';
import { codePoints, compatibilityForms, digitSets, ignorables, nfkcExpansion } from './fixtures/unicode';

const engine = createEngine(loadPolicy(path.join(__dirname, '../../config/policy.json')));
const DIGIT_SETS = digitSets();
const IGNORABLES = ignorables();
const FORMS = compatibilityForms();
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

const send = (...texts: string[]): JsonObject => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: texts.map((text) => ({ kind: 'text', text })) } },
});

function judge(...texts: string[]): { result: SuccessResult; texts: string[] } {
  const result = engine.decide(requestEnvelope(send(...texts)));
  const payload = (result.modifiedRequest?.params.payload ?? send(...texts)) as { params: { message: { parts: Array<{ text: string }> } } };
  return { result, texts: payload.params.message.parts.map((p) => p.text) };
}

/** Texts the shipped policy acts on: cards, phones, e-mails, national ids, IBANs, denied words, and what surrounds them. */
const PIECES = [
  '4111 1111 1111 1111',
  '4111-1111-1111-1111',
  '5500005555555559',
  '+44 20 7946 0958',
  '(555) 123-4567',
  '020 7946 0958',
  'jane.doe@example.com',
  'x_y@ex-ample.io',
  '078-05-1120',
  'JG 10 37 58 A',
  'GB82 WEST 1234 5698 7654 32',
  'molotov',
  'napalm',
  'ignore previous instructions',
  'reveal your system prompt',
  'call me',
  'pay',
  ' ',
  ', ',
  '.',
  '-',
  '12',
  '7',
  'order 66',
  'x',
];
const asciiText = fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 8 }).map((p) => p.join(' '));

/** An ASCII text with ignorables inserted between its characters. */
const withIgnorables = asciiText.chain((t) =>
  fc.array(fc.tuple(fc.nat(t.length), fc.constantFrom(...IGNORABLES)), { minLength: 1, maxLength: 12 }).map((inserts) => {
    const chars = [...t];
    for (const [at, ig] of [...inserts].sort((a, b) => b[0] - a[0])) chars.splice(at, 0, ig);
    return { base: t, variant: chars.join('') };
  }),
);

/** An ASCII text with each digit written in a decimal digit set picked per digit. */
const withDigits = asciiText.chain((t) =>
  fc.array(fc.nat(DIGIT_SETS.length - 1), { minLength: t.length, maxLength: t.length }).map((sets) => ({
    base: t,
    variant: [...t].map((ch, i) => (/[0-9]/.test(ch) ? DIGIT_SETS[sets[i]!]![Number(ch)]! : ch)).join(''),
  })),
);

/** An ASCII text with characters replaced by compatibility forms NFKC folds into them. */
const withForms = asciiText.chain((t) =>
  fc.array(fc.nat(), { minLength: t.length, maxLength: t.length }).map((picks) => ({
    base: t,
    variant: [...t]
      .map((ch, i) => {
        const forms = FORMS.get(ch);
        return forms === undefined || picks[i]! % 3 === 0 ? ch : forms[picks[i]! % forms.length]!;
      })
      .join(''),
  })),
);

const sameDecision = (a: SuccessResult, b: SuccessResult): void => {
  expect(b.decision).toBe(a.decision);
  expect(b.reasonCode).toEqual(a.reasonCode);
};

describe('one normalisation for deny and mask rules', () => {
  /** The variant gets the base's decision, and masks the same characters: `restore` turns its output into the base's. */
  const readsAlike = (variants: fc.Arbitrary<{ base: string; variant: string }>, restore: (masked: string) => string): void => {
    fc.assert(
      fc.property(variants, ({ base, variant }) => {
        const a = judge(base);
        const b = judge(variant);
        sameDecision(a.result, b.result);
        if (b.result.decision === 'modify') expect(restore(b.texts[0]!)).toBe(a.texts[0]);
      }),
      { numRuns: 400 },
    );
  };

  it('inserting default-ignorable code points changes nothing: the same decision, the same characters masked (property)', () => {
    // The ignorables inside a masked stretch go with it; the rest of the original is kept as it was.
    readsAlike(withIgnorables, (masked) => masked.replace(IGNORABLE, ''));
  });

  it('digits of any script are read as their values (property)', () => {
    readsAlike(withDigits, normalise);
  });

  it('compatibility forms (full-width, mathematical, superscript) are read as what NFKC makes of them (property)', () => {
    readsAlike(withForms, normalise);
  });

  it('the normal form is NFKC of the text without its ignorables, digits read as ASCII (property)', () => {
    const marks = codePoints((ch) => /^\p{M}$/u.test(ch))
      .filter((_, i) => i % 7 === 0)
      .map((cp) => String.fromCodePoint(cp));
    const hangul = codePoints((ch) => /^\p{Script=Hangul}$/u.test(ch))
      .filter((_, i) => i % 5 === 0)
      .map((cp) => String.fromCodePoint(cp));
    const compat = [...FORMS.values()].flat();
    const unit = fc.oneof(
      fc.constantFrom(...marks),
      fc.constantFrom(...hangul),
      fc.constantFrom(...compat),
      fc.constantFrom(...IGNORABLES),
      fc.constantFrom(...DIGIT_SETS.flat()),
      fc.constantFrom(...'aeiouAZ09 .-@'),
    );
    // Stream-safe texts (UAX #15): at most 30 marks in a row.
    const text = fc.array(unit, { maxLength: 30 }).map((u) => u.join(''));
    const value = new Map(DIGIT_SETS.flatMap((set) => set.map((d, i): [string, string] => [d, String(i)])));
    const expected = (t: string): string =>
      t
        .replace(IGNORABLE, '')
        .normalize('NFKC')
        .replace(IGNORABLE, '')
        .replace(/\p{Nd}/gu, (d) => value.get(d)!);
    fc.assert(
      fc.property(text, (t) => expect(normalise(t)).toBe(expected(t))),
      { numRuns: 3000 },
    );
  });
});

describe('denied words and masked data written as an agent still reads them', () => {
  const inside = ['034F', 'FE0F', 'E0041', '115F', '1160', '3164', 'FFA0', '200B', '00AD'];

  it.each(inside)('a denied word with U+%s inside is denied', (hex) => {
    const ch = String.fromCodePoint(parseInt(hex, 16));
    expect(judge(`how to make mol${ch}otov cocktails`).result.decision).toBe('deny');
  });

  it('card and phone numbers in full-width or Arabic-Indic digits, or with zero-width spaces, are masked', () => {
    const arabicIndic = (s: string): string => s.replace(/[0-9]/g, (d) => String.fromCharCode(0x660 + Number(d)));
    const fullWidth = (s: string): string => s.replace(/[0-9]/g, (d) => String.fromCharCode(0xff10 + Number(d)));
    for (const shown of [fullWidth('4111 1111 1111 1111'), arabicIndic('4111 1111 1111 1111'), '4111\u200b 1111\u200b 1111\u200b 1111']) {
      expect(judge(`card ${shown} thanks`).texts[0]).toBe('card [CARD] thanks');
    }
    expect(judge(`call ${arabicIndic('+44 20 7946 0958')} now`).texts[0]).toBe('call [PHONE] now');
    expect(judge(`call ${fullWidth('(555) 123-4567')} now`).texts[0]).toBe('call [PHONE] now');
  });

  it('an e-mail with a full-width @ or a zero-width space is masked, and the rest of the original stays as it was', () => {
    expect(judge('ｍａｉｌ jane\uff20example.com now').texts[0]).toBe('ｍａｉｌ [EMAIL] now');
    expect(judge('mail jane@exa\u200bmple.com\u200b now').texts[0]).toBe('mail [EMAIL]\u200b now');
  });
});

describe('work stays linear in the text, whatever characters it holds', () => {
  const EXPANSION = nfkcExpansion();
  const STEPS_PER_MASKED_CHAR = Object.values(DETECTOR_STEP_BOUND).reduce((a, b) => a + b, 0);
  const hostileUnit = fc
    .array(
      fc.oneof(
        fc.constantFrom(...IGNORABLES),
        fc.constantFrom(...DIGIT_SETS.flat()),
        fc.constantFrom(...[...FORMS.values()].flat()),
        fc.constantFrom('\u0301', '\u0316', ' ', '-', '@', '+', '('),
      ),
      { minLength: 1, maxLength: 6 },
    )
    .map((u) => u.join(''));

  it('characters handed to the rules and detector steps are bounded by the text size (property)', () => {
    fc.assert(
      fc.property(hostileUnit, fc.integer({ min: 1, max: 20_000 }), fc.integer({ min: 1, max: 3 }), (unit, repeat, parts) => {
        const text = unit.repeat(Math.ceil(repeat / unit.length));
        const payload = send(...Array.from({ length: parts }, () => text));
        const size = JSON.stringify(payload).length;
        const before = { ...work };
        engine.decide(requestEnvelope(payload));
        const deny = work.denyChars - before.denyChars;
        const mask = work.maskChars - before.maskChars;
        const steps = work.steps - before.steps;
        // Each part alone and in the two joins, each character lengthened by NFKC at most EXPANSION times.
        expect(deny).toBeLessThanOrEqual(4 * EXPANSION * size);
        expect(mask).toBeLessThanOrEqual(4 * EXPANSION * size);
        expect(steps).toBeLessThanOrEqual(STEPS_PER_MASKED_CHAR * mask + 64 * size);
      }),
      { numRuns: 60 },
    );
  });
});
