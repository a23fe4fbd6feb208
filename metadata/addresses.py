"""Pure parsing of `host:port` addresses and Kafka's `id@host:port,...` voter lists.

The quorum configuration (kraft) and the server config (broker) both parse
`controller.quorum.voters`; this is the one parser. Each caller wraps the ValueError, whose
message is a reason that does not name a key, in its own error type.
"""

from __future__ import annotations


def parse_host_port(text: str, *, allow_empty_host: bool = False) -> tuple[str, int]:
    """`host:port` or `[v6]:port` -> (host, port); the port must be 0..65535.

    An IPv6 host must be bracketed, since its colons would make the port ambiguous.
    """
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1 : end + 2] != ":":
            raise ValueError(f"malformed address {text!r}")
        host, port_text = text[1:end], text[end + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ValueError(f"address {text!r} has no port")
        if ":" in host:
            raise ValueError(f"IPv6 address {text!r} must be in brackets")
    if not host and not allow_empty_host:
        raise ValueError(f"address {text!r} has no host")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"bad port in {text!r}")
    return host, int(port_text)


def parse_voter_list(text: str) -> dict[int, tuple[str, int]]:
    """`id@host:port,...` -> {id: (host, port)}; ids non-negative and unique, ports fixed (> 0)."""
    voters: dict[int, tuple[str, int]] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        id_text, sep, address = item.partition("@")
        if not sep or not id_text.strip().isdigit():
            raise ValueError(f"malformed voter {item!r}: expected ID@host:port")
        node_id = int(id_text)
        host, port = parse_host_port(address.strip())
        if port == 0:
            raise ValueError(f"voter {node_id} needs a fixed port, not 0")
        if node_id in voters:
            raise ValueError(f"voter id {node_id} appears twice")
        voters[node_id] = (host, port)
    return voters
