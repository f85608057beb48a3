// Loads a CommonJS file with V8's code cache kept on disk, for Node 20 (Node ≥ 22.1 has module.enableCompileCache()
// for this). Without it every start compiled the whole CLI bundle again: ≈ 100 CPU-ms on this machine, against
// ≈ 13 ms to read it back (docs/performance.md "Start-up").
//
// The cache is a file per bundle (its path, size and mtime) and Node version, in NODE_COMPILE_CACHE or
// <tmpdir>/ubicrawl-compile-cache-<uid>: a directory of this user's only (mode 0700), since what is in it runs.
// Its name is <checkout>-<build>: a new build of the same checkout (path, Node version) removes the files of the
// builds before it when it writes its own, and files nobody has written for STALE_DAYS (a removed checkout) go
// too, so the directory holds about one build's cache per checkout instead of growing by ≈ 4 MB a build.
// V8 itself refuses data made for another source length or other V8 flags (cachedDataRejected); it is then
// written again. Written through a temporary file and a rename (agents start together), in two kinds: a run
// that lasts 1.5 s writes the code it has compiled by then (an agent's start: the crawl, the mesh), once; a
// shorter one (`--version`, `status`) writes at exit what it compiled, when there is no cache at all. A start
// reads the first kind if there is one. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
import Module, { createRequire } from 'node:module';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { isAscii } from 'node:buffer';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import vm from 'node:vm';

const WRITE_AFTER_MS = 1500;
const STALE_DAYS = 30;

/**
 * The exports of the CommonJS file at `file` (an absolute path), its compiled code cached. `around(exports, make)`
 * runs make() (which serialises the code) and returns its result: where the file changes V8's flags as it runs,
 * it puts them back as they were at start for the moment (V8 refuses a cache made under other flags).
 */
export function loadCached(file, around = (_exports, make) => make()) {
  const bytes = readFileSync(file);
  // scripts/bundle.js writes the bundle in ASCII: read as such, it is a one-byte string copied, not decoded
  // from UTF-8 (≈ 25 CPU-ms for its 4.7 MB).
  const source = bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8');
  const base = process.env.NODE_DISABLE_COMPILE_CACHE === '1' ? undefined : cachePath(file);
  const long = base && `${base}.v8cache`, short = base && `${base}.short.v8cache`;
  let cachedData, from;
  for (const f of [long, short]) {
    if (!f || cachedData) continue;
    try { cachedData = readFileSync(f); from = f; } catch { /* none yet */ }
  }
  const script = new vm.Script(Module.wrap(source), {
    filename: file,
    cachedData,
    importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const mod = { exports: {}, filename: file, id: file };
  script.runInThisContext()(mod.exports, createRequire(file), mod, file, dirname(file));
  if (base) {
    const rejected = script.cachedDataRejected === true;
    const make = () => around(mod.exports, () => script.createCachedData());
    if (from !== long || rejected) setTimeout(() => save(make, long), WRITE_AFTER_MS).unref();
    if (cachedData === undefined || rejected) process.once('exit', () => { if (!saved) save(make, short); });
  }
  return mod.exports;
}

/** The cache file for `file`, in a directory that is this user's only; undefined when there is none. */
function cachePath(file) {
  try {
    const uid = process.getuid?.() ?? 0;
    const dir = process.env.NODE_COMPILE_CACHE || join(tmpdir(), `ubicrawl-compile-cache-${uid}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const d = statSync(dir);
    if (!d.isDirectory() || d.uid !== uid || (d.mode & 0o022) !== 0) return undefined;
    const f = statSync(file);
    const checkout = hash([process.version, process.arch, file]).slice(0, 16);
    const build = hash([f.size, f.mtimeMs]).slice(0, 12);
    return join(dir, `ubicrawl-${checkout}-${build}`);
  } catch {
    return undefined;
  }
}

const hash = (parts) => createHash('sha256').update(parts.join('\0')).digest('hex');

let saved = false;

function save(make, cacheFile) {
  saved = true;
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, make(), { mode: 0o600 });
    renameSync(tmp, cacheFile);
  } catch {
    try { unlinkSync(tmp); } catch { /* not written */ }
    return;
  }
  removeOutdated(cacheFile);
}

/** Removes the files of this checkout's earlier builds, and any loader file not written for STALE_DAYS. */
function removeOutdated(cacheFile) {
  const dir = dirname(cacheFile);
  const name = basename(cacheFile);
  const checkout = name.slice(0, name.lastIndexOf('-') + 1); // 'ubicrawl-<checkout>-'
  const build = name.slice(0, name.indexOf('.'));
  const staleBefore = Date.now() - STALE_DAYS * 86_400_000;
  let names;
  try { names = readdirSync(dir); } catch { return; }
  for (const other of names) {
    if (!other.startsWith('ubicrawl-') || other.startsWith(build)) continue;
    const path = join(dir, other);
    try {
      if (other.startsWith(checkout) || statSync(path).mtimeMs < staleBefore) unlinkSync(path);
    } catch { /* gone already, or another process's temporary file */ }
  }
}
