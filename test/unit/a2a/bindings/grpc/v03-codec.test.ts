/**
 * The v0.3 gRPC codec (`a2a.v1.A2AService`): protobuf bytes <-> the v0.3 JSON-RPC form the guardian
 * sees. Every form comes back as itself (JSON -> protobuf -> JSON, and bytes -> JSON -> the same bytes);
 * a message its JSON form cannot carry, and a JSON form that is not exactly one message, are refused.
 */
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { grpcMethodForPath } from '../../../../../src/a2a/bindings/grpc/methods';
import { codecFor, encodeFromPayload, encodeProblem, faithfulEncoding, type MessageCodec } from '../../../../../src/a2a/bindings/grpc/codec';

const codecs = (name: string) => {
  const m = grpcMethodForPath(`/a2a.v1.A2AService/${name}`);
  if (m === undefined) throw new Error(name);
  return codecFor(m);
};

/** JSON -> bytes -> JSON: the same form, and bytes that read back as the same bytes. */
function roundTrip(c: MessageCodec, json: unknown): void {
  const bytes = c.encode(c.fromJson(json));
  const decoded = c.decode(bytes);
  expect(c.toJson(decoded)).toEqual(json);
  expect(faithfulEncoding(c, decoded, c.toJson(decoded))?.equals(bytes)).toBe(true);
}

const message = {
  kind: 'message',
  messageId: 'm1',
  role: 'user',
  contextId: 'c1',
  taskId: 't1',
  metadata: { k: ['v', 1, true, { n: -1 }] },
  extensions: ['urn:x'],
  parts: [
    { kind: 'text', text: 'hi' },
    { kind: 'file', file: { uri: 'https://files.example/a.pdf', mimeType: 'application/pdf' } },
    { kind: 'file', file: { bytes: Buffer.from('hello').toString('base64') } },
    { kind: 'data', data: { n: 1.5, nested: { a: 'b' } } },
  ],
};
const task = {
  kind: 'task',
  id: 't1',
  contextId: 'c1',
  metadata: { m: 1 },
  status: { state: 'input-required', message: { ...message, role: 'agent' }, timestamp: '2026-01-02T03:04:05.678Z' },
  artifacts: [{ artifactId: 'a1', name: 'n', description: 'd', parts: [{ kind: 'text', text: 'x' }], metadata: { z: 0 }, extensions: ['urn:e'] }],
  history: [message],
};
/** A v0.3 Message as the generated code holds it. */
const wire = { messageId: 'm', contextId: '', taskId: '', role: 1, content: [], metadata: undefined, extensions: [] };
const push = { id: 'cfg', url: 'https://hooks.example/', token: 'tok', authentication: { schemes: ['Bearer'], credentials: 'secret' } };

describe('round trips: every request and answer form comes back as itself', () => {
  test.each([
    [
      'SendMessage',
      { message, configuration: { acceptedOutputModes: ['text'], pushNotificationConfig: push, historyLength: 2, blocking: false }, metadata: { x: 'y' } },
    ],
    ['SendMessage', { message: { kind: 'message', messageId: 'm2', role: 'user', parts: [{ kind: 'data' }] } }],
    ['GetTask', { id: 't1', historyLength: 5 }],
    ['GetTask', { id: 't1' }],
    ['CancelTask', { id: 't1' }],
    ['TaskSubscription', { id: 't1' }],
    ['CreateTaskPushNotificationConfig', { taskId: 't1', pushNotificationConfig: push }],
    ['CreateTaskPushNotificationConfig', { taskId: 't1', pushNotificationConfig: push, configId: 'other', name: 'tasks/t2/pushNotificationConfigs/cfg' }],
    ['GetTaskPushNotificationConfig', { id: 't1', pushNotificationConfigId: 'cfg' }],
    ['DeleteTaskPushNotificationConfig', { id: 't1', pushNotificationConfigId: 'cfg' }],
    ['ListTaskPushNotificationConfig', { id: 't1' }],
    ['ListTaskPushNotificationConfig', { id: 't1', pageSize: 3, pageToken: 'p' }],
    ['GetAgentCard', {}],
  ])('%s request %#', (name, json) => roundTrip(codecs(name).request, json));

  test.each([
    ['SendMessage', task],
    ['SendMessage', { ...message, role: 'agent' }],
    ['SendStreamingMessage', task],
    ['SendStreamingMessage', { kind: 'status-update', taskId: 't1', contextId: 'c1', status: { state: 'working' }, final: false }],
    ['SendStreamingMessage', { kind: 'artifact-update', taskId: 't1', contextId: 'c1', artifact: task.artifacts[0], append: true, lastChunk: false }],
    ['GetTask', task],
    ['GetTask', { kind: 'task', id: 't1', contextId: 'c1', status: { state: 'unknown' } }],
    ['CreateTaskPushNotificationConfig', { taskId: 't1', pushNotificationConfig: push }],
    [
      'ListTaskPushNotificationConfig',
      [
        { taskId: 't1', pushNotificationConfig: push },
        { taskId: 't1', pushNotificationConfig: { url: 'https://b.example/' } },
      ],
    ],
    ['ListTaskPushNotificationConfig', []],
    ['DeleteTaskPushNotificationConfig', null],
  ])('%s answer %#', (name, json) => roundTrip(codecs(name).response, json));

  test('an agent card, with every security scheme and OAuth flow', () => {
    const card = {
      protocolVersion: '0.3.0',
      name: 'a',
      description: 'd',
      url: 'http://agent/a2a',
      preferredTransport: 'JSONRPC',
      version: '1',
      additionalInterfaces: [{ url: 'agent:50051', transport: 'GRPC' }],
      provider: { organization: 'o', url: 'https://o.example' },
      documentationUrl: 'https://docs.example',
      capabilities: { streaming: true, pushNotifications: false, extensions: [{ uri: 'urn:x', required: true, params: { a: 1 } }] },
      securitySchemes: {
        key: { type: 'apiKey', name: 'X-Key', in: 'header', description: 'k' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        mtls: { type: 'mutualTLS' },
        oidc: { type: 'openIdConnect', openIdConnectUrl: 'https://idp.example/.well-known/openid-configuration' },
        code: {
          type: 'oauth2',
          flows: { authorizationCode: { authorizationUrl: 'https://idp/a', tokenUrl: 'https://idp/t', refreshUrl: 'https://idp/r', scopes: { read: 'r' } } },
        },
        cc: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: 'https://idp/t', scopes: {} } }, oauth2MetadataUrl: 'https://idp/m' },
      },
      security: [{ bearer: [], code: ['read'] }],
      defaultInputModes: ['text'],
      defaultOutputModes: ['text'],
      skills: [{ id: 's', name: 's', description: 'd', tags: ['t'], examples: ['e'], inputModes: ['text'], outputModes: ['text'], security: [{ key: [] }] }],
      supportsAuthenticatedExtendedCard: true,
      signatures: [{ protected: 'p', signature: 's', header: { kid: 'k' } }],
    };
    roundTrip(codecs('GetAgentCard').response, card);
  });
});

describe('what the guardian sees of the wire', () => {
  test('resource names become ids; the agent gets the names back', () => {
    const c = codecs('GetTaskPushNotificationConfig').request;
    const bytes = c.encode({ name: 'tasks/t-9/pushNotificationConfigs/c-2' });
    expect(c.toJson(c.decode(bytes))).toEqual({ id: 't-9', pushNotificationConfigId: 'c-2' });
    expect(encodeFromPayload(c, { params: { id: 't-9', pushNotificationConfigId: 'c-2' } }, 'params').equals(bytes)).toBe(true);
  });

  test('unknown fields are not shown and not re-encoded; a oneof given twice is the last one, the only one re-encoded', () => {
    const c = codecs('SendMessage').request;
    const part = (w: BinaryWriter) => w.finish();
    // Message (field 1 of SendMessageRequest): role user, one Part whose oneof is set twice (text, then text), and field 99.
    const p = part(new BinaryWriter().uint32(10).string('EVIL').uint32(10).string('benign'));
    const m = part(
      new BinaryWriter()
        .uint32(10)
        .string('m1')
        .uint32(32)
        .int32(1)
        .uint32(42)
        .bytes(p)
        .uint32((99 << 3) | 2)
        .string('SMUGGLE'),
    );
    const bytes = Buffer.from(part(new BinaryWriter().uint32(10).bytes(m)));
    const decoded = c.decode(bytes);
    const json = c.toJson(decoded);
    expect(json).toEqual({ message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'benign' }] } });
    const sent = faithfulEncoding(c, decoded, json) as Buffer;
    expect(sent.includes('SMUGGLE') || sent.includes('EVIL')).toBe(false);
  });

  test.each([
    ['a task name with more segments than tasks/{id}', 'GetTask', { name: 'tasks/t1/extra', historyLength: 0 }],
    ['a task name of another resource', 'CancelTask', { name: 'projects/t1' }],
    ['an empty task name', 'TaskSubscription', { name: '' }],
    ['a config name without its config id', 'DeleteTaskPushNotificationConfig', { name: 'tasks/t1/pushNotificationConfigs/' }],
    ['a role v0.3 JSON has no word for', 'SendMessage', { request: { ...wire, role: 0 } }],
    ['a role number the enum does not define', 'SendMessage', { request: { ...wire, role: 99 } }],
    ['a part without content', 'SendMessage', { request: { ...wire, content: [{}] } }],
    ['a create without its config', 'CreateTaskPushNotificationConfig', { parent: 'tasks/t1', configId: '' }],
  ])('a request with %s has no v0.3 JSON-RPC form (refused)', (_why, name, proto) => {
    const c = codecs(name).request;
    const decoded = c.decode(c.encode(proto));
    expect(() => c.toJson(decoded)).toThrow();
  });

  test('a null in a Struct (the v0.3 JS SDK reads it as 0) has no one meaning (refused)', () => {
    const c = codecs('SendMessage').request;
    const decoded = c.decode(c.encode({ request: { ...wire, metadata: { amount: null } } }));
    expect(() => c.toJson(decoded)).toThrow(/null/);
    expect(
      encodeProblem(c, { params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'data', data: { a: null } }] } } }, 'params'),
    ).toBeDefined();
  });

  test('values JSON cannot carry (NaN, infinities, -0 in metadata) have no JSON form or are not faithful (refused)', () => {
    const c = codecs('SendMessage').request;
    for (const n of [NaN, Infinity, -Infinity]) expect(() => c.toJson(c.decode(c.encode({ request: { ...wire, metadata: { n } } })))).toThrow();
    const negativeZero = c.decode(c.encode({ request: { ...wire, metadata: { n: -0 } } }));
    expect(faithfulEncoding(c, negativeZero, c.toJson(negativeZero))).toBeUndefined();
  });

  test('a configId other than the config id, empty included, is shown', () => {
    const c = codecs('CreateTaskPushNotificationConfig').request;
    const decoded = c.decode(
      c.encode({
        parent: 'tasks/t1',
        configId: '',
        config: { name: 'tasks/t1/pushNotificationConfigs/cfg', pushNotificationConfig: { ...push, authentication: undefined } },
      }),
    );
    const json = c.toJson(decoded);
    expect(json).toEqual({ taskId: 't1', configId: '', pushNotificationConfig: { id: 'cfg', url: push.url, token: 'tok' } });
    expect(faithfulEncoding(c, decoded, json)).toBeDefined();
  });

  test('an answer the v0.3 JSON-RPC form cannot hold is refused: a push config list with a next-page token, a SendMessageResponse with nothing', () => {
    const l = codecs('ListTaskPushNotificationConfig').response;
    expect(() => l.toJson(l.decode(l.encode({ configs: [], nextPageToken: 'more' })))).toThrow(/next-page token/);
    const s = codecs('SendMessage').response;
    expect(() => s.toJson(s.decode(Buffer.alloc(0)))).toThrow();
  });
});

describe("a guardian's replacement must be exactly one v0.3 message", () => {
  const send = codecs('SendMessage').request;
  const base = { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } };
  const withMessage = (extra: Record<string, unknown>) => ({ params: { ...base, message: { ...base.message, ...extra } } });

  test.each([
    ['a member v0.3 protobuf does not hold', withMessage({ referenceTaskIds: ['t2'] })],
    ['a kind that names another type', withMessage({ kind: 'task' })],
    ['a v1.0 role name', withMessage({ role: 'ROLE_USER' })],
    ['a part kind v0.3 does not have', withMessage({ parts: [{ kind: 'image', url: 'x' }] })],
    ['part metadata', withMessage({ parts: [{ kind: 'text', text: 'hi', metadata: { a: 1 } }] })],
    ['a file with a name', withMessage({ parts: [{ kind: 'file', file: { uri: 'u', name: 'n' } }] })],
    ['non-canonical base64', withMessage({ parts: [{ kind: 'file', file: { bytes: 'aGk' } }] })],
    ['both a uri and bytes', withMessage({ parts: [{ kind: 'file', file: { uri: 'u', bytes: 'aGk=' } }] })],
    ['a number where a string goes', withMessage({ messageId: 7 })],
    ['a top-level member of another call', { params: { ...base, id: 't1' } }],
    ['historyLength 0 (unlimited in v0.3 protobuf, none in JSON-RPC)', { params: { ...base, configuration: { historyLength: 0, blocking: true } } }],
    ['a fractional historyLength', { params: { ...base, configuration: { historyLength: 1.5, blocking: true } } }],
  ])('%s', (_why, payload) => {
    expect(encodeProblem(send, payload, 'params')).toBeDefined();
  });

  test('ids that would make another resource name are refused', () => {
    const get = codecs('GetTask').request;
    expect(encodeProblem(get, { params: { id: 't1/pushNotificationConfigs/x' } }, 'params')).toBeDefined();
    expect(encodeProblem(get, { params: { id: '' } }, 'params')).toBeDefined();
    expect(encodeProblem(get, { params: { id: 't1' } }, 'params')).toBeUndefined();
  });

  test('absent, null, empty strings and empty lists are one (proto3 writes none of them)', () => {
    expect(encodeProblem(send, { params: { ...base, metadata: null, message: { ...base.message, contextId: '', extensions: [] } } }, 'params')).toBeUndefined();
  });

  test('a delete answers null; a list answers a list', () => {
    expect(encodeProblem(codecs('DeleteTaskPushNotificationConfig').response, { result: { id: 'x' } }, 'result')).toBeDefined();
    expect(encodeProblem(codecs('ListTaskPushNotificationConfig').response, { result: { configs: [] } }, 'result')).toBeDefined();
  });
});
