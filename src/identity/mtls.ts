/**
 * Caller identity from a mutual-TLS client certificate: the SPIFFE ID (the one `spiffe://` URI SAN
 * of an X.509-SVID), else the subject CN. Worked out once per connection, not per request.
 */
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { type CredentialCheck, fieldValue, UNKNOWN_FIELD } from './types';

/** SPIFFE ID (SPIFFE-ID spec 2): lower-case trust domain, path segments of [A-Za-z0-9._-], no dot segments. */
const SPIFFE_ID = /^spiffe:\/\/[a-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

export function isSpiffeId(s: string): boolean {
  return s.length <= 2048 && SPIFFE_ID.test(s) && !/\/\.{1,2}(\/|$)/.test(s);
}

/**
 * Node's `subjectaltname` text: `DNS:a, URI:spiffe://td/x, IP Address:127.0.0.1`. Values with
 * commas or quotes come JSON-quoted (`URI:"a, b"`); they are read as JSON strings, never split.
 */
export function parseSubjectAltName(text: string | undefined): Array<{ type: string; value: string }> {
  const out: Array<{ type: string; value: string }> = [];
  if (text === undefined || text === '') return out;
  let i = 0;
  while (i < text.length) {
    const colon = text.indexOf(':', i);
    if (colon < 0) break;
    const type = text.slice(i, colon).trim();
    let value: string;
    let next: number;
    if (text[colon + 1] === '"') {
      // A JSON string literal: find its closing quote, honouring escapes.
      let j = colon + 2;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      try {
        value = JSON.parse(text.slice(colon + 1, j + 1)) as string;
      } catch {
        value = '';
      }
      next = text.indexOf(',', j + 1);
    } else {
      next = text.indexOf(',', colon + 1);
      value = text.slice(colon + 1, next < 0 ? undefined : next);
    }
    out.push({ type, value });
    if (next < 0) break;
    i = next + 1;
  }
  return out;
}

export interface PeerCertificateView {
  /** Subject fields as node's getPeerCertificate() gives them (a repeated field is an array). */
  readonly subject?: Readonly<Record<string, string | string[]>>;
  readonly subjectaltname?: string;
  readonly issuer?: Readonly<Record<string, string | string[]>>;
}

/** The identity a verified client certificate states. */
export function identityFromCertificate(cert: PeerCertificateView): CredentialCheck {
  const fail = (problem: string): CredentialCheck => ({ ok: false, credential: 'client certificate', problem });
  const uris = parseSubjectAltName(cert.subjectaltname)
    .filter((e) => e.type === 'URI')
    .map((e) => e.value);
  const spiffe = uris.filter((u) => u.toLowerCase().startsWith('spiffe:'));
  if (spiffe.length > 1) return fail('has more than one SPIFFE ID');
  const cnRaw = cert.subject?.['CN'];
  if (Array.isArray(cnRaw)) return fail('has more than one subject CN');
  const cn = fieldValue(cnRaw);
  const issuer = issuerName(cert.issuer);
  const id = spiffe[0];
  if (id !== undefined) {
    if (!isSpiffeId(id)) return fail('has a malformed SPIFFE ID');
    // A SPIFFE ID names its trust domain itself: the caller stays the same owner when the issuing CA rotates.
    return {
      ok: true,
      identity: {
        source: 'mtls',
        subject: id,
        ...(issuer === undefined ? {} : { issuer }),
        stableSubject: true,
        agent: { id, name: cn ?? id, url: UNKNOWN_FIELD, version: UNKNOWN_FIELD },
      },
    };
  }
  if (cn === undefined) return fail('has neither a SPIFFE ID nor a subject CN');
  // Shown to the guardian, a CN spelled as a SPIFFE ID is that ID: only a SAN may state one.
  if (/^\s*spiffe:/i.test(cn)) return fail('has a subject CN spelled as a SPIFFE ID, and no SPIFFE ID');
  // A CN names a caller only within its CA: without an issuer name, CNs of every CA would share one namespace.
  if (issuer === undefined) return fail('has an issuer with no name');
  return { ok: true, identity: { source: 'mtls', subject: cn, issuer, agent: { id: cn, name: cn, url: UNKNOWN_FIELD, version: UNKNOWN_FIELD } } };
}

/**
 * The issuing CA's name: its CN, or, for a CA whose subject has no single CN (SPIRE's is `C=US, O=SPIFFE`),
 * its whole distinguished name (`C=US, O=SPIFFE`). Undefined when it has no fields.
 */
function issuerName(dn: PeerCertificateView['issuer']): string | undefined {
  if (dn === undefined) return undefined;
  const cn = dn['CN'];
  if (typeof cn === 'string' && cn !== '') return cn;
  const parts = Object.entries(dn).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : v}`);
  return parts.length === 0 ? undefined : parts.join(', ');
}

const perSocket = new WeakMap<Socket, CredentialCheck | null>();

/**
 * The client certificate of a TLS connection, checked: undefined without TLS or without a
 * certificate; a failure when the certificate did not verify against TLS_CLIENT_CA_FILE (possible
 * with TLS_CLIENT_CERT=optional) or names no usable identity.
 */
export function tlsPeerIdentity(socket: Socket): CredentialCheck | undefined {
  if (!('encrypted' in socket)) return undefined;
  const cached = perSocket.get(socket);
  if (cached !== undefined) return cached ?? undefined;
  const tls = socket as TLSSocket;
  const cert = tls.getPeerCertificate();
  let check: CredentialCheck | null;
  if (cert === null || Object.keys(cert).length === 0) check = null;
  else if (!tls.authorized)
    check = { ok: false, credential: 'client certificate', problem: `is not trusted (${String(tls.authorizationError ?? 'unverified')})` };
  else check = identityFromCertificate(cert as unknown as PeerCertificateView);
  perSocket.set(socket, check);
  return check ?? undefined;
}
