"""The runtime every coordinator over a compacted internal topic shares (Kafka's
coordinator-common): the group coordinator (`__consumer_offsets`, broker.group) and the
transaction coordinator (`__transaction_state`, broker.txn) are its clients. It imports
neither of them.

Modules: `routing` (a key's partition), `topic` (the topic's settings and its creation on
first use), `partitions` (which partitions this broker leads, at which coordinator epoch;
FindCoordinator's answer), `log` (appends through the replica manager, reads for loading),
`loader` (replaying a partition into a state machine), `writer` (a partition's writes in
decision order), `runtime` (loading and unloading on leadership changes, ownership).

How a coordinator plugs in (what a third one, say the share coordinator over
`__share_group_state`, brings):

1. Its topic: the topic name, an `InternalTopicSettings` from its config keys, and
   `partition_for_key` for its keys.
2. Its record types, and a `CoordinatorStateMachine` over them, free of I/O: `decode` a
   chunk of whole batches into records, `new_replay` / `Replay.apply` to replay them in log
   order, `install` a finished replay as the partition's state, `unload` a partition.
3. Its I/O shell: build a `ReplicaCoordinatorLog` and an `InternalTopicCreator` for the
   topic, and a `CoordinatorRuntime` over the state machine (with `writer_for` when its
   writes must go one at a time in decision order, `OrderedWriter`; else it appends through
   `runtime.log`); start `runtime.run` in its nursery, call `runtime.reconcile` on each new
   metadata image, answer `runtime.error(partition)` before serving a key and
   `runtime.find_coordinator` for FindCoordinator. Writes use `runtime.epoch(partition)`
   to tell that the partition was not lost while they waited.
"""
