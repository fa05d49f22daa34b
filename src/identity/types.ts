/**
 * The verified caller of one call: the small typed value the pipeline carries per call (and what
 * task ownership builds on). Nothing in here is a claim: every field was checked cryptographically
 * (assertion signature, client certificate chain, bearer token signature) or is this proxy's own
 * configuration (`local`).
 */

/**
 * - `assertion`: a sidecar's signed identity assertion (X-AOS-Agent-Assertion)
 * - `mtls`: the client certificate of a mutual-TLS connection
 * - `oidc`: an OAuth2/OIDC bearer token
 * - `local`: ROLE=client/both: the caller is this proxy's own observed agent (OBSERVED_AGENT_*)
 */
export type IdentitySource = 'assertion' | 'mtls' | 'oidc' | 'local';

/** The AOS agent fields of a caller (spec 3.1 `Agent`: id, name, url, version). */
export interface AgentFields {
  readonly id: string;
  readonly name: string;
  readonly url: string;
  readonly version: string;
}

export interface VerifiedIdentity {
  readonly source: IdentitySource;
  /** The stable principal: the assertion's agent id, the certificate's SPIFFE ID or CN, the token's `sub`. */
  readonly subject: string;
  /** Who vouched: the token's `iss` (oidc), the signing key's `kid` (assertion), the client CA's subject (mtls). */
  readonly issuer?: string;
  /**
   * The subject names the caller whoever vouched for it this time, so it alone is the caller's task
   * owner: an assertion by a key the trust set binds to the agent (the agent keeps its tasks across a
   * key rotation), a SPIFFE ID (it carries its trust domain; the issuing CA rotates). Otherwise the
   * subject is only unique per issuer, and the owner includes it.
   */
  readonly stableSubject?: true;
  readonly agent: AgentFields;
}

/** The fields of an identity a credential claims, read unverified: what its owner key is made of (ownership/principal.ts). */
export type ClaimedIdentity = Pick<VerifiedIdentity, 'source' | 'subject' | 'issuer' | 'stableSubject'>;

/** The three credential kinds a caller can present, as named in refusals. */
export type CredentialKind = 'assertion' | 'client certificate' | 'bearer token';

/**
 * One presented credential, checked. `spend`: a credential good for one use (an assertion) is used
 * up only when its request routes somewhere (proxy/http/pipeline.ts): resolves with a problem when it
 * was used already, else undefined.
 */
export type CredentialCheck =
  | { readonly ok: true; readonly identity: VerifiedIdentity; readonly spend?: () => Promise<string | undefined> }
  | { readonly ok: false; readonly credential: CredentialKind; readonly problem: string };

/** The header a ROLE=client/both proxy sends its signed assertion in (removed before any agent sees it). */
export const ASSERTION_HEADER = 'x-aos-agent-assertion';

export const UNKNOWN_FIELD = 'unknown';
export { fieldValue, MAX_FIELD_LENGTH } from '../core/json';
