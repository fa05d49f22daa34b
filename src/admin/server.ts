/**
 * Admin endpoints on their own port (design section 9), so they never shadow agent routes.
 */
import express from 'express';
import http from 'node:http';
import type { Metrics } from './metrics';

export interface AdminChecks {
  /** Guardian answers AOS ping. */
  guardianReady(): Promise<boolean>;
  /** The upstream agent card is reachable. */
  upstreamReady(): Promise<boolean>;
  /** False once draining has started. */
  accepting(): boolean;
}

export function createAdminServer(metrics: Metrics, checks: AdminChecks): http.Server {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const [guardian, upstream] = await Promise.all([checks.guardianReady(), checks.upstreamReady()]);
    const accepting = checks.accepting();
    res.status(guardian && upstream && accepting ? 200 : 503).json({ guardian, upstream, draining: !accepting });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return http.createServer(app);
}
