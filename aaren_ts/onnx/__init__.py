"""Serve fitted models without PyTorch: ONNX export of the streaming step and a numpy streamer.

``est.to_onnx(path)`` (either estimator, Aaren backbone) writes one streaming step for a batch of
streams, with the state as explicit inputs and outputs, and the streams' state at export time.
:class:`OnnxStreamer` loads that file with ONNX Runtime and streams on numpy arrays; importing this
package imports neither PyTorch nor the estimators.
"""

from aaren_ts.onnx._streamer import OnnxStreamer

__all__ = ["OnnxStreamer"]
