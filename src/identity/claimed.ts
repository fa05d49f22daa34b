/**
 * The identity a request's credential claims, read without verifying it (bounded: the verifiers' own
 * size limits): what the key its caller's shares would be counted under once verified is made of. Used
 * only to refuse a caller already at its bound before its credential costs a signature check
 * (proxy/admit.ts `precheck`); never an identity, never charged anything.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AssertionVerifier } from './assertion';
import { bearerToken, type OidcVerifier } from './oidc';
import { ASSERTION_HEADER, type ClaimedIdentity } from './types';

export type ClaimedBy = (headers: IncomingHttpHeaders) => ClaimedIdentity | undefined;

/**
 * The claim of the credential that would win once verified (caller.ts: the assertion, then the bearer
 * token), or undefined: nothing to read unverified (no such credential, a client certificate, which
 * TLS verified already, a claim the trusted keys could not vouch for).
 */
export function claimedBy(assertions: AssertionVerifier | undefined, oidc: OidcVerifier | undefined): ClaimedBy | undefined {
  if (assertions === undefined && oidc === undefined) return undefined;
  return (headers) => {
    const assertion = headers[ASSERTION_HEADER];
    if (assertions !== undefined && typeof assertion === 'string' && assertion !== '')
      return assertion.includes(',') ? undefined : assertions.claimed(assertion.trim());
    const token = oidc === undefined ? undefined : bearerToken(headers);
    return token === undefined ? undefined : oidc?.claimed(token);
  };
}
