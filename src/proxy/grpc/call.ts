/**
 * One gRPC call through the proxy, in order: door checks (method, content type, encoding, deadline)
 * -> the one request message (bounded, decompressed, decoded) -> caller identity -> task ownership ->
 * request hooks on the canonical JSON-RPC request -> the approved message re-encoded to the agent ->
 * its answer relayed (relay.ts) -> one audit line when the call is over.
 */
import { randomUUID } from 'node:crypto';
import http2 from 'node:http2';
import type { Socket } from 'node:net';
import { HOOK_ORDER } from '../../aos/hook-points';
import type { CardServing } from '../card-judge';
import { uncarriedMember } from '../../a2a/classify';
import { grpcMethodForPath, type GrpcMethod } from '../../a2a/bindings/grpc/methods';
import { canonicalRequest, codecFor, encodeFromPayload, encodeProblem, faithfulEncoding, type MethodCodec } from '../../a2a/bindings/grpc/codec';
import { grpcCodec } from '../../a2a/bindings/grpc/binding';
import { unreadFieldMessage } from '../../a2a/bindings/grpc/unread';
import { GRPC_STATUS, formatTimeout, frameMessage, isProblem, parseTimeout, supportedEncoding, SUPPORTED_ENCODINGS } from '../../a2a/bindings/grpc/framing';
import { spent } from '../../identity/caller';
import { admittedKey, createAdmit, type Admit, type ForwardAssertion, type Verified } from '../admit';
import { claimedKey, responseClosing, turnOrRefuse, turnsOf, turnStage } from '../fair';
import type { JsonObject } from '../../aos/schemas';
import { isObject } from '../../core/json';
import { finishCall } from '../call';
import { callStages, END, runStages, type CallFlow, type Stage } from '../stages';
import { proxyError, type ProxyError } from '../../core/errors';
import { forwardRequestHeaders, headerText } from '../headers';
import type { BodyLease } from '../budget';
import { HELD_COPIES } from '../../core/bounded';
import type { HookRun, HookRunInput } from '../hooks';
import { CallerSide, framingError, readRequestMessage } from './caller';
import { grpcErrorStatus } from '../../a2a/bindings/grpc/binding';
import { relayAnswer } from './relay';
import type { GrpcUpstream } from './upstream';
import type { SharedDeps } from '../deps';
import type { ServiceParameters } from '../../a2a/service-parameters';

/** What the gRPC adapter shares with the HTTP pipeline (ProxyDeps), and its own parts. */
export interface GrpcDeps extends Pick<
  SharedDeps,
  | 'config'
  | 'logger'
  | 'metrics'
  | 'identities'
  | 'identify'
  | 'signAssertion'
  | 'ownership'
  | 'tracer'
  | 'decisionLog'
  | 'streams'
  | 'bodyBudget'
  | 'streamLine'
  | 'callerLimits'
  | 'push'
  | 'fair'
> {
  /** The same hook runner the HTTP bindings use (proxy/hooks.ts). */
  readonly runHooks: (input: HookRunInput) => Promise<HookRun>;
  readonly upstream: GrpcUpstream;
  /** Card rewrite for GetExtendedAgentCard answers, given the `:authority` the caller used. */
  readonly cardRewrite: (authority: string | undefined) => CardServing;
}

/** gRPC errors are statuses in either version: no error-as-event. */
const V1_SHAPE = Object.freeze({ v03: false, errorAsEvent: false });
const V03_SHAPE = Object.freeze({ v03: true, errorAsEvent: false });

/** A gRPC call: the binding-neutral flow plus the HTTP/2 stream and what the gRPC stages make. */
interface GrpcFlow extends CallFlow {
  readonly method: GrpcMethod;
  readonly codec: MethodCodec;
  /** The request message as the generated code read it (unknown fields skipped), re-encoded: exactly what its JSON form says. */
  readonly encoded: Buffer;
  /** The message as the canonical request: while the approved payload is this object, `encoded` is what the agent gets. */
  readonly decodedRequest: JsonObject;
  readonly headers: http2.IncomingHttpHeaders;
  readonly caller: CallerSide;
  readonly lease: BodyLease;
  readonly assertion: ForwardAssertion | undefined;
  readonly timeoutMs: number | undefined;
  /** Set by the encode stage: the message the agent receives. */
  message: Buffer | undefined;
  upReq: http2.ClientHttp2Stream | undefined;
}

/** The longest delay a Node timer holds (2^31-1 ms, 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Headers of the caller's request that are HTTP/2 or gRPC transport, set by the proxy itself towards the agent. */
const TRANSPORT_HEADERS = new Set(['host', 'grpc-encoding', 'grpc-accept-encoding', 'grpc-timeout', 'content-length', 'te', 'content-type']);

export function createGrpcHandler(deps: GrpcDeps): (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void {
  const admit = createAdmit(deps);
  const { config, fair } = deps;
  // The approved call is re-encoded in its caller's turn, as over HTTP (proxy/fair.ts).
  const approvedTurn: readonly Stage<GrpcFlow>[] = fair === undefined ? [] : [turnStage(turnsOf(deps))];
  const stages: readonly Stage<GrpcFlow>[] = [
    ...callStages({ config, ownership: deps.ownership, runHooks: deps.runHooks, requestSides: HOOK_ORDER[config.role].request, push: deps.push }),
    ...approvedTurn,
    encode,
    forwardStage(deps),
  ];
  return (stream, headers) => {
    const caller = new CallerSide(stream);
    // A stream error (a reset, a protocol error) only ends this call.
    stream.on('error', () => undefined);
    handle(deps, admit, stages, caller, headers).catch((err: unknown) => {
      deps.logger.error({ err }, 'internal error while handling a gRPC call');
      caller.fail(proxyError('rejected', 'Internal proxy error'), 'INTERNAL');
    });
  };
}

/** What admission made of a call before its message is read. */
interface Admitted {
  readonly started: number;
  readonly caller: CallerSide;
  readonly headers: http2.IncomingHttpHeaders;
  readonly remoteAddress: string | undefined;
  readonly door: Extract<Door, { type: 'pass' }>;
  readonly known: Verified;
  readonly serviceParameters: ServiceParameters;
  readonly lease: BodyLease;
  readonly assertion: ForwardAssertion | undefined;
}

/** The request message as the guardian judges it and the agent gets it. */
interface Message {
  readonly id: string;
  readonly request: JsonObject;
  readonly encoded: Buffer;
}

async function handle(deps: GrpcDeps, admit: Admit, stages: readonly Stage<GrpcFlow>[], caller: CallerSide, headers: http2.IncomingHttpHeaders): Promise<void> {
  const remoteAddress = caller.stream.session?.socket.remoteAddress;
  const refuse = (err: ProxyError, status?: string, extra: http2.OutgoingHttpHeaders = {}): void => {
    admit.refused(err, { remoteAddress, binding: 'grpc' });
    caller.end({ ...grpcErrorStatus(err, status), ...extra });
  };
  const a = await admitCall(deps, admit, caller, headers, remoteAddress, refuse);
  if (a === undefined) return;
  const message = await readCallMessage(deps, a, refuse);
  if (message === undefined) return;
  await runStages(stages, openFlow(deps, admit, a, message));
}

/**
 * Door checks, then admission before cost: the caller is verified and admitted within its shares
 * before a byte of its message is read. Undefined: refused, or gone.
 */
async function admitCall(
  deps: GrpcDeps,
  admit: Admit,
  caller: CallerSide,
  headers: http2.IncomingHttpHeaders,
  remoteAddress: string | undefined,
  refuse: (err: ProxyError, status?: string, extra?: http2.OutgoingHttpHeaders) => void,
): Promise<Admitted | undefined> {
  const started = performance.now();
  const stream = caller.stream;
  const door = doorCheck(headers);
  if (door.type === 'refuse') return void refuse(door.error, door.status, door.extra);
  // Verifying a credential takes a turn under the key the call claims (proxy/fair.ts).
  if (!(await callerTurn(deps, claimedKey(headers, remoteAddress, deps.config.perCaller.ipv6Prefix), caller, refuse))) return undefined;
  const atBound = admit.precheck(headers, remoteAddress);
  if (atBound !== undefined) return void refuse(atBound);
  const who = admit.identify(headers, stream.session?.socket as Socket);
  const assertion = admit.sign();
  const lease = deps.bodyBudget.lease();
  let leave: (() => void) | undefined;
  let closed = false;
  stream.once('close', () => {
    closed = true;
    lease.release();
    leave?.();
  });
  // An A2A method: the caller's one-use credentials (an assertion) are used up now.
  const known = await spent(await who);
  if (!known.ok) return void refuse(proxyError('unauthenticated', known.message, { ...known.metadata }));
  // gRPC metadata carries the same service parameters as HTTP headers (A2A-Version absent: 0.3).
  const version = headerText(headers['a2a-version'])?.trim();
  const serviceParameters = admit.serviceParameters(headers, version === '' ? undefined : version);
  if ('error' in serviceParameters) return void refuse(serviceParameters.error, serviceParameters.malformed ? 'INVALID_ARGUMENT' : undefined);
  const entered = await admit.enter(lease, known, remoteAddress, () => closed, responseClosing(stream));
  if (entered === 'gone') return undefined;
  if (!entered.ok) return void refuse(entered.error);
  leave = entered.leave;
  return { started, caller, headers, remoteAddress, door, known, serviceParameters, lease, assertion };
}

/** The one request message: bounded, decompressed, decoded, and carried whole by its JSON form. Undefined: refused, or gone. */
async function readCallMessage(deps: GrpcDeps, a: Admitted, refuse: (err: ProxyError, status?: string) => void): Promise<Message | undefined> {
  const { method, encoding } = a.door;
  const { lease } = a;
  const body = await readRequestMessage(a.caller.stream, encoding, deps.config.maxBodyBytes, deps.config.bodyTimeoutMs, lease);
  if (body === 'gone') return undefined;
  if (body === 'overloaded') {
    return void refuse(lease.refusal());
  }
  if (isProblem(body)) return void refuse(framingError(body), body.status);
  // The frame bytes are dropped once read: hold the copies of what is kept (a decompressed message weighs what it decoded to).
  if (!lease.hold(body.length * HELD_COPIES)) {
    return void refuse(lease.refusal());
  }
  // Decoding the message, building its envelope: in the verified caller's turn.
  if (!(await callerTurn(deps, admittedKey(a.known, a.remoteAddress, deps.config.perCaller.ipv6Prefix), a.caller, refuse))) return undefined;
  const codec = codecFor(method);
  let decoded: unknown;
  let params: JsonObject;
  try {
    const read = codec.request.decodeNoting(body);
    // A field the generated code skips would not reach the agent: refused by number, never dropped.
    if (read.unread !== undefined) return void refuse(proxyError('rejected', unreadFieldMessage(read.unread, method.request)), 'INVALID_ARGUMENT');
    decoded = read.message;
    const json = codec.request.toJson(decoded);
    if (!isObject(json)) throw new Error('params are not an object');
    params = json;
  } catch (err) {
    return void refuse(proxyError('invalidRequest', `request message does not decode as ${method.request}: ${(err as Error).message}`), 'INVALID_ARGUMENT');
  }
  // The guardian judges the JSON form: a message it does not carry whole (an unknown enum number, a NaN) is refused.
  const encoded = faithfulEncoding(codec.request, decoded, params);
  if (encoded === undefined) {
    return void refuse(
      proxyError(
        'rejected',
        `request message holds values its JSON form cannot carry (an enum value ${method.request} does not define, a NaN or infinite number...)`,
      ),
      'INVALID_ARGUMENT',
    );
  }
  const id = `grpc-${randomUUID()}`;
  return { id, request: canonicalRequest(method, params, id), encoded };
}

/** Wait for `key`'s turn (proxy/fair.ts): false once refused (at FAIR_QUEUE_PER_CALLER) or gone. */
function callerTurn(deps: GrpcDeps, key: string, caller: CallerSide, refuse: (err: ProxyError) => void): Promise<boolean> {
  return turnOrRefuse(turnsOf(deps), key, responseClosing(caller.stream), refuse);
}

/** The call opened (span, exchange), its end and its deadline set. */
function openFlow(deps: GrpcDeps, admit: Admit, a: Admitted, m: Message): GrpcFlow {
  const { method, timeoutMs } = a.door;
  const { caller, headers, started } = a;
  const codec = codecFor(method);
  const ex = admit.open(headers, {
    started,
    codec: grpcCodec,
    op: method.op,
    wireMethod: method.name,
    id: m.id,
    shape: method.version === '0.3' ? V03_SHAPE : V1_SHAPE,
    binding: 'grpc',
    httpMethod: 'POST',
    path: String(headers[':path'] ?? ''),
    remoteAddress: a.remoteAddress,
    caller: a.known,
    serviceParameters: a.serviceParameters,
  });
  const flow: GrpcFlow = {
    ex,
    port: caller,
    request: m.request,
    requestJson: undefined,
    reasoning: headerText(headers[deps.config.reasoningHeader]),
    // A replacement must still be a message the agent can read.
    validateModified: (p) => uncarriedMember(p, 'gRPC') ?? encodeProblem(codec.request, p, 'params'),
    answerHook: undefined,
    approved: undefined,
    method,
    codec,
    encoded: m.encoded,
    decodedRequest: m.request,
    headers,
    caller,
    lease: a.lease,
    assertion: a.assertion,
    timeoutMs,
    message: undefined,
    upReq: undefined,
  };
  let deadline: NodeJS.Timeout | undefined;
  caller.stream.once('close', () => {
    if (deadline !== undefined) clearTimeout(deadline);
    if (!caller.finished) {
      // The caller went away (or reset the stream): stop the guardian calls and the agent's call.
      ex.call.caller.cancel();
      flow.upReq?.close(http2.constants.NGHTTP2_CANCEL);
    }
    finishCall(deps, ex, caller.finished);
  });
  // A Node timer holds at most MAX_TIMER_MS and fires a longer one at once: a deadline past it (weeks away)
  // is left to the agent, which gets it in grpc-timeout.
  if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_MS) {
    const left = timeoutMs - (performance.now() - started);
    deadline = setTimeout(
      () => {
        ex.log.error = 'deadline exceeded';
        ex.log.outcome = 'cancelled';
        caller.end({ 'grpc-status': String(GRPC_STATUS.DEADLINE_EXCEEDED), 'grpc-message': 'Deadline exceeded' });
        ex.call.caller.cancel();
        flow.upReq?.close(http2.constants.NGHTTP2_CANCEL);
      },
      Math.max(0, left),
    );
    deadline.unref();
  }
  return flow;
}

/** What the agent decodes is what the guardian approved: the decoded message (unknown fields dropped) or the replacement. */
const encode: Stage<GrpcFlow> = {
  name: 'encode',
  run(f) {
    const run = f.approved as NonNullable<GrpcFlow['approved']>;
    // Another payload (a modify, or task ownership's unsealed page token) is encoded from what the guardian saw.
    f.message = run.modified || run.payload !== f.decodedRequest ? encodeFromPayload(f.codec.request, run.payload, 'params') : f.encoded;
    return undefined;
  },
};

function forwardStage(deps: GrpcDeps): Stage<GrpcFlow> {
  return {
    name: 'forward',
    async run(f) {
      const { ex, caller, timeoutMs } = f;
      const run = f.approved as NonNullable<GrpcFlow['approved']>;
      const outHeaders = upstreamHeaders(
        deps,
        f.headers,
        caller.stream,
        run.unchecked,
        await f.assertion?.(),
        timeoutMs === undefined ? undefined : timeoutMs - (performance.now() - ex.call.started),
        run.serviceParameters,
      );
      if (!caller.open) return END;
      let upReq: http2.ClientHttp2Stream;
      try {
        upReq = deps.upstream.request(outHeaders, f.method.version);
      } catch (err) {
        ex.log.error = (err as Error).message;
        caller.fail(proxyError('upstreamUnavailable', 'Upstream agent unavailable: no gRPC endpoint known'));
        return END;
      }
      f.upReq = upReq;
      ex.log.upstreamSentAt = performance.now();
      upReq.end(frameMessage(f.message as Buffer));
      // The request has left: its bytes no longer count against the in-flight budget.
      f.lease.release();
      // The lease (released when the call ends) now holds the answer messages being judged.
      relayAnswer(deps, ex, f.method, caller, upReq, f.codec.response, f.answerHook, headerText(f.headers[':authority']), f.lease);
      return undefined;
    },
  };
}

/**
 * The agent's request headers: the caller's metadata under the same rules as HTTP headers (reasoning
 * removed, X-AOS-Agent-* the proxy's, assertion, unchecked marker), transport headers the proxy's own.
 */
function upstreamHeaders(
  deps: GrpcDeps,
  incoming: http2.IncomingHttpHeaders,
  stream: http2.ServerHttp2Stream,
  unchecked: boolean,
  signed: string | undefined,
  leftMs: number | undefined,
  serviceParameters: ServiceParameters | undefined,
): http2.OutgoingHttpHeaders {
  const { config } = deps;
  const metadata: http2.IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(incoming)) {
    if (k.startsWith(':') || TRANSPORT_HEADERS.has(k)) continue;
    metadata[k] = v;
  }
  const out = forwardRequestHeaders(metadata, {
    role: config.role,
    reasoningHeader: config.reasoningHeader,
    announce: config.role === 'server' ? undefined : deps.identities.clientAsPeer(),
    assertion: signed,
    unchecked,
    bodyLength: null,
    upstreamHost: '',
    remoteAddress: stream.session?.socket.remoteAddress,
    encrypted: stream.session?.encrypted === true,
    serviceParameters,
  });
  delete out.host;
  delete out['x-forwarded-host'];
  return {
    ...out,
    ':method': 'POST',
    ':path': String(incoming[':path']),
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-accept-encoding': 'identity',
    ...(leftMs === undefined ? {} : { 'grpc-timeout': formatTimeout(leftMs) }),
  };
}

type Door =
  | { readonly type: 'pass'; readonly method: GrpcMethod; readonly encoding: string | undefined; readonly timeoutMs: number | undefined }
  | { readonly type: 'refuse'; readonly error: ProxyError; readonly status: string; readonly extra?: http2.OutgoingHttpHeaders };

/**
 * The checks before a byte of the body is read (pure). The positive model: only the exact `:path` of a
 * known RPC, over POST with a gRPC (protobuf) content type, in an encoding the proxy reads, passes.
 */
export function doorCheck(headers: http2.IncomingHttpHeaders): Door {
  const refuse = (error: ProxyError, status: string, extra?: http2.OutgoingHttpHeaders): Door => ({
    type: 'refuse',
    error,
    status,
    ...(extra === undefined ? {} : { extra }),
  });
  if (headers[':method'] !== 'POST') return refuse(proxyError('methodNotFound', 'gRPC calls are POST'), 'UNIMPLEMENTED');
  const contentType = headerText(headers['content-type']) ?? '';
  if (!/^application\/grpc(\+proto)?(\s*;.*)?$/i.test(contentType)) {
    return refuse(proxyError('contentTypeNotSupported', `content-type ${contentType.slice(0, 64) || '(none)'} is not application/grpc`), 'INVALID_ARGUMENT');
  }
  const path = String(headers[':path'] ?? '');
  const method = grpcMethodForPath(path);
  if (method === undefined) return refuse(proxyError('methodNotFound', `Unknown method ${path.slice(0, 128)}`), 'UNIMPLEMENTED');
  const encoding = headerText(headers['grpc-encoding']);
  if (!supportedEncoding(encoding)) {
    return refuse(proxyError('methodNotFound', `grpc-encoding ${String(encoding).slice(0, 32)} is not supported`), 'UNIMPLEMENTED', {
      'grpc-accept-encoding': SUPPORTED_ENCODINGS.join(','),
    });
  }
  const timeoutMs = parseTimeout(headerText(headers['grpc-timeout']));
  if (timeoutMs === null) return refuse(proxyError('rejected', 'malformed grpc-timeout'), 'INTERNAL');
  return { type: 'pass', method, encoding, timeoutMs };
}
