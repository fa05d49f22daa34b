/**
 * gRPC test helpers: the real SDK gRPC client (@a2a-js/sdk/client/grpc over @grpc/grpc-js) created
 * from a card, and a raw HTTP/2 caller for hostile frames the SDK client would never send.
 */
import http2 from 'node:http2';
import type * as A2AClient from '@a2a-js/sdk/client' with { 'resolution-mode': 'import' };
import type * as A2AGrpcClient from '@a2a-js/sdk/client/grpc' with { 'resolution-mode': 'import' };
import type * as A2AErrorsGrpc from '@a2a-js/sdk/errors/grpc' with { 'resolution-mode': 'import' };
import type * as A2AGrpcClientV03 from '@a2a-js/sdk/compat/v0_3/client/grpc' with { 'resolution-mode': 'import' };
import type * as GrpcJs from '@grpc/grpc-js';
import type { AgentCard, Client } from './agent';

const sdkClient: typeof A2AClient = require('@a2a-js/sdk/client');
const sdkGrpcClient: typeof A2AGrpcClient = require('@a2a-js/sdk/client/grpc');
export const sdkGrpcErrors: typeof A2AErrorsGrpc = require('@a2a-js/sdk/errors/grpc');

/**
 * An SDK client preferring gRPC, created from the card at `cardBaseUrl` (it calls the GRPC URL the card names).
 * `legacy`: the SDK's v0.3 compat layer is on, so a v0.3 GRPC interface gets its v0.3 transport (`a2a.v1.A2AService`).
 */
export async function makeGrpcClient(
  cardBaseUrl: string,
  opts: {
    fetchImpl?: typeof fetch;
    credentials?: GrpcJs.ChannelCredentials;
    legacy?: boolean;
    /** with `legacy`: use the card's v0.3 GRPC interface even when it names a 1.0 one */ only03?: boolean;
  } = {},
): Promise<{ client: Client; card: AgentCard; grpcUrl: string | undefined }> {
  const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver } = sdkClient;
  const legacyCompat = opts.legacy === true ? { legacyCompat: { enabled: true } } : {};
  const card = await new DefaultAgentCardResolver({ ...(opts.fetchImpl === undefined ? {} : { fetchImpl: opts.fetchImpl }), ...legacyCompat }).resolve(
    cardBaseUrl,
  );
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      preferredTransports: ['GRPC'],
      transports: [
        new sdkGrpcClient.GrpcTransportFactory({ ...(opts.credentials === undefined ? {} : { grpcChannelCredentials: opts.credentials }), ...legacyCompat }),
      ],
    }),
  );
  const client = await factory.createFromAgentCard(
    opts.only03 === true
      ? { ...card, supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolBinding !== 'GRPC' || i.protocolVersion === '0.3') }
      : card,
  );
  const grpc = card.supportedInterfaces.filter((i) => i.protocolBinding === 'GRPC');
  return { client, card, grpcUrl: (grpc.find((i) => i.protocolVersion === (opts.legacy === true ? '0.3' : '1.0')) ?? grpc[0])?.url };
}

/** The SDK's v0.3 gRPC transport itself (`a2a.v1.A2AService`) at host:port: every v0.3 RPC, GetAgentCard included. */
export function legacyGrpcTransport(address: string): A2AGrpcClientV03.LegacyGrpcTransport {
  const { LegacyGrpcTransport } = require('@a2a-js/sdk/compat/v0_3/client/grpc') as typeof A2AGrpcClientV03;
  return new LegacyGrpcTransport({ endpoint: address });
}

export interface RawGrpcAnswer {
  readonly httpStatus: number | undefined;
  readonly headers: http2.IncomingHttpHeaders;
  readonly trailers: http2.IncomingHttpHeaders;
  /** grpc-status from trailers, or from headers for a trailers-only answer. */
  readonly grpcStatus: number | undefined;
  readonly grpcMessage: string | undefined;
  /** The ErrorInfo details of grpc-status-details-bin, decoded. */
  readonly details: Array<{ reason: string; domain: string; metadata: Record<string, string> }>;
  readonly body: Buffer;
}

/** One HTTP/2 request with exactly the bytes given (frames are the caller's to build), written in `split` pieces. */
export function rawGrpc(address: string, path: string, body: Buffer, headers: http2.OutgoingHttpHeaders = {}, split = 1): Promise<RawGrpcAnswer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    session.on('error', reject);
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    let answer: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on('response', (h) => (answer = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => undefined);
    req.on('close', () => {
      session.close();
      const statusText = trailers['grpc-status'] ?? answer['grpc-status'];
      const bin = (trailers['grpc-status-details-bin'] ?? answer['grpc-status-details-bin']) as string | undefined;
      const decoded = bin === undefined ? undefined : sdkGrpcErrors.decodeStatus(Buffer.from(bin, 'base64'));
      const details = (decoded?.details ?? [])
        .filter((d) => d.typeUrl.endsWith('google.rpc.ErrorInfo'))
        .map((d) => {
          const info = sdkGrpcErrors.decodeErrorInfo(Buffer.from(d.value));
          return { reason: info.reason, domain: info.domain, metadata: { ...info.metadata } };
        });
      const msg = (trailers['grpc-message'] ?? answer['grpc-message']) as string | undefined;
      resolve({
        httpStatus: answer[':status'] as number | undefined,
        headers: answer,
        trailers,
        grpcStatus: statusText === undefined ? undefined : Number(statusText),
        grpcMessage: msg === undefined ? undefined : decodeURIComponent(msg),
        details,
        body: Buffer.concat(chunks),
      });
    });
    const step = Math.max(1, Math.ceil(body.length / split));
    for (let i = step; i < body.length; i += step) req.write(body.subarray(i - step, i));
    req.end(body.subarray(Math.max(0, Math.ceil(body.length / step) - 1) * step));
  });
}

/** A length-prefixed gRPC message (flag 0 unless `compressed`). */
export function grpcFrame(data: Uint8Array, compressed = false): Buffer {
  const out = Buffer.alloc(5 + data.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(data.length, 1);
  out.set(data, 5);
  return out;
}

/** The SDK client's failure of a call: its gRPC status code and message (throws when the call succeeds). */
export async function grpcFailure(p: Promise<unknown>): Promise<{ code: number | undefined; message: string; name: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { code?: number; message: string; name: string; cause?: { code?: number } };
    return { code: e.code ?? e.cause?.code, message: e.message, name: e.constructor.name };
  }
  throw new Error('expected the call to fail');
}
