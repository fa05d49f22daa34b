/**
 * The cost of verified identities: the same sidecar pair (load -> ROLE=client -> ROLE=server -> agent)
 * without assertions and with them (the client signs one ES256 assertion per call, the server verifies
 * it, checks the replay cache and requires it), in interleaved rounds. Returns the report lines.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateAssertionKey } from '../src/identity/keygen';
import { loadRound, post, seqRound, UNARY_BODY, UNARY_HEADERS } from './clients';
import { f, fx, median, pct, progress, rotated, signU, sortedCopy, startChild, table, type Child, type Pinning } from './lib';
import type { StatsReply } from './ipc';

export interface IdentityOptions {
  readonly rounds: number;
  readonly amount: number;
  readonly connections: number;
  readonly seq: number;
  readonly logLevel: string;
}

export async function identityPhase(agent: Child, guardian: Child, pin: Pinning, o: IdentityOptions): Promise<string[]> {
  progress('phase: identity assertions (sidecar pairs)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'a2a-guard-bench-keys-'));
  const { privateJwk, publicJwks } = await generateAssertionKey('bench-1', 'ES256');
  const keyFile = path.join(dir, 'signing.jwk.json');
  const trustFile = path.join(dir, 'trust.jwks.json');
  fs.writeFileSync(keyFile, JSON.stringify(privateJwk), { mode: 0o600 });
  fs.writeFileSync(trustFile, JSON.stringify(publicJwks));
  const audience = 'http://bench-server-sidecar.test';
  const base = { PORT: '0', HOST: '127.0.0.1', GUARDIAN_URL: guardian.url, LOG_LEVEL: o.logLevel, ADMIN_PORT: '0', FAIL_MODE: 'closed' };
  type Pair = { name: string; client: Child; server: Child };
  const pairs: Pair[] = [];
  const lines: string[] = [];
  try {
    for (const signed of [false, true]) {
      const name = signed ? 'pair, signed assertions' : 'pair, no assertions';
      const server = await startChild(
        `${name} (server)`,
        'proxy-child.js',
        {
          ...base,
          ROLE: 'server',
          UPSTREAM_URL: agent.url,
          ...(signed ? { IDENTITY_POLICY: 'required', ASSERTION_TRUST_JWKS_FILE: trustFile, ASSERTION_AUDIENCE: audience } : { IDENTITY_POLICY: 'optional' }),
        },
        pin.proxy,
      );
      const client = await startChild(
        `${name} (client)`,
        'proxy-child.js',
        {
          ...base,
          ROLE: 'client',
          UPSTREAM_URL: server.url,
          OBSERVED_AGENT_ID: 'bench-client',
          OBSERVED_AGENT_NAME: 'Bench client',
          ...(signed ? { ASSERTION_SIGNING_KEY_FILE: keyFile, ASSERTION_AUDIENCE: audience } : {}),
        },
        pin.proxy,
      );
      pairs.push({ name, client, server });
    }
    for (const pr of pairs) {
      const r = await post(pr.client.url, UNARY_BODY, UNARY_HEADERS);
      if (r.status !== 200 || !r.text.includes('COMPLETED')) throw new Error(`${pr.name}: message/send failed: HTTP ${r.status} ${r.text.slice(0, 300)}`);
      await loadRound(pr.client.url, 1000, o.connections);
      await seqRound(pr.client.url, 100);
    }
    type Row = { rps: number[]; p50: number[]; p99: number[]; clientCpu: number[]; serverCpu: number[]; seqP50: number[]; bad: number };
    const rows = new Map<string, Row>(pairs.map((pr) => [pr.name, { rps: [], p50: [], p99: [], clientCpu: [], serverCpu: [], seqP50: [], bad: 0 }]));
    const cpu = (a: StatsReply, b: StatsReply) => b.user + b.system - a.user - a.system;
    for (let r = 0; r < o.rounds; r++) {
      for (const pr of rotated(pairs, r)) {
        const row = rows.get(pr.name) as Row;
        const [ca, sa] = await Promise.all([pr.client.stats(), pr.server.stats()]);
        const m = await loadRound(pr.client.url, o.amount, o.connections);
        const [cb, sb] = await Promise.all([pr.client.stats(), pr.server.stats()]);
        const lat = sortedCopy(m.lat);
        row.rps.push(m.n / m.seconds);
        row.p50.push(pct(lat, 0.5));
        row.p99.push(pct(lat, 0.99));
        row.clientCpu.push(cpu(ca, cb) / m.n);
        row.serverCpu.push(cpu(sa, sb) / m.n);
        row.bad += m.bad;
        const q = await seqRound(pr.client.url, o.seq);
        row.seqP50.push(pct(sortedCopy(q.lat), 0.5));
        row.bad += q.bad;
      }
    }
    const [plain, signed] = pairs.map((pr) => rows.get(pr.name) as Row) as [Row, Row];
    const md = (row: Row, k: 'rps' | 'p50' | 'p99' | 'clientCpu' | 'serverCpu' | 'seqP50') => median(row[k]);
    lines.push(
      `## identity assertions: sidecar pair (ROLE=client -> ROLE=server), ES256, ${o.connections} connections x ${o.amount} requests x ${o.rounds} rounds + ${o.seq} sequential per round`,
    );
    lines.push('');
    lines.push(
      table(
        ['pair', 'req/s', 'p50 ms', 'p99 ms', 'p50 ms without load', 'client sidecar CPU µs/req', 'server sidecar CPU µs/req'],
        (
          [
            [pairs[0]?.name ?? '', plain],
            [pairs[1]?.name ?? '', signed],
          ] as const
        ).map(([n, row]) => [
          n,
          f(md(row, 'rps'), 0),
          f(md(row, 'p50')),
          f(md(row, 'p99')),
          f(md(row, 'seqP50'), 3),
          f(md(row, 'clientCpu'), 1),
          f(md(row, 'serverCpu'), 1),
        ]),
      ),
    );
    lines.push('');
    lines.push(
      table(
        ['signed / no assertions', 'req/s', 'p50', 'p99', 'client CPU/req', 'server CPU/req', 'pair CPU/req'],
        [
          [
            'ratio',
            fx(md(signed, 'rps') / md(plain, 'rps')),
            fx(md(signed, 'p50') / md(plain, 'p50')),
            fx(md(signed, 'p99') / md(plain, 'p99')),
            fx(md(signed, 'clientCpu') / md(plain, 'clientCpu')),
            fx(md(signed, 'serverCpu') / md(plain, 'serverCpu')),
            fx((md(signed, 'clientCpu') + md(signed, 'serverCpu')) / (md(plain, 'clientCpu') + md(plain, 'serverCpu'))),
          ],
        ],
      ),
    );
    lines.push(
      `added CPU per call: signing ${signU(md(signed, 'clientCpu') - md(plain, 'clientCpu'), 'µs', 1)} (client sidecar), verifying ${signU(md(signed, 'serverCpu') - md(plain, 'serverCpu'), 'µs', 1)} (server sidecar); ` +
        `added p50 without load ${signU(md(signed, 'seqP50') - md(plain, 'seqP50'), 'ms')} (signing overlaps the guardian call, verifying overlaps the body read)`,
    );
    if (plain.bad + signed.bad > 0) lines.push(`WARNING: ${plain.bad} / ${signed.bad} failed requests (no assertions / signed)`);
    lines.push('');
  } finally {
    for (const pr of pairs) {
      await pr.client.stop();
      await pr.server.stop();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return lines;
}
