/**
 * The start-up reference of the bench: a bare node:http server that answers every request with a
 * small JSON body. No IPC: run.ts spawns it like `npm start` runs the proxy and reads its RSS from /proc.
 * Env: PORT, HOST (default 127.0.0.1).
 */
import http from 'node:http';

const body = '{"ok":true}';
http
  .createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    });
  })
  .listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
