/**
 * The request the agent receives, built by the proxy from the approved call (design section 2):
 * JSON-RPC gets the approved canonical JSON on the classified path (members beside the four included);
 * REST gets its path rebuilt from the route template and the approved parameters, its query or body
 * from the rest of them. Nothing of the caller's bytes is relayed. Pure.
 */
import type { WireBytes } from '../core/turns';
import type { JsonObject } from '../core/json';
import { rpcRequestProblem, uncarriedMember, type Classified } from './classify';
import { jsonRpcToRest } from './rest';
import { encodePath } from './target';

export interface RebuiltRequest {
  readonly verb: string;
  /** Path and query below the upstream base. */
  readonly path: string;
  /** JSON body (Content-Type: application/json), or null for none. */
  readonly body: WireBytes | null;
  /** A2A-Version to send (undefined: none, as received). */
  readonly version: string | undefined;
}

type A2ACall = Extract<Classified, { kind: 'a2a' }>;

/**
 * `payloadJson` is the serialization of `payload` the guardian saw (made once, reused here), and
 * `payloadBytes` its UTF-8 bytes when the hooks already made them (a large payload: not encoded twice, and
 * carried without its text).
 */
export function rebuildRequest(
  c: A2ACall,
  verb: string,
  payload: JsonObject,
  payloadJson: string | undefined,
  payloadBytes?: WireBytes,
): RebuiltRequest | string {
  if (c.rest === undefined) {
    // The caller's request passed these rules when classified; a modify must pass them too.
    const problem = rpcRequestProblem(payload);
    if (problem !== undefined) return problem;
    return { verb: 'POST', path: c.target, body: payloadBytes ?? Buffer.from(payloadJson ?? JSON.stringify(payload), 'utf8'), version: c.version };
  }
  const extra = uncarriedMember(payload, 'REST');
  if (extra !== undefined) return extra;
  const parts = jsonRpcToRest(c.rest.match, payload, c.version);
  if (typeof parts === 'string') return parts;
  const base = encodePath(c.rest.base);
  // HEAD stays HEAD: every router that answers it runs the GET route, and no body comes back.
  const v = verb.toUpperCase() === 'HEAD' ? 'HEAD' : c.rest.match.route.verb;
  return { verb: v, path: `${base === '/' ? '' : base}${parts.path}${parts.search}`, body: parts.body, version: c.version };
}
