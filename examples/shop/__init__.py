"""Generated Protobuf classes of the examples (see orders.proto)."""
