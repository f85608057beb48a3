// A forward proxy on loopback for tests: it relays absolute-form requests
// (RFC 9112 §3.2.2) and CONNECT tunnels (RFC 9110 §9.3.6) to 127.0.0.1 on the
// target's port, whatever the target's name, and records what it relayed.
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface Relayed {
  method: string;
  /** The request-target as received: absolute-form (`http://host:port/path`) or authority-form for CONNECT. */
  target: string;
  headers: IncomingHttpHeaders;
}

export interface TestProxy {
  url: string;
  port: number;
  relayed: Relayed[];
  /** TCP connections accepted from clients so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startProxy(): Promise<TestProxy> {
  const relayed: Relayed[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    relayed.push({ method: req.method ?? '', target: req.url ?? '', headers: req.headers });
    let target: URL;
    try { target = new URL(req.url ?? ''); } catch { res.writeHead(400).end(); return; }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const up = request({ host: '127.0.0.1', port: Number(target.port) || 80, method: req.method, path: target.pathname + target.search, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.rawHeaders);
      r.pipe(res);
    });
    up.on('error', () => { if (!res.headersSent) res.writeHead(502); res.end(); });
    up.end();
  });
  let connections = 0;
  server.on('connection', (s: Socket) => { connections++; sockets.add(s); s.once('close', () => sockets.delete(s)); });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    relayed.push({ method: 'CONNECT', target: req.url ?? '', headers: req.headers });
    const port = Number(/:(\d+)$/.exec(req.url ?? '')?.[1] ?? 443);
    const up = connect(port, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    sockets.add(up);
    up.once('close', () => sockets.delete(up));
    up.on('error', () => client.destroy());
    client.on('error', () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`, port, relayed,
    get connections() { return connections; },
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}
