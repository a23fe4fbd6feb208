"""Fitting version-neutral body dicts to one API version's schema.

The broker relays controller answers decoded at the version it spoke to the controller;
the client may have asked in an older version, whose schema lacks some of those fields.
``fit_response`` (from ``clients.protocol.fit``) keeps only the fields that version has.
"""

from __future__ import annotations

from clients.protocol.fit import fit_response

__all__ = ["fit_response"]
