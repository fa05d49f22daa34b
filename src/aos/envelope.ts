/** The toolkit's module (packages/toolkit/src/envelope.ts), at the path the proxy and the package's `exports` have always used. */
export * from '@a2a-guard/toolkit/envelope';
import { envelopeBytes, type EnvelopeBytes } from '@a2a-guard/toolkit/envelope';
import type { Envelope } from './schemas';
import { viewSlices, type LazyBytes, type WireBytes } from '../core/turns';

const NO_BYTES = Buffer.alloc(0);

/**
 * An envelope whose payload is made as it is written (core/json-spliced.ts): sent by `slices`, never made whole. Its
 * `chunks` (what a Guardian of one's own may read) are made whole when first read, and kept.
 */
class LazyEnvelope implements EnvelopeBytes, LazyBytes {
  readonly length: number;
  private whole: readonly Buffer[] | undefined;

  constructor(
    private readonly head: Buffer,
    private readonly payload: LazyBytes,
    private readonly tail: Buffer,
  ) {
    this.length = head.length + payload.length + tail.length;
  }

  get chunks(): readonly Buffer[] {
    return (this.whole ??= [this.head, Buffer.concat([...this.payload.slices()], this.payload.length), this.tail]);
  }

  *slices(): Generator<Buffer> {
    yield this.head;
    yield* this.payload.slices();
    yield this.tail;
  }
}

/** envelopeBytes for a payload as it is sent: its buffer, or bytes made as they are written. */
export function envelopeWireBytes(env: Envelope, payload: WireBytes, contextJson?: string): EnvelopeBytes {
  if (Buffer.isBuffer(payload)) return envelopeBytes(env, payload, contextJson);
  const [head, , tail] = envelopeBytes(env, NO_BYTES, contextJson).chunks as [Buffer, Buffer, Buffer];
  return new LazyEnvelope(head, payload, tail);
}

/** The slices of an envelope whose payload is made as it is written; undefined for one held in buffers. */
export function lazySlices(body: EnvelopeBytes): Iterable<Buffer> | undefined {
  return body instanceof LazyEnvelope ? body.slices() : undefined;
}

/** An envelope's bytes in order, in slices of at most LARGE_BODY: made as they are written when they can be, else views of its chunks. */
export function* envelopeSlices(body: EnvelopeBytes): Generator<Buffer> {
  if (body instanceof LazyEnvelope) return yield* body.slices();
  for (const chunk of body.chunks) yield* viewSlices(chunk);
}
