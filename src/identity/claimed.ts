/**
 * The owner a request's credential claims, read without verifying it (bounded: the verifiers' own
 * size limits): the key its caller's shares would be counted under once verified. Used only to refuse
 * a caller already at its bound before its credential costs a signature check (proxy/admit.ts
 * `precheck`); never an identity, never charged anything.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ownerKey, type Owner } from '../ownership/principal';
import type { AssertionVerifier } from './assertion';
import { bearerToken, type OidcVerifier } from './oidc';
import { ASSERTION_HEADER } from './types';

export type ClaimedOwner = (headers: IncomingHttpHeaders) => Owner | undefined;

/**
 * The claim of the credential that would win once verified (caller.ts: the assertion, then the bearer
 * token), or undefined: nothing to read unverified (no such credential, a client certificate, which
 * TLS verified already, a claim the trusted keys could not vouch for).
 */
export function claimedOwnerOf(assertions: AssertionVerifier | undefined, oidc: OidcVerifier | undefined): ClaimedOwner | undefined {
  if (assertions === undefined && oidc === undefined) return undefined;
  return (headers) => {
    const assertion = headers[ASSERTION_HEADER];
    if (assertions !== undefined && typeof assertion === 'string' && assertion !== '') {
      const id = assertion.includes(',') ? undefined : assertions.claimed(assertion.trim());
      return id === undefined ? undefined : ownerKey(id);
    }
    const token = oidc === undefined ? undefined : bearerToken(headers);
    const id = token === undefined ? undefined : oidc?.claimed(token);
    return id === undefined ? undefined : ownerKey(id);
  };
}
