/** What a fairness test reads of the guardian's record: who each judged envelope was for, in the order it came. */
import net from 'node:net';
import { textIn, type Envelope } from './guardian';

export type Side = 'victim' | 'attack' | 'other';

/** Each envelope's side, by the text its payload starts with (`victim ...` / `attack ...`). */
export function sidesOf(envelopes: readonly Envelope[]): Side[] {
  return envelopes.map((e) => (textIn(e).startsWith('victim') ? 'victim' : textIn(e).startsWith('attack') ? 'attack' : 'other'));
}

/**
 * The victim's first envelope came before most of the attacker's (served between them, not after them). Options:
 * `victims`: that many victim envelopes all came before the attacker's last; `floodFirst`: at least one of the
 * attacker's came before the victim's first (the flood was being served when the victim arrived, so the order shows
 * turns shared, not a victim that came before any work of the attacker's).
 */
export function expectServedBetween(order: readonly Side[], opts: { readonly victims?: number; readonly floodFirst?: boolean } = {}): void {
  const firstVictim = order.indexOf('victim');
  const attackSeen = order.filter((o) => o === 'attack').length;
  expect(firstVictim).toBeGreaterThanOrEqual(0);
  const attackBefore = order.slice(0, firstVictim).filter((o) => o === 'attack').length;
  expect(attackBefore).toBeLessThan(attackSeen / 2);
  if (opts.floodFirst === true) expect(attackBefore).toBeGreaterThanOrEqual(1);
  if (opts.victims === undefined) return;
  expect(order.filter((o) => o === 'victim')).toHaveLength(opts.victims);
  expect(order.lastIndexOf('victim')).toBeLessThan(order.lastIndexOf('attack'));
}

/**
 * A JSON-RPC SendMessage (v1.0) with `headers` on a socket of its own, sent but for its last byte: `release()` sends
 * that byte; `answer` is the status line the caller gets.
 */
export async function heldCall(url: string, headers: Record<string, string>, text: string, id: number): Promise<{ release(): void; answer: Promise<string> }> {
  const u = new URL(url);
  const body = Buffer.from(
    JSON.stringify({ jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text }] } } }),
  );
  const head = Object.entries({
    ...headers,
    'a2a-version': '1.0',
    'content-type': 'application/json',
    'content-length': String(body.length),
    connection: 'close',
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const s = net.connect(Number(u.port), u.hostname);
  let got = '';
  s.on('data', (c: Buffer) => (got += c.toString('latin1')));
  const answer = new Promise<string>((resolve) => s.on('close', () => resolve(got.split('\r\n')[0] ?? '')));
  s.on('error', () => undefined);
  await new Promise<void>((resolve) =>
    s.write(`POST /a2a/jsonrpc HTTP/1.1\r\nhost: ${u.host}\r\n${head}\r\n`, () => s.write(body.subarray(0, -1), () => resolve())),
  );
  return { release: () => void s.write(body.subarray(-1)), answer };
}
