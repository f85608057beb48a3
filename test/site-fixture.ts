// A small website on loopback for request tests: fixed pages, every request
// recorded with its headers and the proxy-or-not it came through.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface SiteRequest {
  path: string;
  headers: IncomingHttpHeaders;
}

export interface Page {
  status?: number;
  headers?: Record<string, string | string[]>;
  body?: string;
}

export interface Site {
  port: number;
  requests: SiteRequest[];
  close(): Promise<void>;
}

/** Serves `pages` by path (others: 404); a page may be a function of the request. */
export async function startSite(pages: Record<string, Page | ((req: IncomingMessage) => Page)>): Promise<Site> {
  const requests: SiteRequest[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    requests.push({ path: req.url ?? '', headers: req.headers });
    const entry = pages[req.url ?? ''];
    const page = typeof entry === 'function' ? entry(req) : entry ?? { status: 404, body: 'not found' };
    res.writeHead(page.status ?? 200, { 'content-type': 'text/html; charset=utf-8', ...page.headers });
    res.end(page.body ?? '');
  });
  server.on('connection', (s: Socket) => { sockets.add(s); s.once('close', () => sockets.delete(s)); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

/** An HTML page linking to `links`. */
export const linking = (...links: string[]): Page => ({ body: `<!doctype html><title>t</title>${links.map((l) => `<a href="${l}">${l}</a>`).join(' ')}` });
