"""Consumer-type groups (KIP-848, `group.protocol=consumer`): the coordinator decides the
assignment. Pure parts: `model` (groups, members, epochs), `assignors` (uniform, range),
`reconcile` (a member's next assignment), `heartbeat` (request checks, subscriptions),
`manager` (the heartbeat, timeouts and offset checks). The wire handlers are in
`broker.apis.consumer_groups`.
"""
