"""The package's version, in a module of its own.

The engine (``net/transport.py`` sends it in ApiVersions as ``client_software_version``,
KIP-511), telemetry and OpenTelemetry read it from here rather than from
``kafkalite/__init__.py``: importing the package face would make the engine depend on
the public names it serves. ``pyproject.toml`` reads it too (setuptools ``dynamic``).
"""

__version__ = "0.1.0"
