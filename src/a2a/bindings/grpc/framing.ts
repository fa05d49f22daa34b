/**
 * gRPC over HTTP/2 framing (PROTOCOL-HTTP2.md): length-prefixed messages (1 byte compressed flag,
 * 4 bytes big-endian length), `grpc-encoding`, `grpc-timeout`, the status codes. Pure and bounded:
 * a message longer than the limit is refused from its 5-byte header, before its bytes are held.
 */
import { BUDGET_SPENT, zlibDecoders } from '../../../core/decoders';

export const GRPC_STATUS = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcStatusName = keyof typeof GRPC_STATUS;

export function grpcStatusCode(name: string): number {
  return (GRPC_STATUS as Record<string, number | undefined>)[name] ?? GRPC_STATUS.UNKNOWN;
}

/** A framing problem, in gRPC's terms. */
export interface FramingProblem {
  readonly status: 'RESOURCE_EXHAUSTED' | 'INTERNAL' | 'UNIMPLEMENTED';
  readonly message: string;
}

export interface RawMessage {
  readonly compressed: boolean;
  readonly data: Buffer;
}

const HEADER = 5;

/**
 * Cuts a byte stream into messages. `push` returns the messages completed by a chunk, or a problem
 * (after which the reader stays failed); `end` says whether the stream stopped between messages.
 */
export class MessageReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private failed: FramingProblem | undefined;

  constructor(private readonly maxMessageBytes: number) {}

  push(chunk: Buffer): RawMessage[] | FramingProblem {
    if (this.failed !== undefined) return this.failed;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const out: RawMessage[] = [];
    while (this.pendingBytes >= HEADER) {
      const head = this.peek(HEADER);
      const flag = head[0] as number;
      const length = head.readUInt32BE(1);
      if (flag > 1) return (this.failed = { status: 'INTERNAL', message: `invalid compressed flag ${flag}` });
      if (length > this.maxMessageBytes) {
        return (this.failed = { status: 'RESOURCE_EXHAUSTED', message: `message of ${length} bytes exceeds the limit of ${this.maxMessageBytes}` });
      }
      if (this.pendingBytes < HEADER + length) break;
      const whole = this.take(HEADER + length);
      out.push({ compressed: flag === 1, data: whole.subarray(HEADER) });
    }
    return out;
  }

  /** True when no partial message is left (a stream that ends mid-message is malformed). */
  get clean(): boolean {
    return this.pendingBytes === 0;
  }

  private peek(n: number): Buffer {
    if ((this.pending[0] as Buffer).length < n) this.pending = [Buffer.concat(this.pending)];
    return (this.pending[0] as Buffer).subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.pending.length === 1 ? (this.pending[0] as Buffer) : Buffer.concat(this.pending);
    const rest = all.subarray(n);
    this.pending = rest.length === 0 ? [] : [rest];
    this.pendingBytes = rest.length;
    return all.subarray(0, n);
  }
}

/** One message on the wire, uncompressed. */
export function frameMessage(data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(HEADER + data.length);
  out[0] = 0;
  out.writeUInt32BE(data.length, 1);
  out.set(data, HEADER);
  return out;
}

/** Message encodings this proxy reads (it always sends identity). */
export const SUPPORTED_ENCODINGS = ['identity', 'gzip', 'deflate'] as const;

export function supportedEncoding(value: string | undefined): boolean {
  return value === undefined || (SUPPORTED_ENCODINGS as readonly string[]).includes(value.trim().toLowerCase());
}

/**
 * A message as its sender meant it: compressed messages are inflated with `grpc-encoding`, never past
 * `maxBytes`, their output asked of `take` (a budget) as it comes: 'budget spent' once it refuses. A compressed flag without a (supported) encoding is malformed.
 */
export function readMessage(m: RawMessage, encoding: string | undefined, maxBytes: number): Promise<Buffer | FramingProblem>;
export function readMessage(
  m: RawMessage,
  encoding: string | undefined,
  maxBytes: number,
  take: (n: number) => boolean,
): Promise<Buffer | FramingProblem | 'budget spent'>;
export async function readMessage(
  m: RawMessage,
  encoding: string | undefined,
  maxBytes: number,
  take?: (n: number) => boolean,
): Promise<Buffer | FramingProblem | 'budget spent'> {
  if (!m.compressed) return m.data;
  const enc = encoding?.trim().toLowerCase();
  if (enc === undefined || enc === 'identity') return { status: 'INTERNAL', message: 'compressed message without grpc-encoding' };
  if (enc !== 'gzip' && enc !== 'deflate') return { status: 'UNIMPLEMENTED', message: `grpc-encoding ${enc} is not supported` };
  try {
    const { gunzip, inflate } = zlibDecoders();
    return await (enc === 'gzip' ? gunzip : inflate)(m.data, { maxOutputLength: maxBytes, take });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === BUDGET_SPENT) return 'budget spent';
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      return { status: 'RESOURCE_EXHAUSTED', message: `decompressed message exceeds the limit of ${maxBytes} bytes` };
    }
    return { status: 'INTERNAL', message: `message does not decompress (${enc})` };
  }
}

export function isProblem<T>(v: T | FramingProblem): v is FramingProblem {
  return typeof v === 'object' && v !== null && 'status' in v && 'message' in v && !Buffer.isBuffer(v);
}

const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000_001 };

/** `grpc-timeout` (1-8 digits and a unit) in ms; undefined when absent; null when malformed. */
export function parseTimeout(value: string | undefined): number | undefined | null {
  if (value === undefined) return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (m === null) return null;
  return Number(m[1]) * (UNIT_MS[m[2] as string] as number);
}

/** A remaining deadline as `grpc-timeout` (whole milliseconds, at least 1). */
export function formatTimeout(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  return whole <= 99_999_999 ? `${whole}m` : `${Math.min(99_999_999, Math.ceil(whole / 1000))}S`;
}
