/**
 * `node dist/src/identity/keygen.js DIR [KID] [ES256|EdDSA] [AGENT_ID...]`: a new assertion signing
 * key for a ROLE=client/both sidecar and the JWKS its ROLE=server peers trust.
 *
 *   DIR/<KID>.signing.jwk.json   private JWK (kid, alg inside): ASSERTION_SIGNING_KEY_FILE; mode 0600
 *   DIR/<KID>.public.jwks.json   {"keys": [public JWK]}: merge into ASSERTION_TRUST_JWKS_FILE; with
 *                                AGENT_IDs the key is bound to them ("agents"): it asserts only those
 *                                agents, and they keep their tasks when the key rotates
 *
 * For a rotation, add the new public key to the trust set first, then give the signer the new key,
 * then remove the old public key (README "Key rotation").
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jose } from './jose';
import { AGENTS_MEMBER } from './keys';
import { fieldValue } from './types';

export async function generateAssertionKey(
  kid: string,
  alg: 'ES256' | 'EdDSA' = 'ES256',
  agents: readonly string[] = [],
): Promise<{ privateJwk: object; publicJwks: { keys: object[] } }> {
  const j = jose();
  const { privateKey, publicKey } = await j.generateKeyPair(alg, { extractable: true });
  const privateJwk = { ...(await j.exportJWK(privateKey)), kid, alg };
  const publicJwk = { ...(await j.exportJWK(publicKey)), kid, alg, use: 'sig', ...(agents.length === 0 ? {} : { [AGENTS_MEMBER]: [...agents] }) };
  return { privateJwk, publicJwks: { keys: [publicJwk] } };
}

async function main(argv: string[]): Promise<void> {
  const [dir, kidArg, algArg, ...agents] = argv;
  if (dir === undefined || (algArg !== undefined && algArg !== 'ES256' && algArg !== 'EdDSA') || agents.some((a) => fieldValue(a) === undefined)) {
    process.stderr.write('usage: node dist/src/identity/keygen.js DIR [KID] [ES256|EdDSA] [AGENT_ID...]\n');
    process.exit(2);
  }
  const kid = kidArg ?? `key-${new Date().toISOString().slice(0, 10)}`;
  const { privateJwk, publicJwks } = await generateAssertionKey(kid, algArg === 'EdDSA' ? 'EdDSA' : 'ES256', agents);
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
