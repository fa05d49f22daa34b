/**
 * Connections are a shared resource: each holds a file descriptor and ~9 KiB while it waits. One caller opening
 * hundreds and sending nothing (or its headers a byte at a time) locked every other caller out once the proxy ran
 * out of descriptors. Past MAX_CONNECTIONS (lowered to fit the descriptors the process may open) the caller
 * holding the most gives up its oldest idle connection for the new one; a connection carrying a call is never cut.
 * The attacker connects from 127.0.0.2, the victims (real SDK clients, JSON-RPC and gRPC) from 127.0.0.1.
 */
import net from 'node:net';
import { makeClient, sendReq, textOf } from '../../helpers/agent';
import { makeGrpcClient } from '../../helpers/grpc';
import { waitFor } from '../../helpers/net';
import { counted, useStack } from '../../helpers/proxy-harness';
import { MAIN, ensureBuilt, reapAll, sample, scrape, startProxyProcess } from '../../helpers/proxy-process';

jest.setTimeout(90_000);

const stack = useStack({ grpc: true });
afterAll(() => reapAll());

/** An idle connection from the attacker's address; `partial`: it sends the start of a request's headers, never the end. */
function idle(port: number, partial: boolean): Promise<{ socket: net.Socket; closed: () => boolean }> {
  return new Promise((resolve) => {
    let closed = false;
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
    const done = () => resolve({ socket, closed: () => closed });
    socket.once('connect', () => {
      if (partial) socket.write('POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\n');
      done();
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      closed = true;
      done();
    });
    // A proxy out of descriptors may leave the connection in its backlog, never accepted.
    setTimeout(done, 2000).unref();
  });
}

test("a caller's idle connections past the process's descriptors: its oldest are closed, and other callers' calls still go through", async () => {
  ensureBuilt();
  // 512 descriptors: 448 past the reserve, a third each to the listeners, the agent and the guardian's calls: at most 149 connections.
  const proxy = await startProxyProcess(
    { UPSTREAM_URL: stack.agent.origin, GUARDIAN_URL: stack.guardian.url, ROLE: 'server' },
    { node: 'bash', script: '-c', args: [`ulimit -n 512 && exec "$0" "${MAIN}"`, process.execPath] },
  );
  const attacker: Array<{ socket: net.Socket; closed: () => boolean }> = [];
  for (let i = 0; i < 600; i += 50) {
    attacker.push(...(await Promise.all(Array.from({ length: 50 }, (_v, k) => idle(proxy.port, (i + k) % 2 === 0)))));
  }
  // The proxy gave up the attacker's oldest connections as new ones came: what is open is within the bound.
  await waitFor(() => attacker.filter((c) => !c.closed()).length <= 149, 10_000, 'attacker connections within the bound');
  expect(attacker.slice(0, 100).every((c) => c.closed())).toBe(true);
  // The victim's calls go through (each connection it opens takes an idle one of the attacker's place).
  const victim = await makeClient(proxy.base, 'JSONRPC', '1.0', { fetchImpl: (u, init) => fetch(u, { ...init, signal: AbortSignal.timeout(10_000) }) });
  for (let i = 0; i < 3; i++) expect(textOf(await victim.sendMessage(sendReq(`victim ${i}`)))).toContain(`victim ${i}`);
  expect(sample(await scrape(proxy), 'a2a_guard_caller_limited_total', { resource: 'connections' })).toBeGreaterThanOrEqual(451);
  for (const c of attacker) c.socket.destroy();
});

test('at MAX_CONNECTIONS a connection carrying a call is never cut; the HTTP and gRPC listeners share the bound', async () => {
  const proxy = await stack.proxy({ ROLE: 'server', MAX_CONNECTIONS: '20', GRPC_PORT: '0', INSPECT_CARDS: 'false' });
  const port = Number(new URL(proxy.url).port);
  // The attacker's first connection carries a call the guardian holds while the attacker opens idle ones.
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  stack.guardian.script(async (env) => {
    if (JSON.stringify(env).includes('held call')) await held;
    return { decision: 'allow' };
  });
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'SendMessage',
    params: { message: { messageId: 'm-held', role: 'ROLE_USER', parts: [{ text: 'held call' }] } },
  });
  const busy = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
  let answer = '';
  busy.on('data', (d: Buffer) => (answer += d.toString()));
  busy.write(
    `POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await waitFor(() => stack.guardian.calls().some((e) => JSON.stringify(e).includes('held call')));
  const attacker = await Promise.all(Array.from({ length: 40 }, (_v, i) => idle(port, i % 2 === 0)));
  await waitFor(() => attacker.filter((c) => !c.closed()).length <= 19);
  // A victim over gRPC and one over JSON-RPC: each new connection takes an idle one of the attacker's place.
  const { client: grpcVictim } = await makeGrpcClient(proxy.url);
  expect(textOf(await grpcVictim.sendMessage(sendReq('victim over gRPC')))).toContain('victim over gRPC');
  const victim = await makeClient(proxy.url, 'JSONRPC', '1.0');
  expect(textOf(await victim.sendMessage(sendReq('victim over JSON-RPC')))).toContain('victim over JSON-RPC');
  expect(await counted(proxy, 'a2a_guard_caller_limited_total', 'connections')).toBeGreaterThanOrEqual(21);
  // The held call's connection was never cut: its answer arrives once the guardian decides.
  expect(busy.destroyed).toBe(false);
  release();
  await waitFor(() => answer.includes('echo: held call'), 10_000, 'the held call answered');
  expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  busy.destroy();
  for (const c of attacker) c.socket.destroy();
});
