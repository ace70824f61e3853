"""The relation search: what function maps B to A (or A to B), to rounding, and where.

Members (docs/relations.md lists them with how each is fitted): elementwise maps
(:mod:`.elementwise`: powers, exp/log, activations and their variants, casts), named
constants (:mod:`.constants`), and the relation → causes table (:mod:`.causes`);
:mod:`.search` turns a relation into a finding. Reorderings, scale/offset maps per slice
or row, clipping, grids and dropout are fitted by :mod:`perpendis.signatures`.
"""
