/**
 * `npm run demo` as a test: the whole topology in-process on 127.0.0.1 (ephemeral ports), the
 * scripted conversation, and every scenario checked on what it reports, not on what it printed.
 * Also the remote mode the containerized Cooking assistant uses, against the same topology.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runDemo, type DemoResult, type ScenarioResult } from '../../src/demo/main';
import { runRemote, SCRIPT } from '../../src/demo/cooking-assistant';
import { startTopology } from '../../src/demo/topology';
import { parsePolicy } from '../../src/guardian/policy';

const ROOT = join(__dirname, '..', '..');

type Hook = { side: string; phase: string; method: string; decision: string; reasonCode: string[] };

function scenario(r: DemoResult, name: string): ScenarioResult {
  const s = r.scenarios.find((x) => x.name === name);
  if (s === undefined) throw new Error(`no scenario ${name}; got ${r.scenarios.map((x) => x.name).join(', ')}`);
  return s;
}

const requestHooks = (s: ScenarioResult): string[] =>
  ((s.details['hooks'] as Hook[] | undefined) ?? []).filter((h) => h.phase === 'request').map((h) => `${h.side} ${h.method} ${h.decision}`);

describe('in-process demo (npm run demo)', () => {
  let result: DemoResult;

  beforeAll(async () => {
    result = await runDemo({ quiet: true });
  }, 30_000);

  test('every scenario behaved as expected, each with its own checks', () => {
    expect(result.mode).toBe('in-process');
    expect(result.scenarios.map((s) => s.name)).toEqual([
      'discovery',
      'allowed-question',
      'pii-masked',
      'denied',
      'impostor',
      'streamed',
      'cancel-denied',
      'resubscribe',
      'cancel-allowed',
      'reasoning-private',
    ]);
    for (const s of result.scenarios) {
      expect({ name: s.name, failed: s.checks.filter((c) => !c.ok).map((c) => c.what) }).toEqual({ name: s.name, failed: [] });
      expect(s.checks.length).toBeGreaterThan(0);
      expect(s.ok).toBe(true);
    }
    expect(result.ok).toBe(true);
  });

  test('discovery: the card comes through the sidecar and points at it', () => {
    const s = scenario(result, 'discovery');
    expect(s.details['cardName']).toBe('Cake Baker');
    const urls = s.details['interfaceUrls'] as string[];
    expect(urls.length).toBeGreaterThan(0);
    expect(new Set(urls.map((u) => new URL(u).host)).size).toBe(1);
  });

  test('allowed question: both sides allow, the baker answers a recipe', () => {
    const s = scenario(result, 'allowed-question');
    expect(requestHooks(s)).toEqual(['client message/send allow', 'server message/send allow']);
    expect(s.details['bakerReceived']).toEqual([SCRIPT.question]);
    expect(s.details['state']).toBe('completed');
    expect(s.details['answer']).toMatch(/cheesecake/i);
    expect(s.details['callerVerifiedBy']).toBe('assertion');
  });

  test('impostor: claimed headers and a self-signed assertion are both refused with -31401 before any guardian call', () => {
    const s = scenario(result, 'impostor');
    const errors = s.details['errors'] as Array<{ code: number; reason: string; message: string }>;
    expect(errors.map((e) => [e.code, e.reason])).toEqual([
      [-31401, 'UNAUTHENTICATED'],
      [-31401, 'UNAUTHENTICATED'],
    ]);
    expect(errors[0]?.message).toMatch(/no verified identity/);
    expect(errors[1]?.message).toMatch(/assertion signature does not verify/);
    expect(s.details['hooks']).toBeUndefined();
  });

  test('personal data: the client side masks it, the baker never sees it', () => {
    const s = scenario(result, 'pii-masked');
    const hooks = s.details['hooks'] as Hook[];
    expect(requestHooks(s)).toEqual(['client message/send modify', 'server message/send allow']);
    expect(hooks[0]?.reasonCode).toContain('PII_MASKED');
    const received = s.details['bakerReceived'] as string[];
    expect(received).toHaveLength(1);
    expect(received[0]).toContain('[EMAIL]');
    expect(received[0]).toContain('[CARD]');
    for (const raw of SCRIPT.piiRaw) {
      expect(received[0]).not.toContain(raw);
      expect(s.details['answer']).not.toContain(raw);
    }
  });

  test("disallowed request: -31403 with the guardian's reason codes, nothing forwarded", () => {
    const s = scenario(result, 'denied');
    expect(requestHooks(s)).toEqual(['client message/send deny']);
    expect(s.details['error']).toMatchObject({ code: -31403, reason: 'GUARDIAN_DENIED' });
    expect((s.details['error'] as { reasonCodes: string[] }).reasonCodes).toEqual(expect.arrayContaining(['HARMFUL_CONTENT', 'DENY_PATTERN:weapons']));
  });

  test('streamed answer: several events, in order, through both proxies', () => {
    const s = scenario(result, 'streamed');
    expect(requestHooks(s)).toEqual(['client message/stream allow', 'server message/stream allow']);
    const events = s.details['events'] as Array<{ kind: string; state?: string; text?: string }>;
    expect(events.length).toBeGreaterThanOrEqual(7);
    expect(events[0]?.kind).toBe('task');
    expect(events.filter((e) => e.kind === 'artifact-update').map((e) => e.text?.slice(0, 6))).toEqual(['Step 1', 'Step 2', 'Step 3', 'Step 4', 'Step 5']);
    expect(events[events.length - 1]).toMatchObject({ kind: 'status-update', state: 'completed' });
  });

  test('cancel denied by the policy; the task keeps working', () => {
    const s = scenario(result, 'cancel-denied');
    expect(requestHooks(s)).toEqual([
      'client message/send allow',
      'server message/send allow',
      'client tasks/cancel deny',
      'client tasks/get allow',
      'server tasks/get allow',
    ]);
    expect(s.details['error']).toMatchObject({ code: -31403, reason: 'GUARDIAN_DENIED' });
    expect((s.details['error'] as { reasonCodes: string[] }).reasonCodes).toContain('CANCEL_REFUSED');
    expect(s.details['stateAfter']).toBe('working');
  });

  test('resubscribe opens with the task snapshot; the allowed cancel ends it', () => {
    const sub = scenario(result, 'resubscribe');
    expect(requestHooks(sub)).toEqual(['client tasks/resubscribe allow', 'server tasks/resubscribe allow']);
    expect(sub.details['firstEvent']).toMatchObject({ kind: 'task', state: 'working' });

    const cancel = scenario(result, 'cancel-allowed');
    expect(requestHooks(cancel)).toEqual(['client tasks/cancel allow', 'server tasks/cancel allow']);
    expect(cancel.details['state']).toBe('canceled');
    const events = cancel.details['subscriptionEvents'] as Array<{ kind: string; state?: string }>;
    expect(events[events.length - 1]).toMatchObject({ kind: 'status-update', state: 'canceled' });
  });

  test('the transcript shows what was sent, each decision, and what the baker got', () => {
    const text = result.transcript.join('\n');
    expect(text).toContain('how to prepare a cheese cake?');
    expect(text).toMatch(/cooking-assistant-guard \(client request\)\s+message\/send\s+MODIFY/);
    expect(text).toMatch(/baker received\s+"Please e-mail the receipt for my order to \[EMAIL\] and charge my card \[CARD\]\."/);
    expect(text).toMatch(/error -31403/);
    expect(text).toMatch(/impostor got\s+error -31401: Caller identity required/);
    expect(text).toContain('DEMO OK');
  });
});

describe('remote mode (the containerized Cooking assistant)', () => {
  test('the conversation passes knowing only the sidecar URL', async () => {
    const topo = await startTopology();
    try {
      const r = await runRemote({ SIDECAR_URL: topo.assistantGuard.url, IMPOSTOR_URL: topo.bakerGuard.url, WAIT_TIMEOUT_MS: '10000' }, true);
      expect(r.mode).toBe('remote');
      expect(r.scenarios.map((s) => s.name)).toEqual([
        'discovery',
        'allowed-question',
        'pii-masked',
        'denied',
        'impostor',
        'streamed',
        'cancel-denied',
        'resubscribe',
        'cancel-allowed',
      ]);
      for (const s of r.scenarios) expect({ name: s.name, failed: s.checks.filter((c) => !c.ok).map((c) => c.what) }).toEqual({ name: s.name, failed: [] });
      expect(r.ok).toBe(true);
      // What the baker really received, checked from outside the conversation.
      expect(topo.baker.messages.map((m) => m.text)).toContain('Please e-mail the receipt for my order to [EMAIL] and charge my card [CARD].');
      expect(topo.baker.messages.map((m) => m.text)).not.toContain(SCRIPT.harmful);
    } finally {
      await topo.close();
    }
  }, 30_000);

  test('a sidecar that never answers fails the wait instead of hanging', async () => {
    await expect(runRemote({ SIDECAR_URL: 'http://127.0.0.1:9', WAIT_TIMEOUT_MS: '1' }, true)).rejects.toThrow(/did not answer/);
  });
});

describe('the demo checks itself', () => {
  test("without the demo policy's cancel rule, the cancel scenarios fail and so does the demo", async () => {
    // The SDK server logs the failed resubscribe (task already canceled) on console.error.
    const quietErrors = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const r = await runDemo({ quiet: true, policyFile: join(ROOT, 'config', 'policy.json') });
      expect(r.ok).toBe(false);
      expect(scenario(r, 'allowed-question').ok).toBe(true);
      expect(scenario(r, 'pii-masked').ok).toBe(true);
      const cancel = scenario(r, 'cancel-denied');
      expect(cancel.ok).toBe(false);
      expect(cancel.checks.filter((c) => !c.ok).map((c) => c.what)).toContain('the cancel is refused');
      expect(r.transcript[r.transcript.length - 1]).toMatch(/^DEMO FAILED/);
    } finally {
      quietErrors.mockRestore();
    }
  }, 30_000);
});

describe('config/demo-policy.json', () => {
  const read = (f: string) => JSON.parse(readFileSync(join(ROOT, 'config', f), 'utf8')) as Record<string, unknown>;

  test('is a valid policy', () => {
    expect(() => parsePolicy(read('demo-policy.json'), 'demo-policy.json')).not.toThrow();
  });

  test("is config/policy.json plus the demo's cancel rule, nothing else changed", () => {
    const base = read('policy.json');
    const demo = read('demo-policy.json');
    for (const key of ['messages', 'peers', 'pushNotifications', 'mask']) expect({ key, value: demo[key] }).toEqual({ key, value: base[key] });
    const demoDeny = demo['deny'] as Array<{ id: string }>;
    const baseDeny = base['deny'] as Array<{ id: string }>;
    expect(demoDeny.filter((r) => r.id !== 'cancel-frivolous')).toEqual(baseDeny);
    expect(demoDeny.find((r) => r.id === 'cancel-frivolous')).toMatchObject({ methods: ['tasks/cancel'], reasonCode: 'CANCEL_REFUSED' });
  });
});
