/**
 * The owner key of a caller: `source:issuer:subject` of its verified identity, or `source::subject`
 * when the subject alone names the caller (`stableSubject`: an assertion by a key bound to the
 * agent, a SPIFFE ID), so that rotating the key or the CA that vouches keeps its tasks. `:` and `%`
 * inside the issuer and the subject are percent-encoded, so no two identities share a key (issuer
 * `a:b` with subject `c` is not issuer `a` with subject `b:c`). Callers without a verified identity
 * all share one key, ANONYMOUS, which holds no `:` and so is never a verified caller's key.
 */
import type { VerifiedIdentity } from '../identity/types';

export type Owner = string;

export const ANONYMOUS: Owner = 'anonymous';

/** The fields of a verified identity that make its owner key. */
export type OwnerIdentity = Pick<VerifiedIdentity, 'source' | 'subject' | 'issuer' | 'stableSubject'>;

const escape = (s: string): string => s.replace(/%/g, '%25').replace(/:/g, '%3A');

export function ownerKey(identity: OwnerIdentity | undefined): Owner {
  if (identity === undefined) return ANONYMOUS;
  const issuer = identity.stableSubject === true ? '' : (identity.issuer ?? '');
  return `${identity.source}:${escape(issuer)}:${escape(identity.subject)}`;
}
