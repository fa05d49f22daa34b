/** The lean undici entry points are undici's own exports (an upgrade that moves a file fails here). */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as undici from 'undici';
import { LeanPool, createAgent, createPool, dispatchRaw, headerNameOf, leanBuildConnector, type RawHandler } from '../../src/net/undici-pool';

describe('undici-pool', () => {
  it('Pool, Agent and buildConnector are the objects undici exports', async () => {
    expect(LeanPool).toBe(undici.Pool);
    const agent = createAgent({});
    expect(agent).toBeInstanceOf(undici.Agent);
    await agent.close();
    expect(typeof leanBuildConnector({})).toBe('function');
    expect(require('undici/lib/core/connect')).toBe(undici.buildConnector);
  });

  it('a RawHandler reaches the client as it is (not wrapped for the controller interface)', () => {
    const UnwrapHandler = require('undici/lib/handler/unwrap-handler') as { unwrap(h: object): object };
    const h: RawHandler = { onConnect: () => undefined, onHeaders: () => true, onData: () => true, onComplete: () => undefined, onError: () => undefined };
    expect(UnwrapHandler.unwrap(h)).toBe(h);
  });

  it('dispatchRaw: status, raw headers, body in order, pause and resume, complete', async () => {
    const big = Buffer.alloc(4 * 1024 * 1024, 0x61);
    const server = http.createServer((_req, res) => {
      res.writeHead(201, { 'X-One': 'a', 'set-cookie': ['c=1', 'd=2'], 'content-length': big.length });
      res.end(big);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const pool = createPool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1 });
    try {
      const got = await new Promise<{ status: number; headers: Record<string, string[]>; bytes: number; pauses: number }>((resolve, reject) => {
        let status = 0;
        const headers: Record<string, string[]> = {};
        let bytes = 0;
        let pauses = 0;
        let held = false;
        let resume: () => void = () => undefined;
        dispatchRaw(
          pool,
          { path: '/', method: 'GET' },
          {
            onConnect: () => undefined,
            onHeaders: (s, raw, r) => {
              status = s;
              for (let i = 0; i < raw.length; i += 2) (headers[headerNameOf(raw[i] as Buffer)] ??= []).push((raw[i + 1] as Buffer).toString('latin1'));
              resume = r;
              return true;
            },
            onData: (chunk) => {
              // Pause after every chunk: undici must hold the body until resume().
              if (held) reject(new Error('a chunk arrived while the body was paused'));
              bytes += chunk.length;
              pauses++;
              held = true;
              setTimeout(() => {
                held = false;
                resume();
              }, 2);
              return false;
            },
            onComplete: () => (held ? reject(new Error('completed while paused')) : resolve({ status, headers, bytes, pauses })),
            onError: reject,
          },
        );
      });
      expect(got.status).toBe(201);
      expect(got.headers['x-one']).toEqual(['a']);
      expect(got.headers['set-cookie']).toEqual(['c=1', 'd=2']);
      expect(got.bytes).toBe(big.length);
      expect(got.pauses).toBeGreaterThan(1);
    } finally {
      await pool.close();
      server.close();
    }
  });
});
