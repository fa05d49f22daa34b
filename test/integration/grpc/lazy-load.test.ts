/**
 * Only what the configuration uses is loaded: without GRPC_PORT no module of @grpc/grpc-js, the SDK
 * or @bufbuild/protobuf is required; with it they are (the built proxy, in a fresh node process).
 */
import { execFileSync } from 'node:child_process';
import { ensureBuilt, ROOT } from '../../helpers/proxy-process';

jest.setTimeout(60_000);

const PROBE = `
const { configFrom } = require('./dist/src/config/config');
const { startProxy } = require('./dist/src/server');
const { createLogger } = require('./dist/src/runtime/log');
(async () => {
  const env = { PORT: '0', HOST: '127.0.0.1', UPSTREAM_URL: 'http://127.0.0.1:9', GUARDIAN_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'silent', CARD_TTL_MS: '0', ...JSON.parse(process.argv[1]) };
  const p = await startProxy({ config: configFrom(env), logger: createLogger('silent') });
  const loaded = Object.keys(require.cache).filter((k) => /node_modules\\/(@grpc\\/grpc-js|@a2a-js\\/sdk|@bufbuild\\/protobuf)\\//.test(k)).length;
  process.stdout.write(JSON.stringify({ loaded, grpcAddress: p.grpcAddress ?? null }));
  await p.close();
  process.exit(0);
})();
`;

function probe(env: Record<string, string>): { loaded: number; grpcAddress: string | null } {
  const out = execFileSync(process.execPath, ['-e', PROBE, JSON.stringify(env)], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' });
  return JSON.parse(out) as { loaded: number; grpcAddress: string | null };
}

beforeAll(() => ensureBuilt());

test('without GRPC_PORT nothing of gRPC is loaded; with it the listener starts', () => {
  expect(probe({})).toEqual({ loaded: 0, grpcAddress: null });
  const on = probe({ GRPC_PORT: '0' });
  expect(on.loaded).toBeGreaterThan(0);
  expect(on.grpcAddress).toMatch(/^127\.0\.0\.1:\d+$/);
});
