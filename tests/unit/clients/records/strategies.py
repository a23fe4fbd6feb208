"""Hypothesis strategies for records and batches."""

from __future__ import annotations

from hypothesis import strategies as st

from clients.records.batch import Record

payloads = st.none() | st.binary(max_size=300)
headers = st.lists(
    st.tuples(st.text(max_size=20), st.none() | st.binary(max_size=50)), max_size=4
).map(tuple)
timestamps = st.integers(min_value=0, max_value=2**41)


@st.composite
def record_lists(draw: st.DrawFn, max_size: int = 30) -> tuple[int, list[Record]]:
    """(base_offset, records) with strictly increasing absolute offsets, gaps allowed."""
    base_offset = draw(st.integers(min_value=0, max_value=2**40))
    count = draw(st.integers(min_value=1, max_value=max_size))
    gaps = draw(st.lists(st.integers(min_value=1, max_value=1000), min_size=count, max_size=count))
    offset = base_offset + gaps[0] - 1
    records = []
    for gap in gaps:
        if records:
            offset += gap
        records.append(
            Record(offset, draw(timestamps), draw(payloads), draw(payloads), draw(headers))
        )
    return base_offset, records
