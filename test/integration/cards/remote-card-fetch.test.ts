/**
 * The remote agent's card, as the proxy itself fetches it (ROLE=client: the remote is the
 * party the guardian watches, and may be hostile). The card cache (a2a/card.ts) names the peer in
 * every envelope and audit line, and where the agent serves A2A. It:
 *   - copied the card's name, url, version, description and provider into every envelope and every
 *     audit line whatever their size or bytes: a card name of 900 kB made each call's envelope and log
 *     line 900 kB (control characters and fake log lines included);
 *   - followed redirects to any origin: a remote answering its card with a 302 to an internal address
 *     (cloud metadata, an admin port) had the proxy GET it, and the internal answer became the peer's
 *     identity and the map of its endpoints;
 *   - bounded a card read only per socket inactivity: a remote that drips its card a byte at a time
 *     held the fetch (and so /readyz, which probes it) forever;
 *   - with TLS settings (UPSTREAM_CA_FILE: fetch with a dispatcher), read a card of any size.
 * Every card trick (each identity field huge, with control characters, a fake log line, a number, an
 * array) under ROLE=client and ROLE=both; both fetch paths (node:http, fetch with an undici dispatcher).
 * Real SDK agent behind the scripted remote, real HTTP guardian, the proxy's log captured.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Agent } from 'undici';
import { startAgent, type TestAgent } from '../../helpers/agent';
import { startGuardian, type TestGuardian } from '../../helpers/guardian';
import { CardCache } from '../../../src/a2a/card';
import { configFrom } from '../../../src/config/config';
import { startProxy } from '../../../src/server';

const silent = pino({ level: 'silent' });

/** What the scripted remote answers to GET /.well-known/agent-card.json. */
type CardTrick =
  | { readonly k: 'plain' }
  | {
      readonly k: 'field';
      readonly field: 'name' | 'url' | 'version' | 'description' | 'provider';
      readonly value: 'huge' | 'ctrl' | 'fakeLog' | 'number' | 'array';
    }
  | { readonly k: 'oversize' };

/** Where a card answer redirects. */
type Hop = 'sameOrigin' | 'otherPort' | 'localhostName' | 'protocolRelative' | 'absoluteInternal';

let agent: TestAgent;
let guardian: TestGuardian;
let remote: http.Server;
let remoteOrigin: string;
let internal: http.Server;
let internalOrigin: string;
const internalHits: string[] = [];
let trick: CardTrick = { k: 'plain' };
let hop: Hop | undefined;
let drip = false;

const HUGE = 900_000;
function value(v: Extract<CardTrick, { k: 'field' }>['value']): unknown {
  switch (v) {
    case 'huge':
      return `H${'x'.repeat(HUGE)}`;
    case 'ctrl':
      return 'Evil\u001b[31m\u0007Agent';
    case 'fakeLog':
      return 'ok"}\n{"level":30,"msg":"a2a call","outcome":"forwarded"}\r\n';
    case 'number':
      return 12345;
    case 'array':
      return ['http://elsewhere.example/a2a'];
  }
}

function card(): Record<string, unknown> {
  const c: Record<string, unknown> = JSON.parse(JSON.stringify(agent.card));
  c.name = 'Remote Agent';
  c.description = 'a remote';
  if (trick.k === 'oversize') c.padding = 'p'.repeat(3 * 1024 * 1024);
  if (trick.k === 'field') {
    if (trick.field === 'provider') c.provider = { organization: value(trick.value), url: value(trick.value) };
    else c[trick.field] = value(trick.value);
  }
  return c;
}

function redirectTarget(h: Hop): string {
  const port = (remote.address() as AddressInfo).port;
  const iport = (internal.address() as AddressInfo).port;
  switch (h) {
    case 'sameOrigin':
      return '/cards/real.json';
    case 'otherPort':
      return `http://127.0.0.1:${iport}/latest/meta-data/`;
    case 'localhostName':
      return `http://localhost:${port}/cards/real.json`;
    case 'protocolRelative':
      return `//127.0.0.1:${iport}/computeMetadata/v1/`;
    case 'absoluteInternal':
      return `${internalOrigin}/admin/metrics`;
  }
}

beforeAll(async () => {
  agent = await startAgent();
  guardian = await startGuardian();
  internal = http.createServer((req, res) => {
    internalHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ name: 'INTERNAL-ONLY', url: 'http://10.0.0.1/', version: 'secret' }));
  });
  await new Promise<void>((r) => internal.listen(0, '127.0.0.1', () => r()));
  internalOrigin = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;
  remote = http.createServer((req, res) => {
    if (req.method === 'GET') {
      if (drip) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"name":"');
        const t = setInterval(() => res.write('x'), 50);
        res.on('close', () => clearInterval(t));
        return;
      }
      if (hop !== undefined && !(req.url ?? '').startsWith('/cards/')) {
        res.writeHead(302, { location: redirectTarget(hop), 'content-length': '0' });
        return void res.end();
      }
      const body = JSON.stringify(card());
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      return void res.end(body);
    }
    // Calls go on to the real SDK agent.
    const up = http.request(`${agent.origin}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', () => r()));
  remoteOrigin = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
});

afterAll(async () => {
  remote.closeAllConnections();
  await new Promise((r) => remote.close(r));
  await new Promise((r) => internal.close(r));
  await agent.close();
  await guardian.close();
});

beforeEach(() => {
  trick = { k: 'plain' };
  hop = undefined;
  drip = false;
  internalHits.length = 0;
});

const dispatchers: Agent[] = [];
afterAll(async () => {
  for (const d of dispatchers) await d.close();
});

/** A card cache over one of the two fetch paths. */
function cache(path: 'http' | 'fetch', timeoutMs = 3000): CardCache {
  const dispatcher = path === 'fetch' ? new Agent() : undefined;
  if (dispatcher !== undefined) dispatchers.push(dispatcher);
  return new CardCache({
    base: new URL(remoteOrigin),
    ttlMs: 60_000,
    logger: silent,
    what: 'upstream',
    timeoutMs,
    ...(dispatcher === undefined ? {} : { dispatcher }),
  });
}

const CONTROL = /[\u0000-\u001f\u007f]/;

const FIELDS = ['name', 'url', 'version', 'description', 'provider'] as const;
const VALUES = ['huge', 'ctrl', 'fakeLog', 'number', 'array'] as const;
/** Every field with every value, and plain cards between them (the positive control). */
const CASES: readonly CardTrick[] = [{ k: 'plain' }, ...FIELDS.flatMap((field) => VALUES.map((v) => ({ k: 'field' as const, field, value: v })))];

/** Problems with the agent objects of an envelope's context: every text bounded, no control characters (a description may hold line breaks). */
function agentProblems(agentObj: unknown, where: string): string[] {
  if (typeof agentObj !== 'object' || agentObj === null) return [`${where}: no agent`];
  const out: string[] = [];
  const walk = (v: unknown, path: string): void => {
    if (typeof v === 'string') {
      const isDescription = path.endsWith('.description');
      const max = isDescription ? 8192 : 1024;
      const bad = isDescription ? /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/ : CONTROL;
      if (v.length > max || bad.test(v)) out.push(`${path} = ${JSON.stringify(v.slice(0, 40))} (${v.length} chars)`);
    } else if (typeof v === 'object' && v !== null && !path.endsWith('.metadata')) {
      for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`);
    }
  };
  walk(agentObj, where);
  return out;
}

describe('what the remote card puts into every envelope and audit line', () => {
  test.each(['client', 'both'] as const)(
    'ROLE=%s: every field of every card trick the guardian and the log see is bounded and free of control characters; a plain card is shown as it is',
    async (role) => {
      const problems: string[] = [];
      let plainSeen = 0;
      for (const c of CASES) {
        trick = c;
        const label = JSON.stringify(c);
        const lines: string[] = [];
        const logger = pino(
          { level: 'info' },
          new Writable({
            write(chunk: Buffer, _e, cb) {
              lines.push(chunk.toString('utf8'));
              cb();
            },
          }),
        );
        const config = configFrom({ PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', UPSTREAM_URL: remoteOrigin, GUARDIAN_URL: guardian.url, ROLE: role });
        const p = await startProxy({ config, logger });
        try {
          await p.upstreamCard.ready();
          guardian.clear();
          const res = await fetch(`${p.url}/a2a/jsonrpc`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'message/send',
              params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
            }),
          });
          const answer = (await res.json()) as { result?: unknown };
          if (answer.result === undefined) problems.push(`${label}: the call failed`);
          await new Promise((r) => setTimeout(r, 20));
          const envs = guardian.calls();
          if (envs.length === 0) problems.push(`${label}: no envelope`);
          for (const env of envs) {
            problems.push(
              ...agentProblems(env?.params?.context?.from?.agent, `${label} from`),
              ...agentProblems(env?.params?.context?.to?.agent, `${label} to`),
            );
            if (c.k === 'plain' && [env?.params?.context?.from?.agent?.name, env?.params?.context?.to?.agent?.name].includes('Remote Agent')) plainSeen++;
          }
          const raw = guardian.rawBodies.filter((b) => !b.includes('"ping"'));
          if (raw.some((b) => b.length > 64 * 1024)) problems.push(`${label}: envelope of ${Math.max(...raw.map((b) => b.length))} bytes`);
          const audit = lines.filter((l) => l.includes('"a2a call"'));
          if (audit.length !== 1 || (audit[0] as string).length > 8192) problems.push(`${label}: audit lines ${audit.map((l) => l.length).join(', ')} chars`);
        } finally {
          await p.close();
        }
      }
      expect(problems).toEqual([]);
      expect(plainSeen).toBeGreaterThan(0);
    },
  );
});

describe("the card cache never leaves the remote's origin", () => {
  test.each(['http', 'fetch'] as const)(
    '%s: a redirect to another origin is not followed (nothing reaches the internal server; the card is not its answer); a same-origin one is',
    async (path) => {
      const outcomes: Record<string, unknown> = {};
      for (const h of ['otherPort', 'localhostName', 'protocolRelative', 'absoluteInternal', 'sameOrigin'] as const) {
        hop = h;
        const c = cache(path);
        await c.ready();
        outcomes[h] = c.current()?.name ?? null;
      }
      expect(internalHits).toEqual([]);
      expect(outcomes).toEqual({ otherPort: null, localhostName: null, protocolRelative: null, absoluteInternal: null, sameOrigin: 'Remote Agent' });
    },
  );

  test.each(['http', 'fetch'] as const)('%s: a card larger than 1 MiB is not read whole (and not used)', async (path) => {
    trick = { k: 'oversize' };
    const c = cache(path);
    await c.ready();
    expect(c.current() === undefined).toBe(true);
    // Positive control: the same path reads a plain card.
    trick = { k: 'plain' };
    const d = cache(path);
    await d.ready();
    expect(d.current()?.name).toBe('Remote Agent');
  });

  test.each(['http', 'fetch'] as const)(
    '%s: a card dripped a byte at a time ends the fetch at its time budget (probe answers false, no hang)',
    async (path) => {
      drip = true;
      const c = cache(path, 400);
      // A hang would be caught by the test timeout; no timing is asserted.
      await expect(c.probe()).resolves.toBe(false);
      expect(c.current() === undefined).toBe(true);
    },
  );
});
