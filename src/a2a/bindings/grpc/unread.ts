/**
 * Fields a generated decoder skips. The SDK's ts-proto code reads a message field by field and skips
 * (`reader.skip(tag & 7)`) every field it does not know, and every known field sent with another wire
 * type, so the proxy would re-encode the message without them: the agent never gets them while the
 * caller is told its call went through. This reader notes the first field skipped, with its number, so
 * the call is refused naming it. It works on the reader the generated code is handed (its decode takes
 * a BinaryReader as it is), nested messages included (they are read from the same reader).
 */
import { BinaryReader, type WireType } from '@bufbuild/protobuf/wire';

export interface UnreadField {
  readonly field: number;
  readonly wireType: number;
}

export class SkipNotingReader extends BinaryReader {
  /** The first field the decoder skipped, if any. */
  unread: UnreadField | undefined;
  private lastVarint = 0;

  constructor(buf: Uint8Array) {
    super(buf);
    // The generated code reads each tag with uint32() and skips right after it: the last varint read is the tag.
    const read = this.uint32;
    this.uint32 = () => {
      const v = read.call(this);
      this.lastVarint = v;
      return v;
    };
  }

  override skip(wireType: WireType, fieldNo?: number, recursionLimit?: number): Uint8Array {
    this.unread ??= { field: fieldNo ?? this.lastVarint >>> 3, wireType };
    return super.skip(wireType, fieldNo, recursionLimit);
  }
}

/** An unread field for an error message: its number and wire type, and the message type it was sent in (or in a message inside it). */
export function unreadFieldMessage(f: UnreadField, type: string): string {
  return `request message has field ${f.field} (wire type ${f.wireType}), which ${type} and the messages inside it do not define with that type: the agent would not read it`;
}
