/** Where webhook configs sit in requests and answers, their rewrite and restoration, and the task a delivery names. */
import { operationForMethod, type Operation } from '../../../../src/a2a/operations';
import { deliveredTaskId, relayedConfigs, restoreConfig, rewriteRequest, webhooksOf } from '../../../../src/proxy/push/configs';

const op = (m: string): Operation => operationForMethod(m) as Operation;
const RELAY = (i: number) => ({ url: `http://127.0.0.1:1/a2a-guard/push/k${i}`, token: `k${i}` });

describe('webhooksOf and rewriteRequest', () => {
  it('finds the flat v1.0 config of CreateTaskPushNotificationConfig and rewrites it', () => {
    const req = {
      jsonrpc: '2.0',
      id: 1,
      method: 'CreateTaskPushNotificationConfig',
      params: { taskId: 't', url: 'https://hook/a', token: 'T', authentication: { scheme: 'Bearer', credentials: 'c' } },
    };
    expect(webhooksOf(op('CreateTaskPushNotificationConfig'), req)).toEqual([
      { url: 'https://hook/a', token: 'T', authentication: { scheme: 'Bearer', credentials: 'c' } },
    ]);
    const out = rewriteRequest(op('CreateTaskPushNotificationConfig'), req, RELAY);
    expect(out.params).toEqual({ taskId: 't', url: RELAY(0).url, token: 'k0' });
    expect(req.params.url).toBe('https://hook/a');
  });

  it('finds v0.3 nested and snake_case configs, in order', () => {
    const req = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/pushNotificationConfig/set',
      params: { taskId: 't', pushNotificationConfig: { url: 'https://hook/b' } },
    };
    expect(webhooksOf(op('tasks/pushNotificationConfig/set'), req).map((w) => w.url)).toEqual(['https://hook/b']);
    const send = {
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { parts: [{ url: 'https://file/part' }] }, configuration: { task_push_notification_config: { url: 'https://hook/c' } } },
    };
    expect(webhooksOf(op('SendMessage'), send).map((w) => w.url)).toEqual(['https://hook/c']);
    const out = rewriteRequest(op('SendMessage'), send, RELAY) as typeof send;
    // A file part's url is the message's, never a webhook.
    expect(out.params.message.parts[0]?.url).toBe('https://file/part');
    expect(out.params.configuration.task_push_notification_config.url).toBe(RELAY(0).url);
  });

  it('finds nothing in operations that carry no webhook', () => {
    expect(webhooksOf(op('GetTask'), { method: 'GetTask', params: { id: 't', url: 'https://x' } })).toEqual([]);
  });
});

describe('relayedConfigs and restoreConfig', () => {
  it('puts the caller webhook back wherever the relay URL appears in an answer', () => {
    const answer = { jsonrpc: '2.0', id: 1, result: { configs: [{ taskId: 't', id: 'c', url: RELAY(0).url, token: 'k0' }, { url: 'https://other' }] } };
    const found = relayedConfigs(answer, (u) => u.startsWith('http://127.0.0.1:1/a2a-guard/push/'));
    expect(found).toHaveLength(1);
    restoreConfig(found[0] as Record<string, unknown>, { url: 'https://hook/a', authentication: { scheme: 'Basic', credentials: 'x' } });
    expect(answer.result.configs[0]).toEqual({ taskId: 't', id: 'c', url: 'https://hook/a', authentication: { scheme: 'Basic', credentials: 'x' } });
  });
});

describe('deliveredTaskId', () => {
  it.each([
    [{ task: { id: 't1' } }, 't1'],
    [{ statusUpdate: { taskId: 't2' } }, 't2'],
    [{ artifactUpdate: { taskId: 't3' } }, 't3'],
    [{ kind: 'task', id: 't4' }, 't4'],
    [{ kind: 'status-update', taskId: 't5' }, 't5'],
    [{ task: { id: 'a' }, statusUpdate: { taskId: 'b' } }, undefined],
    [{ hello: 'x' }, undefined],
    ['text', undefined],
  ])('%j names %s', (body, id) => {
    expect(deliveredTaskId(body)).toBe(id);
  });
});
