"""Build the fused inference steps' C kernels at install time (everything else is in pyproject.toml).

The kernels (``aaren_ts/nn/_fused_step.c``: the encoder's token step; ``aaren_ts/nn/_aci_step.c``: the
interval calibration's step) make one plain C shared library that ``aaren_ts.nn._native`` loads with
ctypes; it does not use the Python C API. It is optional: where it does not build (no C
compiler, an unsupported platform) the installation goes on and the encoder steps through PyTorch.
Portable flags only (no ``-march=native``), so a wheel built here runs on any CPU of its platform.
"""

import sys

from setuptools import Extension, setup

# -fno-trapping-math: the calibration step's comparisons become vector masks (values are unchanged:
# no floating-point exceptions are ever enabled)
compile_args = [] if sys.platform == "win32" else ["-O3", "-std=gnu11", "-fno-trapping-math"]
libraries = [] if sys.platform == "win32" else ["m"]

setup(
    ext_modules=[
        Extension(
            "aaren_ts.nn._fused_step",
            sources=["aaren_ts/nn/_fused_step.c", "aaren_ts/nn/_aci_step.c"],
            extra_compile_args=compile_args,
            libraries=libraries,
            optional=True,
        )
    ]
)
