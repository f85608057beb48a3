// Which proxy a request goes through (docs/requests.md "Proxies"): `--proxy URL`
// for every target, else the standard variables HTTP_PROXY / HTTPS_PROXY, minus
// the hosts of `--noproxy` and NO_PROXY. The variables are read as undici's
// EnvHttpProxyAgent reads them (lower case first; HTTP_PROXY also serves https://
// targets when HTTPS_PROXY is unset; NO_PROXY entries name a host and the names
// under it, optionally with a port, `*` alone bypassing every proxy), so the crawler
// and Node's own fetch agree on one machine. Pure: the environment is a parameter.
import { unbracketHost } from '../url/host.js';

export interface ProxySettings {
  /** Proxy for every target (http:// or https:// URL, or host:port); unset: the environment's, when proxyFromEnv. */
  proxy?: string;
  /** Hosts reached directly (NO_PROXY syntax, one entry each). */
  noProxy: readonly string[];
  /** Read HTTP_PROXY, HTTPS_PROXY and NO_PROXY (and their lower-case forms). */
  proxyFromEnv: boolean;
}

export interface ProxyChoice {
  url: URL;
  /** Where it was set: 'setting' (--proxy, a config file, library option) or 'env HTTP_PROXY' etc. */
  from: string;
}

interface NoProxyEntry { host: string; port: number }

export interface ProxyPlan {
  http?: ProxyChoice;
  https?: ProxyChoice;
  /** NO_PROXY `*`: no request goes through a proxy. */
  bypassAll: boolean;
  noProxy: readonly NoProxyEntry[];
  /** Where the bypass entries came from ('setting', 'env NO_PROXY'). */
  noProxyFrom: readonly string[];
  /** The bypass entries as written, the setting's then the environment's. */
  noProxyList: readonly string[];
}

export class ProxyError extends Error {
  override readonly name = 'ProxyError';
}

type Env = Readonly<Record<string, string | undefined>>;

/** The first of the variables that is set and not empty, with its name. */
function fromEnv(env: Env, names: readonly string[]): { value: string; name: string } | undefined {
  for (const name of names) {
    const value = env[name]?.trim();
    if (value) return { value, name };
  }
  return undefined;
}

/** A proxy URL: http:// or https://, host and optional port and credentials; `host:port` means http://host:port. */
export function parseProxyUrl(spec: string, where = '--proxy'): URL {
  const text = spec.trim();
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch {
    throw new ProxyError(`${where} expects a proxy URL such as http://proxy.example:3128, got '${spec}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ProxyError(`${where}: only http:// and https:// proxies are supported, got '${url.protocol}//'`);
  }
  if (!url.hostname) throw new ProxyError(`${where}: no proxy host in '${spec}'`);
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) throw new ProxyError(`${where}: a proxy URL has no path, query or fragment ('${redactProxy(url)}')`);
  return url;
}

/** The proxy URL without its password, for logs and `config print`. */
export function redactProxy(url: URL): string {
  const u = new URL(url.href);
  if (u.password) u.password = '***';
  return u.href.replace(/\/$/, '');
}

function parseNoProxy(entries: readonly string[]): { entries: NoProxyEntry[]; all: boolean } {
  const out: NoProxyEntry[] = [];
  let all = false;
  for (const raw of entries.flatMap((e) => e.split(/[,\s]+/))) {
    const e = raw.trim().toLowerCase();
    if (!e) continue;
    if (e === '*') { all = true; continue; }
    let host = e;
    let port = 0;
    const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(e);
    if (bracket) {
      host = bracket[1]!;
      port = bracket[2] ? Number(bracket[2]) : 0;
    } else if ((e.match(/:/g) ?? []).length === 1) {
      const i = e.indexOf(':');
      if (/^\d+$/.test(e.slice(i + 1))) { host = e.slice(0, i); port = Number(e.slice(i + 1)); }
    }
    out.push({ host: host.replace(/^\*?\./, ''), port });
  }
  return { entries: out, all };
}

/** The proxies in force for these settings and this environment; undefined when no request goes through one. */
export function proxyPlan(settings: ProxySettings, env: Env = {}): ProxyPlan | undefined {
  let http: ProxyChoice | undefined;
  let https: ProxyChoice | undefined;
  if (settings.proxy !== undefined && settings.proxy.trim() !== '') {
    const url = parseProxyUrl(settings.proxy);
    http = { url, from: 'setting' };
    https = http;
  } else if (settings.proxyFromEnv) {
    const h = fromEnv(env, ['http_proxy', 'HTTP_PROXY']);
    const s = fromEnv(env, ['https_proxy', 'HTTPS_PROXY']);
    if (h) http = { url: parseProxyUrl(h.value, h.name), from: `env ${h.name}` };
    https = s ? { url: parseProxyUrl(s.value, s.name), from: `env ${s.name}` } : http;
  }
  if (!http && !https) return undefined;
  const lists: string[] = [...settings.noProxy];
  const noProxyFrom: string[] = settings.noProxy.length ? ['setting'] : [];
  if (settings.proxyFromEnv) {
    const n = fromEnv(env, ['no_proxy', 'NO_PROXY']);
    if (n) { lists.push(n.value); noProxyFrom.push(`env ${n.name}`); }
  }
  const { entries, all } = parseNoProxy(lists);
  const noProxyList = lists.flatMap((l) => l.split(/[,\s]+/)).filter((e) => e !== '');
  return { ...(http ? { http } : {}), ...(https ? { https } : {}), bypassAll: all, noProxy: entries, noProxyFrom, noProxyList };
}

/** The proxy a request to `url` goes through, or undefined for a direct connection. */
export function proxyFor(plan: ProxyPlan | undefined, url: URL): ProxyChoice | undefined {
  if (!plan || plan.bypassAll) return undefined;
  const choice = url.protocol === 'https:' ? plan.https : url.protocol === 'http:' ? plan.http : undefined;
  if (!choice) return undefined;
  const host = unbracketHost(url.hostname).toLowerCase();
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  for (const e of plan.noProxy) {
    if (e.port && e.port !== port) continue;
    if (host === e.host || host.endsWith('.' + e.host)) return undefined;
  }
  return choice;
}
