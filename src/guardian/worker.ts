/**
 * The embedded guardian's worker thread (./off-loop): decides on an envelope's JSON text, as the
 * standalone guardian does, with the policy text the proxy's thread validated and swapped in.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Envelope } from '../aos/schemas';
import { createEngine } from './engine';
import { policyFromText } from './policy';
import type { ToWorker, WorkerInit } from './off-loop';

const init = workerData as WorkerInit;
let engine = createEngine(policyFromText(init.policy, init.source));
const decoder = new TextDecoder();
const port = parentPort;

port?.on('message', (m: ToWorker) => {
  if (m.type === 'policy') {
    engine = createEngine(policyFromText(m.text, init.source));
    return;
  }
  try {
    const envelope = JSON.parse(typeof m.body === 'string' ? m.body : decoder.decode(m.body)) as Envelope;
    port.postMessage({ id: m.id, result: engine.decide(envelope) });
  } catch (err) {
    port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
  }
});
