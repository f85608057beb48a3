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
