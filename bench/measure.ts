// Measurement helpers shared by the benchmarks.
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** CPU seconds of the main (JS) thread, from /proc (Linux); NaN elsewhere. */
export function mainThreadCpu(): number {
  try {
    const st = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch { return NaN; }
}

/** Resident memory split (Linux /proc): anonymous (heap, LevelDB caches, malloc) vs file-backed (LevelDB mmaps its table files), MB. */
export function procRss(): { anon: number; file: number } {
  try {
    const st = readFileSync('/proc/self/status', 'utf8');
    const kb = (name: string): number => Number(/^\S+:\s+(\d+)/.exec(st.split('\n').find((l) => l.startsWith(name + ':')) ?? '')?.[1] ?? NaN);
    return { anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024 };
  } catch { return { anon: NaN, file: NaN }; }
}

/**
 * Peak RSS of this process, bytes, as the kernel keeps it (Linux /proc VmHWM): exact, and free, where sampling
 * process.memoryUsage() every 50 ms cost the process being measured a percent of its CPU and missed short
 * peaks. `resetPeakRss()` starts a new period (writes 5 to /proc/self/clear_refs, Linux ≥ 4.0). Undefined
 * elsewhere: sample instead.
 */
export function peakRss(): number | undefined {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch { return undefined; }
}

/** Resets the peak peakRss() reports to the current RSS; false where that is not possible. */
export function resetPeakRss(): boolean {
  try { writeFileSync('/proc/self/clear_refs', '5'); return true; } catch { return false; }
}

/** The median (the mean of the two middle values for an even count); NaN for none. Every benchmark reports this. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Total size of the files directly in a directory (a LevelDB store), bytes. */
export function dirBytes(dir: string): number {
  let total = 0;
  for (const f of readdirSync(dir)) total += statSync(join(dir, f)).size;
  return total;
}
