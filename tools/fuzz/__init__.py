"""A structured, mutational fuzzer for kafkalite's decoders (``python -m tools.fuzz``).

Targets (:mod:`tools.fuzz.targets`): every generated response and data decoder at every
version, the record batch decoders (v2 of every codec, legacy v0/v1, with the C kernels
and the pure-Python ones), the consumer's ``CompletedFetch`` and the connection's
framing. Inputs are valid encodings (:mod:`tools.fuzz.seeds`) mutated at the byte level
(:mod:`tools.fuzz.mutate`) or, for record batches, mutated inside the compression and
the CRC. The oracle (:mod:`tools.fuzz.engine`) allows only typed errors
(``kafkalite.errors.ProtocolError`` and its subclasses), bounds the time of each input
and its peak allocation relative to its size, and reports the figures.

``docs/testing.md`` ("Fuzzing the decoders") has the commands and the figures of the
last long run; CI runs a short one (``tests/unit/test_fuzz_decoders.py``).
"""
