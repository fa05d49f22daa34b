/**
 * Bench guardian: an instant AOS guardian (JSON-RPC over HTTP POST, any path). Every hook is
 * answered `allow` with the envelope's id; `ping` is answered `connected`. No policy, no logging.
 * Env: PORT (default 0 = ephemeral), DELAY_MS (default 0: each decision is answered this many ms
 * after its envelope arrived, as a guardian that thinks would; calls overlap, none waits for another),
 * SLOW_TEXT and SLOW_MS (an envelope containing SLOW_TEXT is answered after SLOW_MS instead: content slow to judge).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fail, serveIpc } from './ipc';

let decisions = 0;
const DELAY_MS = Number(process.env.DELAY_MS ?? 0);
const SLOW_TEXT = process.env.SLOW_TEXT;
const SLOW_MS = Number(process.env.SLOW_MS ?? 0);

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let id: unknown = null;
    let method: unknown;
    let text = '';
    try {
      text = (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8');
      const env = JSON.parse(text) as { id?: unknown; method?: unknown };
      id = env.id ?? null;
      method = env.method;
    } catch {
      const body = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      return void res.end(body);
    }
    const result =
      method === 'ping' ? { status: 'connected', version: 'bench-guardian', timestamp: new Date().toISOString() } : { decision: 'allow', message: 'ok' };
    if (method !== 'ping') decisions++;
    const body = JSON.stringify({ jsonrpc: '2.0', id, result });
    const send = () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    const delay = method === 'ping' ? 0 : SLOW_TEXT !== undefined && text.includes(SLOW_TEXT) ? SLOW_MS : DELAY_MS;
    if (delay > 0) setTimeout(send, delay);
    else send();
  });
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  serveIpc(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, () => decisions);
});
server.on('error', (e) => fail('guardian-child', e));
