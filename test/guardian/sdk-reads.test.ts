/**
 * Deny and masking rules reach text in every place the SDK reads it, in every wire shape: parts,
 * REST `content`, data parts (values and keys), metadata at each level, file URIs and names, push
 * configurations (URL, token, credentials), and fragments the SDK joins with `String()`.
 */
import type { JsonObject, SuccessResult } from '../../src/aos/schemas';
import { createEngine } from '../../src/guardian/engine';
import { parsePolicy } from '../../src/guardian/policy';
import { requestEnvelope, responseEnvelope } from './fixtures/envelopes';

const engine = createEngine(
  parsePolicy(
    {
      // Webhook targets are checked by their own rules; here every URL is a public one.
      deny: [{ id: 'forbidden', message: 'forbidden content', patterns: ['forbidden\\W+plan', '^13371337$'] }],
      mask: [
        { id: 'pii', detectors: ['email'] },
        { id: 'codename', patterns: ['project\\W+x'], replacement: '[CODENAME]' },
      ],
    },
    'test',
  ),
);

const rpc = (method: string, params: JsonObject): JsonObject => ({ jsonrpc: '2.0', id: 7, method, params });
const DENY = 'the forbidden plan';
const EMAIL = 'eve@example.com';
const hook = 'https://hooks.example.com/cb';

/** Request payloads with `t` placed in one spot the SDK reads. */
const REQUESTS: Array<[string, (t: string) => JsonObject]> = [
  ['v0.3 parts[].text', (t) => rpc('message/send', { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: t }] } })],
  ['v1 parts[].text', (t) => rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: t }] } })],
  ['v0.3 REST content[].text', (t) => rpc('message/send', { message: { messageId: 'm', role: 'ROLE_USER', content: [{ text: t }] } })],
  [
    'v0.3 REST request.content[].text (json_name alias)',
    (t) => rpc('message/send', { request: { message_id: 'm', role: 'ROLE_USER', content: [{ text: t }] } }),
  ],
  ['v0.3 data part', (t) => rpc('message/send', { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'data', data: { note: t } }] } })],
  ['v1 data part (string)', (t) => rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ data: t }] } })],
  ['v1 data part (array)', (t) => rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ data: [1, [t]] }] } })],
  ['v0.3 REST data.data', (t) => rpc('message/send', { message: { messageId: 'm', role: 'ROLE_USER', content: [{ data: { data: { deep: { x: t } } } }] } })],
  [
    'data under a key named like file bytes',
    (t) => rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ data: { bytes: t, raw: [t] } }] } }),
  ],
  [
    'metadata named like file bytes',
    (t) => rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi', metadata: { file_with_bytes: t } }] } }),
  ],
  ['a data key', (t) => rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ data: { [t]: true } }] } })],
  ['message metadata', (t) => rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }], metadata: { note: t } } })],
  [
    'part metadata',
    (t) => rpc('message/send', { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'hi', metadata: { n: t } }] } }),
  ],
  ['request metadata', (t) => rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] }, metadata: { n: t } })],
  ['cancel metadata', (t) => rpc('CancelTask', { id: 't-1', metadata: { why: t } })],
  [
    'v0.3 file.uri and file.name',
    (t) =>
      rpc('message/send', {
        message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'file', file: { uri: `https://files.example/${t}`, name: t } }] },
      }),
  ],
  [
    'v1 url and filename parts',
    (t) => rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ url: `https://files.example/?q=${t}`, filename: t }] } }),
  ],
  [
    'v0.3 REST file.fileWithUri',
    (t) => rpc('message/send', { message: { messageId: 'm', role: 'ROLE_USER', content: [{ file: { file_with_uri: `https://files.example/${t}` } }] } }),
  ],
  ['v0.3 set: pushNotificationConfig.token', (t) => rpc('tasks/pushNotificationConfig/set', { taskId: 't', pushNotificationConfig: { url: hook, token: t } })],
  ['v1 set: token', (t) => rpc('CreateTaskPushNotificationConfig', { taskId: 't', url: hook, token: t })],
  [
    'v1 set: authentication.credentials',
    (t) => rpc('CreateTaskPushNotificationConfig', { task_id: 't', url: hook, authentication: { scheme: 'Bearer', credentials: t } }),
  ],
  [
    'v0.3 REST set: push_notification_config.token',
    (t) =>
      rpc('tasks/pushNotificationConfig/set', { taskId: 't', name: 'tasks/t/pushNotificationConfigs/c', push_notification_config: { url: hook, token: t } }),
  ],
  ['push url query', (t) => rpc('CreateTaskPushNotificationConfig', { taskId: 't', url: `${hook}?who=${t}` })],
  [
    'v1 send: task_push_notification_config.token',
    (t) =>
      rpc('SendMessage', {
        message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
        configuration: { task_push_notification_config: { url: hook, token: t } },
      }),
  ],
  [
    'v0.3 REST send: pushNotification.token',
    (t) =>
      rpc('message/send', {
        message: { messageId: 'm', role: 'ROLE_USER', content: [{ text: 'hi' }] },
        configuration: { pushNotification: { url: hook, token: t } },
      }),
  ],
];

const MASKABLE = new Set(REQUESTS.map(([name]) => name).filter((name) => !name.startsWith('cancel')));

function maskedPayload(result: SuccessResult): JsonObject {
  expect(result.decision).toBe('modify');
  const payload = result.modifiedRequest?.params.payload;
  if (payload === undefined) throw new Error('modify without a payload');
  return payload;
}

describe.each(REQUESTS)('request: %s', (name, build) => {
  it('deny rules match there', () => {
    expect(engine.decide(requestEnvelope(build(DENY)))).toMatchObject({ decision: 'deny', reasonCode: ['DENY_PATTERN:forbidden'] });
  });

  it('and allow the same request without the text', () => {
    expect(engine.decide(requestEnvelope(build('a fine plan'))).decision).toBe('allow');
  });

  if (MASKABLE.has(name)) {
    it('masking rules rewrite it there', () => {
      const payload = maskedPayload(engine.decide(requestEnvelope(build(`write to ${EMAIL} now`))));
      expect(JSON.stringify(payload)).not.toContain(EMAIL);
      expect(JSON.stringify(payload)).toContain('[EMAIL]');
      expect(payload).toMatchObject({ jsonrpc: '2.0', id: 7 });
    });
  }
});

describe('text the SDK joins with String()', () => {
  it('fragments of a text field are checked as the text they join into', () => {
    const split = rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: ['the forbidden', ['plan']] }] } });
    expect(engine.decide(requestEnvelope(split))).toMatchObject({ decision: 'deny', data: { path: 'params.message.parts[0].text' } });
    const masked = maskedPayload(
      engine.decide(
        requestEnvelope(
          rpc('SendMessage', {
            message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: ['about project', 'x today'] }] },
          }),
        ),
      ),
    );
    expect(masked).toMatchObject({ params: { message: { parts: [{ text: 'about [CODENAME] today' }] } } });
  });

  it('numbers in text fields are read as their digits', () => {
    const numeric = rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 13371337 }] } });
    expect(engine.decide(requestEnvelope(numeric)).decision).toBe('deny');
  });

  it('user data arrays are not joined (the agent reads them as JSON)', () => {
    const data = rpc('SendMessage', { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ data: { text: ['the forbidden', 'plan'] } }] } });
    expect(engine.decide(requestEnvelope(data)).decision).toBe('allow');
  });
});

describe('masked data keys', () => {
  it('are renamed in place, keeping order, and colliding names stay distinct', () => {
    const payload = rpc('SendMessage', {
      message: { messageId: 'm', role: 'ROLE_USER', parts: [{ data: { first: 1, 'a@example.com': 2, 'b@example.com': 3, '[EMAIL]': 4, last: 5 } }] },
    });
    const masked = maskedPayload(engine.decide(requestEnvelope(payload)));
    const data = (((masked['params'] as JsonObject)['message'] as JsonObject)['parts'] as JsonObject[])[0]?.['data'] as JsonObject;
    expect(Object.entries(data)).toEqual([
      ['first', 1],
      ['[EMAIL]', 2],
      ['[EMAIL]#2', 3],
      ['[EMAIL]#3', 4],
      ['last', 5],
    ]);
  });
});

describe('protocol structure keeps its value in every spelling', () => {
  it('ids are not masked, whether camelCase or snake_case', () => {
    const payload = rpc('SendMessage', {
      message: { message_id: EMAIL, contextId: EMAIL, task_id: EMAIL, role: 'ROLE_USER', parts: [{ text: EMAIL, media_type: 'text/plain' }] },
    });
    const masked = maskedPayload(engine.decide(requestEnvelope(payload)));
    expect(masked).toMatchObject({
      params: { message: { message_id: EMAIL, contextId: EMAIL, task_id: EMAIL, parts: [{ text: '[EMAIL]', media_type: 'text/plain' }] } },
    });
  });

  it('file bytes are left alone in every spelling; the same keys inside user data are content', () => {
    const b64 = 'ZXZlQGV4YW1wbGUuY29t eve@example.com';
    const payload = rpc('message/send', {
      message: {
        messageId: 'm',
        role: 'ROLE_USER',
        content: [{ file: { file_with_bytes: b64 } }, { file: { fileWithBytes: b64 } }, { data: { data: { bytes: b64 } } }],
      },
    });
    const masked = maskedPayload(engine.decide(requestEnvelope(payload)));
    expect(masked).toMatchObject({
      params: {
        message: {
          content: [{ file: { file_with_bytes: b64 } }, { file: { fileWithBytes: b64 } }, { data: { data: { bytes: 'ZXZlQGV4YW1wbGUuY29t [EMAIL]' } } }],
        },
      },
    });
  });
});

describe('responses', () => {
  const RESPONSES: Array<[string, string, (t: string) => JsonObject]> = [
    [
      'v1 task history / artifacts / status',
      'SendMessage',
      (t) => ({
        jsonrpc: '2.0',
        id: 1,
        result: { task: { id: 't', status: { state: 'TASK_STATE_WORKING', message: { messageId: 'a', role: 'ROLE_AGENT', parts: [{ text: t }] } } } },
      }),
    ],
    [
      'v0.3 message result',
      'message/send',
      (t) => ({ jsonrpc: '2.0', id: 1, result: { kind: 'message', messageId: 'a', role: 'agent', parts: [{ kind: 'text', text: t }] } }),
    ],
    [
      'v0.3 REST status.update (json_name alias)',
      'message/stream',
      (t) => ({
        statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_WORKING', update: { messageId: 'a', role: 'ROLE_AGENT', content: [{ text: t }] } } },
      }),
    ],
    [
      'v1 artifact update with a data part',
      'SendStreamingMessage',
      (t) => ({
        jsonrpc: '2.0',
        id: 1,
        result: { artifactUpdate: { taskId: 't', artifact: { artifactId: 'x', parts: [{ data: { answer: t } }] } } },
      }),
    ],
  ];

  it.each(RESPONSES)('%s: denied and masked', (_name, method, build) => {
    expect(engine.decide(responseEnvelope(method, build(DENY))).decision).toBe('deny');
    const masked = maskedPayload(engine.decide(responseEnvelope(method, build(`mail ${EMAIL}`))));
    expect(JSON.stringify(masked)).not.toContain(EMAIL);
  });
});
