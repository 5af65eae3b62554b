"""Who is on the bus: enrolled sessions and their records, humans, liveness, the client's transcript,
and the context every verb call resolves its caller through."""
