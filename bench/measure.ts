// Measurement helpers shared by the benchmarks.
import { readFileSync } from 'node:fs';

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
