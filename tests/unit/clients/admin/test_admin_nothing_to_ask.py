"""Admin calls with nothing to ask answer at once, without the network (the console
describes the groups it lists, which may be none)."""

from __future__ import annotations

from clients.admin import Admin, BlockingAdmin

NOWHERE = {"bootstrap.servers": "127.0.0.1:9"}


async def test_trio_admin_describes_no_groups() -> None:
    async with Admin(NOWHERE) as admin:
        assert await admin.describe_groups([]) == {}


def test_blocking_admin_describes_no_groups() -> None:
    with BlockingAdmin(NOWHERE) as admin:
        assert admin.describe_groups([]) == {}
