// `--seed` means what it looks like (docs/cli.md): an http(s) URL is a crawl
// seed; a multiaddr or host:port is a peer to join; a path names a file holding
// either, one per line ('#' starts a comment).
import { readFileSync, statSync } from 'node:fs';

export interface SeedSet { urls: string[]; peers: string[] }

export class UsageError extends Error {}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

export function classifySeed(spec: string, into: SeedSet, fromFile?: string): void {
  const s = spec.trim();
  const where = fromFile ? ` (in ${fromFile})` : '';
  if (s === '') return;
  if (/^https?:\/\//i.test(s)) {
    try {
      const u = new URL(s);
      if (!u.hostname) throw new Error('no host');
    } catch {
      throw new UsageError(`--seed '${s}'${where} is not a valid URL`);
    }
    into.urls.push(s);
    return;
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) throw new UsageError(`--seed '${s}'${where}: only http:// and https:// URLs can be crawled`);
  if (s.startsWith('/ip4/') || s.startsWith('/ip6/') || s.startsWith('/dns')) { into.peers.push(s); return; }
  const hp = HOST_PORT.exec(s);
  if (hp && Number(hp[2]) > 0 && Number(hp[2]) < 65536 && !isFile(s)) { into.peers.push(s); return; }
  if (!fromFile && isFile(s)) {
    const text = readFileSync(s, 'utf8');
    for (const line of text.split(/\r?\n/)) {
      const t = line.replace(/#.*$/, '').trim();
      if (t) classifySeed(t, into, s);
    }
    return;
  }
  throw new UsageError(`--seed '${s}'${where} is neither an http(s) URL, a peer (multiaddr or host:port), nor a readable file`);
}

function isFile(p: string): boolean {
  try { return statSync(p).isFile(); } catch { return false; }
}
