/**
 * `a2a-guard/reference-guardian`: the reference guardian's policy engine for reuse, e.g. your own
 * checks first, then the reference policy:
 *
 *   const reference = createEngine(parsePolicy(JSON.parse(readFileSync('policy.json', 'utf8'))));
 *   serveGuardian((envelope) => myCheck(envelope) ?? reference.decide(envelope));
 */
export { createEngine, describeHook, type Engine, type HookView } from './engine';
export { loadPolicy, parsePolicy, PolicyError, PolicyFile, type Policy } from './policy';
export { GUARDIAN_VERSION, createGuardianServer, referenceGuardian, type GuardianServerOptions } from './server';
