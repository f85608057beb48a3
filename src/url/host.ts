// An IPv6 literal is written in brackets in a URL's authority (RFC 3986
// §3.2.2: `http://[::1]:8080/`, and so in WHATWG URL's `hostname`) and bare
// everywhere else: DNS, sockets, address checks, `--resolve` and
// `--allow-address` values. One place takes the brackets off.

/** `::1` for `[::1]`; any other host (a name, an IPv4 address, a bare IPv6 one) unchanged. */
export function unbracketHost(host: string): string {
  return host.length > 1 && host.charCodeAt(0) === 0x5b /* [ */ && host.charCodeAt(host.length - 1) === 0x5d /* ] */ ? host.slice(1, -1) : host;
}
