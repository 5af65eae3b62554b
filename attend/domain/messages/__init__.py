"""Traffic: addressing, channels, the outbound path and delivery to each recipient, receipts and
outcomes, the inbound rule, presence, what came from other hosts, and retention."""
