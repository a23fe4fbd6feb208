"""Where the console may listen: loopback freely, anywhere else only behind a password or
TLS."""

from __future__ import annotations

from clients.net.addresses import is_loopback

__all__ = ["ManagerConfigError", "check_bind", "is_loopback", "parse_listen"]


class ManagerConfigError(Exception):
    """A console option that stops start-up; the message names the option."""


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) as (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ManagerConfigError(f"--listen {text!r}: expected HOST:PORT")
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed:
        host = host[1:-1]
    if not host or "[" in host or "]" in host or (":" in host and not bracketed):
        raise ManagerConfigError(f"--listen {text!r}: expected HOST:PORT, an IPv6 address "
                                 f"in brackets ([::1]:8080)")
    return host, int(port)


def check_bind(host: str, password_file: str | None, tls: bool = False) -> None:
    """Refuse to listen beyond loopback without HTTP basic auth or TLS."""
    if not is_loopback(host) and not password_file and not tls:
        raise ManagerConfigError(
            f"--listen {host} is beyond loopback: give --password-file to require a password, "
            f"or --certfile and --keyfile to serve HTTPS")


def parse_metrics_endpoints(values: list[str]) -> dict[int, str]:
    """``BROKER_ID=URL`` options (``http://host:9404/metrics``) as {broker id: URL}."""
    endpoints: dict[int, str] = {}
    for text in values:
        broker, sep, url = text.partition("=")
        if not sep or not broker.strip().isdigit() or not url.startswith(("http://",
                                                                           "https://")):
            raise ManagerConfigError(
                f"--metrics-endpoint {text!r}: expected BROKER_ID=http://HOST:PORT/metrics")
        endpoints[int(broker)] = url.strip()
    return endpoints
