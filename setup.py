"""Build the fused inference step's C kernel at install time (everything else is in pyproject.toml).

The kernel (``aaren_ts/nn/_fused_step.c``) is a plain C shared library that ``aaren_ts.nn._native``
loads with ctypes; it does not use the Python C API. It is optional: where it does not build (no C
compiler, an unsupported platform) the installation goes on and the encoder steps through PyTorch.
Portable flags only (no ``-march=native``), so a wheel built here runs on any CPU of its platform.
"""

import sys

from setuptools import Extension, setup

compile_args = [] if sys.platform == "win32" else ["-O3", "-std=gnu11"]
libraries = [] if sys.platform == "win32" else ["m"]

setup(
    ext_modules=[
        Extension(
            "aaren_ts.nn._fused_step",
            sources=["aaren_ts/nn/_fused_step.c"],
            extra_compile_args=compile_args,
            libraries=libraries,
            optional=True,
        )
    ]
)
