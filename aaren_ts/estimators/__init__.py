"""sklearn/sktime estimators built on Aaren, trained with skorch."""
