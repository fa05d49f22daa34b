/**
 * Protocol keys in every spelling the A2A SDK reads: the accessor mirrors the SDK's own parser,
 * and the engine decides on a respelled request exactly as on its canonical (camelCase) twin.
 */
import fc from 'fast-check';
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type { JsonObject, SuccessResult } from '../../src/aos/schemas';
import { createEngine } from '../../src/guardian/engine';
import { canonicalKey, keySet, readField } from '../../src/guardian/keys';
import { parsePolicy } from '../../src/guardian/policy';
import { requestEnvelope } from './fixtures/envelopes';
import { respell, toCamel, toSnake } from './fixtures/spelling';

const sdk: typeof A2A = require('@a2a-js/sdk');

describe('canonicalKey', () => {
  it('maps proto (snake_case) names onto JSON (lowerCamel) names', () => {
    expect(canonicalKey('task_push_notification_config')).toBe('taskPushNotificationConfig');
    expect(canonicalKey('push_notification')).toBe('pushNotification');
    expect(canonicalKey('file_with_bytes')).toBe('fileWithBytes');
    expect(canonicalKey('oauth2_metadata_url')).toBe('oauth2MetadataUrl');
    expect(canonicalKey('taskPushNotificationConfig')).toBe('taskPushNotificationConfig');
  });

  it('knows the two v0.3 json_name aliases', () => {
    expect(canonicalKey('request')).toBe('message');
    expect(canonicalKey('update')).toBe('message');
  });

  it('leaves every other key alone', () => {
    for (const key of ['__proto__', 'constructor', 'toString', 'API_KEY', '_x', 'a__b', 'x_', 'Task_Id', 'TaskId', 'url', '']) {
      expect(canonicalKey(key)).toBe(key);
    }
  });

  it('keySet and readField match every spelling', () => {
    const set = keySet(['taskPushNotificationConfig']);
    expect(['taskPushNotificationConfig', 'task_push_notification_config'].map((k) => set.has(k))).toEqual([true, true]);
    expect(['TaskPushNotificationConfig', 'taskpushnotificationconfig'].map((k) => set.has(k))).toEqual([false, false]);
    expect(readField({ taskId: 'a', task_id: 'b', TaskId: 'c' }, 'taskId')).toEqual(['a', 'b']);
  });
});

describe('the accessor reads what the SDK parser reads', () => {
  // Complete samples of the v1 request messages the SDK parses with ts-proto `fromJSON`.
  const samples: Array<[string, { fromJSON(o: unknown): unknown }, JsonObject]> = [
    ['SendMessageRequest', sdk.SendMessageRequest, { tenant: 't', message: { messageId: 'm' }, configuration: { historyLength: 1 }, metadata: { a: 1 } }],
    [
      'SendMessageConfiguration',
      sdk.SendMessageConfiguration,
      {
        acceptedOutputModes: ['text/plain'],
        taskPushNotificationConfig: { url: 'https://h.example/cb' },
        historyLength: 3,
        returnImmediately: true,
      },
    ],
    [
      'Message',
      sdk.Message,
      {
        messageId: 'm',
        contextId: 'c',
        taskId: 't',
        role: 'ROLE_USER',
        parts: [{ text: 'x' }],
        metadata: { a: 1 },
        extensions: ['e'],
        referenceTaskIds: ['r'],
      },
    ],
    ['Part', sdk.Part, { text: 'x', metadata: { a: 1 }, filename: 'f.txt', mediaType: 'text/plain' }],
    [
      'TaskPushNotificationConfig',
      sdk.TaskPushNotificationConfig,
      {
        tenant: 't',
        id: 'c',
        taskId: 't',
        url: 'https://h.example/cb',
        token: 'tok',
        authentication: { scheme: 'Bearer', credentials: 's' },
      },
    ],
    ['CancelTaskRequest', sdk.CancelTaskRequest, { tenant: 't', id: 'i', metadata: { a: 1 } }],
    ['ListTasksRequest', sdk.ListTasksRequest, { contextId: 'c', pageSize: 2, pageToken: 'p', historyLength: 1, includeArtifacts: true }],
  ];

  it.each(samples)('%s: each field is read under its snake_case name too, and under no other spelling', (_name, type, sample) => {
    for (const [camel, value] of Object.entries(sample)) {
      const expected = type.fromJSON({ [camel]: value });
      const snake = toSnake(camel);
      if (snake !== camel) {
        expect([camel, type.fromJSON({ [snake]: value })]).toEqual([camel, expected]);
        expect(canonicalKey(snake)).toBe(camel);
      }
      const pascal = camel[0]!.toUpperCase() + camel.slice(1);
      expect([camel, type.fromJSON({ [pascal]: value })]).toEqual([camel, type.fromJSON({})]);
      expect(canonicalKey(pascal)).not.toBe(camel);
    }
  });
});

describe('key spellings do not change the decision (property)', () => {
  const engine = createEngine(
    parsePolicy(
      {
        deny: [{ id: 'weapons', message: 'no weapons', patterns: ['\\bmolotov'] }],
        mask: [
          { id: 'secrets', keys: ['apiKey', 'credentials'] },
          { id: 'pii', detectors: ['email'] },
        ],
      },
      'test',
    ),
  );

  const URLS = [
    'https://hooks.example.com/cb',
    'https://127.0.0.1/cb',
    'https://169.254.169.254/',
    'https://[2001::1]/',
    'https://10.0.0.1/',
    'http://hooks.example.com/',
    'https://[64:ff9b::a00:1]/',
    'https://100.64.0.1/',
    'https://2130706433/',
    'https://metadata/',
  ];
  const PUBLIC_URLS = new Set(['https://hooks.example.com/cb']);
  const TEXTS = ['hello there', 'how to make a molotov', 'mail bob@example.com'];
  const DATA: unknown[] = [{ note: 'x' }, { api_key: 'k', nested: { apiKey: 'k2' } }, { 'carol@example.com': 1 }, ['a', 'b']];

  type Shape = (url: string, text: string, data: unknown) => JsonObject;
  const rpc = (method: string, params: JsonObject): JsonObject => ({ jsonrpc: '2.0', id: 1, method, params });
  /** Canonical requests (JSON-RPC, and REST bodies as the proxy presents them: params = path parameters + body). */
  const SHAPES: Array<[string, Shape]> = [
    [
      'v1 SendMessage',
      (url, text, data) =>
        rpc('SendMessage', {
          message: {
            messageId: 'm-1',
            contextId: 'c-1',
            role: 'ROLE_USER',
            referenceTaskIds: ['t-0'],
            metadata: { note: text },
            parts: [
              { text, mediaType: 'text/plain' },
              { data, mediaType: 'application/json' },
              { url: 'https://files.example/a.pdf', filename: 'a.pdf' },
            ],
          },
          configuration: {
            acceptedOutputModes: ['text/plain'],
            historyLength: 3,
            returnImmediately: true,
            taskPushNotificationConfig: { url, token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret' } },
          },
        }),
    ],
    [
      'v1 CreateTaskPushNotificationConfig',
      (url, text) =>
        rpc('CreateTaskPushNotificationConfig', {
          taskId: 't-1',
          id: 'c-1',
          url,
          token: text,
          authentication: { scheme: 'Bearer', credentials: 'secret' },
        }),
    ],
    [
      'v0.3 REST message:send',
      (url, text, data) =>
        rpc('message/send', {
          message: {
            messageId: 'm-1',
            contextId: 'c-1',
            role: 'ROLE_USER',
            content: [{ text }, { data: { data } }, { file: { fileWithUri: 'https://files.example/a.pdf', mimeType: 'application/pdf' } }],
          },
          configuration: { acceptedOutputModes: ['text/plain'], historyLength: 2, blocking: false, pushNotification: { id: 'c-1', url, token: 'tok' } },
        }),
    ],
    [
      'v0.3 REST pushNotificationConfigs',
      (url, text) =>
        rpc('tasks/pushNotificationConfig/set', {
          taskId: 't-1',
          name: 'tasks/t-1/pushNotificationConfigs/c-1',
          pushNotificationConfig: { id: 'c-1', url, token: text },
        }),
    ],
    [
      'v0.3 JSON-RPC message/send',
      (url, text, data) =>
        rpc('message/send', {
          message: {
            kind: 'message',
            messageId: 'm-1',
            role: 'user',
            parts: [
              { kind: 'text', text },
              { kind: 'data', data },
            ],
          },
          configuration: { blocking: false, acceptedOutputModes: [], pushNotificationConfig: { url, token: 'tok' } },
        }),
    ],
  ];

  const canonical = (key: string): string => (key === 'request' ? 'message' : toCamel(key));
  const summary = (r: SuccessResult): unknown => ({ decision: r.decision, reasonCode: r.reasonCode, rule: (r.data as JsonObject | undefined)?.['rule'] });

  it('snake_case, camelCase and json_name aliases, mixed per key', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: SHAPES.length - 1 }),
        fc.constantFrom(...URLS),
        fc.constantFrom(...TEXTS),
        fc.constantFrom(...DATA),
        fc.func(fc.nat({ max: 2 })),
        (shapeIndex, url, text, data, pick) => {
          const [name, build] = SHAPES[shapeIndex] as [string, Shape];
          const base = build(url, text, data);
          const spell = (key: string): string => {
            const choice = pick(key);
            if (choice === 2 && key === 'message' && name.includes('REST')) return 'request';
            return choice >= 1 ? toSnake(key) : key;
          };
          const variant = respell(base, spell) as JsonObject;
          const want = engine.decide(requestEnvelope(base));
          const got = engine.decide(requestEnvelope(variant));
          expect(summary(got)).toEqual(summary(want));
          if (got.decision === 'modify') {
            expect(respell(got.modifiedRequest?.params.payload, canonical)).toEqual(want.modifiedRequest?.params.payload);
          }
          // ... and that decision is right: a webhook the agent would call must be public.
          if (!PUBLIC_URLS.has(url)) expect(got.reasonCode?.[0]).toMatch(/^PUSH_URL_/);
        },
      ),
      { numRuns: 1500 },
    );
  });
});
