/**
 * What the HTTP adapter's request handler is built from (the shared parts, ../deps.ts, and its own), and
 * what its parts hand each other. Its own module so that they can name it without importing the pipeline.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CardCache } from '../../a2a/card';
import type { SseCodec } from '../../a2a/binding';
import type { PreparedBody } from '../../a2a/classify';
import type { JsonRpcId } from '../../aos/schemas';
import type { ProxyError } from '../../core/errors';
import type { LongString } from '../../core/json-pieces';
import type { WireBytes } from '../../core/turns';
import type { CallerResult } from '../../identity/caller';
import type { Admit, ForwardAssertion } from '../admit';
import type { BodyLease } from '../budget';
import type { HookRun, HookRunInput } from '../hooks';
import type { END } from '../stages';
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

/** A request before it is classified. */
export interface Arrival {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly lease: BodyLease;
  /**
   * The caller's identity. A request with a body is verified before its body is read (admission before
   * cost); one without (a card, a GET) only once it routes to an A2A operation or a forwarded route.
   * Either way an assertion is spent (its id recorded, in its signer's own share of the replay cache:
   * identity/replay.ts) only once the request routes there: a refused request records nothing.
   */
  who: Promise<CallerResult> | undefined;
  /** This proxy's assertion (undefined: no signing key), signed while the body arrives. */
  readonly assertion: ForwardAssertion | undefined;
  /** Set by the body stage: the decoded body, or null. */
  body: Buffer | null;
  /** Set by the body stage for a large body (LARGE_BODY): what classify reads of it, read in turns of the event loop. */
  parsed?: PreparedBody;
  /** The body is large: its later costly steps get turns of their own too. */
  large?: boolean;
  /**
   * A large JSON body's bytes (its buffer, or spliced: core/json-spliced.ts), their decoding, and whether they are the
   * canonical serialization of `value` (then forwarded as they are, if `value` is the call's request).
   */
  raw?: { readonly bytes: WireBytes; readonly longStrings: readonly LongString[]; readonly value: unknown; readonly canonical: boolean } | undefined;
  /** Set by an A2A call: its end, run by the request's one close listener. */
  onClose: (() => void) | undefined;
  /** Set by admission: gives the caller's place back (its calls in flight). */
  leave: (() => void) | undefined;
  /** The request closed (the caller left, or its answer ended). */
  closed: boolean;
  /** Set by admission: the key the caller's shares and turns are counted under. */
  key?: string;
}

/** What the parts of the HTTP adapter share, built once per handler (pipeline.ts). */
export interface HttpParts {
  readonly deps: ProxyDeps;
  readonly admit: Admit;
  readonly runHooks: (input: HookRunInput) => Promise<HookRun>;
  /** The caller of a request that routes somewhere: verified, its one-use credentials (an assertion) used up now. */
  routedCaller(a: Arrival): Promise<CallerResult>;
  /** Count, log and answer a refusal in the binding's terms. */
  refuse(res: ServerResponse, err: ProxyError, id: JsonRpcId | null, codec: SseCodec): typeof END;
}
