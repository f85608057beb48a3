// A loopback site of `pages` pages of plain text, each linking to the next (/0 → /1 → …), no robots.txt: the
// smallest crawl there is, for the start-up benches (bench/startup.ts, bench/small-crawl.ts).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const TEXT = 'lorem ipsum dolor sit amet '.repeat(400);

export async function startChainSite(pages: number, onRequest?: (req: IncomingMessage) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    onRequest?.(req);
    if (req.url === '/robots.txt') { res.writeHead(404).end(); return; }
    const n = Number(req.url?.slice(1)) || 0;
    const next = n + 1 < pages ? `<a href="/${n + 1}">next</a>` : '';
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body><p>${n} ${TEXT}</p>${next}</body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}
