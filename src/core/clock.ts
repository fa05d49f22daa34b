/**
 * Milliseconds on a clock that only moves forward, for deadlines, back-offs and cache ages.
 * Date.now() follows the wall clock, which steps (NTP, a resumed VM): measured across a step back,
 * a two-second breaker cooldown or a card TTL lasts as long as the step. Wall time is only for
 * what a person reads (log lines, timestamps) and what other parties check (token expiry).
 * Whole milliseconds, as Date.now() gives (timer APIs such as AbortSignal.timeout refuse fractions),
 * counted from near 0 when the process starts: "never" is -Infinity, not 0.
 */
export function monotonicMs(): number {
  return Math.floor(performance.now());
}
