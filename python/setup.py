"""Builds the package around the engine's shared library.

The library is bundled inside the package (arkcos/libarkcos.so.1), so the
installed package needs nothing but numpy. Where it comes from:

  ARKCOS_LIBRARY=/path/to/libarkcos.so.1   a library built or installed
                                           already (make lib, make install)
  otherwise                                `make lib` in the repository this
                                           folder sits in (BUILD, GPU and
                                           the other make variables from
                                           the environment)
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

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
    subprocess.check_call(["make", "-C", ROOT, "--no-print-directory", "lib", f"BUILD={build}"])
    return os.path.join(ROOT, build, "libarkcos.so.1.0.0")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "arkcos", "libarkcos.so.1")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(library_path(), target)
        os.chmod(target, 0o755)


class BinaryDistribution(Distribution):
    """A wheel tagged for this platform: it carries a compiled library."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
