/**
 * The AOS hook points (spec 4.8 / 4.9): a side (which agent is observed: the caller or the callee)
 * times a phase (its request or its response). Declared here once; the AOS context schema, the
 * proxy's ROLE and its policy file take them from here. Imports nothing.
 */

/** The observed agent's role in the exchange: the caller (client) or the callee (server). */
export const SIDES = ['client', 'server'] as const;
export type Side = (typeof SIDES)[number];

export const PHASES = ['request', 'response'] as const;
export type Phase = (typeof PHASES)[number];
