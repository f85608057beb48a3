// An IPv6 literal is written in brackets in a URL's authority (RFC 3986
// §3.2.2: `http://[::1]:8080/`, and so in WHATWG URL's `hostname`) and bare
// everywhere else: DNS, sockets, address checks, `--resolve` and
// `--allow-address` values. One place takes the brackets off.

/** `::1` for `[::1]`; any other host (a name, an IPv4 address, a bare IPv6 one) unchanged. */
export function unbracketHost(host: string): string {
  return host.length > 1 && host.charCodeAt(0) === 0x5b /* [ */ && host.charCodeAt(host.length - 1) === 0x5d /* ] */ ? host.slice(1, -1) : host;
}

/**
 * A `host[:port]` without its port: `Example.com:8080` → `Example.com`,
 * `[::1]:443` → `[::1]` (brackets kept, case kept). With several colons and
 * no brackets it is an IPv6 literal written bare, and kept whole.
 */
export function hostWithoutPort(host: string): string {
  if (host.charCodeAt(0) === 0x5b /* [ */) {
    const close = host.indexOf(']');
    return close > 0 ? host.slice(0, close + 1) : host;
  }
  const colon = host.indexOf(':');
  return colon >= 0 && host.indexOf(':', colon + 1) < 0 ? host.slice(0, colon) : host;
}
