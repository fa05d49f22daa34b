/**
 * A minimal, fast A2A agent (v0.3 JSON-RPC at /a2a/jsonrpc) for load runs where the SDK agent would
 * be the bottleneck: `npm run bench:ownership` and the 10,000-task ownership load test. Answers the
 * way the SDK agent does for what it supports:
 *
 *   message/send          new task (COMPLETED), or the named task continued; -32001 for an unknown taskId
 *   tasks/get             the task, or -32001 "Task not found: <id>"
 *   tasks/cancel          the task (CANCELED), or -32001
 *   ListTasks (A2A-Version: 1.0)   every task, v1.0 shape
 *
 * It counts every call it acted on, per method and per task id, so a test can tell exactly what
 * reached the agent.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface StubTask {
  readonly id: string;
  readonly contextId: string;
  state: string;
}

export interface StubAgent {
  readonly origin: string;
  readonly tasks: Map<string, StubTask>;
  /** Calls per JSON-RPC method. */
  readonly calls: Map<string, number>;
  /** Calls that named an existing task, per task id (get, cancel, continuation). */
  readonly reached: Map<string, number>;
  reset(): void;
  close(): Promise<void>;
}

type Rpc = { id?: unknown; method?: unknown; params?: Record<string, unknown> };

export async function startStubAgent(): Promise<StubAgent> {
  const tasks = new Map<string, StubTask>();
  const calls = new Map<string, number>();
  const reached = new Map<string, number>();
  let origin = '';

  const task = (t: StubTask) => ({ kind: 'task', id: t.id, contextId: t.contextId, status: { state: t.state } });
  const v1Task = (t: StubTask) => ({
    id: t.id,
    contextId: t.contextId,
    status: { state: t.state === 'completed' ? 'TASK_STATE_COMPLETED' : 'TASK_STATE_CANCELED' },
  });
  const notFound = (id: unknown) => ({ error: { code: -32001, message: `Task not found: ${String(id)}` } });
  const touch = (id: string) => reached.set(id, (reached.get(id) ?? 0) + 1);

  function answer(rpc: Rpc): Record<string, unknown> {
    const p = rpc.params ?? {};
    switch (rpc.method) {
      case 'message/send': {
        const m = (p.message ?? {}) as Record<string, unknown>;
        if (typeof m.taskId === 'string' && m.taskId !== '') {
          const t = tasks.get(m.taskId);
          if (t === undefined) return notFound(m.taskId);
          touch(t.id);
          return { result: task(t) };
        }
        const t: StubTask = {
          id: randomUUID(),
          contextId: typeof m.contextId === 'string' && m.contextId !== '' ? m.contextId : randomUUID(),
          state: 'completed',
        };
        tasks.set(t.id, t);
        return { result: task(t) };
      }
      case 'tasks/get':
      case 'tasks/cancel': {
        const t = tasks.get(String(p.id));
        if (t === undefined) return notFound(p.id);
        touch(t.id);
        if (rpc.method === 'tasks/cancel') t.state = 'canceled';
        return { result: task(t) };
      }
      case 'ListTasks':
        return { result: { tasks: [...tasks.values()].map(v1Task), nextPageToken: '', pageSize: tasks.size, totalSize: tasks.size } };
      default:
        return { error: { code: -32601, message: 'Method not found' } };
    }
  }

  const card = () =>
    JSON.stringify({
      name: 'stub',
      description: 'stub agent',
      version: '1.0.0',
      protocolVersion: '0.3.0',
      url: `${origin}/a2a/jsonrpc`,
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: false },
      defaultInputModes: ['text'],
      defaultOutputModes: ['text'],
      skills: [],
      supportedInterfaces: [{ url: `${origin}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }],
    });

  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && (req.url ?? '').startsWith('/.well-known/agent-card.json')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(card());
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let rpc: Rpc;
      try {
        rpc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Rpc;
      } catch {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload."}}');
        return;
      }
      const method = String(rpc.method);
      calls.set(method, (calls.get(method) ?? 0) + 1);
      const body = JSON.stringify({ jsonrpc: '2.0', id: rpc.id ?? null, ...answer(rpc) });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    tasks,
    calls,
    reached,
    reset: () => {
      tasks.clear();
      calls.clear();
      reached.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
