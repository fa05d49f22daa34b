/**
 * The proxy's ROLE and the order its hooks run in. The hook points themselves (sides, phases) are
 * AOS vocabulary and live in the toolkit; the config schema, the policy file schema and the proxy
 * take all of them from here.
 */
import type { Phase, Side } from '@a2a-guard/toolkit/hook-points';

export { PHASES, SIDES, type Phase, type Side } from '@a2a-guard/toolkit/hook-points';

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
