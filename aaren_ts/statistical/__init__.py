"""The statistical forecasts the network is combined with or falls back to, streamed in O(1).

The Theta method (``theta``), damped-trend exponential smoothing (``ets``) and the partner streams
built on them (``partner``), in numpy alone, so the torch-free ONNX streamer runs them as they are.
Internal: ``aaren_ts`` exports nothing from here.
"""
