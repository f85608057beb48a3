// Whether a page needs a browser to show its links and text: decided from what
// the static parse saw (src/parse/html.ts RenderSignals), then remembered per
// host so that a site built in the browser is rendered without re-deciding, and
// a static site is not rendered on one odd page (docs/render.md "When to turn it on").
// Pure: no I/O, no clock.
import type { RenderSignals } from '../parse/html.js';
import { DEFAULT_RENDER, type RenderMode } from '../config.js';

export type RenderReason =
  | 'mode-never' | 'mode-always' | 'host-rule' | 'host-memory'
  | 'app-root' | 'noscript' | 'scripts-little-text' | 'static';

export interface RenderDecision {
  render: boolean;
  reason: RenderReason;
}

export interface PageSignalThresholds {
  /** Below this many characters of visible text, a page with scripts is an empty shell. */
  minTextChars: number;
  /** An app root with at most this many characters of text is empty (a "Loading…" placeholder). */
  appRootMaxChars: number;
}

// A <noscript> that asks for JavaScript, in the wordings frameworks and sites ship
// (create-react-app: "You need to enable JavaScript to run this app.").
const NOSCRIPT_ASKS_JS = /\b(enable|turn on|activate|requires?|needs?|allow)\b[^.]{0,40}\bjava ?script\b|\bjava ?script\b[^.]{0,40}\b(required|disabled|needed|is off|must be enabled)\b/i;

/** The per-page verdict from the static parse alone. */
export function pageNeedsRender(s: RenderSignals, t: PageSignalThresholds = DEFAULT_RENDER): RenderDecision {
  if (s.appRoot !== undefined && s.appRootTextChars <= t.appRootMaxChars && s.scripts > 0) return { render: true, reason: 'app-root' };
  if (s.noscriptText !== '' && NOSCRIPT_ASKS_JS.test(s.noscriptText) && s.textChars < 4 * t.minTextChars) return { render: true, reason: 'noscript' };
  if (s.scripts > 0 && s.textChars < t.minTextChars) return { render: true, reason: 'scripts-little-text' };
  return { render: false, reason: 'static' };
}

export interface HostRenderMemoryConfig {
  /** The first this-many decided pages of a host settle its verdict. */
  settleAfter: number;
  /** Hosts remembered (oldest forgotten first). */
  maxHosts: number;
}

interface HostTally { yes: number; no: number; settled?: boolean }

/**
 * Per-host memory: the first `settleAfter` pages of a host are decided one by
 * one; after that the majority sticks (a tie renders: a missed page costs more
 * than a rendered static one). Bounded: least recently used hosts are forgotten.
 */
export class HostRenderMemory {
  private readonly hosts = new Map<string, HostTally>();

  constructor(private readonly cfg: HostRenderMemoryConfig = DEFAULT_RENDER) {}

  /** The settled verdict for a host, if any. */
  settled(host: string): boolean | undefined {
    const h = this.hosts.get(host);
    return h?.settled;
  }

  /** Records one page's verdict (only counts until the host settles). */
  record(host: string, render: boolean): void {
    let h = this.hosts.get(host);
    if (h === undefined) {
      h = { yes: 0, no: 0 };
      if (this.hosts.size >= this.cfg.maxHosts) {
        const oldest = this.hosts.keys().next().value;
        if (oldest !== undefined) this.hosts.delete(oldest);
      }
    } else this.hosts.delete(host); // re-insert: Map order is the LRU order
    this.hosts.set(host, h);
    if (h.settled !== undefined) return;
    if (render) h.yes++;
    else h.no++;
    if (h.yes + h.no >= this.cfg.settleAfter) h.settled = h.yes >= h.no;
  }

  get size(): number {
    return this.hosts.size;
  }
}

export interface RenderPolicy {
  mode: RenderMode;
  /** Hosts always rendered, whatever the mode (`--render-host`): exact name or `*.suffix`. */
  hosts: readonly string[];
}

/** Whether a host matches one of the `--render-host` patterns (exact, or `*.suffix` for the suffix's subdomains). */
export function hostMatches(host: string, patterns: readonly string[]): boolean {
  const h = host.toLowerCase();
  for (const p of patterns) {
    const q = p.toLowerCase();
    if (q.startsWith('*.') ? h.endsWith(q.slice(1)) : h === q) return true;
  }
  return false;
}

/**
 * The decision for one fetched HTML page: mode, host rules, the host's settled
 * verdict, then the page's own signals (which are recorded in `memory`).
 */
export function decideRender(
  host: string,
  signals: RenderSignals | undefined,
  policy: RenderPolicy,
  memory: HostRenderMemory,
  thresholds: PageSignalThresholds = DEFAULT_RENDER,
): RenderDecision {
  if (hostMatches(host, policy.hosts)) return { render: true, reason: 'host-rule' };
  if (policy.mode === 'never') return { render: false, reason: 'mode-never' };
  if (policy.mode === 'always') return { render: true, reason: 'mode-always' };
  const settled = memory.settled(host);
  if (settled !== undefined) {
    memory.record(host, settled); // keeps the host recent
    return { render: settled, reason: 'host-memory' };
  }
  if (signals === undefined) return { render: false, reason: 'static' };
  const d = pageNeedsRender(signals, thresholds);
  memory.record(host, d.render);
  return d;
}
