"""Kafka's sticky assignment (``sticky`` and ``cooperative-sticky``), pure logic.

The aim, as in Kafka's AbstractStickyAssignor: an assignment as balanced as possible that
moves as few partitions as possible from their current owners.

- The current owner of a partition is the member claiming it with the highest generation;
  when two members claim it in that same generation, neither keeps it. The member with
  the next generation down is its previous owner, which the general assignment prefers
  when a partition has to move.
- When every member subscribes to the same topics the *constrained* assignment applies:
  each member keeps up to its quota (``floor`` or ``ceil`` of partitions per member) of
  what it owns, and the rest is dealt round-robin to the members under their quota.
- Otherwise the *general* assignment: keep what may be kept, give each unassigned
  partition to the eligible member with the fewest partitions, then move partitions
  from members with more to members with fewer (preferring a partition's previous owner)
  until no move improves the balance; a rebalance that does not lower the balance score
  is undone.

Ties are broken by member id and by (topic, partition), so the result is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

TopicPartition = tuple[str, int]

DEFAULT_GENERATION = -1


@dataclass(frozen=True)
class StickyMember:
    """One member as the sticky assignment sees it."""

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = DEFAULT_GENERATION


def sticky_assign(partition_counts: Mapping[str, int], members: Iterable[StickyMember],
                  *, constrained: bool = True) -> dict[str, list[TopicPartition]]:
    """Partitions per member id; topics missing from ``partition_counts`` are skipped.

    With ``constrained`` (Java's choice) equal subscriptions take the constrained
    assignment; without it every group takes the general one, as librdkafka's sticky
    assignor does (it has no constrained path), so the two can differ after a
    membership change while both stay balanced and move as few partitions."""
    group = sorted(members, key=lambda m: m.member_id)
    if not group:
        return {}
    potential = {m.member_id: _potential_partitions(partition_counts, m.topics)
                 for m in group}
    current, previous = _current_owners(group, potential)
    topic_sets = {frozenset(t for t in m.topics if t in partition_counts) for m in group}
    if constrained and len(topic_sets) == 1:
        return _constrained(group, potential, current)
    return _general(group, potential, current, previous)


def _potential_partitions(partition_counts: Mapping[str, int],
                          topics: Iterable[str]) -> list[TopicPartition]:
    return [(t, p) for t in sorted(set(topics)) if t in partition_counts
            for p in range(partition_counts[t])]


def _current_owners(group: Sequence[StickyMember],
                    potential: Mapping[str, list[TopicPartition]]
                    ) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str]]:
    """(current assignment per member, previous owner per partition). A partition claimed
    twice in its highest generation has no current owner. Claims on partitions a member cannot have (topic
    gone or no longer subscribed) are dropped."""
    claims: dict[TopicPartition, list[tuple[int, str]]] = {}
    for m in group:
        allowed = set(potential[m.member_id])
        for tp in dict.fromkeys(m.owned):
            if tp in allowed:
                claims.setdefault(tp, []).append((m.generation, m.member_id))
    current: dict[str, list[TopicPartition]] = {m.member_id: [] for m in group}
    previous: dict[TopicPartition, str] = {}
    for tp in sorted(claims):
        ordered = sorted(claims[tp], key=lambda c: c[0])
        top_generation = ordered[-1][0]
        if sum(1 for g, _ in ordered if g == top_generation) > 1:
            continue
        current[ordered[-1][1]].append(tp)
        if len(ordered) >= 2:
            previous[tp] = ordered[-2][1]
    return current, previous


def _max_generation_only(group: Sequence[StickyMember],
                         current: Mapping[str, list[TopicPartition]]
                         ) -> dict[str, list[TopicPartition]]:
    """The constrained assignment trusts only members of the newest generation."""
    newest = max(m.generation for m in group)
    return {m.member_id: list(current[m.member_id]) if m.generation == newest else []
            for m in group}


def _constrained(group: Sequence[StickyMember], potential: Mapping[str, list[TopicPartition]],
                 current: Mapping[str, list[TopicPartition]]) -> dict[str, list[TopicPartition]]:
    all_partitions = potential[group[0].member_id]
    total, n = len(all_partitions), len(group)
    min_quota, extra = divmod(total, n)
    max_quota = min_quota + (1 if extra else 0)
    over_min = 0                          # members holding max_quota (> min_quota)
    owned = _max_generation_only(group, current)
    assignment: dict[str, list[TopicPartition]] = {m.member_id: [] for m in group}
    under_min: list[str] = []
    at_min: list[str] = []
    kept: set[TopicPartition] = set()
    for member_id, partitions in owned.items():
        if len(partitions) < min_quota:
            assignment[member_id].extend(partitions)
            under_min.append(member_id)
        elif len(partitions) >= max_quota and over_min < extra:
            over_min += 1
            if over_min == extra:
                at_min.clear()
            assignment[member_id].extend(partitions[:max_quota])
        else:
            assignment[member_id].extend(partitions[:min_quota])
            if over_min < extra:
                at_min.append(member_id)
        kept.update(assignment[member_id])
    under_min.sort()
    at_min.sort()
    unassigned = [tp for tp in all_partitions if tp not in kept]
    # Round-robin over the members under min_quota; once all reach it, the members at
    # min_quota take one more each until ``extra`` of them hold max_quota.
    turn = 0
    for tp in unassigned:
        if under_min:
            turn %= len(under_min)
            member_id = under_min[turn]
        elif at_min:
            member_id = at_min.pop(0)
        else:
            raise AssertionError("sticky assignment: no member left under its quota")
        assignment[member_id].append(tp)
        count = len(assignment[member_id])
        if under_min and member_id == under_min[turn]:
            if count == min_quota:
                under_min.pop(turn)
                if over_min < extra:
                    at_min.append(member_id)
            else:
                turn += 1
        if count == max_quota and max_quota > min_quota:
            over_min += 1
    return assignment


class _Movements:
    """Which partitions moved between which members during one general assignment, so a
    move back undoes an earlier one instead of moving another partition."""

    def __init__(self) -> None:
        self.moves: dict[TopicPartition, tuple[str, str]] = {}
        self.by_topic: dict[str, dict[tuple[str, str], list[TopicPartition]]] = {}

    def _remove(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        pairs = self.by_topic[tp[0]]
        pairs[pair].remove(tp)
        if not pairs[pair]:
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp[0]]
        return pair

    def _add(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        self.by_topic.setdefault(tp[0], {}).setdefault(pair, []).append(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.moves:
            src, _ = self._remove(tp)
            if src != new:
                self._add(tp, (src, new))
        else:
            self._add(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """``tp``, or a partition of its topic that moved from ``new`` to ``old`` before
        (moving that one back keeps more partitions where they were)."""
        pairs = self.by_topic.get(tp[0])
        if pairs is None:
            return tp
        back = pairs.get((new, old))
        return back[0] if back else tp


class _General:
    """The general assignment's working state (see the module docstring)."""

    def __init__(self, group: Sequence[StickyMember],
                 potential: Mapping[str, list[TopicPartition]],
                 current: Mapping[str, list[TopicPartition]],
                 previous: Mapping[TopicPartition, str]) -> None:
        self.potential = {m: list(p) for m, p in potential.items()}
        self.potential_sets = {m: set(p) for m, p in potential.items()}
        self.consumers_of: dict[TopicPartition, list[str]] = {}
        for m in group:
            for tp in potential[m.member_id]:
                self.consumers_of.setdefault(tp, []).append(m.member_id)
        self.assignment = {m: list(p) for m, p in current.items()}
        self.owner = {tp: m for m, parts in current.items() for tp in parts}
        self.previous = dict(previous)
        self.subscribed = {m.member_id: set(m.topics) for m in group}
        self.order: list[str] = []
        self.movements = _Movements()

    def resort(self) -> None:
        self.order.sort(key=lambda m: (len(self.assignment[m]), m))

    def sorted_partitions(self, fresh: bool) -> list[TopicPartition]:
        """Partitions in the order the balancing visits them: the least contested first
        for a fresh group or unequal subscriptions, else taking turns from the members
        holding most (their partitions with a previous owner first)."""
        everything = sorted(self.consumers_of)
        if fresh or not self._identical_subscriptions():
            return sorted(everything, key=lambda tp: (len(self.consumers_of[tp]), tp))
        remaining = {m: sorted(tp for tp in parts if tp in self.consumers_of)
                     for m, parts in self.assignment.items()}
        members = sorted((m for m in remaining if remaining[m]),
                         key=lambda m: (len(remaining[m]), m))
        out: list[TopicPartition] = []
        while members:
            member = members[-1]
            parts = remaining[member]
            if not parts:
                members.pop()
                continue
            with_previous = [tp for tp in parts if tp in self.previous]
            chosen = with_previous[0] if with_previous else parts[0]
            parts.remove(chosen)
            out.append(chosen)
            members.sort(key=lambda m: (len(remaining[m]), m))
        was_empty = not out
        seen = set(out)
        # The rest follow last topic first, last partition first: the order librdkafka's
        # maps give them (they iterate newest entry first), which decides who gets them.
        out.extend(tp for tp in reversed(everything) if tp not in seen)
        return sorted(out) if was_empty else out

    def _identical_subscriptions(self) -> bool:
        consumers = {tuple(c) for c in self.consumers_of.values()}
        partitions = {tuple(p) for p in self.potential.values()}
        return len(consumers) <= 1 and len(partitions) <= 1

    def assign_to_least_loaded(self, tp: TopicPartition) -> None:
        for member in self.order:
            if tp in self.potential_sets[member]:
                self.assignment[member].append(tp)
                self.owner[tp] = member
                self.resort()
                return

    def can_move(self, tp: TopicPartition) -> bool:
        return len(self.consumers_of.get(tp, ())) >= 2

    def member_can_move(self, member: str) -> bool:
        parts = self.assignment[member]
        if len(parts) < len(self.potential[member]):
            return True
        return any(self.can_move(tp) for tp in parts)

    def is_balanced(self) -> bool:
        if not self.order:
            return True
        low, high = len(self.assignment[self.order[0]]), len(self.assignment[self.order[-1]])
        if low >= high - 1:
            return True
        for member in self.order:
            mine = self.assignment[member]
            if len(mine) == len(self.potential[member]):
                continue
            mine_set = set(mine)
            for tp in self.potential[member]:
                if tp in mine_set:
                    continue
                other = self.owner.get(tp)
                if other in self.assignment and len(mine) < len(self.assignment[other]):
                    return False
        return True

    def _move(self, tp: TopicPartition, new: str) -> None:
        old = self.owner[tp]
        self.movements.move(tp, old, new)
        self.assignment[new].append(tp)
        self.assignment[old].remove(tp)
        self.owner[tp] = new
        self.resort()

    def _move_to(self, tp: TopicPartition, new: str) -> None:
        self._move(self.movements.partition_to_move(tp, self.owner[tp], new), new)

    def _move_to_least_loaded(self, tp: TopicPartition) -> None:
        for member in self.order:
            if tp in self.potential_sets[member]:
                self._move_to(tp, member)
                return

    def reassign(self, partitions: Sequence[TopicPartition]) -> bool:
        """Move partitions towards the members with fewer until balanced; whether any
        moved."""
        performed = False
        while True:
            modified = False
            for tp in partitions:
                if self.is_balanced():
                    break
                owner = self.owner.get(tp)
                if owner not in self.assignment:
                    continue
                count = len(self.assignment[owner])
                before = self.previous.get(tp)
                if before in self.assignment and count > len(self.assignment[before]) + 1:
                    self._move_to(tp, before)
                    performed = modified = True
                    continue
                for other in self.consumers_of[tp]:
                    if other != owner and other in self.assignment \
                            and count > len(self.assignment[other]) + 1:
                        self._move_to_least_loaded(tp)
                        performed = modified = True
                        break
            if not modified:
                return performed


def _balance_score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    sizes = [len(p) for p in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1:])


def _general(group: Sequence[StickyMember], potential: Mapping[str, list[TopicPartition]],
             current: Mapping[str, list[TopicPartition]],
             previous: Mapping[TopicPartition, str]) -> dict[str, list[TopicPartition]]:
    state = _General(group, potential, current, previous)
    fresh = not any(current.values())
    sorted_partitions = state.sorted_partitions(fresh)
    unassigned = list(sorted_partitions)
    revocation_required = False
    for member, parts in state.assignment.items():
        for tp in list(parts):
            if tp[0] not in state.subscribed[member]:
                parts.remove(tp)
                del state.owner[tp]
                revocation_required = True
            elif tp in unassigned:
                unassigned.remove(tp)
    state.order = list(state.assignment)
    state.resort()
    initializing = len(state.assignment[state.order[0]]) == 0
    for tp in unassigned:
        state.assign_to_least_loaded(tp)
    # Partitions only one member can have, and members that cannot change, stay put.
    sorted_partitions = [tp for tp in sorted_partitions if state.can_move(tp)]
    unassigned = [tp for tp in unassigned if state.can_move(tp)]
    fixed: dict[str, list[TopicPartition]] = {}
    for member in list(state.order):
        if not state.member_can_move(member):
            state.order.remove(member)
            fixed[member] = state.assignment.pop(member)
    before = {m: list(p) for m, p in state.assignment.items()}
    owners_before = dict(state.owner)
    if not revocation_required and unassigned:
        state.reassign(unassigned)
    performed = state.reassign(sorted_partitions)
    if not initializing and performed and \
            _balance_score(state.assignment) >= _balance_score(before):
        state.assignment, state.owner = before, owners_before
    state.assignment.update(fixed)
    return state.assignment


def transferring_ownership(assignment: Mapping[str, Sequence[TopicPartition]],
                           members: Iterable[StickyMember]) -> dict[TopicPartition, str]:
    """Partitions assigned to one member while others still own them: those claimed,
    in the newest generation claiming them, by members other than the new owner. Under
    cooperative rebalancing the new owner gets them only in the next rebalance, after
    the owners have revoked them (KIP-429); older claims do not count."""
    claims: dict[TopicPartition, tuple[int, set[str]]] = {}
    for m in members:
        for tp in m.owned:
            generation, claimants = claims.get(tp, (m.generation, set()))
            if m.generation > generation:
                generation, claimants = m.generation, set()
            if m.generation == generation:
                claimants.add(m.member_id)
            claims[tp] = (generation, claimants)
    out: dict[TopicPartition, str] = {}
    for member, parts in assignment.items():
        for tp in parts:
            claimants = claims.get(tp, (0, set()))[1]
            if claimants and claimants != {member}:
                out[tp] = member
    return out


def cooperative_adjust(assignment: Mapping[str, Sequence[TopicPartition]],
                       members: Iterable[StickyMember]) -> dict[str, list[TopicPartition]]:
    """``assignment`` without the partitions still transferring ownership."""
    moving = transferring_ownership(assignment, members)
    return {m: [tp for tp in parts if moving.get(tp) != m] for m, parts in assignment.items()}


__all__ = ["DEFAULT_GENERATION", "StickyMember", "cooperative_adjust", "sticky_assign",
           "transferring_ownership"]
