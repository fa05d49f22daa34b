/**
 * Records every operation an @a2a-js/sdk request handler acts on: each call of an
 * A2ARequestHandler method (sendMessage, sendMessageStream, getTask, listTasks, cancelTask,
 * resubscribe, the four push-config methods, getAuthenticatedExtendedAgentCard, and any public
 * method a later SDK adds), with the parameters and the tenant the SDK resolved into its
 * ServerCallContext. It wraps the handler object itself, below the SDK's JSON-RPC and REST
 * transports, so what is recorded is what the agent acts on, whatever HTTP shape carried it.
 *
 *   const rec = handlerRecorder();
 *   const agent = await startAgent({ wrapRequestHandler: rec.wrap });
 *
 * A call is recorded when the transport invokes the method, before the handler runs: a call that
 * then fails (task not found, unsupported operation) was still acted on by the agent.
 */
import type * as A2AServer from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };

/** Handler methods that are not operations: the public card (served on its own path) and the constructor. */
const NOT_OPERATIONS = new Set(['constructor', 'getAgentCard']);

/** The SDK keeps request headers in the context state under this key (STATE_HEADERS_KEY). */
const STATE_HEADERS_KEY = 'headers';

export interface HandlerCall {
  /** The A2ARequestHandler method, e.g. `sendMessage`. */
  readonly method: string;
  /** The request object the transport passed (core v1 shape), as JSON-safe data. */
  readonly params: unknown;
  /**
   * The request object itself, as the transport passed it (values JSON cannot hold, a NaN, an enum
   * number the SDK does not know, kept as they are): for oracles that compare protobuf encodings.
   */
  readonly live: unknown;
  /** ServerCallContext.tenant: the tenant the SDK scopes the call to (undefined = default). */
  readonly contextTenant: string | undefined;
  /** ServerCallContext.requestedVersion (the A2A-Version header the agent saw). */
  readonly requestedVersion: string | undefined;
  /** ServerCallContext.requestedExtensions: the extensions the SDK read from the call's service parameters. */
  readonly requestedExtensions: readonly string[] | undefined;
  /** Request headers the agent saw (lower-case names), from the context state. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface HandlerRecorder {
  readonly calls: HandlerCall[];
  /** Install the recorder on a request handler (pass as `wrapRequestHandler` to startAgent). */
  readonly wrap: (handler: A2AServer.DefaultRequestHandler) => void;
  clear(): void;
}

type Context = { tenant?: unknown; requestedVersion?: unknown; requestedExtensions?: unknown; state?: unknown } | undefined;

function jsonSafe(v: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(v ?? null, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x)));
  } catch {
    return String(v);
  }
}

function headersOf(ctx: Context): Record<string, string> {
  const state = ctx?.state;
  const raw = state instanceof Map ? (state.get(STATE_HEADERS_KEY) as Record<string, unknown> | undefined) : undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw ?? {})) {
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  return out;
}

export function handlerRecorder(): HandlerRecorder {
  const calls: HandlerCall[] = [];
  const wrap = (handler: A2AServer.DefaultRequestHandler): void => {
    const target = handler as unknown as Record<string, unknown>;
    const names = new Set<string>();
    for (let p: object | null = Object.getPrototypeOf(handler); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
      for (const n of Object.getOwnPropertyNames(p)) names.add(n);
    }
    for (const name of names) {
      if (NOT_OPERATIONS.has(name) || name.startsWith('_')) continue;
      const original = target[name];
      if (typeof original !== 'function') continue;
      // Streaming methods are async generators: record at the call (the transport calls them
      // before iterating), and return the generator untouched.
      target[name] = function recorded(this: unknown, ...args: unknown[]): unknown {
        const ctx = args[1] as Context;
        calls.push({
          method: name,
          params: jsonSafe(args[0]),
          live: args[0],
          // The JSON-RPC transport puts params.tenant into the context unchecked: keep a non-string one visible.
          contextTenant:
            ctx?.tenant === undefined || ctx.tenant === null ? undefined : typeof ctx.tenant === 'string' ? ctx.tenant : JSON.stringify(ctx.tenant),
          requestedVersion: typeof ctx?.requestedVersion === 'string' ? ctx.requestedVersion : undefined,
          requestedExtensions: Array.isArray(ctx?.requestedExtensions) ? [...(ctx.requestedExtensions as string[])] : undefined,
          headers: headersOf(ctx),
        });
        return (original as (...a: unknown[]) => unknown).apply(handler, args);
      };
    }
  };
  return {
    calls,
    wrap,
    clear() {
      calls.length = 0;
    },
  };
}
