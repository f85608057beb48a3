// Files of one kind under a directory given on the command line: the
// directory itself, and a bounded depth of subdirectories below it (a data
// dir, or a dir of data dirs). An unreadable directory is skipped.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface FindFilesOptions {
  /** Whether a file of this name is wanted. */
  match(name: string): boolean;
  /** Whether to look inside the directory `name`, met at `depth` (0: inside `dir` itself). Default: every one. */
  enter?(name: string, depth: number): boolean;
  /** How many directory levels below `dir` are looked at. Default 2. */
  maxDepth?: number;
}

/** The wanted files under `dir`, in directory order. */
export async function findFiles(dir: string, opts: FindFilesOptions): Promise<string[]> {
  const out: string[] = [];
  const maxDepth = opts.maxDepth ?? 2;
  const visit = async (d: string, depth: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isFile() && opts.match(e.name)) out.push(p);
      else if (e.isDirectory() && depth < maxDepth && (opts.enter?.(e.name, depth) ?? true)) await visit(p, depth + 1);
    }
  };
  await visit(dir, 0);
  return out;
}
