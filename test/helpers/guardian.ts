/**
 * A scriptable AOS guardian over real HTTP (JSON-RPC 2.0 over POST, any path) for tests.
 *
 *   const g = await startGuardian();
 *   g.script((env) => (textIn(env).includes('secret') ? { decision: 'deny', reasonCode: ['PII'] } : { decision: 'allow' }));
 *   ... point the proxy at g.url ...
 *   expect(g.envelopes).toHaveLength(1);
 *   await g.close();
 *
 * `ping` is answered by a separate ping script (default: {status:'connected', version, timestamp});
 * every other method goes through `script`.
 */
import http from 'node:http';
import { closeServer, listen } from './net';

export type GuardianDecision = 'allow' | 'deny' | 'modify';

export interface GuardianDecisionReply {
  decision: GuardianDecision;
  /** result.message (default: "<decision>ed by test guardian"). `null` = leave it out (schema-invalid). */
  message?: string | null;
  reasonCode?: string[];
  reasoning?: string;
  data?: Record<string, unknown>;
  /** For modify: becomes result.modifiedRequest = {...envelope, params: {...envelope.params, payload: modifiedPayload}}. */
  modifiedPayload?: object;
  /** Full control over result.modifiedRequest (wins over modifiedPayload). */
  modifiedRequest?: unknown;
  /** Wait this long before answering (e.g. to trigger the proxy's guardian timeout). */
  delayMs?: number;
}

export type GuardianFault =
  | 'refuse' // destroy the socket without answering
  | 'hang' // never answer (until close())
  | 'http500' // HTTP 500, text body
  | 'garbage' // HTTP 200 with a non-JSON body
  | 'rpcError' // JSON-RPC error object (-32603)
  | 'badSchema' // result without `decision`
  | 'wrongId'; // a valid allow, but with a different id

export type GuardianReply =
  | GuardianDecisionReply
  | { fault: GuardianFault; delayMs?: number }
  | { raw: { status: number; body: string; headers?: Record<string, string> }; delayMs?: number };

/** Parsed AOS request envelope as received (loosely typed for convenience in tests). */
export type Envelope = any;
export type GuardianScript = (envelope: Envelope) => GuardianReply | Promise<GuardianReply>;

export interface TestGuardian {
  /** http://127.0.0.1:<port> (the guardian answers on any path). */
  url: string;
  /** Every parsed JSON request body, in arrival order (pings included). */
  envelopes: Envelope[];
  /** Request headers (lower-cased), same order as `envelopes`. */
  headers: Record<string, string>[];
  /** Raw request bodies, including unparsable ones. */
  rawBodies: string[];
  /** The same bodies' bytes, as they arrived. */
  rawBytes: Buffer[];
  /** Envelopes whose method is not `ping`. */
  calls(): Envelope[];
  /**
   * Calls (not pings) being answered now, the most at once, and those whose request the proxy closed
   * before their answer (cancelled), since the last `clear()`.
   */
  readonly load: { readonly inFlight: number; readonly maxInFlight: number; readonly abandoned: number };
  /**
   * The A2A payloads this guardian approved, as JSON text: the payload of each call answered `allow`
   * and the replacement of each `modify`. Denials and faults approve nothing.
   */
  approved(): string[];
  /** Set how non-ping requests are answered. */
  script(fn: GuardianScript): void;
  /** Set how `ping` is answered (default: connected). */
  scriptPing(fn: GuardianScript): void;
  /** Reset both scripts to their defaults. */
  reset(): void;
  /** Forget recorded envelopes / headers / bodies. */
  clear(): void;
  close(): Promise<void>;
  server: http.Server;
}

export const GUARDIAN_VERSION = '0.1.0-test';

const defaultScript: GuardianScript = () => ({ decision: 'allow', message: 'allowed by test guardian' });
const defaultPing: GuardianScript = () => ({ decision: 'allow' }); // marker; ping answered specially below

function headerRecord(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Start a guardian on 127.0.0.1:0. */
export async function startGuardian(): Promise<TestGuardian> {
  const envelopes: Envelope[] = [];
  const headers: Record<string, string>[] = [];
  const rawBodies: string[] = [];
  const rawBytes: Buffer[] = [];
  const approvedPayloads: string[] = [];
  let script: GuardianScript = defaultScript;
  let pingScript: GuardianScript = defaultPing;
  let closed = false;
  const timers = new Set<NodeJS.Timeout>();
  const load = { inFlight: 0, maxInFlight: 0, abandoned: 0 };
  /** Bumped by clear(): a call that started before it is not counted after it. */
  let epoch = 0;
  const track = (res: http.ServerResponse): void => {
    const mine = epoch;
    load.inFlight++;
    load.maxInFlight = Math.max(load.maxInFlight, load.inFlight);
    res.once('close', () => {
      if (mine !== epoch) return;
      load.inFlight--;
      if (!res.writableFinished) load.abandoned++;
    });
  };

  const delay = (ms: number | undefined): Promise<void> =>
    !ms || ms <= 0
      ? Promise.resolve()
      : new Promise((resolve) => {
          const t = setTimeout(() => {
            timers.delete(t);
            resolve();
          }, ms);
          timers.add(t);
        });

  const answer = async (req: http.IncomingMessage, res: http.ServerResponse, env: Envelope): Promise<void> => {
    const id = env?.id ?? null;
    const isPing = env?.method === 'ping';
    let reply: GuardianReply;
    try {
      reply = isPing && pingScript === defaultPing ? { decision: 'allow' } : await (isPing ? pingScript : script)(env);
    } catch (err) {
      sendJson(res, 200, { jsonrpc: '2.0', id, error: { code: -32603, message: `test guardian script threw: ${String(err)}` } });
      return;
    }
    await delay(reply.delayMs);
    if (closed || res.destroyed) return;

    if ('raw' in reply) {
      res.writeHead(reply.raw.status, { 'content-type': 'application/json', ...(reply.raw.headers ?? {}) });
      res.end(reply.raw.body);
      return;
    }
    if ('fault' in reply) {
      switch (reply.fault) {
        case 'refuse':
          req.socket.destroy();
          return;
        case 'hang':
          return; // never answer; close() destroys the socket
        case 'http500':
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('Internal Server Error');
          return;
        case 'garbage':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('this is <not> json {');
          return;
        case 'rpcError':
          sendJson(res, 200, { jsonrpc: '2.0', id, error: { code: -32603, message: 'guardian internal error' } });
          return;
        case 'badSchema':
          sendJson(res, 200, { jsonrpc: '2.0', id, result: { message: 'no decision here', reasonCode: ['X'] } });
          return;
        case 'wrongId':
          sendJson(res, 200, { jsonrpc: '2.0', id: `wrong-${String(id)}`, result: { decision: 'allow', message: 'allowed (wrong id)' } });
          return;
      }
    }
    if (isPing && pingScript === defaultPing) {
      sendJson(res, 200, { jsonrpc: '2.0', id, result: { status: 'connected', version: GUARDIAN_VERSION, timestamp: new Date().toISOString() } });
      return;
    }
    const r = reply as GuardianDecisionReply;
    const result: Record<string, unknown> = { decision: r.decision };
    if (r.message !== null) result['message'] = r.message ?? `${r.decision} by test guardian`;
    if (r.reasonCode !== undefined) result['reasonCode'] = r.reasonCode;
    if (r.reasoning !== undefined) result['reasoning'] = r.reasoning;
    if (r.data !== undefined) result['data'] = r.data;
    if (r.modifiedRequest !== undefined) result['modifiedRequest'] = r.modifiedRequest;
    else if (r.modifiedPayload !== undefined) {
      result['modifiedRequest'] = { ...env, params: { ...(env?.params ?? {}), payload: r.modifiedPayload } };
    }
    if (r.decision === 'allow') approvedPayloads.push(JSON.stringify(env?.params?.payload));
    const modified = (result['modifiedRequest'] as { params?: { payload?: unknown } } | undefined)?.params?.payload;
    if (r.decision === 'modify' && modified !== undefined) approvedPayloads.push(JSON.stringify(modified));
    sendJson(res, 200, { jsonrpc: '2.0', id, result });
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const text = bytes.toString('utf8');
      rawBodies.push(text);
      rawBytes.push(bytes);
      if (req.method !== 'POST') {
        sendJson(res, 405, { error: 'POST only' });
        return;
      }
      let env: Envelope;
      try {
        env = JSON.parse(text);
      } catch {
        sendJson(res, 200, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
        return;
      }
      envelopes.push(env);
      headers.push(headerRecord(req.headers));
      if (env?.method !== 'ping') track(res);
      answer(req, res, env).catch(() => {
        if (!res.headersSent && !res.destroyed) sendJson(res, 500, { error: 'test guardian failure' });
      });
    });
  });
  const url = await listen(server);

  return {
    url,
    envelopes,
    headers,
    rawBodies,
    rawBytes,
    server,
    calls: () => envelopes.filter((e) => e?.method !== 'ping'),
    get load() {
      return { ...load };
    },
    approved: () => [...approvedPayloads],
    script(fn) {
      script = fn;
    },
    scriptPing(fn) {
      pingScript = fn;
    },
    reset() {
      script = defaultScript;
      pingScript = defaultPing;
    },
    clear() {
      envelopes.length = 0;
      headers.length = 0;
      rawBodies.length = 0;
      rawBytes.length = 0;
      approvedPayloads.length = 0;
      epoch++;
      load.inFlight = 0;
      load.maxInFlight = 0;
      load.abandoned = 0;
    },
    async close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await closeServer(server);
    },
  };
}

/** An http://127.0.0.1:<port> URL where nothing listens (a port that was just bound and released). */
export async function deadGuardianUrl(): Promise<string> {
  const server = http.createServer();
  const url = await listen(server);
  await closeServer(server);
  return url;
}

/** All text and string data values in an envelope's A2A payload (for content-based scripts). */
export function textIn(envelope: Envelope): string {
  const out: string[] = [];
  const walk = (x: unknown, key: string): void => {
    if (typeof x === 'string') {
      if (key === 'text' || key === 'value' || key === 'data') out.push(x);
    } else if (Array.isArray(x)) x.forEach((v) => walk(v, key));
    else if (x && typeof x === 'object') for (const [k, v] of Object.entries(x)) walk(v, k === 'data' || key === 'data' ? 'data' : k);
  };
  walk(envelope?.params?.payload, '');
  return out.join(' ');
}

/** A response-hook envelope carries an A2A response (no `method`) as its payload. */
export const isResponseEnvelope = (e: Envelope): boolean => e?.params?.payload?.method === undefined;
