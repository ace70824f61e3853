"""Assemble the static site in ``dist/``: the page, the app scripts, and a trimmed Pyodide.

The page must work with no server of ours beyond static files and no third-party origin,
so everything Pyodide needs is copied into ``dist/pyodide/``: the core runtime from the
pinned npm package, the pinned wheels named in that package's ``pyodide-lock.json``
(each accepted only if its sha256 equals the lock's), the project's own wheel built from
``py/``, and a lock listing exactly those files, so ``loadPackage`` can fetch and verify them.
``sw.js`` at the root (from ``app/sw.js``) lists every file with its hash, so after one visit
the page starts with no network. Every file worth it gets a Brotli and a gzip'd copy beside
it (``name.br``, ``name.gz``), which a host may send in its place with ``Content-Encoding: br``
or ``gzip`` (``scripts/serve.py`` does; README, "Hosting"); a host that ignores them serves the
plain files, and the page works the same, at full size.

What the page never uses is left out, each artefact derived from bytes whose hash was
checked first (the wheels against Pyodide's lock, the standard library against the release
hash pinned here): standard-library modules that neither Pyodide's start, NumPy's import
nor any module of perpendis imports (traced by ``scripts/trace_imports.mjs``), the
standard library's and NumPy's ``.py`` sources where bytecode is shipped (perpendis keeps
its sources, for readable tracebacks), NumPy's tests and its C headers, stubs and static
libraries, NumPy's subpackages that nothing imports or uses as ``np.X`` (``f2py``, ``fft``,
``polynomial``, ``testing``...) and the extension modules nothing loads (``linalg.lapack_lite``,
the test modules), and the modules of perpendis that no import reaches from
those the page's scripts call (``pyimport("perpendis....")``): the command line, the pytest
plugin and the like. An import of a left-out module fails naming it (``sitecustomize`` in
the trimmed standard library); ``STDLIB_KEEP`` and ``NUMPY_KEEP`` (``buildsite/trim.py``)
list what to keep besides the trace. The core's worker gets ``app/boot.js`` written into it
rather than importing it, and the page's modules are bundled into one ``app/page.js`` (by
esbuild, ``package.json``).

One module a job: ``runtime`` (the core files and the order of the steps), ``wheels`` (the
pinned wheels, checked against the lock, and the project's), ``imports`` (the one reader of
a package's imports, shared with the trace and tests/test_structure.py), ``trim`` (what is
left out), ``pyodide_runs`` (the runs of Pyodide under Node.js: bytecode, the trace),
``zips``, ``page`` (inlined scripts, the bundle, the service worker's list), ``compress``,
and ``assemble`` (the whole build and its command line). The Python that runs inside
Pyodide is in ``pyodide_side/``, as real files the ``scripts/*.mjs`` runners import.

Usage: ``python build.py [--pyodide-dist DIR] [--out DIR]``. Downloads are cached in
``.cache/`` so a second build makes no network call.
"""
