/**
 * Interop cases that differ between direct and proxied calls only because a fix is still in flight
 * on another branch. Each case stays expected-to-match in its test file; the harness skips it while
 * it is listed here (INTEROP_RUN_PENDING=1 runs them anyway). Empty this list as the fixes land.
 */
import type { Path } from '../../helpers/interop';

export const FIXES = {
  members: '(i) extra top-level JSON-RPC members (VoltAgent `context`) dropped silently',
  'a2a-json': '(ii) Content-Type application/a2a+json refused; refusals answer id null',
  'card-paths': '(iii) CARD_PATHS: extra card paths such as /.well-known/{agentId}/agent-card.json',
  'grpc-v03': '(iv) the A2A v0.3 gRPC service a2a.v1.A2AService',
  'stream-tail': '(v) a stream losing its last events',
} as const;

export type Fix = keyof typeof FIXES;

export interface Pending {
  /** Implementation (test file's suite name). */
  readonly impl: string;
  /** Operation name as registered in the suite. */
  readonly op: string;
  /** Which proxied path differs. */
  readonly paths: readonly Exclude<Path, 'direct'>[];
  readonly fix: Fix;
}

const BOTH = ['server', 'client'] as const;
const on = (impl: string, fix: Fix, ...ops: string[]): Pending[] => ops.map((op) => ({ impl, op, paths: BOTH, fix }));

export const KNOWN_PENDING: readonly Pending[] = [
];

/** The fix a case waits for, or undefined when it must match now. */
export function pendingFix(impl: string, op: string, path: Path): Fix | undefined {
  if (path === 'direct') return undefined;
  return KNOWN_PENDING.find((p) => p.impl === impl && p.op === op && p.paths.includes(path))?.fix;
}
