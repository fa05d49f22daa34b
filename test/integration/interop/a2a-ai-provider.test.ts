/**
 * a2a-ai-provider 0.5.0-alpha.1 (the AI SDK provider over @a2a-js/sdk 0.3's A2AClient, driven by
 * ai 6's generateText / streamText) direct, behind a2a-guard ROLE=server and through ROLE=client,
 * against a real @a2a-js/sdk 1.3 agent and a real 0.3 agent. The package is ESM only, so each call
 * runs in a child process (test/helpers/esm/a2a-ai-provider-call.mjs).
 */
import path from 'node:path';
import { interopSuite, sdkAgent, type InteropSuite } from '../../helpers/interop';
import { startLegacySdkAgent } from '../../helpers/interop-agents';
import { startAgent } from '../../helpers/agent';
import { handlerRecorder } from '../../helpers/handler-recorder';
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { reap } from '../../helpers/process';

const SCRIPT = path.join(__dirname, '../../helpers/esm/a2a-ai-provider-call.mjs');

/** One child serves every call of the file (loading the AI SDK takes seconds); calls go one at a time. */
let child: ChildProcess | undefined;
let answers: AsyncIterator<string> | undefined;
let stderr = '';
let queue: Promise<unknown> = Promise.resolve();

/** One provider call; what its caller saw (its error is thrown). */
function call(args: Record<string, unknown>): Promise<unknown> {
  const next = queue.then(async () => {
    if (child === undefined || answers === undefined) throw new Error('the provider process is not running');
    child.stdin!.write(`${JSON.stringify(args)}\n`);
    for (;;) {
      const line = await answers.next();
      if (line.done === true) throw new Error(`the provider process ended: ${stderr}`);
      if (!line.value.startsWith('ANSWER ')) continue;
      const answer = JSON.parse(line.value.slice('ANSWER '.length)) as { error?: { name: string; message: string } };
      if (answer.error !== undefined) throw Object.assign(new Error(answer.error.message), { name: answer.error.name });
      return answer;
    }
  });
  queue = next.catch(() => undefined);
  return next;
}

beforeAll(() => {
  child = spawn(process.execPath, [SCRIPT], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  answers = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
});
afterAll(async () => {
  if (child !== undefined) await reap(child);
});

function ops(suite: InteropSuite): void {
  const cardUrl = (base: string): string => `${base}/.well-known/agent-card.json`;
  suite.op('generateText', async ({ base }) => call({ cardUrl: cardUrl(base), mode: 'generate', prompt: 'What is love?' }));
  suite.op('streamText', async ({ base }) => call({ cardUrl: cardUrl(base), mode: 'stream', prompt: 'Stream me a haiku' }));
  suite.op('generateText in a known context', async ({ base }) =>
    call({ cardUrl: cardUrl(base), mode: 'generate', prompt: 'Remember me', contextId: 'chat-42' }),
  );
}

describe('against an @a2a-js/sdk 1.3 agent', () => {
  ops(
    interopSuite('a2a-ai-provider -> sdk 1.3 agent', async () => {
      const recorder = handlerRecorder();
      return sdkAgent(await startAgent({ wrapRequestHandler: recorder.wrap }), recorder);
    }),
  );
});

describe('against an @a2a-js/sdk 0.3 agent', () => {
  ops(interopSuite('a2a-ai-provider -> sdk 0.3 agent', () => startLegacySdkAgent('0.3')));
});
