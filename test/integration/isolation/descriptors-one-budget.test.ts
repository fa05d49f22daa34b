/**
 * The process's file descriptors are one budget that every pool of connections is inside: the listeners', the
 * agent's, the guardian's (calls and stream events) and the push deliveries'. A slow guardian holds each check a
 * while, so callers with many streams in flight (each stream has up to STREAM_INSPECT_WINDOW events at the guardian at
 * once) keep the guardian's connections open: with the guardian's pools outside the budget they went past the limit,
 * and the next accept or guardian call failed with EMFILE, a fail-closed refusal for callers that did nothing wrong.
 * Within the budget the checks wait in line for the guardian instead, and every call is answered.
 * The callers come from 127.0.0.2-5, the victim (a real SDK client) from 127.0.0.1.
 */
import fs from 'node:fs';
import { Agent as UndiciAgent, fetch as undiciFetch } from 'undici';
import { makeClient, sendReq, textOf } from '../../helpers/agent';
import { useStack } from '../../helpers/proxy-harness';
import { MAIN, ensureBuilt, reapAll, sample, scrape, startProxyProcess } from '../../helpers/proxy-process';

jest.setTimeout(120_000);

const stack = useStack();
afterAll(() => reapAll());

/** 256 descriptors: 38 connections on the listeners (and 38 to the agent), 38 for each of the guardian's pools and the push deliveries. */
const DESCRIPTORS = 256;
const CALLERS = 4;
/** Connections each caller opens at most: all callers together stay within the listeners' 38. */
const CONNECTIONS = 8;
const STREAMS = 8;
const CALLS = 8;

type Answer = 'allowed' | `refused ${string}` | `broken ${string}`;

/** A call's answer: allowed (the agent's), refused with a reason (a JSON-RPC error, 429, 503), or broken (no answer). */
function answerOf(status: number, text: string, streaming: boolean): Answer {
  const error = /"error":\{"code":(-?\d+)/.exec(text)?.[1];
  if (error !== undefined) return `refused ${error}`;
  if (status === 429 || status === 503) return `refused ${status}`;
  const done = streaming ? text.includes('TASK_STATE_COMPLETED') : text.includes('echo: ');
  return status === 200 && done ? 'allowed' : `broken ${status} ${text.slice(0, 200)}`;
}

function call(url: string, from: UndiciAgent, id: string, streaming: boolean): Promise<Answer> {
  return undiciFetch(`${url}/a2a/jsonrpc`, {
    method: 'POST',
    dispatcher: from,
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', accept: streaming ? 'text/event-stream' : 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: streaming ? 'SendStreamingMessage' : 'SendMessage',
      params: { message: { messageId: id, role: 'ROLE_USER', parts: [{ text: streaming ? `stream 20 ${id}` : `hello ${id}` }] } },
    }),
  }).then(
    async (r) => answerOf(r.status, await r.text(), streaming),
    (err: Error) => `broken ${(err.cause as Error | undefined)?.message ?? err.message}` as const,
  );
}

const descriptors = (pid: number): number => {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
};

test('a slow guardian and callers with many streams in flight: every pool stays within the descriptors, every call is answered, no EMFILE', async () => {
  ensureBuilt();
  // Each check is held at the guardian a while: the guardian's connections stay taken.
  stack.guardian.script(() => ({ decision: 'allow', delayMs: 300 }));
  const proxy = await startProxyProcess(
    { UPSTREAM_URL: stack.agent.origin, GUARDIAN_URL: stack.guardian.url, ROLE: 'server', INSPECT_RESPONSES: 'true', INSPECT_CARDS: 'false' },
    { node: 'bash', script: '-c', args: [`ulimit -n ${DESCRIPTORS} && exec "$0" "${MAIN}"`, process.execPath] },
  );
  const pid = proxy.child.pid as number;
  const victim = await makeClient(proxy.base, 'JSONRPC', '1.0', { fetchImpl: (u, init) => fetch(u, { ...init, signal: AbortSignal.timeout(60_000) }) });
  expect(textOf(await victim.sendMessage(sendReq('victim before')))).toContain('victim before');

  let most = 0;
  const sampler = setInterval(() => (most = Math.max(most, descriptors(pid))), 10);
  const callers = Array.from({ length: CALLERS }, (_v, c) => new UndiciAgent({ localAddress: `127.0.0.${c + 2}`, connections: CONNECTIONS }));
  const calls = callers.flatMap((from, c) => [
    ...Array.from({ length: STREAMS }, (_v, i) => call(proxy.base, from, `s-${c}-${i}`, true)),
    ...Array.from({ length: CALLS }, (_v, i) => call(proxy.base, from, `u-${c}-${i}`, false)),
  ]);
  // The victim calls while the callers' checks fill the guardian's line.
  await new Promise((r) => setTimeout(r, 500));
  const victimCalls = await Promise.all(
    [1, 2, 3].map((i) => victim.sendMessage(sendReq(`victim ${i}`)).then(textOf, (err: Error) => `failed: ${err.message}`)),
  );
  const answers = await Promise.all(calls);
  clearInterval(sampler);
  await Promise.all(callers.map((a) => a.close()));

  const allowed = answers.filter((a) => a === 'allowed').length;
  const refused = answers.filter((a) => a.startsWith('refused'));
  const byCode = new Map<string, number>();
  for (const r of refused) byCode.set(r.slice('refused '.length), (byCode.get(r.slice('refused '.length)) ?? 0) + 1);
  const broken = answers.filter((a) => a.startsWith('broken'));
  const output = proxy.stdout() + proxy.stderr();
  process.stdout.write(
    `descriptors: most ${most} of ${DESCRIPTORS}; calls ${answers.length}: allowed ${allowed}, refused ${refused.length} ${JSON.stringify(Object.fromEntries(byCode))}, broken ${broken.length}; ` +
      `victim allowed ${victimCalls.filter((v, i) => v.includes(`victim ${i + 1}`)).length}/3; EMFILE in the log: ${(output.match(/EMFILE/g) ?? []).length}\n`,
  );
  expect(broken).toEqual([]);
  for (const [i, v] of victimCalls.entries()) expect(v).toContain(`victim ${i + 1}`);
  expect(output).not.toContain('EMFILE');
  expect(most).toBeLessThan(DESCRIPTORS);
  // Still up, still answering.
  expect(proxy.child.exitCode).toBeNull();
  const metrics = await scrape(proxy);
  // The bounds in use, as fitted at start.
  for (const pool of ['listeners', 'agent', 'guardian_call', 'guardian_stream', 'push'])
    expect(sample(metrics, 'a2a_guard_connection_bounds', { pool })).toBe(38);
  expect(textOf(await victim.sendMessage(sendReq('victim after')))).toContain('victim after');
});
