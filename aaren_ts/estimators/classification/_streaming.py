"""Streams of :class:`~aaren_ts.AarenClassifier`: class probabilities updated with each new time point.

:class:`StreamingClassifierMixin` gives the classifier :meth:`~StreamingClassifierMixin.partial_update`
and :meth:`~StreamingClassifierMixin.reset_stream` over its engine
(:class:`~aaren_ts.engine.ClassifierStreams`, the fitted ``streams_``); ``predict`` and
``predict_proba`` without ``X`` read the ongoing streams.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["StreamingClassifierMixin"]


class StreamingClassifierMixin:
    """``partial_update``, ``reset_stream`` and the streams' probabilities of
    :class:`~aaren_ts.AarenClassifier`."""

    def reset_stream(self) -> Any:
        """End all streams; the next :meth:`partial_update` starts new ones."""
        self.check_is_fitted()
        streams = getattr(self, "streams_", None)
        if streams is not None:
            streams.reset()
        return self

    def partial_update(self, X_new: Any) -> Any:
        """Advance the ongoing streams by the next time points in ``X_new``.

        The recurrent state of each stream advances by ``k`` steps in O(k) time and O(1) memory per
        stream (Aaren backbone), using the encoder's block form. No refit, no re-encoding of history.
        Calls from several threads are serialised: none of their time points is lost.

        Parameters
        ----------
        X_new : panel
            The next time points of each stream: one series per stream, in the same order at every
            call; lengths may differ between streams (a list entry may have 0 time points, and so may
            every entry: the streams then stay as they are). The first call after ``fit`` or
            :meth:`reset_stream` starts ``len(X_new)`` new streams.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            Bad input (NaN/inf, wrong rank, channel count, number of streams, a value that would
            overflow: more than 1e12 standard deviations from its channel's training mean). The stream
            state is then left exactly as it was.
        """
        self._require_network("partial_update")
        panel = self._panel(X_new, name="X_new", allow_empty_series=True)
        values, lengths = self._scaled(panel, "X_new")
        rule = self._early_rule()  # checked before the streams change
        with self._torch_context():
            self.streams_.advance(values, lengths, rule)
        return self

    @property
    def n_streams_(self) -> int:
        """Ongoing streams (0 before the first :meth:`partial_update` or after :meth:`reset_stream`)."""
        streams = getattr(self, "streams_", None)
        return 0 if streams is None else len(streams)

    def _stream_proba(self) -> np.ndarray:
        self.check_is_fitted()
        self._require_network("predict_proba")
        with self._torch_context():
            return self.streams_.predict_proba()

    def stream_state_tensors(self) -> list[torch.Tensor]:
        """The tensors of the current stream state (empty list without streams), e.g. to compare."""
        streams = getattr(self, "streams_", None)
        return [] if streams is None else [t.clone() for t in streams.tensors()]
