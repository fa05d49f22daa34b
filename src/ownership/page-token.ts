/**
 * Page tokens sealed for one caller (README "Task ownership"). An agent's page token is a cursor into
 * its list of every caller's tasks (the SDK's is base64 of "<timestamp>|<task id>" of the last task
 * of the unfiltered page), so the proxy never relays one: the caller gets it sealed, bound to its
 * owner key and the operation, and the agent only ever receives tokens it issued itself, in an
 * answer to the same caller.
 *
 * Sealed form: base64url( 0x01 | salt (16) | AES-256-GCM ciphertext | tag (16) ), plaintext =
 * issued-at (uint32 seconds, big-endian) | the agent's token (UTF-8), additional data = purpose NUL
 * owner. Key and nonce are derived per token with HKDF-SHA256 from the shared secret and the random
 * salt: one long-lived secret (shared by replicas through the owner store) seals any number of
 * tokens without a (key, nonce) pair ever repeating.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Owner } from './principal';

const VERSION = 0x01;
const SALT = 16;
const TAG = 16;
const ISSUED = 4;
const INFO = Buffer.from('a2a-guard page token v1');
/** A sealed token longer than this was not made here (the agent's tokens are short cursors). */
const MAX_SEALED_CHARS = 8192;
/** Replicas' clocks may differ a little: a token issued this far "in the future" still opens. */
const CLOCK_SKEW_S = 60;

export type Opened =
  | { readonly ok: true; readonly token: string }
  /** `unauthentic`: tampered, sealed for another owner or operation, or under another secret (indistinguishable by design). */
  | { readonly ok: false; readonly why: 'malformed' | 'unauthentic' | 'expired' };

export interface PageTokenOptions {
  /**
   * The sealing secret (32 bytes or more). `refresh`: the current one failed to open a token; look
   * again (another replica may have replaced a lost secret). Rejects when it cannot be had.
   */
  readonly secret: (refresh: boolean) => Promise<Buffer>;
  /** How long a sealed token opens after it was issued. */
  readonly lifetimeSeconds: number;
  /** Clock in ms (tests). */
  readonly now?: () => number;
}

function keyAndNonce(secret: Buffer, salt: Buffer): { key: Buffer; iv: Buffer } {
  const out = Buffer.from(hkdfSync('sha256', secret, salt, INFO, 32 + 12));
  return { key: out.subarray(0, 32), iv: out.subarray(32) };
}

const additionalData = (owner: Owner, purpose: string): Buffer => Buffer.from(`${purpose}\0${owner}`, 'utf8');

export class PageTokens {
  private readonly now: () => number;

  constructor(private readonly opts: PageTokenOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** The agent's `token` sealed for `owner` and `purpose` (the operation). */
  async seal(token: string, owner: Owner, purpose: string): Promise<string> {
    const secret = await this.opts.secret(false);
    const salt = randomBytes(SALT);
    const { key, iv } = keyAndNonce(secret, salt);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(additionalData(owner, purpose));
    const issued = Buffer.alloc(ISSUED);
    issued.writeUInt32BE(Math.floor(this.now() / 1000));
    const sealed = Buffer.concat([Buffer.from([VERSION]), salt, cipher.update(issued), cipher.update(token, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return sealed.toString('base64url');
  }

  /** The agent's token inside `sealed`, if it was sealed here for this `owner` and `purpose` and has not expired. */
  async open(sealed: string, owner: Owner, purpose: string): Promise<Opened> {
    const raw = sealed.length <= MAX_SEALED_CHARS && /^[A-Za-z0-9_-]+$/.test(sealed) ? Buffer.from(sealed, 'base64url') : undefined;
    if (raw === undefined || raw.length < 1 + SALT + ISSUED + TAG || raw[0] !== VERSION) return { ok: false, why: 'malformed' };
    const secret = await this.opts.secret(false);
    let plain = decrypt(secret, raw, owner, purpose);
    if (plain === undefined) {
      // Sealed under a secret this replica has not seen yet (the shared one was lost and made anew)?
      const again = await this.opts.secret(true);
      if (!again.equals(secret)) plain = decrypt(again, raw, owner, purpose);
    }
    if (plain === undefined) return { ok: false, why: 'unauthentic' };
    const age = Math.floor(this.now() / 1000) - plain.readUInt32BE(0);
    if (age > this.opts.lifetimeSeconds || age < -CLOCK_SKEW_S) return { ok: false, why: 'expired' };
    return { ok: true, token: plain.subarray(ISSUED).toString('utf8') };
  }
}

function decrypt(secret: Buffer, raw: Buffer, owner: Owner, purpose: string): Buffer | undefined {
  const salt = raw.subarray(1, 1 + SALT);
  const { key, iv } = keyAndNonce(secret, salt);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAAD(additionalData(owner, purpose));
    decipher.setAuthTag(raw.subarray(raw.length - TAG));
    return Buffer.concat([decipher.update(raw.subarray(1 + SALT, raw.length - TAG)), decipher.final()]);
  } catch {
    return undefined;
  }
}
