/**
 * The hook points (AOS spec 4.8 / 4.9): a side (which agent the proxy observes) times a phase, and
 * the order they run in for each ROLE. Declared here once; the config schema, the policy file
 * schema, the AOS context schema and the proxy all take them from here. Imports nothing.
 */

/** The observed agent's role in the exchange: the caller (client) or the callee (server). */
export const SIDES = ['client', 'server'] as const;
export type Side = (typeof SIDES)[number];

export const PHASES = ['request', 'response'] as const;
export type Phase = (typeof PHASES)[number];

/** ROLE: which side(s) one proxy observes; `both` is one proxy between two observed agents. */
export const ROLES = ['client', 'server', 'both'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The sides whose hooks run, in order, per role and phase. A request travels from the client to
 * the server, so ROLE=both judges it client side first (a `modify` there feeds the server side);
 * its answer travels back, so the server side goes first (README, top: the ROLE list).
 */
export const HOOK_ORDER: { readonly [R in Role]: { readonly [P in Phase]: readonly Side[] } } = {
  client: { request: ['client'], response: ['client'] },
  server: { request: ['server'], response: ['server'] },
  both: { request: ['client', 'server'], response: ['server', 'client'] },
};

/** The card hook's method: the envelope whose payload is an agent card the proxy is about to serve. */
export const CARD_METHOD = 'agent/card';
