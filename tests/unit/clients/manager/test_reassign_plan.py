"""Generating a reassignment onto chosen brokers, and the confirmation page's plan."""

from __future__ import annotations

from collections import Counter

import pytest

from clients.manager.actions import ActionError, describe_reassignment, parse_form
from clients.manager.reassign_plan import PlanError, decode_plan, encode_plan, generate_plan


def _after(current: dict[int, tuple[int, ...]], plan: dict[int, tuple[int, ...]]
           ) -> dict[int, tuple[int, ...]]:
    return {p: plan.get(p, replicas) for p, replicas in current.items()}


def test_spreading_onto_a_new_broker_evens_the_load_and_moves_little() -> None:
    current = {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2), 3: (1, 2, 3)}
    plan = generate_plan(current, [1, 2, 3, 4])
    after = _after(current, plan)
    assert Counter(b for r in after.values() for b in r) == {1: 3, 2: 3, 3: 3, 4: 3}
    assert len(plan) == 3  # one replica of three partitions moves to broker 4
    for p, replicas in plan.items():
        assert len(set(replicas)) == 3 and len(set(replicas) & set(current[p])) == 2
        assert replicas[0] == current[p][0]  # leaders stay first


def test_moving_off_a_broker_keeps_the_rest() -> None:
    current = {0: (1,), 1: (2,), 2: (3,), 3: (1,)}
    plan = generate_plan(current, [1, 2])
    assert plan == {2: (2,)}  # 2 now has partitions 1 and 2, 1 keeps 0 and 3


def test_nothing_to_move_and_too_few_brokers() -> None:
    assert generate_plan({0: (1, 2), 1: (2, 1)}, [1, 2]) == {}
    with pytest.raises(PlanError, match="at least 2 target brokers"):
        generate_plan({0: (1, 2)}, [3])
    with pytest.raises(PlanError, match="at least one"):
        generate_plan({0: (1,)}, [])


def test_plan_text_round_trips_and_bad_text_is_refused() -> None:
    plan = {0: (1, 2), 5: (3, 4)}
    assert encode_plan(plan) == "0:1,2;5:3,4"
    assert decode_plan(encode_plan(plan)) == plan
    for bad in ("", "0", "0:a", "x:1", "0:1,1"):
        with pytest.raises(PlanError):
            decode_plan(bad)


def test_the_reassign_action_shows_the_plan_and_confirms_that_plan() -> None:
    layout = {0: (1,), 1: (2,), 2: (3,)}
    form = parse_form(b"topic=t&brokers=1&brokers=2&csrf=x")
    assert form["brokers"] == "1,2"
    planned = describe_reassignment(form, layout)
    assert planned.summary == "Move the replicas of 1 of topic t's 3 partitions"
    assert planned.rows == [("2", "3", "1")]
    assert planned.fields == {"topic": "t", "plan": "2:1"}
    # Confirming sends that plan back: it is kept, not generated again.
    again = describe_reassignment({**planned.fields, "confirm": "yes"}, layout)
    assert again.fields == planned.fields
    with pytest.raises(ActionError, match="nothing to move"):
        describe_reassignment({"topic": "t", "brokers": "1,2,3"}, layout)
    with pytest.raises(ActionError, match="no partition 7"):
        describe_reassignment({"topic": "t", "plan": "7:1"}, layout)
