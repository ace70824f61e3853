"""The Python the build runs inside Pyodide (by the runners in scripts/*.mjs): real files,
so ruff and the tests read them like the rest of the build."""
