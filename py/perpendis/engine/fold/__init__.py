"""The fold: each chunk of aligned elements becomes a :class:`~.partial.Partial`, and partials merge.

``partial`` declares the statistics (how each merges and is written to bytes), ``chunk``
computes them for one chunk (``fails`` the tolerance test's part, ``ulp_histogram`` the
distances' bins), ``reservoir`` and ``exact`` are the samples and sums that merge in any
grouping, ``codec`` writes a partial to bytes for another worker, ``share`` is what such a
worker folds, and ``order``, ``quantiles`` and ``numbers`` turn the merged partial into the
report's numbers.
"""
