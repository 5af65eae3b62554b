"""The relay: ``attend relay``, one per host, carries records between this spool and other hosts' through a
NATS JetStream server the user runs (docs/architecture/relay.md).

Only this package imports ``nats`` (an import-linter contract holds it), and only its daemon and check
modules do, inside functions: with no relay configured nothing of it is loaded, and the send path never
is. The send path's one part in this is ``delivery.crosses_hosts``: a record for other hosts is also
linked into ``relay/outbox/new/`` before the send returns.
"""
