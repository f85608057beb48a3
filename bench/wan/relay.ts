// The WAN emulator (bench/wan/README.md): a userspace TCP relay between mesh
// agents on loopback, since the kernel here has no netem. One relay listener
// stands for each agent; agents announce it (`--announce`) and dial from their
// own loopback address (`--source-address`), so the relay knows each
// connection's link: caller (by source address) → agent (by listener). Each
// direction of each connection goes through the link model (link.ts) on real
// timers; links can be cut and healed on command (stdin, or HTTP on loopback).
//
//   node dist/bench/wan/relay.js --config wan.json [--control 7070]
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { mulberry32 } from '../../src/hash/mix.js';
import { scheduleChunk, type LinkProfile, type LinkQueue, type StreamOrder } from './link.js';
import { checkWanConfig, Topology, UNKNOWN_AGENT, type WanConfig } from './topology.js';
import { parseWanCommand, WAN_HELP, type WanCommand } from './commands.js';

/** Counters of one directed link. */
export interface LinkStats {
  /** Bytes delivered to the far end. */
  bytes: number;
  chunks: number;
  /** Segment losses simulated (each cost a stall). */
  losses: number;
  /** Bytes discarded by a `drop` partition. */
  dropped: number;
  /** Connections opened over this link (counted on the caller → agent direction). */
  connections: number;
  /** Connections reset by a partition. */
  resets: number;
}

function newStats(): LinkStats { return { bytes: 0, chunks: 0, losses: 0, dropped: 0, connections: 0, resets: 0 }; }

/** The sender is paused above this many bytes waiting in the relay (like a full TCP window), resumed below half. */
function highWater(bytesPerSec: number): number {
  return bytesPerSec > 0 ? Math.max(64 << 10, Math.round(bytesPerSec / 4)) : 4 << 20;
}

/** One direction of one relayed connection. */
class Pipe {
  private readonly queue: Array<{ at: number; buf: Buffer }> = [];
  private readonly held: Buffer[] = [];
  private waiting = 0;
  private timer: NodeJS.Timeout | undefined;
  private sourceEnded = false;
  private endSent = false;
  private paused = false;
  readonly order: StreamOrder = { lastDeliverAt: 0 };

  constructor(
    private readonly relay: WanRelay,
    private readonly conn: RelayedConn,
    readonly from: string,
    readonly to: string,
    private readonly source: () => Socket | undefined,
    private readonly sink: () => Socket | undefined,
  ) {}

  onData(buf: Buffer): void {
    const cut = this.relay.topology.cut(this.from, this.to);
    if (cut?.mode === 'drop') { this.drop(buf.length); return; }
    if (cut || this.held.length) this.held.push(buf);
    else this.enqueue(buf);
    this.waiting += buf.length;
    // Due now (no delay on this link): out at once, not one timer tick later.
    if (this.queue.length && this.queue[0]!.at <= performance.now()) this.flush();
    else { this.backpressure(); this.arm(); }
  }

  onEnd(): void {
    this.sourceEnded = true;
    this.flush();
  }

  private drop(n: number): void {
    this.relay.statsOf(this.from, this.to).dropped += n;
    this.conn.broken = true;
  }

  private enqueue(buf: Buffer): void {
    const p = this.relay.topology.profile(this.from, this.to);
    const s = scheduleChunk(p, this.relay.queueOf(this.from, this.to), this.order, performance.now(), buf.length, this.relay.rand);
    if (s.losses) this.relay.statsOf(this.from, this.to).losses += s.losses;
    this.queue.push({ at: s.deliverAt, buf });
  }

  /** The link was cut with `drop`: what waits here is lost. */
  discard(): void {
    let n = 0;
    for (const q of this.queue) n += q.buf.length;
    for (const b of this.held) n += b.length;
    this.queue.length = 0;
    this.held.length = 0;
    this.waiting = 0;
    if (n) this.drop(n);
    this.backpressure();
  }

  /** The link healed: held bytes go on the wire from now. */
  release(): void {
    for (const b of this.held.splice(0)) this.enqueue(b);
    this.flush();
  }

  flush(): void {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    const sink = this.sink();
    if (!sink || sink.destroyed || sink.connecting || this.conn.closed || this.relay.topology.cut(this.from, this.to)) return;
    const now = performance.now();
    const stats = this.relay.statsOf(this.from, this.to);
    while (this.queue.length && this.queue[0]!.at <= now) {
      const { buf } = this.queue.shift()!;
      sink.write(buf);
      this.waiting -= buf.length;
      stats.bytes += buf.length;
      stats.chunks++;
    }
    this.backpressure();
    if (this.queue.length) this.arm();
    else if (this.sourceEnded && !this.held.length && !this.endSent) { this.endSent = true; sink.end(); }
  }

  private arm(): void {
    if (this.timer || !this.queue.length) return;
    // libuv timers have 1 ms resolution and may fire a little early: flush() re-arms for the rest.
    const delay = Math.max(0, Math.ceil(this.queue[0]!.at - performance.now()));
    this.timer = setTimeout(() => { this.timer = undefined; this.flush(); }, delay);
  }

  private backpressure(): void {
    const source = this.source();
    if (!source) return;
    const sinkBuffered = this.sink()?.writableLength ?? 0;
    const high = highWater(this.relay.topology.profile(this.from, this.to).bytesPerSec);
    const level = this.waiting + sinkBuffered;
    if (!this.paused && level > high) { this.paused = true; source.pause(); }
    else if (this.paused && level < high / 2) { this.paused = false; source.resume(); }
  }

  stop(): void { if (this.timer) clearTimeout(this.timer); this.timer = undefined; }
}

/** A caller's connection to an agent, through the relay. */
class RelayedConn {
  upstream: Socket | undefined;
  readonly up: Pipe;
  readonly down: Pipe;
  closed = false;
  /** Bytes of this stream were dropped: it is reset at the heal (a stream with a hole is useless). */
  broken = false;

  constructor(private readonly relay: WanRelay, readonly client: Socket, readonly from: string, readonly to: string, private readonly target: string) {
    this.up = new Pipe(relay, this, from, to, () => this.client, () => this.upstream);
    this.down = new Pipe(relay, this, to, from, () => this.upstream, () => this.client);
    client.on('data', (b: Buffer) => this.up.onData(b));
    client.on('end', () => this.up.onEnd());
    client.on('drain', () => this.down.flush());
    client.on('error', () => this.destroy(true));
    client.on('close', (hadError) => this.onClose(hadError, this.upstream));
    if (!relay.topology.cut(from, to)) this.connectUpstream();
  }

  connectUpstream(): void {
    if (this.upstream || this.closed) return;
    const i = this.target.lastIndexOf(':');
    const up = this.upstream = connect({ host: this.target.slice(0, i), port: Number(this.target.slice(i + 1)), allowHalfOpen: true });
    up.setNoDelay(true);
    up.on('connect', () => this.up.flush());
    up.on('data', (b: Buffer) => this.down.onData(b));
    up.on('end', () => this.down.onEnd());
    up.on('drain', () => this.up.flush());
    up.on('error', () => this.destroy(true));
    up.on('close', (hadError) => this.onClose(hadError, this.client));
  }

  /**
   * A side closed. Cleanly (both of its directions ended) the other side
   * still gets what is on its way to it, then ends and closes in turn.
   */
  private onClose(hadError: boolean, other: Socket | undefined): void {
    if (hadError || !other || other.destroyed) this.destroy(hadError);
  }

  /** Both ends reset (RST), as a middlebox that gave up on the connection. */
  reset(): void {
    this.relay.statsOf(this.from, this.to).resets++;
    this.destroy(true);
  }

  destroy(reset: boolean): void {
    if (this.closed) return;
    this.closed = true;
    this.up.stop();
    this.down.stop();
    for (const s of [this.client, this.upstream]) {
      if (!s || s.destroyed) continue;
      if (reset) s.resetAndDestroy(); else s.destroy();
    }
    this.relay.forget(this);
  }
}

export interface WanStatus {
  /** Per directed link `from>to`: its counters and its profile now. */
  links: Record<string, LinkStats & { profile: LinkProfile }>;
  /** The cut links, e.g. `a1>b1:hold`. */
  cuts: string[];
  /** Relayed connections open now. */
  connections: number;
}

export interface RelayAddress { name: string; zone: string; host: string; port: number; multiaddr: string }

export class WanRelay {
  readonly topology: Topology;
  readonly rand: () => number;
  private readonly servers: Array<{ agent: string; server: Server }> = [];
  private readonly conns = new Set<RelayedConn>();
  private readonly queues = new Map<string, LinkQueue>();
  private readonly stats = new Map<string, LinkStats>();
  private control: HttpServer | undefined;
  private readonly host: string;

  private constructor(readonly config: WanConfig) {
    this.topology = new Topology(config);
    this.rand = mulberry32(config.seed ?? 1);
    this.host = config.host ?? '127.0.0.1';
  }

  static async start(raw: WanConfig): Promise<WanRelay> {
    const relay = new WanRelay(checkWanConfig(raw));
    try {
      for (const a of relay.topology.list()) {
        const server = createServer({ allowHalfOpen: true, noDelay: true }, (s) => relay.accept(a.name, a.target, s));
        await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(a.port ?? 0, relay.host, () => resolve()); });
        relay.servers.push({ agent: a.name, server });
      }
      if (raw.control !== undefined) await relay.listenControl(raw.control);
    } catch (err) {
      await relay.close();
      throw err;
    }
    return relay;
  }

  /** The relay's address standing for each agent: what it announces and what its peers dial. */
  addresses(): RelayAddress[] {
    return this.servers.map(({ agent, server }) => {
      const port = (server.address() as { port: number }).port;
      return { name: agent, zone: this.topology.zoneOf(agent), host: this.host, port, multiaddr: `/ip4/${this.host}/tcp/${port}` };
    });
  }

  addressOf(agent: string): RelayAddress {
    const a = this.addresses().find((x) => x.name === agent);
    if (!a) throw new Error(`no agent named ${agent}`);
    return a;
  }

  get controlUrl(): string | undefined {
    const addr = this.control?.address();
    return addr && typeof addr === 'object' ? `http://${this.host}:${addr.port}` : undefined;
  }

  private accept(to: string, target: string, client: Socket): void {
    const from = this.topology.agentAt(client.remoteAddress ?? '')?.name ?? UNKNOWN_AGENT;
    client.setNoDelay(true);
    this.statsOf(from, to).connections++;
    const cut = this.topology.cut(from, to);
    if (cut?.reset) {
      // A firewall that answers with RST: the caller learns at once.
      this.statsOf(from, to).resets++;
      client.on('error', () => {});
      client.resetAndDestroy();
      return;
    }
    this.conns.add(new RelayedConn(this, client, from, to, target));
  }

  forget(c: RelayedConn): void { this.conns.delete(c); }

  queueOf(from: string, to: string): LinkQueue {
    const k = `${from}>${to}`;
    let q = this.queues.get(k);
    if (!q) this.queues.set(k, q = { freeAt: 0 });
    return q;
  }

  statsOf(from: string, to: string): LinkStats {
    const k = `${from}>${to}`;
    let s = this.stats.get(k);
    if (!s) this.stats.set(k, s = newStats());
    return s;
  }

  /** Cuts every link between two selections (names, zones, `*`, lists). Returns the directed links cut. */
  partition(a: string, b: string, opts: { mode?: 'hold' | 'drop'; reset?: boolean } = {}): number {
    const n = this.topology.partition(this.topology.select(a), this.topology.select(b), { mode: opts.mode ?? 'hold', reset: opts.reset ?? false });
    for (const c of [...this.conns]) {
      const cut = this.topology.cut(c.from, c.to) ?? this.topology.cut(c.to, c.from);
      if (!cut) continue;
      if (cut.reset) { c.reset(); continue; }
      if (cut.mode === 'drop') {
        if (this.topology.cut(c.from, c.to)) c.up.discard();
        if (this.topology.cut(c.to, c.from)) c.down.discard();
      }
    }
    return n;
  }

  /** Heals the links between two selections, or all. Returns the directed links healed. */
  heal(a?: string, b?: string): number {
    const n = a !== undefined && b !== undefined ? this.topology.heal(this.topology.select(a), this.topology.select(b)) : this.topology.heal();
    for (const c of [...this.conns]) {
      if (this.topology.cut(c.from, c.to) || this.topology.cut(c.to, c.from)) continue;
      if (c.broken) { c.reset(); continue; }
      c.connectUpstream();
      c.up.release();
      c.down.release();
    }
    return n;
  }

  /** Changes the profile of the links from → to (selections); later settings win. */
  setLink(from: string, to: string, patch: Partial<LinkProfile>, crossZone?: boolean): void {
    this.topology.select(from);
    this.topology.select(to);
    this.topology.addRule(from, to, patch, crossZone);
  }

  /** Per-link counters and profiles, the cut links and the open connections. */
  status(): WanStatus {
    const links: WanStatus['links'] = {};
    for (const [k, s] of [...this.stats].sort(([x], [y]) => x.localeCompare(y))) {
      const [from, to] = k.split('>') as [string, string];
      links[k] = { ...s, profile: this.topology.profile(from, to) };
    }
    return { links, cuts: this.topology.cutList(), connections: this.conns.size };
  }

  /** Runs one control command; returns its reply (one line, or JSON for status). Throws on a bad command. */
  run(line: string): string {
    return this.apply(parseWanCommand(line));
  }

  apply(cmd: WanCommand): string {
    switch (cmd.kind) {
      case 'partition': return `cut ${this.partition(cmd.a, cmd.b, { mode: cmd.mode, reset: cmd.reset })} directed links (${cmd.mode}${cmd.reset ? ', reset' : ''})`;
      case 'heal': return `healed ${this.heal(cmd.a, cmd.b)} directed links`;
      case 'set': this.setLink(cmd.from, cmd.to, cmd.patch, cmd.crossZone); return `set ${cmd.from} → ${cmd.to} ${JSON.stringify(cmd.patch)}`;
      case 'status': return JSON.stringify(this.status());
      case 'help': return WAN_HELP;
    }
  }

  private async listenControl(port: number): Promise<void> {
    const server = this.control = createHttpServer((req, res) => {
      const reply = (code: number, body: string, type = 'text/plain') => { res.writeHead(code, { 'content-type': `${type}; charset=utf-8` }); res.end(body + '\n'); };
      if (req.method === 'GET' && req.url === '/status') { reply(200, JSON.stringify(this.status()), 'application/json'); return; }
      if (req.method !== 'POST' || req.url !== '/command') { reply(404, 'POST /command (one command a line) or GET /status'); return; }
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => { if (body.length < 64 << 10) body += d; });
      req.on('end', () => {
        const out: string[] = [];
        try {
          for (const line of body.split('\n').filter((l) => l.trim())) out.push(this.run(line));
          reply(200, out.join('\n'));
        } catch (err) {
          reply(400, (err as Error).message);
        }
      });
    });
    await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(port, this.host, () => resolve()); });
  }

  async close(): Promise<void> {
    for (const c of [...this.conns]) c.destroy(false);
    await Promise.all(this.servers.map(({ server }) => new Promise<void>((r) => server.close(() => r()))));
    if (this.control) {
      this.control.closeAllConnections();
      await new Promise<void>((r) => this.control!.close(() => r()));
    }
  }
}

// ---------------------------------------------------------------- command line

async function main(argv: string[]): Promise<void> {
  let configPath: string | undefined;
  let control: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--config') configPath = argv[++i];
    else if (argv[i] === '--control') control = Number(argv[++i]);
    else if (argv[i] === '--help' || argv[i] === '-h') { process.stdout.write(`usage: relay.js --config wan.json [--control PORT]\n\ncommands (stdin, or POST /command):\n${WAN_HELP}\n`); return; }
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!configPath) throw new Error('usage: relay.js --config wan.json [--control PORT]');
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as WanConfig;
  if (control !== undefined) config.control = control;
  const relay = await WanRelay.start(config);
  // For each agent, the `ubicrawl join` flags that put it behind the relay (its seed peers dial the relay's address for it).
  const agents = relay.addresses().map((a) => {
    const agent = relay.topology.agent(a.name)!;
    const [host, port] = [agent.target.slice(0, agent.target.lastIndexOf(':')), agent.target.slice(agent.target.lastIndexOf(':') + 1)];
    return { ...a, joinFlags: `--listen /ip4/${host}/tcp/${port} --announce ${a.multiaddr} --source-address ${agent.source}`, seedPeer: `${a.host}:${a.port}` };
  });
  process.stdout.write(JSON.stringify({ agents, control: relay.controlUrl ?? null }) + '\n');
  const rl = createInterface({ input: process.stdin, terminal: false });
  rl.on('line', (line) => {
    if (!line.trim()) return;
    try { process.stdout.write(relay.run(line) + '\n'); } catch (err) { process.stdout.write(`error: ${(err as Error).message}\n`); }
  });
  // Every link's bytes wait on this process's timers: a late event loop delays them all (it shows in the mesh as
  // members that acknowledge late). Said on stderr, at most every 10 s, when the delay passed half a second.
  const lag = monitorEventLoopDelay({ resolution: 20 });
  lag.enable();
  setInterval(() => {
    const max = Math.round(lag.max / 1e6);
    if (max >= 500) process.stderr.write(`wan relay: event-loop delay max ${max} ms, p99 ${Math.round(lag.percentile(99) / 1e6)} ms in the last 10 s\n`);
    lag.reset();
  }, 10_000).unref();
  const stop = () => { void relay.close().then(() => process.exit(0)); };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).catch((err: Error) => { process.stderr.write(`wan relay: ${err.message}\n`); process.exit(1); });
}
