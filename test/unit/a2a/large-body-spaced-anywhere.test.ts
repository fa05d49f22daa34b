/**
 * A large body read a piece per turn (parseBodyInTurns) is classified as the same body read whole, whatever JSON
 * whitespace (runs longer than a piece) lies between its tokens, and whatever odd character (a byte-order mark, a
 * space JSON does not know, text after the value) lies next to it.
 */
import fc from 'fast-check';
import { classify, parseBodyInTurns } from '../../../src/a2a/classify';
import { DEFAULT_JSON_LIMITS } from '../../../src/a2a/json-shape';
import { A2A_OPTIONS } from '../../helpers/classify';
import { countedTurns } from '../../helpers/json-pieces';

const PIECE = 256 * 1024;
const headers = { 'content-type': 'application/json' };
const facts = (body: Buffer) => ({ verb: 'POST', path: '/a2a/jsonrpc', headers, body });

/** The tokens of JSON.stringify(v) (strings whole), to put whitespace between. */
function tokens(text: string): string[] {
  return text.match(/"(?:[^"\\]|\\.)*"|[[\]{},:]|[^[\]{},:"]+/g) ?? [];
}

const call = (v: unknown) => ({
  jsonrpc: '2.0',
  id: 3,
  method: 'message/send',
  params: { message: { messageId: 'm', role: 'user', parts: [{ kind: 'data', data: v }] } },
});
const space = fc.oneof(
  fc.constant(''),
  fc.array(fc.constantFrom(' ', '\n', '\r', '\t'), { maxLength: 3 }).map((a) => a.join('')),
  fc.constant(' \n'.repeat(PIECE / 2 + 7)),
);
const odd = fc.constantFrom('', '\ufeff', '\u00a0', '\v', 'x', ',', ']', '}', '\u2028', '0', '"');

describe('a large body with whitespace between any of its tokens', () => {
  it('is classified as when read whole', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.jsonValue({ maxDepth: 3 }).map(call), fc.jsonValue({ maxDepth: 2 })),
        fc.array(space, { minLength: 1, maxLength: 40 }),
        odd,
        odd,
        fc.nat(),
        async (value, spaces, before, after, where) => {
          const ts = tokens(JSON.stringify(value) ?? 'null');
          const at = where % (ts.length + 1);
          let text = '';
          ts.forEach((t, i) => (text += (i === at ? before : '') + (spaces[i % spaces.length] as string) + t));
          text += (spaces[ts.length % spaces.length] as string) + after;
          const body = Buffer.from(text);
          const parsed = await parseBodyInTurns(facts(body), DEFAULT_JSON_LIMITS, countedTurns().turn);
          expect(classify({ ...facts(body), parsed }, A2A_OPTIONS)).toEqual(classify(facts(body), A2A_OPTIONS));
        },
      ),
      { numRuns: 100 },
    );
  });
});
