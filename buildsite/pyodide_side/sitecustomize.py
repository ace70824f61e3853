"""Written by perpendis's build.py, which left unused modules out of this standard library:
an import of one of them fails naming it, and says how to keep it, rather than as a plain
missing module (and is printed, in case the caller catches the error)."""

import sys


class LeftOutByBuild:
    names = None
    listing = __file__.rpartition("/")[0] + "/_perpendis_trimmed.txt"
    loader = __loader__

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if cls.names is None:
            cls.names = frozenset(cls.loader.get_data(cls.listing).decode().split())
        if name not in cls.names:
            return None
        if name.partition(".")[0] == "numpy":
            message = (f"No module named {name!r}: build.py left it out of the NumPy wheel served to this page, "
                       f"since no import or use of it was traced from perpendis; add {name.partition('.')[2]!r} "
                       "to NUMPY_KEEP in buildsite/trim.py and build again")
        elif name.partition(".")[0] == "perpendis":
            message = (f"No module named {name!r}: build.py left it out of the perpendis wheel served to "
                       "this page, since no import reaches it from the modules the page's scripts call; "
                       "import it from one of those modules (not by a name built at run time) and build again")
        else:
            message = (f"No module named {name!r}: build.py left it out of this site's Python standard "
                       "library, since no import of it was traced; add it to STDLIB_KEEP in buildsite/trim.py "
                       "and build again")
        print(f"perpendis: {message}", file=sys.stderr)
        raise ModuleNotFoundError(message, name=name)


sys.meta_path.append(LeftOutByBuild)
