/**
 * A large body read a piece per turn (parseBodyInTurns) is classified as the same body read whole, and JSON
 * whitespace around its value (a small gzip bomb decodes to megabytes of spaces) never goes to one task.
 */
import { classify, parseBodyInTurns } from '../../../src/a2a/classify';
import { DEFAULT_JSON_LIMITS } from '../../../src/a2a/json-shape';
import { withoutJsonSpace } from '../../../src/core/json-pieces';
import { A2A_OPTIONS } from '../../helpers/classify';
import { countedTurns } from '../../helpers/json-pieces';

const SPACES = ' \n\r\t'.repeat(600_000);
const send = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'message/send', params: { message: { messageId: 'm', role: 'user', parts: [] } } });

describe('a large body with JSON whitespace around its value', () => {
  const headers = { 'content-type': 'application/json' };
  const facts = (body: Buffer) => ({ verb: 'POST', path: '/a2a/jsonrpc', headers, body });

  it.each([
    ['only spaces', SPACES],
    ['a call between spaces', `${SPACES}${send}${SPACES}`],
    ['a number between spaces', `${SPACES}1${SPACES}`],
    ['a string between spaces', `${SPACES}"method"${SPACES}`],
    ['a word that is not JSON between spaces', `${SPACES}jsonrpc method:${SPACES}`],
    ['spaces, then text after the call', `${SPACES}${send} x`],
  ])('%s: classified as when read whole, its spaces skipped a piece per turn', async (_name, text) => {
    const body = Buffer.from(text);
    const turns = countedTurns();
    const parsed = await parseBodyInTurns(facts(body), DEFAULT_JSON_LIMITS, turns.turn);
    expect(classify({ ...facts(body), parsed }, A2A_OPTIONS)).toEqual(classify(facts(body), A2A_OPTIONS));
    // A turn at least every 256 KiB of spaces (the shape scan alone takes one per MiB).
    expect(turns.count).toBeGreaterThanOrEqual(Math.floor(body.length / (256 * 1024)));
  });

  it('a byte-order mark, then spaces: classified as when read whole', async () => {
    const body = Buffer.from(`\ufeff${SPACES}${send}`);
    const parsed = await parseBodyInTurns(facts(body), DEFAULT_JSON_LIMITS, countedTurns().turn);
    expect(classify({ ...facts(body), parsed }, A2A_OPTIONS)).toEqual(classify(facts(body), A2A_OPTIONS));
  });

  it('withoutJsonSpace finds the value between JSON whitespace only (a byte-order mark, U+00A0, \\v and \\f are not JSON whitespace)', async () => {
    const turns = countedTurns();
    const bounds = async (s: string) => withoutJsonSpace(Buffer.from(s), turns.turn, 4);
    expect(await bounds('')).toEqual([0, 0]);
    expect(await bounds(' \t\r\n')).toEqual([4, 4]);
    expect(await bounds('  1 \n')).toEqual([2, 3]);
    for (const odd of ['\ufeff', '\u00a0', '\v', '\f']) {
      const b = Buffer.from(` ${odd} `);
      expect(await bounds(` ${odd} `)).toEqual([1, b.length - 1]);
    }
    await bounds(' '.repeat(40));
    expect(turns.count).toBeGreaterThanOrEqual(10);
  });
});
