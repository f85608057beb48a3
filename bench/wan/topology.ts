// The WAN emulator's world (bench/wan/README.md): agents in zones, link rules,
// partitions. Pure: the relay (relay.ts) asks it which profile a directed link
// has and whether it is cut; control commands change it.
import { DEFAULT_LINK, parseProfilePatch, type LinkProfile } from './link.js';

export interface WanAgent {
  /** Unique name, used in commands and stats. */
  name: string;
  zone: string;
  /**
   * The loopback address this agent's outgoing mesh connections come from
   * (`ubicrawl join --source-address`): how the relay tells who is calling.
   */
  source: string;
  /** Where the agent itself listens, `host:port`. */
  target: string;
  /** Port of the relay listener that stands for this agent (0 or absent: any free port). */
  port?: number;
}

/**
 * A link rule: `from` and `to` select agents by name, by zone, or `*`;
 * `crossZone` limits it to links between different zones (or, false, inside one).
 * Every matching rule applies, later ones over earlier ones.
 */
export interface LinkRule extends Partial<LinkProfile> {
  from: string;
  to: string;
  crossZone?: boolean;
  /** The JSON config's short forms, with units: `60ms`, `10mbit`, … (link.ts parseProfilePatch). */
  latency?: string | number;
  jitter?: string | number;
  rate?: string | number;
  bandwidth?: string | number;
  loss?: number;
  stall?: string | number;
}

export interface WanConfig {
  agents: WanAgent[];
  links?: LinkRule[];
  /** Loopback address the relay listens on. Default 127.0.0.1. */
  host?: string;
  /** HTTP control port on loopback (0: any free port; absent: none). */
  control?: number;
  /** Seed of the jitter and loss draws. Default 1. */
  seed?: number;
}

/** Traffic across a cut: held until the heal, or dropped (the stream is then broken and reset at the heal). */
export type PartitionMode = 'hold' | 'drop';

/** A cut link: what happens to its traffic, and whether connections across it are reset (new ones at once). */
export interface Cut { mode: PartitionMode; reset: boolean }

/** The name of callers whose source address is no agent's. */
export const UNKNOWN_AGENT = '?';

function normalizeIp(ip: string): string {
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}

/** Checks a config read from JSON and fills in the defaults; throws one clear line on a mistake. */
export function checkWanConfig(raw: unknown): WanConfig {
  const c = raw as WanConfig;
  if (!c || !Array.isArray(c.agents) || c.agents.length === 0) throw new Error('wan config: "agents" must list at least one agent');
  const names = new Set<string>();
  const sources = new Set<string>();
  for (const a of c.agents) {
    for (const f of ['name', 'zone', 'source', 'target'] as const) {
      if (typeof a[f] !== 'string' || !a[f]) throw new Error(`wan config: agent ${JSON.stringify(a)} needs a string "${f}"`);
    }
    if (a.name === UNKNOWN_AGENT || a.name === '*') throw new Error(`wan config: "${a.name}" is not a usable agent name`);
    if (names.has(a.name)) throw new Error(`wan config: agent name ${a.name} used twice`);
    if (sources.has(normalizeIp(a.source))) throw new Error(`wan config: source address ${a.source} used twice (the relay tells agents apart by it)`);
    if (!/^[^:]+:\d{1,5}$/.test(a.target)) throw new Error(`wan config: agent ${a.name}: target must be host:port, got ${a.target}`);
    names.add(a.name);
    sources.add(normalizeIp(a.source));
  }
  for (const r of c.links ?? []) {
    if (typeof r.from !== 'string' || typeof r.to !== 'string') throw new Error(`wan config: link rule ${JSON.stringify(r)} needs "from" and "to"`);
    parseProfilePatch(r as unknown as Record<string, unknown>);
  }
  return { ...c, links: c.links ?? [] };
}

export class Topology {
  private readonly agents = new Map<string, WanAgent>();
  private readonly bySource = new Map<string, WanAgent>();
  private readonly rules: Array<{ from: string; to: string; crossZone?: boolean; patch: Partial<LinkProfile> }> = [];
  /** Cut directed links, `from>to`. */
  private readonly cuts = new Map<string, Cut>();
  /** Resolved profiles, `from>to`; cleared whenever a rule is added. */
  private readonly cache = new Map<string, LinkProfile>();

  constructor(config: WanConfig) {
    for (const a of config.agents) {
      this.agents.set(a.name, a);
      this.bySource.set(normalizeIp(a.source), a);
    }
    for (const r of config.links ?? []) this.addRule(r.from, r.to, parseProfilePatch(r as unknown as Record<string, unknown>), r.crossZone);
  }

  list(): WanAgent[] { return [...this.agents.values()]; }

  agent(name: string): WanAgent | undefined { return this.agents.get(name); }

  /** The agent whose outgoing connections come from `ip`, or undefined. */
  agentAt(ip: string): WanAgent | undefined { return this.bySource.get(normalizeIp(ip)); }

  zoneOf(name: string): string { return this.agents.get(name)?.zone ?? UNKNOWN_AGENT; }

  /** Agent names a selector stands for: a name, a zone, `*`, or a comma-separated list of these. */
  select(selector: string): string[] {
    const out = new Set<string>();
    for (const part of selector.split(',').map((s) => s.trim()).filter(Boolean)) {
      let hit = false;
      for (const a of this.agents.values()) {
        if (part === '*' || a.name === part || a.zone === part) { out.add(a.name); hit = true; }
      }
      if (!hit) throw new Error(`no agent or zone named ${part}`);
    }
    return [...out];
  }

  private matches(selector: string, name: string): boolean {
    return selector === '*' || selector === name || selector === this.zoneOf(name);
  }

  addRule(from: string, to: string, patch: Partial<LinkProfile>, crossZone?: boolean): void {
    this.rules.push({ from, to, crossZone, patch });
    this.cache.clear();
  }

  /** The profile of the directed link from → to (agent names; UNKNOWN_AGENT matches `*` rules only). */
  profile(from: string, to: string): LinkProfile {
    const key = `${from}>${to}`;
    let p = this.cache.get(key);
    if (p) return p;
    const cross = this.zoneOf(from) !== this.zoneOf(to);
    p = { ...DEFAULT_LINK };
    for (const r of this.rules) {
      if (r.crossZone !== undefined && r.crossZone !== cross) continue;
      if (this.matches(r.from, from) && this.matches(r.to, to)) Object.assign(p, r.patch);
    }
    this.cache.set(key, p);
    return p;
  }

  /** Cuts every link between the two sets, both directions. Returns the directed links cut. */
  partition(a: string[], b: string[], cut: Cut): number {
    let n = 0;
    for (const x of a) for (const y of b) {
      if (x === y) continue;
      this.cuts.set(`${x}>${y}`, { ...cut });
      this.cuts.set(`${y}>${x}`, { ...cut });
      n += 2;
    }
    return n;
  }

  /** Heals the links between the two sets, or every link when none are given. Returns the directed links healed. */
  heal(a?: string[], b?: string[]): number {
    if (!a || !b) {
      const n = this.cuts.size;
      this.cuts.clear();
      return n;
    }
    let n = 0;
    for (const x of a) for (const y of b) {
      if (this.cuts.delete(`${x}>${y}`)) n++;
      if (this.cuts.delete(`${y}>${x}`)) n++;
    }
    return n;
  }

  /** Whether from → to is cut, and how. Callers from an unknown address are cut from nobody. */
  cut(from: string, to: string): Cut | undefined { return this.cuts.get(`${from}>${to}`); }

  /** The cut directed links, e.g. `a1>b1:hold`. */
  cutList(): string[] { return [...this.cuts].map(([k, c]) => `${k}:${c.mode}${c.reset ? '+reset' : ''}`); }
}
