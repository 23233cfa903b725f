"""Torch-free helpers shared by the engine, the estimators and the ONNX streamer.

Normal quantiles (``normal``), the log scale of positive series (``log_target``), the bounds on
standardised inputs (``limits``) and atomic file writes (``files``), in numpy and the standard library
alone. Internal: ``aaren_ts`` exports nothing new from here.
"""
