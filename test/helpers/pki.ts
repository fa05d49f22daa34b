/**
 * Real X.509 certificates for tests, made in-process (@peculiar/x509 over WebCrypto, EC P-256):
 * a CA, server certificates for 127.0.0.1 / localhost, client certificates with or without a SPIFFE
 * URI SAN, each written as PEM files into a temporary directory (removed by `close()`).
 *
 *   const pki = await createPki();
 *   const server = await pki.issue({ cn: 'proxy', server: true });
 *   const client = await pki.issue({ cn: 'cooking', spiffe: 'spiffe://demo.test/agent/cooking' });
 *   ... TLS_CERT_FILE: server.certFile, TLS_CLIENT_CA_FILE: pki.caFile ...
 *   await pki.close();
 */
import 'reflect-metadata';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as never);
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface Issued {
  readonly cert: string;
  readonly key: string;
  readonly certFile: string;
  readonly keyFile: string;
}

export interface IssueOptions {
  readonly cn?: string;
  /** A URI SAN spiffe://... (the SPIFFE ID). */
  readonly spiffe?: string;
  /** More URI SANs. */
  readonly uris?: readonly string[];
  /** DNS names (a server certificate gets localhost and 127.0.0.1 unless `dns` is given). */
  readonly dns?: readonly string[];
  /** Server certificate for 127.0.0.1 and localhost (serverAuth); default: client certificate (clientAuth). */
  readonly server?: boolean;
  /** Valid from / until (default: a minute ago / in a day). */
  readonly notBefore?: Date;
  readonly notAfter?: Date;
  /** File name stem (default: a counter). */
  readonly name?: string;
}

export interface Pki {
  readonly dir: string;
  readonly caCert: string;
  readonly caFile: string;
  issue(opts: IssueOptions): Promise<Issued>;
  /** A second, unrelated CA in the same directory (for "untrusted" certificates). */
  otherCa(): Promise<Pki>;
  close(): Promise<void>;
}

function pem(tag: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n');
  return `-----BEGIN ${tag}-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END ${tag}-----\n`;
}

let serial = 1;
const nextSerial = (): string => (serial++).toString(16).padStart(4, '0');

async function makeCa(dir: string, label: string): Promise<{ cert: x509.X509Certificate; keys: CryptoKeyPair; file: string; pem: string }> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: nextSerial(),
    name: `CN=${label}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const text = cert.toString('pem') + '\n';
  const file = join(dir, `${label.replace(/\W+/g, '-')}.ca.pem`);
  await writeFile(file, text);
  return { cert, keys, file, pem: text };
}

async function pkiIn(dir: string, label: string, owner: boolean): Promise<Pki> {
  const ca = await makeCa(dir, label);
  let n = 0;
  const pki: Pki = {
    dir,
    caCert: ca.pem,
    caFile: ca.file,
    async issue(opts) {
      const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
      const san: x509.JsonGeneralName[] = [];
      if (opts.dns !== undefined) for (const d of opts.dns) san.push({ type: 'dns', value: d });
      else if (opts.server === true) san.push({ type: 'dns', value: 'localhost' }, { type: 'ip', value: '127.0.0.1' });
      if (opts.spiffe !== undefined) san.push({ type: 'url', value: opts.spiffe });
      for (const u of opts.uris ?? []) san.push({ type: 'url', value: u });
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: nextSerial(),
        subject: opts.cn === undefined ? '' : `CN=${opts.cn}`,
        issuer: ca.cert.subject,
        notBefore: opts.notBefore ?? new Date(Date.now() - 60_000),
        notAfter: opts.notAfter ?? new Date(Date.now() + 86_400_000),
        signingAlgorithm: ALG,
        publicKey: keys.publicKey,
        signingKey: ca.keys.privateKey,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
          new x509.ExtendedKeyUsageExtension([opts.server === true ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth]),
          ...(san.length > 0 ? [new x509.SubjectAlternativeNameExtension(san, opts.cn === undefined)] : []),
          await x509.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
        ],
      });
      const stem = join(dir, opts.name ?? `${label.replace(/\W+/g, '-')}-${++n}`);
      const certPem = cert.toString('pem') + '\n';
      const keyPem = pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
      await writeFile(`${stem}.cert.pem`, certPem);
      await writeFile(`${stem}.key.pem`, keyPem, { mode: 0o600 });
      return { cert: certPem, key: keyPem, certFile: `${stem}.cert.pem`, keyFile: `${stem}.key.pem` };
    },
    otherCa: () => pkiIn(dir, `${label} other ${n++}`, false),
    close: async () => {
      if (owner) await rm(dir, { recursive: true, force: true });
    },
  };
  return pki;
}

export async function createPki(label = 'a2a-guard test CA'): Promise<Pki> {
  const dir = await mkdtemp(join(tmpdir(), 'a2a-guard-pki-'));
  return pkiIn(dir, label, true);
}
