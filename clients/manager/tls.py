"""The console's own TLS (``--certfile``/``--keyfile``): checked at start-up, so a console
told to use TLS never serves plaintext."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from clients.manager.bind import ManagerConfigError


@dataclass(frozen=True)
class ConsoleTls:
    certfile: str  # PEM: the certificate, then any intermediates
    keyfile: str  # PEM: its unencrypted private key


def _no_password() -> bytes:
    # An encrypted key would otherwise make OpenSSL prompt on the terminal.
    return b""


def console_tls(certfile: str | None, keyfile: str | None) -> ConsoleTls | None:
    """The TLS the console serves with, None without either option; a half-given pair, an
    unreadable file or a key that does not match the certificate stops start-up."""
    if certfile is None and keyfile is None:
        return None
    if not certfile or not keyfile:
        raise ManagerConfigError("--certfile and --keyfile go together: give both")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(certfile, keyfile, password=_no_password)
    except OSError as exc:
        if isinstance(exc, ssl.SSLError):
            raise ManagerConfigError(
                f"--certfile {certfile} --keyfile {keyfile}: not a PEM certificate and its "
                f"unencrypted private key ({exc.reason or exc})") from None
        raise ManagerConfigError(
            f"--certfile/--keyfile {exc.filename or certfile}: {exc.strerror}") from None
    return ConsoleTls(certfile, keyfile)
