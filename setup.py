"""Build the optional native ingest core (scope.ingest._native).

Everything else is in pyproject.toml. The extension is optional: without a C compiler the package
still installs, and ingest falls back to the pure-Python reader (msgspec + pyarrow).
"""

from setuptools import Extension, find_packages, setup

# The design card keeps collectors/, analyzers/ and app/ at the top of the repository; they install
# under the one `scope` namespace (scope.collectors, ...), never as generic top-level packages that
# would shadow, or be shadowed by, a training project's own `app` or `collectors`.
NAMESPACED = ("collectors", "analyzers", "app")


def scope_packages() -> tuple[list[str], dict[str, str]]:
    packages = find_packages(include=["scope", "scope.*"])
    package_dir = {"scope": "scope"}
    for folder in NAMESPACED:
        package_dir[f"scope.{folder}"] = folder
        packages += [f"scope.{folder}"] + [f"scope.{folder}.{sub}" for sub in find_packages(folder)]
    return packages, package_dir


PACKAGES, PACKAGE_DIR = scope_packages()

NATIVE_SOURCES = [
    "scope/ingest/native/module.c",
    "scope/ingest/native/pqwrite.c",
    "scope/ingest/native/pqwrite_py.c",
    "scope/ingest/native/kineto.c",
    "scope/ingest/native/kineto_py.c",
]

setup(
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    package_data={"scope.app": ["assets/*"]},
    ext_modules=[
        Extension(
            "scope.ingest._native",
            sources=NATIVE_SOURCES,
            depends=["scope/ingest/native/pqwrite.h", "scope/ingest/native/kineto.h"],
            libraries=["z", "dl"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ],
)
