/**
 * Admin endpoints on their own port (design section 9), so they never shadow agent routes.
 *   /healthz  the process is up;
 *   /readyz   this replica can serve (see ./health): 200 or 503, the state of every part in the body;
 *   /metrics  Prometheus text.
 * Three GET routes on node:http: a web framework would cost more start-up time and memory than the
 * whole admin surface.
 */
import http from 'node:http';
import type { Metrics } from './metrics';
import type { Health } from './health';

function send(res: http.ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const json = (res: http.ServerResponse, status: number, body: unknown) => send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));

async function route(req: http.IncomingMessage, res: http.ServerResponse, metrics: Metrics, health: Health): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { error: 'method not allowed' });
  switch (path) {
    case '/healthz':
      return json(res, 200, { status: 'ok' });
    case '/readyz': {
      const r = await health.check();
      return json(res, r.ready ? 200 : 503, r);
    }
    case '/metrics':
      return send(res, 200, metrics.registry.contentType, await metrics.registry.metrics());
    default:
      return json(res, 404, { error: 'not found' });
  }
}

export function createAdminServer(metrics: Metrics, health: Health): http.Server {
  return http.createServer((req, res) => {
    req.resume();
    route(req, res, metrics, health).catch(() => {
      if (!res.headersSent) json(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
}
