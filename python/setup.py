"""Builds the package around the engine's shared library.

The library is bundled inside the package (arkcos/libarkcos.so.1) with what
it needs beyond the C library, so the installed package needs numpy, an
x86-64 CPU and glibc (the version the wheel's tag names). Where it comes
from:

  ARKCOS_LIBRARY=/path/to/libarkcos.so.1   a library built or installed
                                           already (make lib, make install,
                                           make portable-lib)
  otherwise                                `make portable-lib` in the
                                           repository this folder sits in
                                           (BUILD, GPU and the other make
                                           variables from the environment)

`make portable-lib` builds $(BUILD)/portable/libarkcos.so.1 for any x86-64
CPU (the engine for four instruction-set levels, the loader picking one; FFTW
linked in) and lists in bundle.txt beside it the files the package carries
(the library, libgomp.so.1, the GPU module of a CUDA build) and in
glibc.txt the newest glibc they ask for; the wheel is then tagged
manylinux_2_<that>_x86_64. A library given by ARKCOS_LIBRARY is bundled with
the files of a bundle.txt beside it, if there is one, and without one alone,
needing what it was linked with (FFTW, libgomp) and the CPU it was compiled
for; such a wheel keeps the tag linux_x86_64.
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:  # setuptools >= 70.1 carries bdist_wheel; before, the wheel package
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def library_path():
    lib = os.environ.get("ARKCOS_LIBRARY")
    if lib:
        if not os.path.isfile(lib):
            raise SystemExit(f"ARKCOS_LIBRARY={lib}: no such file")
        return lib
    if not os.path.isfile(os.path.join(ROOT, "arkcos", "arkcos.h")):
        raise SystemExit("arkcos: not inside the ARKCoS bench repository; set ARKCOS_LIBRARY "
                         "to a built libarkcos.so.1")
    build = os.environ.get("BUILD", "build")
    subprocess.check_call(["make", "-C", ROOT, "--no-print-directory", "portable-lib",
                           f"BUILD={build}"])
    return os.path.join(ROOT, build, "portable", "libarkcos.so.1")


def read_list(path):
    try:
        with open(path) as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return None


_bundle = None


def bundle():
    """(files to copy into the package as (source, name in the package),
    the glibc version the wheel's tag names or None)."""
    global _bundle
    if _bundle is None:
        lib = library_path()
        folder = os.path.dirname(os.path.abspath(lib))
        names = read_list(os.path.join(folder, "bundle.txt"))
        glibc = read_list(os.path.join(folder, "glibc.txt"))
        files = [(lib, "libarkcos.so.1")]
        if names is not None:
            files += [(os.path.join(folder, n), n) for n in names if n != "libarkcos.so.1"]
        for src, _ in files:
            if not os.path.isfile(src):
                raise SystemExit(f"arkcos: {src} (listed in {folder}/bundle.txt): no such file")
        _bundle = (files, glibc[0] if names is not None and glibc else None)
    return _bundle


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        folder = os.path.join(self.build_lib, "arkcos")
        os.makedirs(folder, exist_ok=True)
        # the build folder outlives a build: libraries an earlier one copied
        # (another GPU setting, another ARKCOS_LIBRARY) must not ride along
        for name in os.listdir(folder):
            if ".so" in name:
                os.remove(os.path.join(folder, name))
        for src, name in bundle()[0]:
            target = os.path.join(folder, name)
            shutil.copyfile(src, target)
            os.chmod(target, 0o755)


class WheelTag(bdist_wheel):
    """py3-none-PLATFORM: the package is pure Python around a library loaded
    with ctypes, so any Python 3 runs it; the platform is manylinux_2_N_x86_64
    for the portable library (N: the newest glibc symbol version it or what
    it bundles asks for), else this machine's."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        glibc = bundle()[1]
        if glibc and plat.endswith("x86_64"):
            plat = "manylinux_%s_x86_64" % glibc.replace(".", "_")
        return "py3", "none", plat


class BinaryDistribution(Distribution):
    """A wheel tagged for a platform: it carries a compiled library."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": WheelTag},
      distclass=BinaryDistribution)
