"""The heads' p-values in an ONNX export: ONNX has no Erfc, and 1 - Erf in float32 loses the tails the
online calibration decides on."""

from __future__ import annotations

import numpy as np
import torch

from aaren_ts.nn.heads import two_sided_tail


def test_the_exported_form_keeps_the_tail_probabilities_the_calibration_decides_on(monkeypatch):
    x = torch.linspace(0.0, 3.6, 200_001)  # p-values down to 4e-7 (levels go down to 1e-6)
    exact = torch.erfc(x.double())
    monkeypatch.setattr(torch.onnx, "is_in_onnx_export", lambda: True)
    fitted = two_sided_tail(x).double()
    assert float(((fitted - exact).abs() / exact).max()) < 2e-6
    # what the exporter makes of torch.erfc: no digit left at 1e-6
    naive = (1.0 - torch.erf(x)).double()
    far = exact < 2e-6
    assert float(((naive - exact).abs() / exact)[far].max()) > 1e-2
    monkeypatch.undo()
    np.testing.assert_array_equal(two_sided_tail(x).numpy(), torch.erfc(x).numpy())
