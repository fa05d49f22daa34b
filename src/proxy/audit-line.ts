/**
 * The end of a call, whatever its binding: the audit record from its facts, written to the decision
 * log first (the line then names the record it wrote), logged once, and its outcome and added latency
 * counted. The HTTP pipeline and the gRPC adapter both end their calls here.
 */
import type { Logger } from 'pino';
import type { Metrics } from '../admin/metrics';
import type { VerifiedIdentity } from '../identity/types';
import { auditRecord, type AuditPeer, type AuditRecord, type CallFacts } from '../observe/audit';
import type { ChainLink } from '../observe/decision-log';
import { lineOut, lineStart, plainText, writeLine } from '../runtime/log';

export interface AuditLineDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly decisionLog?: ((record: AuditRecord) => ChainLink) | undefined;
}

/**
 * The audit line of a call, its decision-log record, its outcome and added latency counted.
 * `peerLiteral`: facts.peer, if any, is a new `{ name, url, version, verified }` of strings and a
 * boolean (finishCall's), so the text of the line's head can be kept by those values.
 */
export function writeAuditLine(deps: AuditLineDeps, facts: CallFacts, identity: VerifiedIdentity | undefined, peerLiteral = false): AuditRecord {
  const record = auditRecord(facts);
  // Who called, when verified (the subject names an agent or workload; it is not a secret).
  if (identity !== undefined && identity.source !== 'local') {
    record.fields.caller = identity.subject;
    record.fields.callerSource = identity.source;
  }
  // The decision log first: the audit line names the record it wrote (a checkpoint outside the file).
  const link = deps.decisionLog?.(record);
  if (link !== undefined) {
    record.fields.decisionSeq = link.seq;
    record.fields.decisionHash = link.hash;
  }
  if (!writeOrdinary(deps, record, peerLiteral)) writeLine(deps.logger, record.level, record.fields, 'a2a call');
  deps.metrics.finished(facts.method, record.outcome, Math.max(0, facts.totalMs - (facts.upstreamMs ?? 0)) / 1000);
  return record;
}

/** Write the line of an ordinary call here (auditMembers): true when written, or when its level is off. */
function writeOrdinary(deps: AuditLineDeps, record: AuditRecord, peerLiteral: boolean): boolean {
  const out = lineOut(deps.logger, record.level);
  if (out === null) return true;
  // Without a decision-log hook (it is given the record), only auditRecord and writeAuditLine wrote the fields.
  if (out === undefined || deps.decisionLog !== undefined) return false;
  const members = auditMembers(record.fields, peerLiteral);
  if (members === undefined) return false;
  out.write(`${lineStart(record.level)}${members},"msg":"a2a call"}\n`);
  return true;
}

const isPlain = (v: unknown): v is string => typeof v === 'string' && plainText(v);

/** The head of a recent line: the fields every line starts with (from fixed tables), the peer's values, and their text. */
interface Head {
  readonly method: unknown;
  readonly wireMethod: unknown;
  readonly binding: unknown;
  readonly role: unknown;
  readonly outcome: unknown;
  readonly decision: unknown;
  /** The peer's values; undefined for a line without a peer. */
  readonly peer: AuditPeer | undefined;
  /** `,"method":…` to `"decision":…`. */
  readonly text: string;
  /** `,"peer":{…}`, or '' without a peer (the guardian's codes and message, per call, come between). */
  readonly peerText: string;
}
/** A few: the operations, outcomes and callers of the moment (a miss costs what a line without them does). */
const heads: Head[] = [];
let nextHead = 0;

/** `,"method":…` to `"decision":…` and the peer, as pino writes them; undefined when a value needs pino's path. */
function headOf(f: Record<string, unknown>, peerLiteral: boolean): Pick<Head, 'text' | 'peerText'> | undefined {
  const { method, wireMethod, binding, role, outcome, decision } = f;
  const peer = f.peer as AuditPeer | undefined;
  // Another peer object of the same values writes the same text only when both are such literals.
  const keep = peer === undefined || peerLiteral;
  if (keep) {
    for (const h of heads) {
      if (
        h.method === method &&
        h.wireMethod === wireMethod &&
        h.binding === binding &&
        h.role === role &&
        h.outcome === outcome &&
        h.decision === decision &&
        samePeer(h.peer, peer)
      )
        return h;
    }
  }
  if (!isPlain(method) || !isPlain(wireMethod) || !isPlain(binding) || !isPlain(role) || !isPlain(outcome) || !isPlain(decision)) return undefined;
  const text = `,"method":"${method}","wireMethod":"${wireMethod}","binding":"${binding}","role":"${role}","outcome":"${outcome}","decision":"${decision}"`;
  let peerText = '';
  if (peer !== undefined) {
    // An object: JSON.stringify writes it as pino does (test/unit/log-line.test.ts); a toJSON giving undefined or a cycle: pino's path.
    if (typeof peer !== 'object' || peer === null) return undefined;
    let json: string | undefined;
    try {
      json = JSON.stringify(peer) as string | undefined;
    } catch {
      return undefined;
    }
    if (json === undefined) return undefined;
    peerText = `,"peer":${json}`;
  }
  if (keep) {
    const values = peer === undefined ? undefined : { name: peer.name, url: peer.url, version: peer.version, verified: peer.verified };
    heads[nextHead] = { method, wireMethod, binding, role, outcome, decision, peer: values, text, peerText };
    nextHead = (nextHead + 1) % 16;
  }
  return { text, peerText };
}

/** `,"reasonCode":[…]` as pino writes an array of plain strings; '' without codes; undefined for anything else. */
function codesText(codes: unknown): string | undefined {
  if (codes === undefined) return '';
  if (!Array.isArray(codes) || Object.getPrototypeOf(codes) !== Array.prototype) return undefined;
  let text = ',"reasonCode":[';
  for (let i = 0; i < codes.length; i++) {
    const c: unknown = codes[i];
    if (!isPlain(c)) return undefined;
    text += i === 0 ? `"${c}"` : `,"${c}"`;
  }
  return `${text}]`;
}

function samePeer(kept: AuditPeer | undefined, peer: AuditPeer | undefined): boolean {
  if (kept === undefined || peer === undefined) return kept === peer;
  return kept.name === peer.name && kept.url === peer.url && kept.version === peer.version && kept.verified === peer.verified;
}

/**
 * A number of milliseconds as auditRecord rounds them (k / 100), written as String() writes it: the
 * digits of k with the point two places in. The double nearest k / 100 has those as its shortest
 * round-trip digits (fewer than 16 of them); String()'s search for them cost ~450 instructions a
 * number more (callgrind). Any other number: String().
 */
function msText(v: unknown): string | undefined {
  if (typeof v !== 'number') return undefined;
  const k = Math.round(v * 100);
  if (!(k >= 0 && k < 1e9 && k / 100 === v)) return Number.isFinite(v) ? String(v) : 'null';
  const whole = Math.floor(k / 100);
  const cents = k - whole * 100;
  if (cents === 0) return `${whole}`;
  return cents % 10 === 0 ? `${whole}.${cents / 10}` : `${whole}.${cents < 10 ? '0' : ''}${cents}`;
}

/**
 * The audit record's fields as pino writes them (`,"key":value` each, in auditRecord's order), for
 * the line of an ordinary call, the guardian's reason codes and message included; undefined for
 * anything else (hook lists, failures, errors, text to escape), which writeLine writes. The head every call of a kind shares is one
 * kept text. finishCall of an allowed unary call, line and metrics: ~26,900 instructions with
 * writeLine, ~6,800 with this (callgrind).
 */
export function auditMembers(f: Record<string, unknown>, peerLiteral = false): string | undefined {
  if (
    f.failure !== undefined ||
    f.failureDetail !== undefined ||
    f.hooks !== undefined ||
    f.events !== undefined ||
    f.error !== undefined ||
    f.decisionSeq !== undefined ||
    f.decisionHash !== undefined
  )
    return undefined;
  const head = headOf(f, peerLiteral);
  if (head === undefined) return undefined;
  // The guardian's codes and message: most guardians give a message on every answer (the bench's says "ok").
  const codes = codesText(f.reasonCode);
  if (codes === undefined) return undefined;
  let line = head.text + codes;
  const message = f.guardianMessage;
  if (message !== undefined) {
    if (!isPlain(message)) return undefined;
    line += `,"guardianMessage":"${message}"`;
  }
  line += head.peerText;
  const { remoteAddress, traceId, spanId, upstreamStatus, upstreamMs, a2aId, envelopeId, caller, callerSource } = f;
  if (remoteAddress !== undefined) {
    if (!isPlain(remoteAddress)) return undefined;
    line += `,"remoteAddress":"${remoteAddress}"`;
  }
  if (traceId !== undefined) {
    if (!isPlain(traceId)) return undefined;
    line += `,"traceId":"${traceId}"`;
  }
  if (spanId !== undefined) {
    if (!isPlain(spanId)) return undefined;
    line += `,"spanId":"${spanId}"`;
  }
  const guardian = msText(f.guardianMs);
  if (guardian === undefined) return undefined;
  line += `,"guardianMs":${guardian}`;
  if (upstreamStatus === null) line += ',"upstreamStatus":null';
  else if (typeof upstreamStatus === 'number' && Number.isInteger(upstreamStatus)) line += `,"upstreamStatus":${upstreamStatus}`;
  else return undefined;
  if (upstreamMs !== undefined) {
    const up = msText(upstreamMs);
    if (up === undefined) return undefined;
    line += `,"upstreamMs":${up}`;
  }
  const total = msText(f.totalMs);
  if (total === undefined) return undefined;
  line += `,"totalMs":${total}`;
  if (a2aId === null) line += ',"a2aId":null';
  else if (typeof a2aId === 'number') line += `,"a2aId":${Number.isFinite(a2aId) ? String(a2aId) : 'null'}`;
  else if (isPlain(a2aId)) line += `,"a2aId":"${a2aId}"`;
  else if (a2aId !== undefined) return undefined;
  if (envelopeId !== undefined) {
    if (!isPlain(envelopeId)) return undefined;
    line += `,"envelopeId":"${envelopeId}"`;
  }
  if (caller !== undefined) {
    if (!isPlain(caller) || !isPlain(callerSource)) return undefined;
    line += `,"caller":"${caller}","callerSource":"${callerSource}"`;
  } else if (callerSource !== undefined) return undefined;
  return line;
}
