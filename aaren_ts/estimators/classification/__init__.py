"""What :class:`~aaren_ts.AarenClassifier` is built from, each part in its own module.

The estimator itself stays in :mod:`aaren_ts.estimators.classifier`, which keeps its interface and
stores what these parts return; this package holds the parts only the classifier uses:

* :mod:`._training`: ``fit``'s orchestration (the ensemble's members, the network on half of the
  series the mixture is weighed against, the early-decision threshold);
* :mod:`._net`: the skorch nets of the classifier's network, from its parameters;
* :mod:`._inference`: scaling the series and running the network on them in batches;
* :mod:`._kernels` and :mod:`._ridge`: the random kernels' ridge classifiers and their mixture with the
  network;
* :mod:`._streaming`, :mod:`._early` and :mod:`._fitted`: the streams, early classification and the
  fitted state that ``save`` / ``load`` write and read.
"""
