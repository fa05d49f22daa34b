/**
 * A tamper-evident decision log (DECISION_LOG_FILE): one JSON line per call, each carrying the hash
 * of the line before it, so an edited, removed or reordered record breaks the chain at that point.
 *
 *   {"seq":1,"time":"…","prevHash":"<64 hex>",…the audit fields…,"hash":"<64 hex>"}
 *
 * `hash` = sha256 of the line's exact bytes up to (not including) `,"hash":`; `prevHash` of the first
 * record is 64 zeros. Restarting appends to the same chain (the last record's hash is read back).
 * Lines leave through one buffered stream; a crash can lose the last lines, never corrupt earlier ones.
 *
 * An unkeyed chain only shows edits by someone who cannot recompute it. With a key (DECISION_LOG_KEY_FILE)
 * `hash` is HMAC-SHA256 under it, so whoever can write the file but not read the key cannot re-link a
 * rewritten record. A cut tail leaves an intact but shorter chain: every audit line on stdout names its
 * record (`decisionSeq`, `decisionHash`), and `--verify-log FILE --head SEQ:HASH` checks the file still
 * holds the record a log store last saw.
 */
import { createHash, createHmac } from 'node:crypto';
import fs from 'node:fs';

export const GENESIS = '0'.repeat(64);
const HASH_MARK = ',"hash":"';

type Digest = (text: string) => string;
const sha256: Digest = (text) => createHash('sha256').update(text, 'utf8').digest('hex');
const digestFor = (key: Buffer | undefined): Digest => (key === undefined ? sha256 : (text) => createHmac('sha256', key).update(text, 'utf8').digest('hex'));

/** A record's place in the chain, as the audit line reports it. */
export interface ChainLink {
  readonly seq: number;
  readonly hash: string;
}

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
    const lines = buf
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');
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
  private readonly digest: Digest;

  constructor(
    readonly file: string,
    key?: Buffer,
  ) {
    this.digest = digestFor(key);
    const last = lastLink(file);
    this.prevHash = last?.hash ?? GENESIS;
    this.seq = last?.seq ?? 0;
    this.out = fs.createWriteStream(file, { flags: 'a' });
    // A full disk must not take the proxy down: the log line of the call says what happened.
    this.out.on('error', () => undefined);
  }

  append(fields: Record<string, unknown>): ChainLink {
    this.seq++;
    const body = JSON.stringify({ seq: this.seq, time: new Date().toISOString(), prevHash: this.prevHash, ...fields });
    const prefix = body.slice(0, -1);
    const hash = this.digest(prefix);
    this.prevHash = hash;
    this.out.write(`${prefix}${HASH_MARK}${hash}"}\n`);
    return { seq: this.seq, hash };
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.out.end(() => resolve()));
  }
}

export type VerifyResult =
  | { readonly ok: true; readonly records: number }
  | { readonly ok: false; readonly records: number; readonly line: number; readonly seq: number | undefined; readonly reason: string };

/** Parse `SEQ:HASH` (what an audit line's decisionSeq and decisionHash name). */
export function parseHead(text: string): ChainLink | undefined {
  const m = /^(\d{1,15}):([0-9a-f]{64})$/.exec(text.trim());
  return m === null ? undefined : { seq: Number(m[1]), hash: m[2] as string };
}

/**
 * Check a whole log; on a break, name the first broken record (its line number and seq). With `key`
 * every hash must be the HMAC under it; with `head` the file must still hold that record.
 */
export function verifyDecisionLog(text: string, opts: { readonly key?: Buffer; readonly head?: ChainLink } = {}): VerifyResult {
  const digest = digestFor(opts.key);
  let headSeen = opts.head === undefined;
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
    if (digest(parts.body) !== parts.hash)
      return fail(
        `hash does not match the record (the record was changed${opts.key === undefined ? '; a keyed log needs DECISION_LOG_KEY_FILE' : ', or another key made it'})`,
        seq,
      );
    if (seq !== records + 1) return fail(`seq ${String(seq)} where ${records + 1} was expected`, seq);
    if (opts.head !== undefined && seq === opts.head.seq) {
      if (parts.hash !== opts.head.hash) return fail(`record ${seq} is not the one the audit line named (hash ${opts.head.hash.slice(0, 12)}…)`, seq);
      headSeen = true;
    }
    prev = parts.hash;
    records++;
  }
  if (!headSeen)
    return {
      ok: false,
      records,
      line: records + 1,
      seq: opts.head?.seq,
      reason: `the log ends at record ${records}, before record ${String(opts.head?.seq)} the audit line named: records were cut off`,
    };
  return { ok: true, records };
}
