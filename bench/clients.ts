/**
 * The load generator's clients: autocannon for unary load, a µs-timing node:http client for
 * sequential calls and SSE streams.
 */
import http from 'node:http';
import autocannon from 'autocannon';

export const RPC_PATH = '/a2a/jsonrpc';
export const UNARY_HEADERS = { 'content-type': 'application/json', 'a2a-version': '1.0' };
export const unaryBody = (text: string, messageId = 'bench-unary'): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'SendMessage',
    params: { message: { messageId, role: 'ROLE_USER', parts: [{ text }] } },
  });
export const UNARY_BODY = unaryBody('hello from the bench');
export const streamBody = (text: string): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 2,
    method: 'SendStreamingMessage',
    params: { message: { messageId: 'bench-stream', role: 'ROLE_USER', parts: [{ text }] } },
  });

export interface LoadResult {
  readonly n: number;
  readonly bad: number;
  readonly seconds: number;
  readonly lat: Float64Array;
}

/** `timeout`: seconds autocannon waits for one answer (longer under valgrind, where a call takes ~50x longer). */
export function loadRound(url: string, amount: number, connections: number, body = UNARY_BODY, path = RPC_PATH, timeout = 10): Promise<LoadResult> {
  const lat = new Float64Array(amount);
  let k = 0;
  const t0 = process.hrtime.bigint();
  // autocannon only notices that `amount` is reached at its 1 s tick, so time the run up to the last answer.
  let last = t0;
  return new Promise<LoadResult>((resolve, reject) => {
    const inst = autocannon(
      { url: url + path, method: 'POST', headers: UNARY_HEADERS, body, connections, amount, timeout },
      (err: unknown, r: autocannon.Result) => {
        if (err) return reject(err as Error);
        resolve({ n: r.requests.total, bad: r.non2xx + r.errors, seconds: Number(last - t0) / 1e9, lat: lat.slice(0, k) });
      },
    );
    inst.on('response', (_c, status, _b, rt) => {
      last = process.hrtime.bigint();
      if (k < amount && status >= 200 && status < 300) lat[k++] = rt;
    });
  });
}

const seqAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });

export function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  agent: http.Agent | false = seqAgent,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url + RPC_PATH, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `count` sequential requests on one keep-alive connection; latencies in ms. */
export async function seqRound(url: string, count: number): Promise<{ lat: Float64Array; bad: number }> {
  const lat = new Float64Array(count);
  let bad = 0;
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    const r = await post(url, UNARY_BODY, UNARY_HEADERS);
    lat[i] = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status !== 200 || !r.text.includes('"result"')) bad++;
  }
  return { lat, bad };
}

export interface StreamResult {
  /** request start -> first SSE event, ms */
  readonly ttfe: number;
  /** request start -> last SSE event, ms */
  readonly total: number;
  readonly events: number;
  /** agent publish -> client receipt, per artifact event, ms */
  readonly eventLat: number[];
  readonly error: string | undefined;
}

/** One SSE stream on the keep-alive connection; `expected` SSE events make it a success. */
export function streamOnce(url: string, body: string, expected: number): Promise<StreamResult> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.request(
      url + RPC_PATH,
      {
        method: 'POST',
        agent: seqAgent,
        headers: { ...UNARY_HEADERS, accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.setEncoding('utf8');
        let buf = '';
        let first = -1n;
        let last = -1n;
        let events = 0;
        let error: string | undefined = res.statusCode === 200 ? undefined : `HTTP ${res.statusCode}`;
        const eventLat: number[] = [];
        res.on('data', (chunk: string) => {
          const now = process.hrtime.bigint();
          buf += chunk;
          for (let idx = buf.indexOf('\n\n'); idx !== -1; idx = buf.indexOf('\n\n')) {
            const ev = buf.slice(0, idx);
            buf = buf.slice(idx + 2);
            if (!ev.includes('data:')) continue;
            events++;
            if (first < 0n) first = now - t0;
            last = now - t0;
            if (ev.startsWith('event: error') || ev.includes('"error":')) error ??= ev.slice(0, 300);
            const m = /t=(\d+)/.exec(ev);
            if (m?.[1] !== undefined) eventLat.push(Number(now - BigInt(m[1])) / 1e6);
          }
        });
        res.on('end', () => {
          if (events !== expected) error ??= `expected ${expected} SSE events, got ${events}: ${buf.slice(0, 300)}`;
          resolve({ ttfe: Number(first) / 1e6, total: Number(last) / 1e6, events, eventLat, error });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
