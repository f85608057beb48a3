// The block list of the crawl policy, compiled for the admission path: a host
// set, a domain set walked label by label, and URL patterns as one anchored
// regular expression each (`*` is any run of characters, everything else
// literal). Pure (src/policy/document.ts has the rules).
import type { BlockRule } from './document.js';

/** An anchored regular expression for a URL pattern: `*` any run, the rest literal. */
export function urlPatternRegExp(pattern: string): RegExp {
  const body = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${body}$`, 'i');
}

export class BlockList {
  private readonly hosts = new Set<string>();
  private readonly domains = new Set<string>();
  private readonly patterns: { rule: BlockRule; re: RegExp }[] = [];
  readonly size: number;

  constructor(rules: readonly BlockRule[]) {
    for (const r of rules) {
      if (r.removed) continue;
      if (r.kind === 'host') this.hosts.add(r.value);
      else if (r.kind === 'domain') this.domains.add(r.value);
      else this.patterns.push({ rule: r, re: urlPatternRegExp(r.value) });
    }
    this.size = this.hosts.size + this.domains.size + this.patterns.length;
  }

  /** Whether every URL of a host is blocked (a host or domain rule): its queue can go. */
  hostBlocked(host: string): boolean {
    if (this.hosts.has(host)) return true;
    if (this.domains.size === 0) return false;
    for (let name = host; ;) {
      if (this.domains.has(name)) return true;
      const dot = name.indexOf('.');
      if (dot < 0) return false;
      name = name.slice(dot + 1);
    }
  }

  /** Whether a URL (normalised) on `host` is blocked. */
  blocked(url: string, host: string): boolean {
    if (this.hostBlocked(host)) return true;
    for (const p of this.patterns) if (p.re.test(url)) return true;
    return false;
  }
}
