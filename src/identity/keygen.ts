/**
 * `node dist/src/identity/keygen.js DIR [KID] [ES256|EdDSA]`: a new assertion signing key for a
 * ROLE=client/both sidecar and the JWKS its ROLE=server peers trust.
 *
 *   DIR/<KID>.signing.jwk.json   private JWK (kid, alg inside): ASSERTION_SIGNING_KEY_FILE; mode 0600
 *   DIR/<KID>.public.jwks.json   {"keys": [public JWK]}: merge into ASSERTION_TRUST_JWKS_FILE
 *
 * For a rotation, add the new public key to the trust set first, then give the signer the new key,
 * then remove the old public key (README "Key rotation").
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jose } from './jose';

export async function generateAssertionKey(kid: string, alg: 'ES256' | 'EdDSA' = 'ES256'): Promise<{ privateJwk: object; publicJwks: { keys: object[] } }> {
  const j = jose();
  const { privateKey, publicKey } = await j.generateKeyPair(alg, { extractable: true });
  const privateJwk = { ...(await j.exportJWK(privateKey)), kid, alg };
  const publicJwk = { ...(await j.exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { privateJwk, publicJwks: { keys: [publicJwk] } };
}

async function main(argv: string[]): Promise<void> {
  const [dir, kidArg, algArg] = argv;
  if (dir === undefined || (algArg !== undefined && algArg !== 'ES256' && algArg !== 'EdDSA')) {
    process.stderr.write('usage: node dist/src/identity/keygen.js DIR [KID] [ES256|EdDSA]\n');
    process.exit(2);
  }
  const kid = kidArg ?? `key-${new Date().toISOString().slice(0, 10)}`;
  const { privateJwk, publicJwks } = await generateAssertionKey(kid, algArg === 'EdDSA' ? 'EdDSA' : 'ES256');
  mkdirSync(dir, { recursive: true });
  const signing = join(dir, `${kid}.signing.jwk.json`);
  const trust = join(dir, `${kid}.public.jwks.json`);
  writeFileSync(signing, `${JSON.stringify(privateJwk)}\n`, { mode: 0o600 });
  writeFileSync(trust, `${JSON.stringify(publicJwks, null, 2)}\n`);
  process.stdout.write(`signing key (ASSERTION_SIGNING_KEY_FILE): ${signing}\ntrusted keys (ASSERTION_TRUST_JWKS_FILE): ${trust}\n`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`keygen: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
