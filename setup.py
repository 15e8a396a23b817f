"""Build hook for kafkalite's optional C extension (everything else is in pyproject.toml).

``kafkalite._speedups`` holds C versions of the per-record kernels. It is optional:
where no C compiler is available the build skips it and kafkalite runs the pure-Python
kernels (``kafkalite.protocol.record_codec`` picks whichever is importable).
"""

import atexit
import os
import shutil
import sys
import tempfile

from setuptools import Extension, setup

# -Wextra with one exception: CPython's callback signatures (METH_NOARGS' self, getters'
# closure, tp_new's args) have parameters a kernel need not use. Each supported CPython
# (3.10 to 3.13) compiles the kernels without a warning (scripts/ci/pythons.sh checks it).
extra_compile_args = [] if sys.platform == "win32" else ["-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"]

ext_modules = []
if os.environ.get("KAFKALITE_NO_EXTENSIONS", "") not in ("1", "true", "yes"):
    ext_modules.append(
        Extension(
            "kafkalite._speedups",
            sources=["src/kafkalite/_speedups.c", "src/kafkalite/_speedups_decode.c",
                     "src/kafkalite/_speedups_produce.c"],
            depends=["src/kafkalite/_speedups.h"],
            extra_compile_args=extra_compile_args,
            optional=True,
        )
    )

# Each build works in a directory of its own instead of the checkout's ``build/``: pip
# builds a local project in place, so two installs from one checkout at the same time
# (CI's jobs install it into several venvs at once) wrote the same
# build/bdist.*/wheel/kafkalite-*.dist-info and one failed with "File exists". The
# finished wheel goes where pip asked, so the directory goes when this build ends.
build_base = tempfile.mkdtemp(prefix="kafkalite-build-")
atexit.register(shutil.rmtree, build_base, ignore_errors=True)

setup(ext_modules=ext_modules, options={"build": {"build_base": build_base}, "egg_info": {"egg_base": build_base}})
