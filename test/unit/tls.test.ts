/**
 * TLS helpers and watched credential files, without sockets: connection-error descriptions (cause and
 * the variable to change), start-up checks of PEM material, files re-read only when they change.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { StartupError, WatchedFile } from '../../src/credentials/files';
import { describeConnectError, listenerTls, outboundTls } from '../../src/credentials/tls';
import { createPki, type Pki } from '../helpers/pki';
import { waitFor } from '../helpers/net';

const silent = pino({ level: 'silent' });
let dir: string;
let pki: Pki;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'a2a-guard-files-'));
  pki = await createPki();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await pki.close();
});

describe('describeConnectError', () => {
  const err = (code: string, message = 'boom') => Object.assign(new Error(message), { code });
  test.each([
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'GUARDIAN_CA_FILE'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'GUARDIAN_CA_FILE'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'GUARDIAN_CA_FILE'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'GUARDIAN_SERVER_NAME'],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'GUARDIAN_CERT_FILE'],
    ['CERT_HAS_EXPIRED', 'expired'],
  ])('%s names %s', (code, words) => {
    const d = describeConnectError(err(code, 'self-signed certificate'), 'GUARDIAN');
    expect(d).toMatchObject({ code, cause: 'self-signed certificate' });
    expect(d.hint).toContain(words);
  });

  test('the prefix follows the peer; fetch errors are unwrapped; a closed TLS connection hints at client certificates only over TLS', () => {
    expect(describeConnectError(err('DEPTH_ZERO_SELF_SIGNED_CERT'), 'UPSTREAM').hint).toContain('UPSTREAM_CA_FILE');
    const fetchErr = Object.assign(new TypeError('fetch failed'), { cause: err('CERT_HAS_EXPIRED', 'certificate has expired') });
    expect(describeConnectError(fetchErr, 'UPSTREAM')).toMatchObject({ code: 'CERT_HAS_EXPIRED', cause: 'certificate has expired' });
    expect(describeConnectError(err('UND_ERR_SOCKET'), 'GUARDIAN', true).hint).toContain('GUARDIAN_CERT_FILE');
    expect(describeConnectError(err('UND_ERR_SOCKET'), 'GUARDIAN', false).hint).toBeUndefined();
    expect(describeConnectError(err('ECONNREFUSED'), 'GUARDIAN', true)).toEqual({ code: 'ECONNREFUSED', cause: 'boom' });
  });
});

describe('TLS material checked at start', () => {
  test("no TLS option: undici's default connector", () => {
    expect(
      outboundTls({ caFile: undefined, certFile: undefined, keyFile: undefined, serverName: undefined }, 'UPSTREAM', 1000, silent).connect,
    ).toBeUndefined();
  });

  test('a CA file without a certificate, a key that does not match, an unreadable file: StartupError naming the variable', async () => {
    const client = await pki.issue({ cn: 'c' });
    const other = await pki.issue({ cn: 'o' });
    const t = (tls: Partial<Parameters<typeof outboundTls>[0]>) => () =>
      outboundTls({ caFile: undefined, certFile: undefined, keyFile: undefined, serverName: undefined, ...tls }, 'UPSTREAM', 1000, silent);
    expect(t({ caFile: client.keyFile })).toThrow(new StartupError('UPSTREAM_CA_FILE does not load: no PEM certificate in it'));
    expect(t({ caFile: pki.caFile, certFile: client.certFile, keyFile: other.keyFile })).toThrow(/UPSTREAM_CA_FILE\/_CERT_FILE\/_KEY_FILE do not load/);
    expect(t({ caFile: join(dir, 'missing.pem') })).toThrow(/^UPSTREAM_CA_FILE=.*missing\.pem: cannot read the file \(ENOENT\)$/);
    const ok = t({ caFile: pki.caFile, certFile: client.certFile, keyFile: client.keyFile })();
    expect(typeof ok.connect).toBe('function');
    ok.close();
    expect(() => listenerTls({ certFile: client.keyFile, keyFile: client.keyFile, clientCaFile: undefined, clientCert: 'required' }, 1000, silent)).toThrow(
      /no PEM certificate in TLS_CERT_FILE/,
    );
  });

  test('listener options: client certificates asked for only with a client CA; rejected at the handshake only when required', async () => {
    const server = await pki.issue({ cn: 's', server: true });
    const opts = (clientCaFile: string | undefined, clientCert: 'required' | 'optional') => {
      const l = listenerTls({ certFile: server.certFile, keyFile: server.keyFile, clientCaFile, clientCert }, 1000, silent);
      l?.close();
      return l?.options;
    };
    expect(opts(undefined, 'required')).toMatchObject({ requestCert: false, rejectUnauthorized: false });
    expect(opts(pki.caFile, 'required')).toMatchObject({ requestCert: true, rejectUnauthorized: true });
    expect(opts(pki.caFile, 'optional')).toMatchObject({ requestCert: true, rejectUnauthorized: false });
  });
});

describe('WatchedFile', () => {
  test('tells listeners about new content only; keeps the last good content when the file disappears (reported once)', async () => {
    const path = join(dir, 'token');
    await writeFile(path, 'one');
    const problems: string[] = [];
    const f = WatchedFile.open(path, { variable: 'GUARDIAN_TOKEN_FILE', intervalMs: 50, onProblem: (m) => problems.push(m) });
    const seen: string[] = [];
    const off = f.onChange((c) => seen.push(c.toString()));
    await f.poll();
    expect(seen).toEqual([]); // unchanged
    await writeFile(path, 'two');
    await waitFor(() => seen.length === 1, 5000, 'the change');
    expect(f.text()).toBe('two');
    await rm(path);
    await waitFor(() => problems.length === 1, 5000, 'the problem');
    await f.poll();
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^GUARDIAN_TOKEN_FILE=.*: cannot re-read the file \(ENOENT\); the last good content stays in use$/);
    expect(f.text()).toBe('two');
    off();
  });
});
