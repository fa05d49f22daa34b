/** What a fairness test reads of the guardian's record: who each judged envelope was for, in the order it came. */
import { textIn, type Envelope } from './guardian';

export type Side = 'victim' | 'attack' | 'other';

/** Each envelope's side, by the text its payload starts with (`victim ...` / `attack ...`). */
export function sidesOf(envelopes: readonly Envelope[]): Side[] {
  return envelopes.map((e) => (textIn(e).startsWith('victim') ? 'victim' : textIn(e).startsWith('attack') ? 'attack' : 'other'));
}

/**
 * The victim's first envelope came before most of the attacker's (served between them, not after them);
 * with `victims`, that many victim envelopes all came before the attacker's last.
 */
export function expectServedBetween(order: readonly Side[], victims?: number): void {
  const firstVictim = order.indexOf('victim');
  const attackSeen = order.filter((o) => o === 'attack').length;
  expect(firstVictim).toBeGreaterThanOrEqual(0);
  expect(order.slice(0, firstVictim).filter((o) => o === 'attack').length).toBeLessThan(attackSeen / 2);
  if (victims === undefined) return;
  expect(order.filter((o) => o === 'victim')).toHaveLength(victims);
  expect(order.lastIndexOf('victim')).toBeLessThan(order.lastIndexOf('attack'));
}
