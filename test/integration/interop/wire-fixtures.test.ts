/**
 * The wire forms of A2A SDKs that cannot run here (Python, Go, Java), replayed direct, behind
 * a2a-guard ROLE=server and through ROLE=client against a real @a2a-js/sdk 1.3 agent.
 *
 * Each fixture (test/fixtures/interop/<sdk>/<binding>-<version>-<operation>.json) is what that SDK's
 * client sends for one operation (method, path under the interface root, headers, body text),
 * read from its source (the fixture's `source` names repository, commit and file). Placeholders:
 * {taskId} and {contextId} (of a task the setup made through the same path), {messageId} and
 * {requestId} (fresh). Setups: `task` (a task working for a moment), `task+config` (plus push config
 * cfg-1), `done` (a completed task in a context of its own).
 */
import fs from 'node:fs';
import path from 'node:path';
import { interopSuite, sdkAgent, streamed, unary } from '../../helpers/interop';
import { startAgent, type TestAgent } from '../../helpers/agent';
import { sleep, waitFor } from '../../helpers/net';
import { handlerRecorder } from '../../helpers/handler-recorder';

interface Fixture {
  sdk: string;
  binding: 'jsonrpc' | 'rest';
  version: string;
  operation: string;
  source: string;
  setup: 'none' | 'task' | 'task+config' | 'done';
  stream: boolean;
  request: { method: string; path: string; headers: Record<string, string>; body: string | null };
}

const DIR = path.join(__dirname, '../../fixtures/interop');
const fixtures: Array<{ file: string; f: Fixture }> = fs
  .readdirSync(DIR)
  .sort()
  .flatMap((sdk) =>
    fs
      .readdirSync(path.join(DIR, sdk))
      .sort()
      .map((file) => ({ file: `${sdk}/${file}`, f: JSON.parse(fs.readFileSync(path.join(DIR, sdk, file), 'utf8')) as Fixture })),
  );

const v1 = (method: string, params: unknown) => ({ jsonrpc: '2.0', id: 1, method, params });

/** The task a fixture works on (through the same path as the fixture), by its setup kind. */
async function setup(base: string, kind: Fixture['setup']): Promise<{ taskId: string; contextId: string }> {
  if (kind === 'none') return { taskId: '', contextId: '' };
  const headers = { 'A2A-Version': '1.0' };
  // A task runs until it is cancelled (or the agent closes): what a fixture reads or cancels never depends on the machine's speed.
  const text = kind === 'done' ? 'done' : 'wait-for-cancel';
  const message = { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] };
  const sent = await unary(`${base}/a2a/jsonrpc`, v1('SendMessage', { message, configuration: { returnImmediately: kind !== 'done' } }), headers);
  const task = (sent.body as { result?: { task?: { id?: string; contextId?: string } } }).result?.task;
  if (task?.id === undefined || task.contextId === undefined) throw new Error(`setup: no task in ${JSON.stringify(sent)}`);
  if (kind === 'task+config')
    await unary(`${base}/a2a/jsonrpc`, v1('CreateTaskPushNotificationConfig', { taskId: task.id, id: 'cfg-1', url: 'https://hooks.example/a2a' }), headers);
  return { taskId: task.id, contextId: task.contextId };
}

const fill = (s: string, vars: Record<string, string>): string => s.replace(/\{(taskId|contextId|messageId|requestId)\}/g, (_m, k: string) => vars[k] ?? '');

beforeAll(() => {
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
  jest.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterAll(() => jest.restoreAllMocks());

let agent: TestAgent | undefined;
const suite = interopSuite('wire fixtures', async () => {
  const recorder = handlerRecorder();
  agent = await startAgent({ wrapRequestHandler: recorder.wrap, slowMs: 300, stepMs: 20 });
  return sdkAgent(agent, recorder);
});

/** Cancel `taskId` (through the same path) once its subscription reached the agent and had time to be set up. */
async function cancelOnceSubscribed(base: string, taskId: string): Promise<void> {
  const a = agent as TestAgent;
  const subscribed = () =>
    a.received.some((r) => (r.path.includes(taskId) && !r.path.includes(':cancel')) || (r.bodyText.includes(taskId) && !r.bodyText.includes('ancel')));
  await waitFor(subscribed, 20_000, 'the subscription at the agent');
  await sleep(500);
  await unary(`${base}/a2a/jsonrpc`, v1('CancelTask', { id: taskId }), { 'A2A-Version': '1.0' });
}

for (const { file, f } of fixtures) {
  suite.op(file, async ({ base }) => {
    const subscribe = f.stream && f.setup === 'task';
    const vars = { ...(await setup(base, f.setup)), messageId: crypto.randomUUID(), requestId: crypto.randomUUID() };
    const url = `${base}${f.binding === 'jsonrpc' ? '/a2a/jsonrpc' : '/a2a/rest'}${fill(f.request.path, vars)}`;
    const body = f.request.body === null ? undefined : fill(f.request.body, vars);
    // Header values as the SDK sends them; no Content-Type when the SDK sends no body.
    const headers: Record<string, string | undefined> = {
      'content-type': undefined,
      accept: undefined,
      ...Object.fromEntries(Object.entries(f.request.headers).map(([k, v]) => [k.toLowerCase(), v])),
    };
    if (!f.stream) return unary(url, body, headers, f.request.method);
    const outcome = streamed(url, body, headers, f.request.method);
    if (subscribe) await cancelOnceSubscribed(base, vars.taskId);
    return outcome;
  });
}
