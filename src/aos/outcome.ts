/**
 * What a guardian call came to: a valid AOS result, or why there is none. Produced by the guardian
 * clients (aos/guardian.ts, the embedded reference guardian), consumed by the pure enforce step.
 */
import type { SuccessResult } from './schemas';

export type GuardianFailureKind = 'connect' | 'timeout' | 'http' | 'json' | 'rpcError' | 'schema' | 'id' | 'breakerOpen' | 'internal' | 'cancelled';

/**
 * `payloadBytes`, when given: the UTF-8 of JSON.stringify(result.modifiedRequest.params.payload), as the guardian
 * made it (a large modify from the embedded guardian's worker), so it is not serialized again.
 */
export type GuardianOutcome =
  | { readonly ok: true; readonly result: SuccessResult; readonly payloadBytes?: Buffer }
  | { readonly ok: false; readonly kind: GuardianFailureKind | 'invalidModify'; readonly detail: string };

/** A payload the guardian's side could not judge (or read) within its time: denied, so FAIL_MODE=open never passes it. */
export const TOO_COMPLEX = (why: string): GuardianOutcome => ({
  ok: true,
  result: { decision: 'deny', message: `Payload content too complex to inspect (${why}).`, reasonCode: ['PAYLOAD_TOO_COMPLEX'] },
});
