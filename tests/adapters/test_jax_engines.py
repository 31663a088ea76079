"""JAX's engines: each engine's XLA compile options exist in the installed jaxlib and change how XLA:CPU compiles a
convolution (an option XLA does not have, or one it ignores, would make two engines measure the same program)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bench.adapters import ADAPTERS
from bench.adapters.jax.training import COMPILER_OPTIONS, compiler_options


def _compiled_conv(options: dict) -> tuple[str, np.ndarray]:
    jax = pytest.importorskip("jax")
    # 32 channels: XLA:CPU leaves a convolution of few channels (8) to Eigen whatever the option
    x = np.random.default_rng(0).standard_normal((2, 16, 16, 32), dtype=np.float32)
    w = np.random.default_rng(1).standard_normal((3, 3, 32, 32), dtype=np.float32)

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    compiled = jax.jit(conv).lower(x, w).compile(compiler_options=options or None)
    return compiled.as_text() or "", np.asarray(compiled(x, w))


def test_every_jax_engine_compiles_a_convolution_its_own_way():
    assert ADAPTERS.get("jax").engines == tuple(COMPILER_OPTIONS) and ADAPTERS.get("jax").engines[0] == "jit"
    programs = {engine: _compiled_conv(compiler_options(engine)) for engine in COMPILER_OPTIONS}
    ynn = {engine: len(re.findall(r"__ynn_fusion", text)) for engine, (text, _) in programs.items()}
    assert ynn["jit"] > 0 and ynn["jit_eigen"] == 0  # XLA's default sends this convolution to YNNPACK; jit_eigen not
    assert programs["jit"][0] != programs["jit_eigen"][0]
    reference = programs["jit"][1]
    for _, out in programs.values():  # the same convolution, whichever library runs it
        np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-4)


def test_an_option_this_jaxlib_lacks_is_an_error_not_ignored():
    jax = pytest.importorskip("jax")
    with pytest.raises(Exception, match="No such compile option"):
        jax.jit(lambda x: x + 1).lower(np.ones(2, np.float32)).compile(compiler_options={"xla_cpu_no_such": True})
