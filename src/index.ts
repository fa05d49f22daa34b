/**
 * The a2a-guard toolkit for AOS guardian authors (the package's main entry, `import ... from 'a2a-guard'`):
 * everything @a2a-guard/toolkit exports (the lighter package: the AOS schemas and types, the envelope
 * builder, allow/deny/modify, serveGuardian), plus the guardian client a2a-guard itself uses
 * (keep-alive, time budget, retry, circuit breaker) and the AOS context of a hook.
 *
 * Only what is exported here (and from the package's other `exports` entries) is public API.
 */
export * from '@a2a-guard/toolkit';
export { hookContext } from './aos/identity';
export { HttpGuardian, interpret, type Guardian, type HttpGuardianOptions } from './aos/guardian';
export type { GuardianFailureKind, GuardianOutcome } from './aos/outcome';
