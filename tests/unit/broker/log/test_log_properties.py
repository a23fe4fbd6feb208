"""Stateful property test: the log against an in-memory list of (offset, value)."""

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from broker.log.results import UpperBound

from tests.unit.broker.log.helpers import NOW, batch, open_log, read_all, records_of

OVERRIDES = {"segment.bytes": "350", "index.interval.bytes": "60", "segment.index.bytes": "64"}


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="log-prop-"))
        self.log = open_log(self.root, OVERRIDES)
        self.model: list[tuple[int, bytes]] = []
        self.start = 0

    def teardown(self) -> None:
        if not self.log.closed:
            self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def next_offset(self) -> int:
        return self.model[-1][0] + 1 if self.model else self.start

    @rule(values=st.lists(st.binary(min_size=0, max_size=120), min_size=1, max_size=4))
    def append(self, values: list[bytes]) -> None:
        result = self.log.append_as_leader(batch(values), 0, NOW)
        assert result.first_offset == self.next_offset
        self.model.extend((result.first_offset + n, v) for n, v in enumerate(values))

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def read_from(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.start, self.next_offset - 1))
        max_bytes = data.draw(st.integers(1, 2000))
        got = records_of_whole(self.log.read_bytes(offset, max_bytes, UpperBound.LEO))
        assert got, "min_one_batch always returns the batch holding the offset"
        expected = [(o, None, v) for o, v in self.model if o >= got[0][0]][: len(got)]
        assert got == expected
        assert got[0][0] <= offset <= got[-1][0]

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.start, self.next_offset))
        self.log.truncate_to(offset, NOW)
        # Truncation is to a batch boundary: the batch holding ``offset`` goes entirely.
        assert self.log.log_end_offset <= offset
        self.model = [(o, v) for o, v in self.model if o < self.log.log_end_offset]

    @rule()
    def reopen(self) -> None:
        self.log.close()
        self.log = open_log(self.root, OVERRIDES)

    @rule(start=st.integers(0, 10_000))
    def restart_at(self, start: int) -> None:
        self.log.truncate_fully_and_start_at(start, NOW)
        self.model, self.start = [], start

    @invariant()
    def matches_model(self) -> None:
        assert self.log.log_end_offset == self.next_offset
        assert [(o, v) for o, _, v in read_all(self.log)] == self.model
        bases = [s.base_offset for s in self.log.segments]
        assert bases == sorted(bases)


def records_of_whole(data: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    """Records of the whole batches in ``data`` (a read may end in a partial batch)."""
    from clients.records.header import peek_batch_size

    end = 0
    while (size := peek_batch_size(data, end)) is not None and end + size <= len(data):
        end += size
    return records_of(data[:end])


TestLogProperties = LogMachine.TestCase
TestLogProperties.settings = settings(max_examples=80, stateful_step_count=30, deadline=None, database=None)
