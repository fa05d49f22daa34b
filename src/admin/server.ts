/**
 * Admin endpoints on their own port (design section 9), so they never shadow agent routes.
 *   /healthz  the process is up;
 *   /readyz   this replica can serve (see ./health): 200 or 503, the state of every part in the body;
 *   /metrics  Prometheus text.
 */
import express from 'express';
import http from 'node:http';
import type { Metrics } from './metrics';
import type { Health } from './health';

export function createAdminServer(metrics: Metrics, health: Health): http.Server {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const r = await health.check();
    res.status(r.ready ? 200 : 503).json(r);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return http.createServer(app);
}
