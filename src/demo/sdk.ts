/**
 * @a2a-js/sdk for the demo agents, from CommonJS.
 *
 * The SDK is an ESM package whose `exports` "types" entries point at ESM `.d.ts` files, so a
 * CommonJS (module: Node16) file cannot `import` it (TS1479). Types come in with
 * `resolution-mode: "import"`; values are loaded with `require()`, which resolves to the
 * package's CJS build at run time.
 */
import type * as A2A from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type * as A2AServer from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import type * as A2AExpress from '@a2a-js/sdk/server/express' with { 'resolution-mode': 'import' };
import type * as A2ACompat from '@a2a-js/sdk/compat/v0_3' with { 'resolution-mode': 'import' };
import type * as A2AClient from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };

export const sdk: typeof A2A = require('@a2a-js/sdk');
export const sdkServer: typeof A2AServer = require('@a2a-js/sdk/server');
export const sdkExpress: typeof A2AExpress = require('@a2a-js/sdk/server/express');
export const sdkCompat: typeof A2ACompat = require('@a2a-js/sdk/compat/v0_3');
export const sdkClient: typeof A2AClient = require('@a2a-js/sdk/client');

export type AgentCard = A2A.AgentCard;
export type Message = A2A.Message;
export type Part = A2A.Part;
export type Task = A2A.Task;
export type TaskState = A2A.TaskState;
export type StreamResponse = A2A.StreamResponse;
export type SendMessageRequest = A2A.SendMessageRequest;
export type AgentExecutor = A2AServer.AgentExecutor;
export type ExecutionEventBus = A2AServer.ExecutionEventBus;
export type Client = A2AClient.Client;
export type RequestOptions = NonNullable<Parameters<A2AClient.Client['sendMessage']>[1]>;

export const textPart = (text: string): Part => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});

/** The text parts of an SDK Message (or undefined), joined. */
export function messageText(message: Message | undefined): string {
  if (message === undefined) return '';
  return message.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

/** A user Message with one text part. */
export const userMessage = (text: string): Message => ({
  messageId: crypto.randomUUID(),
  contextId: '',
  taskId: '',
  role: sdk.Role.ROLE_USER,
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

/** A SendMessageRequest for client.sendMessage / sendMessageStream. */
export const sendRequest = (text: string, returnImmediately = false): SendMessageRequest => ({
  tenant: '',
  message: userMessage(text),
  metadata: undefined,
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately },
});

/** "completed" for TASK_STATE_COMPLETED, and so on. */
export function stateName(state: TaskState | undefined): string {
  if (state === undefined) return 'unknown';
  const name = (sdk.TaskState as unknown as Record<number, string>)[state] ?? String(state);
  return name
    .replace(/^TASK_STATE_/, '')
    .toLowerCase()
    .replace(/_/g, '-');
}

/** Text of a Task's artifacts, or of its status message when it has none. */
export function taskText(task: Task): string {
  const arts = task.artifacts.map((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('')).join('');
  return arts !== '' ? arts : messageText(task.status?.message);
}
