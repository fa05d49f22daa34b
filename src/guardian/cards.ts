/**
 * Card rules of the reference guardian. A card hook is an AOS envelope whose method is `agent/card` and
 * whose `params.payload` is the agent card the proxy is about to serve (docs/reference/policy.md). The
 * card text a caller's model reads (its name and description, each skill's name, description, examples
 * and tags) goes through the mask rules; deny rules read every string of the card. A card whose skills
 * or interfaces differ from the last version this guardian approved for the same agent can be denied
 * or flagged (policy `cards.changes`).
 */
import { createHash } from 'node:crypto';
import type { JsonObject } from '../aos/schemas';
import { isObject } from '../core/json';
import { readField } from './keys';
import { maskText } from './masking';
import { CARD_METHOD, type MaskRule } from './policy';

export { CARD_METHOD };

const CARD_TEXT = ['name', 'description'];
const SKILL_TEXT = ['name', 'description'];
const SKILL_LISTS = ['examples', 'tags'];

/** The card with its text fields masked (the card itself when nothing changed). */
export function maskCard(card: JsonObject, rules: readonly MaskRule[], changed: Set<MaskRule>): JsonObject {
  if (rules.length === 0) return card;
  const out = maskFields(card, CARD_TEXT, [], rules, changed);
  const skills = card['skills'];
  if (!Array.isArray(skills)) return out;
  let skillsCopy: unknown[] | undefined;
  skills.forEach((skill, i) => {
    if (!isObject(skill)) return;
    const masked = maskFields(skill, SKILL_TEXT, SKILL_LISTS, rules, changed);
    if (masked !== skill) (skillsCopy ??= skills.slice())[i] = masked;
  });
  return skillsCopy === undefined ? out : withMember(out === card ? { ...card } : out, 'skills', skillsCopy);
}

/** `obj` with its string members `texts` and the strings in its list members `lists` masked (copied when something changed). */
function maskFields(obj: JsonObject, texts: readonly string[], lists: readonly string[], rules: readonly MaskRule[], changed: Set<MaskRule>): JsonObject {
  let copy: JsonObject | undefined;
  for (const key of texts) {
    const value = obj[key];
    if (typeof value !== 'string') continue;
    const masked = maskText(value, rules, changed);
    if (masked !== value) copy = withMember(copy ?? { ...obj }, key, masked);
  }
  for (const key of lists) {
    const list = obj[key];
    if (!Array.isArray(list)) continue;
    let listCopy: unknown[] | undefined;
    list.forEach((item, i) => {
      if (typeof item !== 'string') return;
      const masked = maskText(item, rules, changed);
      if (masked !== item) (listCopy ??= list.slice())[i] = masked;
    });
    if (listCopy !== undefined) copy = withMember(copy ?? { ...obj }, key, listCopy);
  }
  return copy ?? obj;
}

/** Sets a member as data (a "__proto__" member stays a member). */
function withMember(obj: JsonObject, key: string, value: unknown): JsonObject {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  return obj;
}

/** What a change is judged on: the skills, and where the card sends callers (every interface, v0.3 and v1.0). */
const INTERFACE_KEYS = ['url', 'preferredTransport', 'additionalInterfaces', 'supportedInterfaces'];

export type CardPart = 'skills' | 'interfaces';

export interface CardFingerprint {
  readonly skills: string;
  readonly interfaces: string;
}

export function cardFingerprint(card: JsonObject): CardFingerprint {
  const interfaces: Record<string, unknown[]> = {};
  for (const key of INTERFACE_KEYS) interfaces[key] = readField(card, key);
  return { skills: digest(readField(card, 'skills')), interfaces: digest(interfaces) };
}

function digest(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('base64url');
}

/** JSON with object keys sorted, so a reordered card is the same card. The engine bounds the depth before. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The last approved version of each agent's card, in memory (a bounded number of agents, oldest forgotten first). */
export class CardBaselines {
  private readonly approved = new Map<string, CardFingerprint>();
  constructor(private readonly max = 10_000) {}

  /** What changed since the approved version of this agent's card; empty when nothing did or none was approved. */
  changes(agent: string, print: CardFingerprint): CardPart[] {
    const before = this.approved.get(agent);
    if (before === undefined) return [];
    const parts: CardPart[] = [];
    if (before.skills !== print.skills) parts.push('skills');
    if (before.interfaces !== print.interfaces) parts.push('interfaces');
    return parts;
  }

  approve(agent: string, print: CardFingerprint): void {
    this.approved.delete(agent);
    if (this.approved.size >= this.max) {
      const oldest = this.approved.keys().next();
      if (oldest.done !== true) this.approved.delete(oldest.value);
    }
    this.approved.set(agent, print);
  }
}
