// A static file server for the real-HTML corpus, run as a child process (so
// its CPU is not charged to the crawler being measured). Each site listens on
// its own loopback address; directories without index.html get an automatic
// index, as a stock web server would give them. Files are cached in memory
// after their first read so that the disk is out of the measurement.
//
// Driven over the IPC channel: {type:'start', sites} → {type:'ready', roots};
// {type:'reset'} → {type:'stats', …} (counts since the previous reset).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import type { Site } from './corpus.js';

export interface ServeStats { requests: number; htmlPages: number; notFound: number; bytes: number; firstRequestAt: number }

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.htm': 'text/html; charset=utf-8', '.css': 'text/css', '.js': 'text/javascript',
  '.png': 'image/png', '.jpg': 'image/jpeg', '.gif': 'image/gif', '.svg': 'image/svg+xml', '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8', '.pdf': 'application/pdf', '.gz': 'application/gzip', '.json': 'application/json',
  '.epub': 'application/epub+zip', '.woff': 'font/woff', '.woff2': 'font/woff2',
};
const ROBOTS = Buffer.from('User-agent: *\nDisallow:\n');

let stats: ServeStats = { requests: 0, htmlPages: 0, notFound: 0, bytes: 0, firstRequestAt: 0 };
const cache = new Map<string, Buffer | null>();

function autoindex(dir: string, urlPath: string): Buffer {
  const items = readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))
    .map((e) => { const n = e.isDirectory() ? `${e.name}/` : e.name; return `<li><a href="${encodeURI(n)}">${n}</a></li>`; });
  return Buffer.from(`<!DOCTYPE html><html><head><title>Index of ${urlPath}</title></head><body><h1>Index of ${urlPath}</h1><ul>${items.join('')}</ul></body></html>`);
}

/** The body and type for a path, or a redirect to the directory's slash form, or null (404). */
function resolvePath(root: string, urlPath: string): { body: Buffer; type: string } | { location: string } | null {
  let decoded: string;
  try { decoded = decodeURIComponent(urlPath); } catch { return null; }
  const rel = normalize(decoded).replace(/^(\.\.(\/|$))+/, '');
  const file = join(root, rel);
  if (!file.startsWith(root)) return null;
  const key = file + (urlPath.endsWith('/') ? '/' : '');
  let body = cache.get(key);
  let st;
  try { st = statSync(file); } catch { return null; }
  if (st.isDirectory()) {
    if (!urlPath.endsWith('/')) return { location: `${urlPath}/` };
    if (body === undefined) {
      try { body = readFileSync(join(file, 'index.html')); } catch { body = autoindex(file, urlPath); }
      cache.set(key, body);
    }
    return { body: body!, type: TYPES['.html']! };
  }
  if (body === undefined) { body = readFileSync(file); cache.set(key, body); }
  return { body: body!, type: TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream' };
}

function handler(root: string) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    stats.requests++;
    if (stats.firstRequestAt === 0) stats.firstRequestAt = Date.now();
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/robots.txt') { res.writeHead(200, { 'content-type': 'text/plain', 'content-length': ROBOTS.length }); res.end(ROBOTS); return; }
    const r = resolvePath(root, path);
    if (r === null) { stats.notFound++; res.writeHead(404, { 'content-type': 'text/plain', 'content-length': 9 }); res.end('not found'); return; }
    if ('location' in r) { res.writeHead(301, { location: r.location, 'content-length': 0 }); res.end(); return; }
    if (r.type.startsWith('text/html')) stats.htmlPages++;
    stats.bytes += r.body.length;
    res.writeHead(200, { 'content-type': r.type, 'content-length': r.body.length });
    res.end(req.method === 'HEAD' ? undefined : r.body);
  };
}

async function start(sites: Site[]): Promise<string[]> {
  const servers: Server[] = [];
  let port = 0;
  const roots: string[] = [];
  for (let i = 0; i < sites.length; i++) {
    const addr = `127.0.77.${i + 1}`;
    const server = createServer({ keepAliveTimeout: 30_000 }, handler(sites[i]!.root));
    await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(port, addr, () => resolve()); });
    port = (server.address() as { port: number }).port;
    servers.push(server);
    roots.push(`http://${addr}:${port}/`);
  }
  return roots;
}

process.on('message', (msg: { type: string; sites?: Site[] }) => {
  if (msg.type === 'start') {
    start(msg.sites!).then((roots) => process.send!({ type: 'ready', roots }), (err) => { process.stderr.write(`${(err as Error).message}\n`); process.exit(1); });
  } else if (msg.type === 'reset') {
    process.send!({ type: 'stats', ...stats });
    stats = { requests: 0, htmlPages: 0, notFound: 0, bytes: 0, firstRequestAt: 0 };
  }
});
process.on('disconnect', () => process.exit(0));
