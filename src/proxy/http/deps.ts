/**
 * What the HTTP adapter's request handler is built from: the shared parts (../deps.ts) and its own.
 * Its own module so that the stages and the card route can name it without importing the pipeline.
 */
import type { CardCache } from '../../a2a/card';
import type { CardSigning } from '../../identity/card-signing';
import type { CardGate } from '../card-judge';
import type { Guardian } from '../../aos/guardian';
import type { SharedDeps } from '../deps';
import type { Upstream } from './forward';

export interface ProxyDeps extends SharedDeps {
  readonly guardian: Guardian;
  readonly upstream: Upstream;
  /** True once shutdown began: answers carry Connection: close. */
  readonly draining: () => boolean;
  /** The agent's card: names its REST and JSON-RPC endpoints. */
  readonly upstreamCard: CardCache;
  /** Cards served signed by the proxy, or the agent's signature checked first (a2a/card-signature.ts); undefined: neither. */
  readonly cardSigning?: CardSigning | undefined;
  /** INSPECT_CARDS: every card served is judged by the guardian first (card-judge.ts); undefined: not judged. */
  readonly cardJudge?: CardGate | undefined;
}
