/**
 * The end of a call, whatever its binding: the audit record from its facts, written to the decision
 * log first (the line then names the record it wrote), logged once, and its outcome and added latency
 * counted. The HTTP pipeline and the gRPC adapter both end their calls here.
 */
import type { Logger } from 'pino';
import type { Metrics } from '../admin/metrics';
import type { VerifiedIdentity } from '../identity/types';
import { auditRecord, type AuditRecord, type CallFacts } from '../observe/audit';
import type { ChainLink } from '../observe/decision-log';
import { writeLine } from '../log';

export interface AuditLineDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly decisionLog?: ((record: AuditRecord) => ChainLink) | undefined;
}

export function writeAuditLine(deps: AuditLineDeps, facts: CallFacts, identity: VerifiedIdentity | undefined): AuditRecord {
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
  writeLine(deps.logger, record.level, record.fields, 'a2a call');
  deps.metrics.finished(facts.method, record.outcome, Math.max(0, facts.totalMs - (facts.upstreamMs ?? 0)) / 1000);
  return record;
}
