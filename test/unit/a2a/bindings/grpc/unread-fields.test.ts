/**
 * Fields the SDK's generated decoder skips are noted with their number (bindings/grpc/unread.ts), so a
 * call carrying one is refused rather than forwarded without it: unknown fields at the top and nested,
 * a known field under another wire type, inside a Struct. Messages the SDK encodes itself note nothing.
 */
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { GRPC_METHODS } from '../../../../../src/a2a/bindings/grpc/methods';
import { codecFor } from '../../../../../src/a2a/bindings/grpc/codec';
import { unreadFieldMessage } from '../../../../../src/a2a/bindings/grpc/unread';

const send = codecFor([...GRPC_METHODS.values()].find((m) => m.name === 'SendMessage') as NonNullable<ReturnType<typeof GRPC_METHODS.get>>).request;
const message = (w: BinaryWriter): BinaryWriter => w.uint32(10).string('m1').uint32(32).int32(1);

describe('fields the generated decoder skips', () => {
  test.each<[string, () => Uint8Array, number, number]>([
    [
      'an unknown field at the top',
      () =>
        new BinaryWriter()
          .uint32((99 << 3) | 2)
          .string('context')
          .finish(),
      99,
      2,
    ],
    [
      'an unknown varint after known fields',
      () =>
        new BinaryWriter()
          .uint32(18)
          .bytes(message(new BinaryWriter()).finish())
          .uint32((7 << 3) | 0)
          .int32(5)
          .finish(),
      7,
      0,
    ],
    [
      'an unknown field inside the message',
      () =>
        new BinaryWriter()
          .uint32(18)
          .bytes(
            message(new BinaryWriter())
              .uint32((42 << 3) | 5)
              .fixed32(1)
              .finish(),
          )
          .finish(),
      42,
      5,
    ],
    [
      'a known field (tenant, a string) sent as a varint',
      () =>
        new BinaryWriter()
          .uint32((1 << 3) | 0)
          .int32(3)
          .finish(),
      1,
      0,
    ],
    [
      'an unknown field inside a Struct (metadata)',
      () =>
        new BinaryWriter()
          .uint32(34)
          .bytes(
            new BinaryWriter()
              .uint32((9 << 3) | 1)
              .fixed64(1n)
              .finish(),
          )
          .finish(),
      9,
      1,
    ],
  ])('%s: noted by number and wire type', (_n, bytes, field, wireType) => {
    const read = send.decodeNoting(bytes());
    expect(read.unread).toEqual({ field, wireType });
    expect(unreadFieldMessage(read.unread as NonNullable<typeof read.unread>, 'SendMessageRequest')).toMatch(
      new RegExp(`field ${field} \\(wire type ${wireType}\\)`),
    );
  });

  test('messages the SDK encodes note nothing, for every request type, and decode as decode does', () => {
    const samples: Record<string, unknown> = {
      SendMessage: {
        tenant: 't',
        message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }, { data: { a: [1, 'x', null, true] } }], metadata: { k: 'v' } },
        configuration: { acceptedOutputModes: ['text/plain'], historyLength: 2, returnImmediately: true },
        metadata: { n: 1 },
      },
      GetTask: { id: 't1', historyLength: 3 },
      ListTasks: { contextId: 'c', status: 'TASK_STATE_WORKING', pageSize: 5, pageToken: 'p', includeArtifacts: true },
      CancelTask: { id: 't1', metadata: { why: 'x' } },
      SubscribeToTask: { id: 't1' },
      CreateTaskPushNotificationConfig: { taskId: 't1', url: 'https://hook.example', token: 'tok' },
    };
    // v0.3's service (its v0.3 JSON-RPC form).
    const samplesV03: Record<string, unknown> = {
      SendMessage: {
        message: {
          kind: 'message',
          messageId: 'm',
          role: 'user',
          parts: [
            { kind: 'text', text: 'hi' },
            { kind: 'data', data: { a: [1, 'x', true] } },
          ],
          metadata: { k: 'v' },
        },
        configuration: { acceptedOutputModes: ['text/plain'], historyLength: 2, blocking: true },
        metadata: { n: 1 },
      },
      SendStreamingMessage: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
      GetTask: { id: 't1', historyLength: 3 },
      CancelTask: { id: 't1' },
      TaskSubscription: { id: 't1' },
      CreateTaskPushNotificationConfig: { taskId: 't1', pushNotificationConfig: { id: 'c', url: 'https://hook.example', token: 'tok' } },
      GetTaskPushNotificationConfig: { id: 't1', pushNotificationConfigId: 'c' },
      ListTaskPushNotificationConfig: { id: 't1', pageSize: 2 },
      DeleteTaskPushNotificationConfig: { id: 't1', pushNotificationConfigId: 'c' },
    };
    for (const m of GRPC_METHODS.values()) {
      const c = codecFor(m).request;
      const bytes = c.encode(c.fromJson(((m.version === '1.0' ? samples : samplesV03)[m.name] ?? {}) as never));
      const read = c.decodeNoting(bytes);
      expect([m.name, read.unread]).toEqual([m.name, undefined]);
      expect(c.toJson(read.message)).toEqual(c.toJson(c.decode(bytes)));
    }
  });
});
