/**
 * A tamper-evident decision log (DECISION_LOG_FILE): one JSON line per call, each carrying the hash
 * of the line before it, so an edited, removed or reordered record breaks the chain at that point.
 *
 *   {"seq":1,"time":"…","prevHash":"<64 hex>",…the audit fields…,"hash":"<64 hex>"}
 *
 * `hash` = sha256 of the line's exact bytes up to (not including) `,"hash":`; `prevHash` of the first
 * record is 64 zeros. Restarting appends to the same chain (the last record's hash is read back).
 * Lines leave through one buffered stream; a crash can lose the last lines, never corrupt earlier ones.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';

export const GENESIS = '0'.repeat(64);
const HASH_MARK = ',"hash":"';

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** Split a line into the hashed prefix and the hash it claims; undefined when it has no hash. */
function splitLine(line: string): { body: string; hash: string } | undefined {
  const at = line.lastIndexOf(HASH_MARK);
  if (at === -1 || !line.endsWith('"}')) return undefined;
  return { body: line.slice(0, at), hash: line.slice(at + HASH_MARK.length, -2) };
}

/** The hash and sequence number of the last complete record of an existing log. */
function lastLink(file: string): { hash: string; seq: number } | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size === 0) return undefined;
    const len = Math.min(size, 1024 * 1024);
    const buf = Buffer.alloc(len);
    fs.readSync(fd, buf, 0, len, size - len);
    const lines = buf.toString('utf8').split('\n').filter((l) => l.trim() !== '');
    const last = lines[lines.length - 1];
    const parts = last === undefined ? undefined : splitLine(last);
    if (last === undefined || parts === undefined) return { hash: 'unreadable', seq: 0 };
    const seq = (JSON.parse(last) as { seq?: unknown }).seq;
    return { hash: parts.hash, seq: typeof seq === 'number' ? seq : 0 };
  } catch {
    return { hash: 'unreadable', seq: 0 };
  } finally {
    fs.closeSync(fd);
  }
}

export class DecisionLog {
  private prevHash: string;
  private seq: number;
  private readonly out: fs.WriteStream;

  constructor(readonly file: string) {
    const last = lastLink(file);
    this.prevHash = last?.hash ?? GENESIS;
    this.seq = last?.seq ?? 0;
    this.out = fs.createWriteStream(file, { flags: 'a' });
    // A full disk must not take the proxy down: the log line of the call says what happened.
    this.out.on('error', () => undefined);
  }

  append(fields: Record<string, unknown>): void {
    this.seq++;
    const body = JSON.stringify({ seq: this.seq, time: new Date().toISOString(), prevHash: this.prevHash, ...fields });
    const prefix = body.slice(0, -1);
    const hash = sha256(prefix);
    this.prevHash = hash;
    this.out.write(`${prefix}${HASH_MARK}${hash}"}\n`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.out.end(() => resolve()));
  }
}

export type VerifyResult =
  | { readonly ok: true; readonly records: number }
  | { readonly ok: false; readonly records: number; readonly line: number; readonly seq: number | undefined; readonly reason: string };

/** Check a whole log; on a break, name the first broken record (its line number and seq). */
export function verifyDecisionLog(text: string): VerifyResult {
  let prev = GENESIS;
  let records = 0;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === '' && i === lines.length - 1) break;
    const fail = (reason: string, seq?: number): VerifyResult => ({ ok: false, records, line: i + 1, seq, reason });
    let parsed: { seq?: unknown; prevHash?: unknown };
    try {
      parsed = JSON.parse(line) as typeof parsed;
    } catch {
      return fail('not a JSON record');
    }
    const seq = typeof parsed.seq === 'number' ? parsed.seq : undefined;
    const parts = splitLine(line);
    if (parts === undefined) return fail('no hash', seq);
    if (parsed.prevHash !== prev) return fail('prevHash does not match the previous record (a record was removed, inserted or reordered)', seq);
    if (sha256(parts.body) !== parts.hash) return fail('hash does not match the record (the record was changed)', seq);
    if (seq !== records + 1) return fail(`seq ${String(seq)} where ${records + 1} was expected`, seq);
    prev = parts.hash;
    records++;
  }
  return { ok: true, records };
}
