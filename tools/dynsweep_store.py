"""dynsweep_store -- the numpy reader of a dynsweep store, kept under this name for
scripts that do sys.path.insert(0, "tools"). The code is python/dynsweep/store.py
(package dynsweep, docs/analysis.md "Python"); this file makes `import
dynsweep_store` that same module object, so there is one implementation.
"""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_pkg = os.path.normpath(os.path.join(_here, os.pardir, "python"))
if _pkg not in sys.path:
    sys.path.insert(0, _pkg)  # the source tree's package first, not an installed copy

from dynsweep import store as _store  # noqa: E402

sys.modules[__name__] = _store
