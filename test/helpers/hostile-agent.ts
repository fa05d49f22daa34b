/**
 * A hostile A2A agent on a raw TCP socket, for tests of hostile answers: each test scripts the exact bytes of the
 * next answer (status line, repeated header lines, framing), and every call it got is kept. It serves
 * the card of a real SDK agent (JSON-RPC and REST, v1.0 and v0.3, extended card) pointed at itself.
 *
 *   const hostile = useHostileAgent();
 *   hostile.script = (r) => answer(200, [['content-type', 'application/json']], JSON.stringify({ ... r.id ... }));
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startAgent } from './agent';

export interface Req {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly text: string;
  readonly json: Record<string, unknown> | undefined;
  readonly id: unknown;
}
/** The answer's bytes; a promise holds the answer until it resolves. */
export type Script = (r: Req) => Buffer | Promise<Buffer>;

export /** A raw HTTP/1.1 answer: header lines as given (duplicates kept), then the body framed as asked. */
function answer(
  status: number,
  headers: readonly (readonly [string, string])[],
  body: Buffer | string,
  framing: 'length' | 'chunked' | 'none' = 'length',
  reason = 'X',
): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  let head = `HTTP/1.1 ${status} ${reason}\r\n`;
  for (const [k, v] of headers) head += `${k}: ${v}\r\n`;
  if (framing === 'length') head += `content-length: ${b.length}\r\n`;
  if (framing === 'chunked') head += 'transfer-encoding: chunked\r\n';
  head += 'connection: close\r\n\r\n';
  const framed = framing === 'chunked' ? Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]) : b;
  return Buffer.concat([Buffer.from(head, 'latin1'), framed]);
}

export function parseReq(head: string, body: Buffer): Req {
  const [line, ...rest] = head.split('\r\n');
  const [method, path] = (line ?? '').split(' ');
  const headers: Record<string, string> = {};
  for (const l of rest) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  const text = body.toString('utf8');
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { method: method ?? '', path: path ?? '', headers, text, json, id: json?.id ?? null };
}

export interface HostileAgent {
  /** How the next calls are answered (undefined: an empty 500). */
  script: Script | undefined;
  /** The agent's public card (well-known path) instead of `cardText`, when set. */
  publicCard: string | undefined;
  /** Every call but the card fetches, in order. */
  readonly received: Req[];
  readonly origin: string;
  readonly hostPort: string;
  /** The real SDK agent's card, its URLs pointing here. */
  readonly cardText: string;
}

/** Start the hostile agent before the file's tests and close it after them. */
export function useHostileAgent(): HostileAgent {
  let remote: net.Server | undefined;
  const state = {
    script: undefined as Script | undefined,
    publicCard: undefined as string | undefined,
    received: [] as Req[],
    origin: '',
    hostPort: '',
    cardText: '',
  };
  beforeAll(async () => {
    const real = await startAgent({ extendedAgentCard: true });
    const realCard = await (await fetch(`${real.origin}/.well-known/agent-card.json`)).text();
    remote = net.createServer((sock) => {
      let buf = Buffer.alloc(0);
      sock.on('error', () => undefined);
      sock.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const len = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + len) return;
        const req = parseReq(head, buf.subarray(end + 4, end + 4 + len));
        buf = Buffer.alloc(0);
        if (req.method === 'GET' && req.path.startsWith('/.well-known/')) {
          sock.end(answer(200, [['content-type', 'application/json']], state.publicCard ?? state.cardText));
          return;
        }
        state.received.push(req);
        const out = state.script === undefined ? answer(500, [], '') : state.script(req);
        if (out instanceof Promise)
          void out.then(
            (b) => sock.end(b),
            () => sock.destroy(),
          );
        else sock.end(out);
      });
    });
    await new Promise<void>((r) => remote?.listen(0, '127.0.0.1', r));
    state.hostPort = `127.0.0.1:${(remote.address() as AddressInfo).port}`;
    state.origin = `http://${state.hostPort}`;
    state.cardText = realCard.split(real.origin).join(state.origin);
    await real.close();
  });
  afterAll(async () => {
    await new Promise<void>((r) => (remote === undefined ? r() : remote.close(() => r())));
  });
  return state;
}

/**
 * Does a message `params` naming `context`, sent as JSON-RPC `SendMessage` to the proxy at `proxyUrl` with
 * `headers` (another caller's identity), reach the hostile agent? (That caller joined the conversation.)
 * The agent answers it with a plain message naming no task.
 */
export async function messageReaches(
  hostile: HostileAgent,
  proxyUrl: string,
  headers: Record<string, string>,
  params: unknown,
  context: string,
): Promise<boolean> {
  hostile.received.length = 0;
  hostile.script = (r) =>
    answer(
      200,
      [['content-type', 'application/json']],
      JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { message: { messageId: 'b', role: 'ROLE_AGENT', parts: [{ text: 'welcome B' }] } } }),
    );
  await fetch(`${proxyUrl}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'SendMessage', params }),
  }).then((r) => r.text());
  return hostile.received.some((r) => r.text.includes(context));
}
