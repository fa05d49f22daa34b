/**
 * The proxy's card signing key (CARD_SIGNING_KEY_FILE, re-read when it changes) and the keys the
 * agent's card signatures must verify with (CARD_TRUST_JWKS_FILE); the signature format is a2a/card-signature.ts.
 */
import { createHash, createPublicKey, type JsonWebKey } from 'node:crypto';
import { CallerShares } from '../core/caller-shares';
import type { Logger } from 'pino';
import type { CardJson, CardVouch } from '../a2a/card';
import { CARD_JWKS_PATH, cardPayload, cardSignatureProblem, signCard, type CardSignature, type TrustedCardKey } from '../a2a/card-signature';
import { WatchedFile } from '../credentials/files';
import type { JWK } from './jose';
import { algorithmOf, parseTrustedJwks, startupKeyError, watchSigningKey, type SigningKey } from './keys';

/** A trusted JWKS (identity/keys.ts rules: public EC P-256/P-384 or Ed25519 keys, each with a kid) by kid. */
export function cardTrust(text: string): ReadonlyMap<string, TrustedCardKey> {
  const set = parseTrustedJwks(text);
  const out = new Map<string, TrustedCardKey>();
  for (const jwk of set.keys) {
    const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    out.set(jwk.kid as string, { key, alg: algorithmOf(key) as string });
  }
  return out;
}

/**
 * Signatures made per signing input, remembered: a card served again costs a hash, not a signature.
 * Each caller has a share (the public URL comes from its Host header, so one caller can make any
 * number of distinct inputs): it recycles its own entries, never another's.
 */
const REMEMBERED_PER_CALLER = 32;
const REMEMBERED_CALLERS = 256;

/**
 * What the proxy does with card signatures: sign the cards it serves (CARD_SIGNING_KEY_FILE, re-read
 * when it changes), check the agent's first (CARD_SIGNATURES=require, CARD_TRUST_JWKS_FILE).
 */
export class CardSigning implements CardVouch {
  private key: SigningKey | undefined;
  /** The key before the last change, still published: cards signed with it may be cached by callers. */
  private previous: JWK | undefined;
  private trust: ReadonlyMap<string, TrustedCardKey> | undefined;
  private readonly made = new CallerShares<CardSignature>(REMEMBERED_PER_CALLER, REMEMBERED_CALLERS);

  private constructor(private readonly logger: Logger) {}

  /** undefined when neither a signing key nor CARD_SIGNATURES=require is configured. */
  static async open(opts: {
    keyFile: string | undefined;
    keyId: string | undefined;
    trustJwksFile: string | undefined;
    require: boolean;
    refreshMs: number;
    logger: Logger;
  }): Promise<CardSigning | undefined> {
    const { logger } = opts;
    if (opts.keyFile === undefined && !opts.require) return undefined;
    const s = new CardSigning(logger);
    if (opts.keyFile !== undefined) {
      s.key = await watchSigningKey({
        file: opts.keyFile,
        variable: 'CARD_SIGNING_KEY_FILE',
        kid: opts.keyId,
        refreshMs: opts.refreshMs,
        logger,
        onKey: (next) => {
          if (s.key?.kid !== next.kid) s.previous = s.key?.publicJwk;
          s.key = next;
          s.made.clear();
          logger.info({ kid: next.kid, alg: next.alg }, 'card signing key changed: cards are signed with it from now on');
        },
      });
      logger.info({ kid: s.key.kid, alg: s.key.alg, jwks: CARD_JWKS_PATH }, "agent cards are signed by the proxy (the agent's signatures are replaced)");
    }
    if (opts.require && opts.trustJwksFile !== undefined) {
      const path = opts.trustJwksFile;
      const file = WatchedFile.open(path, { variable: 'CARD_TRUST_JWKS_FILE', intervalMs: opts.refreshMs, onProblem: (m) => logger.warn(m) });
      try {
        s.trust = cardTrust(file.text());
      } catch (err) {
        throw startupKeyError('CARD_TRUST_JWKS_FILE', path, err);
      }
      file.onChange((content) => {
        try {
          s.trust = cardTrust(content.toString('utf8'));
          logger.info('CARD_TRUST_JWKS_FILE changed: agent card signatures are checked with the new keys');
        } catch (err) {
          logger.warn({ problem: (err as Error).message }, 'CARD_TRUST_JWKS_FILE changed but does not load; the previous keys stay in use');
        }
      });
      logger.info({ keys: s.trust.size }, 'CARD_SIGNATURES=require: an agent card is served only when its signature verifies');
    }
    return s;
  }

  /** The published JWKS: the current key and the one before it. */
  jwks(): { keys: JWK[] } {
    return { keys: [this.key?.publicJwk, this.previous].filter((k): k is JWK => k !== undefined) };
  }

  /**
   * The card a caller is served, from the agent's card `given` and the proxy's rewrite of it `out`:
   * undefined when the agent's signature is required and does not verify (logged); else `out` signed
   * by the proxy, or without signatures when the proxy has no key (the agent's no longer verify).
   * `caller`: whose share of the remembered signatures a new one takes.
   */
  vouch(given: CardJson, out: CardJson, publicBase: URL, caller = ''): CardJson | undefined {
    if (this.refusal(given) !== undefined) return undefined;
    return this.sign(out, publicBase, caller);
  }

  /** Why the agent's card is refused (CARD_SIGNATURES=require and no signature verifies; logged), else undefined. */
  refusal(given: CardJson): string | undefined {
    if (this.trust === undefined) return undefined;
    const problem = cardSignatureProblem(given, this.trust);
    if (problem !== undefined) {
      this.logger.warn(
        { card: typeof given.name === 'string' ? given.name.slice(0, 128) : undefined, problem },
        'agent card refused: CARD_SIGNATURES=require and its signature does not verify',
      );
    }
    return problem;
  }

  /** `out` without its signatures, and with the proxy's own when it has a key. */
  sign(out: CardJson, publicBase: URL, caller = ''): CardJson {
    const card: CardJson = {};
    for (const [k, val] of Object.entries(out))
      if (k !== 'signatures') Object.defineProperty(card, k, { value: val, enumerable: true, writable: true, configurable: true });
    const key = this.key;
    if (key === undefined) return card;
    const jku = new URL(`${publicBase.pathname.replace(/\/+$/, '')}${CARD_JWKS_PATH}`, publicBase).href;
    const memo = createHash('sha256').update(jku).update('\n').update(cardPayload(card)).digest('base64url');
    let sig = this.made.get(caller, memo);
    if (sig === undefined) {
      sig = signCard(card, key, jku);
      this.made.set(caller, memo, sig);
    }
    card.signatures = [sig];
    return card;
  }
}
