/**
 * Signing keys and JWKS files for identity tests, made with `jose` (real keys, real signatures):
 * a sidecar's assertion key as a private JWK file, trust sets as JWKS files, and a stand-in OIDC
 * issuer that serves its JWKS (and discovery document) over HTTP on 127.0.0.1.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { jose, type JWK } from '../../src/identity/jose';
import { closeServer, listen } from './net';

export interface TestKey {
  readonly kid: string;
  readonly alg: 'ES256' | 'EdDSA';
  readonly privateJwk: JWK;
  readonly publicJwk: JWK;
  readonly privateKey: Awaited<ReturnType<ReturnType<typeof jose>['importJWK']>>;
}

export async function makeKey(kid: string, alg: 'ES256' | 'EdDSA' = 'ES256'): Promise<TestKey> {
  const j = jose();
  const { privateKey, publicKey } = await j.generateKeyPair(alg, { extractable: true });
  const privateJwk = { ...(await j.exportJWK(privateKey)), kid, alg };
  const publicJwk = { ...(await j.exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateJwk, publicJwk, privateKey };
}

/** `key` with its trusted (public) JWK bound to these agent ids (`"agents"`): it may assert only them. */
export function bindTo(key: TestKey, ...agentIds: string[]): TestKey {
  return { ...key, publicJwk: { ...key.publicJwk, agents: agentIds } as JWK };
}

/** Write `key`'s private JWK (ASSERTION_SIGNING_KEY_FILE) into `dir`; returns the path. */
export async function writeSigningKey(dir: string, key: TestKey, name = `${key.kid}.jwk.json`): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, JSON.stringify(key.privateJwk), { mode: 0o600 });
  return file;
}

/** Write a JWKS of the public halves of `keys`; returns the path. */
export async function writeJwks(dir: string, keys: readonly TestKey[], name = 'trust.jwks.json'): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, JSON.stringify({ keys: keys.map((k) => k.publicJwk) }));
  return file;
}

export interface AssertionClaims {
  agent?: unknown;
  sub?: string;
  aud?: string | string[];
  iat?: number;
  exp?: number;
  jti?: string;
  typ?: string;
  kid?: string;
}

/** A hand-made assertion (for forged, expired, re-targeted and replayed cases). */
export async function signAssertion(
  key: TestKey,
  agent: { id: string; name: string; url: string; version: string },
  audience: string,
  over: AssertionClaims = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: Record<string, unknown> = {
    agent: 'agent' in over ? over.agent : agent,
    sub: over.sub ?? agent.id,
    aud: over.aud ?? audience,
    iat: over.iat ?? now,
    exp: over.exp ?? now + 30,
    jti: over.jti ?? randomUUID(),
  };
  return new (jose().SignJWT)(payload).setProtectedHeader({ alg: key.alg, kid: over.kid ?? key.kid, typ: over.typ ?? 'aos-agent+jwt' }).sign(key.privateKey);
}

/** An unsigned JWT (`alg: none`): header.payload. with an empty signature. */
export function unsignedJwt(payload: Record<string, unknown>, typ = 'JWT'): string {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b64({ alg: 'none', typ })}.${b64(payload)}.`;
}

export interface Issuer {
  /** http://127.0.0.1:<port> — also the `iss` of its tokens. */
  readonly url: string;
  readonly jwksUrl: string;
  /** Keys served in the JWKS now (mutable: rotate by replacing). */
  keys: TestKey[];
  /** How many times the JWKS was fetched. */
  readonly fetches: () => number;
  token(key: TestKey, claims: Record<string, unknown>, opts?: { expiresIn?: number; alg?: string }): Promise<string>;
  close(): Promise<void>;
}

/** A stand-in OIDC issuer: discovery document and JWKS over HTTP, tokens signed with its keys. */
export async function startIssuer(keys: TestKey[]): Promise<Issuer> {
  let fetches = 0;
  const state = { keys };
  const server = http.createServer((req, res) => {
    const send = (body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    if (req.url === '/.well-known/openid-configuration') return send({ issuer: url, jwks_uri: `${url}/jwks` });
    if (req.url === '/jwks') {
      fetches++;
      return send({ keys: state.keys.map((k) => k.publicJwk) });
    }
    res.writeHead(404).end();
  });
  const url = await listen(server);
  return {
    url,
    jwksUrl: `${url}/jwks`,
    get keys() {
      return state.keys;
    },
    set keys(k: TestKey[]) {
      state.keys = k;
    },
    fetches: () => fetches,
    async token(key, claims, opts = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new (jose().SignJWT)({ iss: url, iat: now, exp: now + (opts.expiresIn ?? 300), ...claims })
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
        .sign(key.privateKey);
    },
    close: () => closeServer(server),
  };
}
