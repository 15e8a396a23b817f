"""KIP-714 client metrics push and metric reporters (see docs/observability.md)."""
