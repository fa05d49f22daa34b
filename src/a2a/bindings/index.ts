/** The binding registry: every binding's codec by name. */
import type { BindingName, Codec } from '../binding';
import { jsonRpcCodec } from './jsonrpc';
import { restCodec } from './rest';
import { grpcCodec } from './grpc/binding';

export const CODECS = { jsonrpc: jsonRpcCodec, rest: restCodec, grpc: grpcCodec } as const satisfies Record<BindingName, Codec>;

export { jsonRpcCodec, restCodec, grpcCodec };
