"""The mutation corpus: labelled bug cases and legitimate pairs from real exports.

- :mod:`.models`: the eight architectures (``build``, ``export``, ``run_ort``, ``clean``);
- :mod:`.mutate`: the ONNX mutation operators and their labels;
- :mod:`.cases`: bug cases, legitimate pairs, the tuning / held-back split, storage, and
  ``mutant(arch, operator, target)`` for a bisect harness;
- ``generate.py`` writes the corpus into ``.cache/`` (git-ignored); ``score.py`` scores
  the diagnosis on it.

A bisect harness needs, per architecture: ``models.clean(arch)`` -> (ONNX path, torch
module, inputs) and ``cases.mutant(arch, operator, target=None)`` -> (mutated ONNX path,
torch module, inputs, label with node, op type and module scope); after a run of
``generate.py``, ``cases.single_node_mutations(arch)`` lists the labels of the mutants
that change one node or initializer and had an effect.  ``bench/bisect_exports.py`` needs
no manifest: it takes the targets of the single-node operators from ``mutate.targets``
and writes each mutant with ``cases.mutant``.  Importing runs nothing.
"""
