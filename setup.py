"""Build the C kernels at install time (everything else is in pyproject.toml).

Two plain C shared libraries, loaded with ctypes (neither uses the Python C API):
``aaren_ts/nn/_fused_step.c``, the encoder's token step (loaded by ``aaren_ts.nn._native``), and
``aaren_ts/engine/_aci_step.c``, the streams' interval-calibration step (``aaren_ts.engine._native``).
Both are optional: where they do not build (no C compiler, an unsupported platform) the installation
goes on and the same computations run through PyTorch.
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
            name,
            sources=[source],
            extra_compile_args=compile_args,
            libraries=libraries,
            optional=True,
        )
        for name, source in [
            ("aaren_ts.nn._fused_step", "aaren_ts/nn/_fused_step.c"),
            ("aaren_ts.engine._aci_step", "aaren_ts/engine/_aci_step.c"),
        ]
    ]
)
