/**
 * The embedded guardian's worker thread (./off-loop): decides on an envelope's JSON text, as the
 * standalone guardian does, with the policy text the proxy's thread validated and swapped in.
 */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Envelope, SuccessResult } from '../aos/schemas';
import { createEngine } from './engine';
import { policyFromText } from './policy';
import { LARGE_BODY } from '../core/turns';
import type { FromWorker, ToWorker, WorkerInit } from './off-loop';

const init = workerData as WorkerInit;

/**
 * How much lower this thread's CPU priority is than the proxy's (nice steps). The worker judges only
 * large envelopes; when the cores are busy, a costly payload then waits for a core rather than the
 * small calls of every other caller, which the proxy's own thread serves. Linux keeps the nice value
 * per thread; elsewhere it is the whole process's, so this is left alone there.
 */
export const WORKER_NICE_STEPS = 10;
if (process.platform === 'linux') {
  try {
    os.setPriority(0, Math.min(19, os.getPriority(0) + WORKER_NICE_STEPS));
  } catch {
    // Not permitted (a container without the capability to renice): judged at the proxy's priority.
  }
}
let engine = createEngine(policyFromText(init.policy, init.source));
const port = parentPort;

/** The envelope being received: its id and its text so far (bytes decoded as they come, a character split between parts included). */
let current = { id: 0, text: [] as string[], decoder: new TextDecoder() };

port?.on('message', (m: ToWorker) => {
  if (m.type === 'policy') {
    engine = createEngine(policyFromText(m.text, init.source));
    return;
  }
  // Parts of an envelope the proxy's thread abandoned are dropped when the next one begins.
  if (m.id !== current.id) current = { id: m.id, text: [], decoder: new TextDecoder() };
  if (m.type === 'part') {
    current.text.push(typeof m.part === 'string' ? m.part : current.decoder.decode(m.part, { stream: true }));
    return;
  }
  const text = current.text.join('') + current.decoder.decode();
  current = { id: 0, text: [], decoder: new TextDecoder() };
  try {
    const envelope = JSON.parse(text) as Envelope;
    answer(m.id, engine.decide(envelope));
  } catch (err) {
    port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
  }
});

/**
 * A large modify's payload goes back serialized here, as UTF-8 bytes moved (not copied) to the proxy's thread,
 * which parses them a piece per turn and forwards them as they are: a payload sent as objects would be
 * rebuilt there in one task (a 100,000-value payload: ~100 ms with its garbage collection), then serialized again.
 */
function answer(id: number, result: SuccessResult): void {
  const modified = result.decision === 'modify' ? result.modifiedRequest : undefined;
  if (modified !== undefined) {
    const json = JSON.stringify(modified.params.payload);
    if (json.length >= LARGE_BODY) {
      const payload = new TextEncoder().encode(json);
      const rest: SuccessResult = { ...result, modifiedRequest: { ...modified, params: { ...modified.params, payload: {} } } };
      port?.postMessage({ id, result: rest, payload } satisfies FromWorker, [payload.buffer as ArrayBuffer]);
      return;
    }
  }
  port?.postMessage({ id, result } satisfies FromWorker);
}
