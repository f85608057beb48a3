// A strict parser for the Prometheus text exposition format 0.0.4 (the format
// `GET /metrics` serves), written from the format's specification
// (prometheus/docs: content/docs/instrumenting/exposition_formats.md, "Text-based format").
// It throws on anything the spec does not allow, so a test passes only if a real
// Prometheus server would ingest the scrape:
// - lines end with '\n' (the last one too); `# HELP name doc` and `# TYPE name type`, at most one of
//   each per metric, TYPE before the metric's first sample; other `#` lines are comments;
// - samples `name{label="value",…} value [timestamp]`; names match [a-zA-Z_:][a-zA-Z0-9_:]*,
//   label names [a-zA-Z_][a-zA-Z0-9_]* (not starting with __); label values escape only \\ \" \n,
//   HELP text only \\ \n; values are Go floats or NaN / +Inf / -Inf; timestamps are integers;
// - all lines of one metric family are contiguous; no series appears twice;
// - histograms: `le` buckets in increasing order with non-decreasing counts, a +Inf bucket equal to
//   _count, and a _sum; summaries: quantile in [0,1], _sum and _count; counters are ≥ 0.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  timestamp?: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export class ExpositionError extends Error {}

function fail(line: number, msg: string): never {
  throw new ExpositionError(`line ${line}: ${msg}`);
}

function parseFloatStrict(s: string, line: number): number {
  if (s === 'NaN') return NaN;
  if (s === '+Inf' || s === 'Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(s)) fail(line, `bad number "${s}"`);
  return Number(s);
}

function unescapeHelp(s: string, line: number): string {
  return s.replace(/\\(.?)/g, (_m, c: string) => {
    if (c === '\\') return '\\';
    if (c === 'n') return '\n';
    return fail(line, `bad escape "\\${c}" in HELP`);
  });
}

/** Parses `{a="b",…}` starting at `i` (the '{'); returns labels and the index after '}'. */
function parseLabels(s: string, i: number, line: number): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  i++; // '{'
  for (;;) {
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] === '}') return [labels, i + 1];
    const m = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(s.slice(i));
    if (!m) fail(line, `bad label name at column ${i + 1}`);
    const name = m[0];
    if (!LABEL_NAME.test(name) || name.startsWith('__')) fail(line, `reserved or bad label name "${name}"`);
    if (name in labels) fail(line, `duplicate label "${name}"`);
    i += name.length;
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] !== '=') fail(line, `expected '=' after label ${name}`);
    i++;
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] !== '"') fail(line, `expected '"' to open the value of label ${name}`);
    i++;
    let v = '';
    for (;;) {
      const c = s[i];
      if (c === undefined) fail(line, `unterminated value of label ${name}`);
      if (c === '"') { i++; break; }
      if (c === '\\') {
        const n = s[i + 1];
        if (n === '\\') v += '\\';
        else if (n === '"') v += '"';
        else if (n === 'n') v += '\n';
        else fail(line, `bad escape "\\${n ?? ''}" in label ${name}`);
        i += 2;
        continue;
      }
      v += c;
      i++;
    }
    labels[name] = v;
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] === ',') { i++; continue; }
    if (s[i] === '}') return [labels, i + 1];
    fail(line, `expected ',' or '}' after label ${name}`);
  }
}

function seriesKey(name: string, labels: Record<string, string>): string {
  return name + JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function parseExposition(text: string): Map<string, Family> {
  if (text.length > 0 && !text.endsWith('\n')) throw new ExpositionError('the last line does not end with a line feed');
  const families = new Map<string, Family>();
  const types = new Map<string, Family['type']>();
  const helps = new Set<string>();
  const seen = new Set<string>();
  const closed = new Set<string>();
  let current: string | undefined;
  const familyOf = (sample: string): string => {
    for (const suf of ['_bucket', '_sum', '_count']) {
      if (sample.endsWith(suf)) {
        const base = sample.slice(0, -suf.length);
        const t = types.get(base);
        if (t === 'histogram' || (t === 'summary' && suf !== '_bucket')) return base;
      }
    }
    return sample;
  };
  const enter = (fam: string, line: number): Family => {
    if (current !== fam) {
      if (closed.has(fam)) fail(line, `lines of metric family ${fam} are not contiguous`);
      if (current !== undefined) closed.add(current);
      current = fam;
    }
    let f = families.get(fam);
    if (!f) { f = { name: fam, type: types.get(fam) ?? 'untyped', samples: [] }; families.set(fam, f); }
    return f;
  };
  const lines = text.split('\n');
  lines.pop(); // after the final '\n'
  lines.forEach((raw, idx) => {
    const line = idx + 1;
    if (raw.trim() === '') return;
    if (raw.startsWith('#')) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(raw);
      if (!m) return; // a plain comment
      const [, kw, name, rest = ''] = m;
      if (!METRIC_NAME.test(name)) fail(line, `bad metric name "${name}"`);
      if (kw === 'TYPE') {
        const t = rest.trim();
        if (!TYPES.has(t)) fail(line, `bad type "${t}"`);
        if (types.has(name)) fail(line, `second TYPE line for ${name}`);
        if (families.get(name)?.samples.length) fail(line, `TYPE for ${name} after its samples`);
        types.set(name, t as Family['type']);
        enter(name, line).type = t as Family['type'];
      } else {
        if (helps.has(name)) fail(line, `second HELP line for ${name}`);
        helps.add(name);
        enter(name, line).help = unescapeHelp(rest, line);
      }
      return;
    }
    const nm = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(raw);
    if (!nm) fail(line, 'expected a metric name');
    const name = nm[0];
    let i = name.length;
    let labels: Record<string, string> = {};
    if (raw[i] === '{') [labels, i] = parseLabels(raw, i, line);
    const rest = raw.slice(i);
    if (!/^[ \t]/.test(rest)) fail(line, 'expected whitespace before the value');
    const parts = rest.trim().split(/[ \t]+/);
    if (parts.length < 1 || parts.length > 2) fail(line, 'expected a value and an optional timestamp');
    const value = parseFloatStrict(parts[0], line);
    let timestamp: number | undefined;
    if (parts.length === 2) {
      if (!/^-?\d+$/.test(parts[1])) fail(line, `bad timestamp "${parts[1]}"`);
      timestamp = Number(parts[1]);
    }
    const key = seriesKey(name, labels);
    if (seen.has(key)) fail(line, `duplicate series ${name}${JSON.stringify(labels)}`);
    seen.add(key);
    const fam = enter(familyOf(name), line);
    if (fam.type === 'counter' && !(value >= 0)) fail(line, `counter ${name} is negative or NaN`);
    fam.samples.push({ name, labels, value, ...(timestamp !== undefined ? { timestamp } : {}) });
  });
  for (const f of families.values()) checkFamily(f);
  return families;
}

function checkFamily(f: Family): void {
  if (f.type !== 'histogram' && f.type !== 'summary') return;
  const groups = new Map<string, { buckets: Array<[number, number]>; sum?: number; count?: number; quantiles: number }>();
  for (const s of f.samples) {
    const { le, quantile, ...rest } = s.labels;
    const key = seriesKey('', rest);
    let g = groups.get(key);
    if (!g) { g = { buckets: [], quantiles: 0 }; groups.set(key, g); }
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new ExpositionError(`${s.name} without an le label`);
      g.buckets.push([parseFloatStrict(le, 0), s.value]);
    } else if (s.name === `${f.name}_sum`) g.sum = s.value;
    else if (s.name === `${f.name}_count`) g.count = s.value;
    else if (f.type === 'summary' && s.name === f.name) {
      const q = Number(quantile);
      if (quantile === undefined || !(q >= 0 && q <= 1)) throw new ExpositionError(`${s.name} needs a quantile label in [0,1]`);
      g.quantiles++;
    } else throw new ExpositionError(`${s.name} does not belong to ${f.type} ${f.name}`);
  }
  for (const [key, g] of groups) {
    if (g.sum === undefined || g.count === undefined) throw new ExpositionError(`${f.name}${key}: missing _sum or _count`);
    if (f.type === 'histogram') {
      if (!g.buckets.length) throw new ExpositionError(`${f.name}${key}: no buckets`);
      for (let i = 1; i < g.buckets.length; i++) {
        if (!(g.buckets[i][0] > g.buckets[i - 1][0])) throw new ExpositionError(`${f.name}${key}: le not increasing`);
        if (g.buckets[i][1] < g.buckets[i - 1][1]) throw new ExpositionError(`${f.name}${key}: bucket counts decrease`);
      }
      const last = g.buckets[g.buckets.length - 1];
      if (last[0] !== Infinity) throw new ExpositionError(`${f.name}${key}: no +Inf bucket`);
      if (last[1] !== g.count) throw new ExpositionError(`${f.name}${key}: +Inf bucket ${last[1]} ≠ _count ${g.count}`);
    }
  }
}
