"""The relation grammar: what map T gives A = T(B) (or B = T(A)), to rounding, and where.

One table (:mod:`.grammar`, ``docs/relations.md`` in prose) lists the members in the order
they are tried and runs them.  Every member reads one sampled view of the compared pair
(:mod:`.pair`) and judges by one rounding model (:mod:`.rounding_model`): reorderings
(:mod:`.transpose`, :mod:`.reorder`), :mod:`.dropout`, :mod:`.clip`, parameter-free maps
(:mod:`.elementwise` fitted, :mod:`.elementwise_finding` stated, with named
:mod:`.constants`; :mod:`.normalise`, :mod:`.rotation`), per-row scales about a centre
(:mod:`.centred`), scale and offset maps globally, per slice or per row (:mod:`.affine`),
input-independent offsets (:mod:`.invariant`), grids (:mod:`.grid`) and the precision
fingerprint (:mod:`.precision`).  :mod:`.region` says where a relation holds, and every
finding's causes come from one table (:mod:`.causes`).
"""
