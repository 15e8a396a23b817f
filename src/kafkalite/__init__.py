"""kafkalite: a complete, fast, typed Python client for Apache Kafka."""

from kafkalite import errors

__version__ = "0.1.0"

__all__ = ["__version__", "errors"]
