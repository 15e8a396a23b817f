"""What the consumer and the share consumer share, in one place.

The clients (``producer/``, ``consumer/``, ``share/``, ``admin/``) never import each
other (``tests/unit/test_layering.py``); code that two of them need lives here, as
Java keeps it in ``org.apache.kafka.clients.consumer.internals`` for both of its
consumers. Nothing here imports a client.
"""
