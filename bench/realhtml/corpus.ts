// The real-HTML corpus: Debian documentation packages laid out as several
// sites (see bench/realhtml/setup.sh). Each site is a directory tree served
// from its own loopback address.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface Site { name: string; root: string }

const SINGLE_SITES: readonly Site[] = [
  { name: 'python3.11', root: '/usr/share/doc/python3.11/html' },
  { name: 'debian-reference', root: '/usr/share/debian-reference' },
  { name: 'developers-reference', root: '/usr/share/doc/developers-reference/docs' },
];
/** The handbook ships one tree per language; each is a site of its own, as translations often are. */
const HANDBOOK = '/usr/share/doc/debian-handbook/html';

/** The sites present on this machine, in a stable order. */
export function findSites(): Site[] {
  const sites = SINGLE_SITES.filter((s) => existsSync(s.root));
  if (existsSync(HANDBOOK)) {
    for (const lang of readdirSync(HANDBOOK).sort()) {
      const root = join(HANDBOOK, lang);
      if (statSync(root).isDirectory()) sites.push({ name: `handbook-${lang}`, root });
    }
  }
  return sites;
}
