"""Build the optional native ingest core (scope.ingest._native).

Everything else is in pyproject.toml. The extension is optional: without a C compiler the package
still installs, and ingest falls back to the pure-Python reader (msgspec + pyarrow).
"""

from setuptools import Extension, setup

NATIVE_SOURCES = [
    "scope/ingest/native/module.c",
    "scope/ingest/native/pqwrite.c",
    "scope/ingest/native/pqwrite_py.c",
    "scope/ingest/native/kineto.c",
    "scope/ingest/native/kineto_py.c",
]

setup(
    ext_modules=[
        Extension(
            "scope.ingest._native",
            sources=NATIVE_SOURCES,
            depends=["scope/ingest/native/pqwrite.h", "scope/ingest/native/kineto.h"],
            libraries=["z", "dl"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
