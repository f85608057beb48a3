// The fetcher's request options from the agent's `requests` settings
// (docs/requests.md): header fields checked, the proxy plan made with the
// environment, a cookie jar when cookies are on. Throws a one-line error for a
// bad header field or proxy URL (the command line checks them earlier).
import type { RequestsConfig } from '../config.js';
import { parseHeaderFields } from './headers.js';
import { proxyPlan } from './proxy.js';
import { CookieJar } from './cookies.js';
import type { FetcherOptions } from './fetcher.js';

export function requestOptions(cfg: RequestsConfig, env: Readonly<Record<string, string | undefined>> = process.env): Pick<FetcherOptions, 'headers' | 'proxy' | 'cookies'> {
  const proxy = proxyPlan(cfg, env);
  return {
    headers: parseHeaderFields(cfg.headers),
    ...(proxy ? { proxy } : {}),
    ...(cfg.cookies ? { cookies: new CookieJar() } : {}),
  };
}
