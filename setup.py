"""Build the optional native ingest core (scope.ingest._native).

Everything else is in pyproject.toml. The extension is optional: without a C compiler the package
still installs, and ingest falls back to the pure-Python reader (msgspec + pyarrow).
"""

import os
import shlex
import tempfile

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
    "scope/ingest/native/snapshot_py.c",
    "scope/ingest/native/snapshot_intern.c",
]


def has_isal() -> bool:
    """ISA-L's gzip inflater (Debian/Ubuntu libisal-dev, Fedora isa-l-devel) links: the native core then
    inflates traces with it, several times faster than zlib (which stays for damaged files)."""
    try:
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler

        compiler = new_compiler()
        customize_compiler(compiler)
        with tempfile.TemporaryDirectory() as tmp:
            probe = os.path.join(tmp, "probe.c")
            with open(probe, "w") as fh:
                fh.write(
                    "#include <isa-l/igzip_lib.h>\nint main(void) { struct inflate_state s; "
                    "isal_inflate_init(&s); return 0; }\n"
                )
            objects = compiler.compile([probe], output_dir=tmp)
            # linker_exe carries no flags of its own: objects built with CFLAGS' -fsanitize (the fuzz
            # build) link only with LDFLAGS' runtimes, as the extension itself does
            compiler.link_executable(
                objects,
                os.path.join(tmp, "probe"),
                libraries=["isal"],
                extra_preargs=shlex.split(os.environ.get("LDFLAGS", "")),
            )
        return True
    except Exception:  # no compiler, header or library: zlib alone, said by scripts/setup.sh
        return False


ISAL = has_isal()

setup(
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    package_data={"scope.app": ["assets/*"]},
    ext_modules=[
        Extension(
            "scope.ingest._native",
            sources=NATIVE_SOURCES,
            depends=["scope/ingest/native/pqwrite.h", "scope/ingest/native/kineto.h", "scope/ingest/native/snapshot.h"],
            libraries=["z", "dl", *(["isal"] if ISAL else [])],
            define_macros=[("SCOPE_HAVE_ISAL", "1")] if ISAL else [],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ],
)
