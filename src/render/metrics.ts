// The render tier's Prometheus series (docs/operations.md "Metrics", docs/render.md
// "Operations"), registered in the agent's registry next to its own. Label sets
// are fixed: render outcomes, subresource results.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RenderOutcome } from './browser.js';

const OUTCOMES: RenderOutcome[] = ['rendered', 'timeout', 'budget', 'crashed', 'unavailable'];
/** fetched: over the network; cached: served from this run's copy; refused: robots.txt, budget, method, parked host. */
const SUB_RESULTS = ['fetched', 'cached', 'refused'] as const;
/** Seconds: a render takes from a fraction of a second to its timeout (20 s by default). */
const RENDER_BUCKETS = [0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

export interface RenderGauges {
  queueDepth(): number;
  browserMemoryBytes(): number;
  active(): number;
}

export class RenderMetrics {
  private readonly renders: Counter<'outcome'>;
  private readonly duration: Histogram;
  private readonly subresources: Counter<'result'>;
  private readonly restarts: Counter<'reason'>;

  constructor(registry: Registry, gauges: RenderGauges, prefix = 'ubicrawl_') {
    const registers = [registry];
    this.renders = new Counter({ name: `${prefix}renders_total`, help: 'Pages rendered in the browser, by outcome (rendered, timeout, budget, crashed: rendered again, unavailable: no browser).', labelNames: ['outcome'], registers });
    for (const o of OUTCOMES) this.renders.labels(o).inc(0);
    this.duration = new Histogram({ name: `${prefix}render_duration_seconds`, help: 'Wall time of one render, from taking the page off the render queue to its DOM (waits for host clocks included).', buckets: RENDER_BUCKETS, registers });
    this.subresources = new Counter({ name: `${prefix}render_subresources_total`, help: 'Requests the browser made, by result (fetched, cached: this run already had it, refused: robots.txt, budget, method, parked host).', labelNames: ['result'], registers });
    for (const r of SUB_RESULTS) this.subresources.labels(r).inc(0);
    this.restarts = new Counter({ name: `${prefix}render_browser_restarts_total`, help: 'Browser processes replaced, by reason (crash, memory).', labelNames: ['reason'], registers });
    new Gauge({ name: `${prefix}render_queue_depth`, help: 'Pages waiting in the durable render queue (those being rendered included).', registers, collect() { this.set(gauges.queueDepth()); } });
    new Gauge({ name: `${prefix}render_active`, help: 'Pages being rendered now.', registers, collect() { this.set(gauges.active()); } });
    new Gauge({ name: `${prefix}render_browser_memory_bytes`, help: "Memory of the browser's process tree at the last check (PSS summed; 0 without a browser).", registers, collect() { this.set(gauges.browserMemoryBytes()); } });
  }

  rendered(outcome: RenderOutcome, ms: number): void {
    this.renders.labels(outcome).inc();
    if (outcome !== 'unavailable') this.duration.observe(ms / 1000);
  }

  subresource(result: (typeof SUB_RESULTS)[number]): void {
    this.subresources.labels(result).inc();
  }

  restarted(reason: 'crash' | 'memory', n: number): void {
    if (n > 0) this.restarts.labels(reason).inc(n);
  }
}
