"""The proxy a request to the API server takes when the kubeconfig names none: the rules of Go's
`http.ProxyFromEnvironment`, which client-go (so kubectl and every controller) applies.

Job: from a given environment mapping, read HTTPS_PROXY, HTTP_PROXY and NO_PROXY (the upper-case
name first, the lower-case one when that is unset or empty); take HTTPS_PROXY for an https server
and HTTP_PROXY for an http one (never the other); a value without an http, https or socks5 scheme
is an http:// proxy. Never proxy `localhost` or a loopback address. NO_PROXY is a comma list,
case and spaces ignored: `*` (nothing is proxied), an IP or a CIDR, or a domain, which covers
itself and its subdomains (`.domain` and `*.domain` only the subdomains); an IP or domain entry
may end in `:port` (the server's port, 443 or 80 when it names none); other entries are ignored.

Non-goals: reading os.environ (the caller passes it), refusing socks5 (the caller does), Go's
guard against HTTP_PROXY in a CGI process, proxy auto-configuration.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["EnvProxy", "proxy_from_environment"]

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_VARIABLES = {"https": ("HTTPS_PROXY", "https_proxy"), "http": ("HTTP_PROXY", "http_proxy")}
_DEFAULT_PORTS = {"https": "443", "http": "80"}
_PROXY_SCHEMES = ("http", "https", "socks5")


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvProxy:
    url: str  # the proxy, with its scheme
    variable: str  # the environment variable that named it, for messages


def proxy_from_environment(server: str, env: Mapping[str, str]) -> EnvProxy | None:
    """The proxy Go would use for requests to `server` (a URL with a scheme) in `env`; None: direct."""
    parts = urlsplit(server)
    scheme = parts.scheme.lower()
    if scheme not in _VARIABLES:
        return None
    variable, value = _first_set(env, _VARIABLES[scheme])
    if not value:
        return None
    try:
        port = str(parts.port or _DEFAULT_PORTS[scheme])
    except ValueError:  # a port that is no number: the request itself will fail, direct
        return None
    host = _ascii(parts.hostname or "")
    if not _use_proxy(host, port, _first_set(env, ("NO_PROXY", "no_proxy"))[1]):
        return None
    return EnvProxy(url=_with_scheme(value), variable=variable)


def _first_set(env: Mapping[str, str], names: tuple[str, str]) -> tuple[str, str]:
    """(name, value) of the first of `names` set to a non-empty value, else ("", "")."""
    for name in names:
        if env.get(name):
            return name, env[name]
    return "", ""


def _with_scheme(value: str) -> str:
    return value if urlsplit(value).scheme.lower() in _PROXY_SCHEMES else "http://" + value


def _use_proxy(host: str, port: str, no_proxy: str) -> bool:
    if host == "localhost":
        return False
    ip = _address(host)
    if ip is not None and ip.is_loopback:
        return False
    entries = (entry.strip().lower() for entry in no_proxy.split(","))
    return not any(entry == "*" or _bypasses(entry, host, port, ip) for entry in entries if entry)


def _bypasses(entry: str, host: str, port: str, ip: _Address | None) -> bool:
    """Whether one NO_PROXY entry covers host:port."""
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            pass  # Go goes on to read it as a host
        else:
            return ip is not None and ip.version == network.version and ip in network
    entry_host, entry_port = _split_host_port(entry)
    if not entry_host:
        return False
    entry_ip = _address(entry_host)
    if entry_ip is not None:
        return ip is not None and ip == entry_ip and entry_port in ("", port)
    domain = entry_host[1:] if entry_host.startswith("*.") else entry_host
    whole = not domain.startswith(".")  # "example.com" covers itself; ".example.com" does not
    suffix = _ascii("." + domain if whole else domain)
    return (host.endswith(suffix) or (whole and host == suffix[1:])) and entry_port in ("", port)


def _split_host_port(entry: str) -> tuple[str, str]:
    """Go's net.SplitHostPort where it succeeds ("host:port", "[v6]:port"); the entry whole with
    no port where it fails (no port, or an IPv6 address without brackets)."""
    if entry.startswith("["):
        end = entry.find("]")
        if end > 0 and entry[end + 1:end + 2] == ":" and "]" not in entry[end + 1:]:
            return entry[1:end], entry[end + 2:]
        return entry, ""
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, port
    return entry, ""


def _address(host: str) -> _Address | None:
    """The IP address `host` spells (an IPv4-mapped IPv6 address as its IPv4 one, as Go compares
    them), or None for a name."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _ascii(host: str) -> str:
    """An internationalised name in its ASCII (punycode) form, as Go matches it."""
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host
