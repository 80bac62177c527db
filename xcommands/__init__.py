"""The command engine: durable per-key command queues, leases, retries, rollback."""
