/**
 * TLS in and out: the proxy's own listener (certificate, key, client CA for mutual TLS) and the
 * connections to the guardian and the upstream agent (CA bundle, client certificate, server name).
 * Every file is re-read when it changes (cert-manager renewals, Kubernetes Secrets): the listener
 * takes new contexts with setSecureContext, outbound pools get a new connector for new connections.
 */
import type { Server as HttpsServer, ServerOptions } from 'node:https';
import type { SecureContext, SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import type { buildConnector } from 'undici';
import { leanBuildConnector } from '../net/undici-pool';
import type { OutboundTls, TlsConfig } from '../config/config';
import { StartupError, WatchedFile } from './files';

/** What undici's Pool accepts as `connect`. */
export type Connector = buildConnector.connector;

export interface OutboundTlsHandle {
  /** undefined when no TLS option is set: undici's default connector (system CAs) is used. */
  readonly connect: Connector | undefined;
  close(): void;
}

interface Material {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

/**
 * A connector for one outbound peer. `prefix` names the variables (GUARDIAN or UPSTREAM) in messages.
 * New connections use the files' current content; open connections keep theirs until they close.
 */
export function outboundTls(tls: OutboundTls, prefix: 'GUARDIAN' | 'UPSTREAM', refreshMs: number, logger: Logger): OutboundTlsHandle {
  if (tls.caFile === undefined && tls.certFile === undefined && tls.serverName === undefined) return { connect: undefined, close: () => undefined };
  const onProblem = (m: string) => logger.warn(m);
  const files = {
    ca: tls.caFile === undefined ? undefined : WatchedFile.open(tls.caFile, { variable: `${prefix}_CA_FILE`, intervalMs: refreshMs, onProblem }),
    cert: tls.certFile === undefined ? undefined : WatchedFile.open(tls.certFile, { variable: `${prefix}_CERT_FILE`, intervalMs: refreshMs, onProblem }),
    key: tls.keyFile === undefined ? undefined : WatchedFile.open(tls.keyFile, { variable: `${prefix}_KEY_FILE`, intervalMs: refreshMs, onProblem }),
  };
  const material = (): Material => ({
    ...(files.ca === undefined ? {} : { ca: files.ca.current() }),
    ...(files.cert === undefined ? {} : { cert: files.cert.current() }),
    ...(files.key === undefined ? {} : { key: files.key.current() }),
  });
  const build = (m: Material): Connector =>
    leanBuildConnector({ ...m, rejectUnauthorized: true, ...(tls.serverName === undefined ? {} : { servername: tls.serverName }) });
  let current: Connector;
  try {
    checkMaterial(material(), prefix);
    current = build(material());
  } catch (err) {
    throw err instanceof StartupError ? err : new StartupError(`${prefix}_CA_FILE/_CERT_FILE/_KEY_FILE: ${(err as Error).message}`);
  }
  const reload = () => {
    try {
      checkMaterial(material(), prefix);
      current = build(material());
      logger.info({ peer: prefix.toLowerCase() }, 'outbound TLS files changed: new connections use them');
    } catch (err) {
      // A half-written rotation (new certificate, old key): keep the last good connector until the next change.
      logger.warn({ peer: prefix.toLowerCase(), problem: (err as Error).message }, 'outbound TLS files changed but do not load; the previous ones stay in use');
    }
  };
  const offs = Object.values(files)
    .filter((f): f is WatchedFile => f !== undefined)
    .map((f) => f.onChange(reload));
  // The configured server name wins over the one undici derives from the Host header.
  const connect: Connector = (opts, cb) => current(tls.serverName === undefined ? opts : { ...opts, servername: tls.serverName }, cb);
  return { connect, close: () => offs.forEach((off) => off()) };
}

/** node:tls (with node:https, ~6 ms of start-up) is loaded only where TLS is configured. */
function createSecureContext(options: SecureContextOptions): SecureContext {
  return (require('node:tls') as typeof import('node:tls')).createSecureContext(options);
}

/** Parse the PEM material once, so a bad file is reported at start (or at reload) and not per connection. */
function checkMaterial(m: Material, prefix: string): void {
  // OpenSSL skips PEM blocks that are not certificates: a key given as the CA would silently trust nothing.
  if (m.ca !== undefined && !hasCertificate(m.ca)) throw new StartupError(`${prefix}_CA_FILE does not load: no PEM certificate in it`);
  if (m.cert !== undefined && !hasCertificate(m.cert)) throw new StartupError(`${prefix}_CERT_FILE does not load: no PEM certificate in it`);
  try {
    createSecureContext({ ...m });
  } catch (err) {
    throw new StartupError(`${prefix}_CA_FILE/_CERT_FILE/_KEY_FILE do not load: ${(err as Error).message}`);
  }
}

function hasCertificate(pem: Buffer): boolean {
  return pem.includes('-----BEGIN CERTIFICATE-----');
}

export interface ListenerTls {
  readonly options: ServerOptions;
  /** Re-read the files when they change and hand new contexts to the server. */
  watch(server: HttpsServer, logger: Logger): void;
  close(): void;
}

/** TLS options of the proxy's listener, or undefined for plain HTTP. */
export function listenerTls(tls: TlsConfig['listener'], refreshMs: number, logger: Logger): ListenerTls | undefined {
  if (tls === undefined) return undefined;
  const onProblem = (m: string) => logger.warn(m);
  const cert = WatchedFile.open(tls.certFile, { variable: 'TLS_CERT_FILE', intervalMs: refreshMs, onProblem });
  const key = WatchedFile.open(tls.keyFile, { variable: 'TLS_KEY_FILE', intervalMs: refreshMs, onProblem });
  const ca =
    tls.clientCaFile === undefined ? undefined : WatchedFile.open(tls.clientCaFile, { variable: 'TLS_CLIENT_CA_FILE', intervalMs: refreshMs, onProblem });
  const context = () => ({ cert: cert.current(), key: key.current(), ...(ca === undefined ? {} : { ca: ca.current() }) });
  try {
    if (!hasCertificate(cert.current())) throw new Error('no PEM certificate in TLS_CERT_FILE');
    if (ca !== undefined && !hasCertificate(ca.current())) throw new Error('no PEM certificate in TLS_CLIENT_CA_FILE');
    createSecureContext(context());
  } catch (err) {
    throw new StartupError(`TLS_CERT_FILE/TLS_KEY_FILE/TLS_CLIENT_CA_FILE do not load: ${(err as Error).message}`);
  }
  const offs: Array<() => void> = [];
  return {
    options: {
      ...context(),
      // Client certificates: asked for when a client CA is set. With TLS_CLIENT_CERT=optional a caller
      // without one (or with one the CA did not sign) still connects; the identity stage then refuses
      // a bad certificate and treats a missing one as "no identity".
      requestCert: ca !== undefined,
      rejectUnauthorized: ca !== undefined && tls.clientCert === 'required',
    },
    watch(server, log) {
      const reload = () => {
        try {
          server.setSecureContext(context());
          log.info('listener TLS files changed: new connections use them');
        } catch (err) {
          log.warn({ problem: (err as Error).message }, 'listener TLS files changed but do not load; the previous ones stay in use');
        }
      };
      for (const f of [cert, key, ca]) if (f !== undefined) offs.push(f.onChange(reload));
    },
    close: () => offs.forEach((off) => off()),
  };
}

const CLOSED_OVER_TLS =
  'the server closed the TLS connection: if it requires a client certificate, set {P}_CERT_FILE and {P}_KEY_FILE (and check it trusts their CA)';

const HINTS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the certificate is self-signed: give it (or its CA) in {P}_CA_FILE',
  SELF_SIGNED_CERT_IN_CHAIN: 'the chain ends in a CA this proxy does not trust: give that CA in {P}_CA_FILE',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the certificate's issuer is not trusted: give the CA in {P}_CA_FILE",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "the certificate's issuer is not trusted: give the CA in {P}_CA_FILE",
  UNABLE_TO_GET_ISSUER_CERT: "the certificate's issuer is not trusted: give the CA in {P}_CA_FILE",
  CERT_HAS_EXPIRED: 'the certificate has expired',
  CERT_NOT_YET_VALID: 'the certificate is not valid yet (clock skew?)',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the certificate does not name this host: fix the URL or set {P}_SERVER_NAME',
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: 'the server requires a client certificate: set {P}_CERT_FILE and {P}_KEY_FILE',
  ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE: "the server refused this proxy's client certificate",
  ERR_SSL_TLSV1_ALERT_UNKNOWN_CA: "the server does not trust the CA of this proxy's client certificate",
  ERR_SSL_WRONG_VERSION_NUMBER: 'the server does not speak TLS on this port (http:// instead of https://?)',
  ERR_SSL_PACKET_LENGTH_TOO_LONG: 'the server does not speak TLS on this port (http:// instead of https://?)',
};

/**
 * A connection failure's code, message and, for TLS problems, what to change. `prefix` names the
 * variables; `tls` says the peer is https (a TLS 1.3 server refuses a missing client certificate after
 * the handshake, which reaches undici as a closed socket).
 */
export function describeConnectError(err: unknown, prefix: 'GUARDIAN' | 'UPSTREAM', tls = false): { code: string; cause: string; hint?: string } {
  const e = (err ?? {}) as NodeJS.ErrnoException & { cause?: unknown };
  // fetch wraps the socket error in `cause`.
  const inner = e.code === undefined && typeof e.cause === 'object' && e.cause !== null ? (e.cause as NodeJS.ErrnoException) : e;
  const code = inner.code ?? 'error';
  const closed = tls && (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET') ? CLOSED_OVER_TLS : undefined;
  const hint = (HINTS[code] ?? closed)?.replace(/\{P\}/g, prefix);
  return { code, cause: String(inner.message ?? e.message ?? err), ...(hint === undefined ? {} : { hint }) };
}
