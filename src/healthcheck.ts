/**
 * The image's HEALTHCHECK (the image has no shell, curl or wget):
 *   node dist/src/healthcheck.js            the proxy: GET /healthz on its admin port
 *   node dist/src/healthcheck.js guardian   the reference guardian: GET /healthz on GUARDIAN_PORT
 * Reads the variables the checked process reads, with the same A2A_GUARD_ rule (src/core/env.ts).
 * Exits 0 when the answer is HTTP 200 within 2 s, 1 otherwise.
 */
import { get } from 'node:http';
import { envText } from './core/env';

export type HealthTarget = 'proxy' | 'guardian';

/** Where the process listens, seen from inside its own container or pod. */
export function healthUrl(target: HealthTarget, env: NodeJS.ProcessEnv): string {
  const [portVar, hostVar, defaultPort] = target === 'guardian' ? ['GUARDIAN_PORT', 'GUARDIAN_HOST', '7070'] : ['ADMIN_PORT', 'ADMIN_HOST', '9090'];
  const port = envText(env, portVar) ?? defaultPort;
  const bound = envText(env, hostVar) ?? '0.0.0.0';
  const host = bound === '0.0.0.0' || bound === '::' ? '127.0.0.1' : bound.includes(':') ? `[${bound}]` : bound;
  return `http://${host}:${port}/healthz`;
}

export function probe(url: string, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get(url, { timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
  });
}

if (require.main === module) {
  const target: HealthTarget = process.argv[2] === 'guardian' ? 'guardian' : 'proxy';
  void probe(healthUrl(target, process.env)).then((ok) => process.exit(ok ? 0 : 1));
}
