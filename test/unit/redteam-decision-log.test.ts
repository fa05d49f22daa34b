/**
 * Red team 2026-11-23: the decision log's hash chain is unkeyed (sha256 of each line and the previous
 * hash). Whoever can write the file can change a record and recompute every hash after it, or cut
 * the last records off: `--verify-log` then reports an intact chain. README promises it names "the
 * first changed, removed, inserted or reordered record".
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { DecisionLog, GENESIS, verifyDecisionLog } from '../../src/observe/decision-log';

const sha256 = (t: string): string => createHash('sha256').update(t, 'utf8').digest('hex');

/** What an attacker with write access does: edit one record, then re-link the chain from there on. */
function forge(text: string, edit: (record: Record<string, unknown>) => void, at: number): string {
  const records = text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  let prev = GENESIS;
  return `${records.map((r, i) => {
    if (i === at) edit(r);
    delete r.hash;
    r.prevHash = prev;
    const prefix = JSON.stringify(r).slice(0, -1);
    prev = sha256(prefix);
    return `${prefix},"hash":"${prev}"}`;
  }).join('\n')}\n`;
}

async function writeLog(records: number): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redteam-dlog-'));
  const file = path.join(dir, 'decisions.log');
  const log = new DecisionLog(file);
  for (let i = 0; i < records; i++) log.append({ method: 'message/send', decision: i === 1 ? 'deny' : 'allow', caller: `agent-${i}` });
  await log.close();
  const text = fs.readFileSync(file, 'utf8');
  fs.rmSync(dir, { recursive: true, force: true });
  return text;
}

describe('decision log tamper evidence', () => {
  test('an honest log verifies', async () => {
    expect(verifyDecisionLog(await writeLog(4))).toEqual({ ok: true, records: 4 });
  });

  // OPEN: needs a secret the writer of the file does not hold: an HMAC key (DECISION_LOG_KEY_FILE) for every
  // line's hash, or the chain head exported somewhere else (a signed checkpoint every N records, the last hash
  // on /metrics or in the audit line on stdout) so a rewritten or truncated tail no longer matches it.
  test.failing('a denial rewritten to an allow (chain re-linked) is detected', async () => {
    const forged = forge(await writeLog(4), (r) => {
      r.decision = 'allow';
    }, 1);
    expect(forged).not.toContain('"deny"');
    expect(verifyDecisionLog(forged).ok).toBe(false);
  });

  test.failing('records cut off the end are detected', async () => {
    const text = await writeLog(4);
    const cut = `${text.trim().split('\n').slice(0, 2).join('\n')}\n`;
    expect(verifyDecisionLog(cut).ok).toBe(false);
  });
});
