/**
 * One lookup rule for every variable a2a-guard reads (the proxy and the reference guardian):
 * `A2A_GUARD_<NAME>` wins over `<NAME>`. Kubernetes service links put `<SERVICE>_PORT=tcp://10.0.0.7:7070`
 * into every pod, so a Service named `guardian` (or `admin`, `upstream`) would otherwise set
 * GUARDIAN_PORT (ADMIN_PORT, ...) behind the operator's back. Only a Service named `a2a-guard` can
 * reach the prefixed form (`A2A_GUARD_PORT=tcp://...`): a prefixed value in service-link form is
 * therefore ignored, as if unset. Empty values count as unset, as in most container runtimes' env files.
 */

export const ENV_PREFIX = 'A2A_GUARD_';

export interface EnvValue {
  readonly value: string;
  /** The variable the value came from (`A2A_GUARD_PORT` or `PORT`), for error messages. */
  readonly from: string;
}

/** The value of `name`, preferring its `A2A_GUARD_` form; undefined when both are unset or empty. */
export function lookupEnv(env: NodeJS.ProcessEnv, name: string): EnvValue | undefined {
  const prefixed = ENV_PREFIX + name;
  const p = env[prefixed];
  if (p !== undefined && p !== '' && !isServiceLink(p)) return { value: p, from: prefixed };
  const v = env[name];
  if (v !== undefined && v !== '') return { value: v, from: name };
  return undefined;
}

/** `lookupEnv(...)?.value`. */
export function envText(env: NodeJS.ProcessEnv, name: string): string | undefined {
  return lookupEnv(env, name)?.value;
}

/**
 * Kubernetes service links look like `tcp://10.0.0.7:7070`; an unprefixed variable with such a
 * value was almost certainly injected, not meant. Used to add a hint to the error line.
 */
const isServiceLink = (v: string): boolean => /^(tcp|udp|sctp):\/\//i.test(v);

export function serviceLinkHint(found: EnvValue | undefined, name: string): string {
  if (found === undefined || found.from !== name || !isServiceLink(found.value)) return '';
  return ` (this looks like a Kubernetes service link: set ${ENV_PREFIX}${name}, or enableServiceLinks: false in the pod)`;
}
