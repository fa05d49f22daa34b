/**
 * An unkeyed hash chain (sha256 of each line and the previous hash) lets whoever can write the file
 * change a record and recompute every hash after it, or cut the last records off, and `--verify-log`
 * would report an intact chain. The README promises it names "the first changed, removed, inserted or
 * reordered record": DECISION_LOG_KEY_FILE (an HMAC chain) and the head each audit line names
 * (`--verify-log FILE --head SEQ:HASH`) make every such edit visible.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { DecisionLog, GENESIS, parseHead, verifyDecisionLog, type ChainLink } from '../../../src/observe/decision-log';

const sha256 = (t: string): string => createHash('sha256').update(t, 'utf8').digest('hex');

/** What an attacker with write access does: edit one record, then re-link the chain from there on. */
function forge(text: string, edit: (record: Record<string, unknown>) => void, at: number): string {
  const records = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  let prev = GENESIS;
  return `${records
    .map((r, i) => {
      if (i === at) edit(r);
      delete r.hash;
      r.prevHash = prev;
      const prefix = JSON.stringify(r).slice(0, -1);
      prev = sha256(prefix);
      return `${prefix},"hash":"${prev}"}`;
    })
    .join('\n')}\n`;
}

const KEY = Buffer.alloc(32, 7);

async function writeLog(records: number, key?: Buffer): Promise<{ text: string; head: ChainLink }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'decision-log-'));
  const file = path.join(dir, 'decisions.log');
  const log = new DecisionLog(file, key);
  let head: ChainLink = { seq: 0, hash: GENESIS };
  for (let i = 0; i < records; i++) head = log.append({ method: 'message/send', decision: i === 1 ? 'deny' : 'allow', caller: `agent-${i}` });
  await log.close();
  const text = fs.readFileSync(file, 'utf8');
  fs.rmSync(dir, { recursive: true, force: true });
  return { text, head };
}

describe('decision log tamper evidence', () => {
  test('an honest log verifies, keyed or not', async () => {
    expect(verifyDecisionLog((await writeLog(4)).text)).toEqual({ ok: true, records: 4 });
    const keyed = await writeLog(4, KEY);
    expect(verifyDecisionLog(keyed.text, { key: KEY, head: keyed.head })).toEqual({ ok: true, records: 4 });
  });

  // Was open: an unkeyed chain can be re-linked by whoever can write the file. With DECISION_LOG_KEY_FILE the
  // hashes are HMACs the forger cannot make.
  test('keyed: a denial rewritten to an allow (chain re-linked without the key) is detected', async () => {
    const forged = forge(
      (await writeLog(4, KEY)).text,
      (r) => {
        r.decision = 'allow';
      },
      1,
    );
    expect(forged).not.toContain('"deny"');
    expect(verifyDecisionLog(forged, { key: KEY })).toMatchObject({ ok: false, line: 1, reason: expect.stringMatching(/changed/) });
    // Unkeyed, the same forgery passes: that is what the key is for (README says so).
    expect(
      verifyDecisionLog(
        forge(
          (await writeLog(4)).text,
          (r) => {
            r.decision = 'allow';
          },
          1,
        ),
      ).ok,
    ).toBe(true);
  });

  test('another key does not verify', async () => {
    expect(verifyDecisionLog((await writeLog(2, KEY)).text, { key: Buffer.alloc(32, 8) }).ok).toBe(false);
    expect(verifyDecisionLog((await writeLog(2, KEY)).text).ok).toBe(false);
  });

  // Was open: a cut tail is an intact shorter chain. The audit line on stdout names each record (decisionSeq,
  // decisionHash); --head checks that the file still holds the last one a log store saw.
  test('records cut off the end are detected against the head the audit line named', async () => {
    const { text, head } = await writeLog(4, KEY);
    const cut = `${text.trim().split('\n').slice(0, 2).join('\n')}\n`;
    expect(verifyDecisionLog(cut, { key: KEY, head })).toMatchObject({ ok: false, records: 2, reason: expect.stringMatching(/cut off/) });
    // A head that names another record at that place is a rewrite.
    expect(verifyDecisionLog(text, { key: KEY, head: { seq: 4, hash: 'f'.repeat(64) } })).toMatchObject({ ok: false, seq: 4 });
  });

  test('parseHead', () => {
    expect(parseHead(`12:${'a'.repeat(64)}`)).toEqual({ seq: 12, hash: 'a'.repeat(64) });
    expect(parseHead('12:abc')).toBeUndefined();
    expect(parseHead(`x:${'a'.repeat(64)}`)).toBeUndefined();
  });
});
