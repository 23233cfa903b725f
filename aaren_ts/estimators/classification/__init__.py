"""What :class:`~aaren_ts.AarenClassifier` is built from, each part in its own module.

The estimator itself stays in :mod:`aaren_ts.estimators.classifier`; this package holds the parts only
the classifier uses:

* :mod:`._kernels` and :mod:`._ridge`: the random kernels' ridge classifiers and their mixture with the
  network;
* :mod:`._streaming`, :mod:`._early` and :mod:`._fitted`: the streams, early classification and the
  fitted state that ``save`` / ``load`` write and read.
"""
