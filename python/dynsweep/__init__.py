"""dynsweep -- read a dynsweep HDF5 store (docs/store.md) from Python.

Needs Debian's /usr/bin/python3 with python3-h5py and python3-numpy
(python3-yaml to decode enum/bool axes; python3-pandas and python3-xarray for
the DataFrame / Dataset methods). Importing it under an interpreter that lacks
them raises dynsweep.MissingDependency (an ImportError) that says which
interpreter is running and the apt-get line. Install: docs/analysis.md, "Python".

    import dynsweep
    st = dynsweep.open("sweep.h5")
    df = st.summary()              # pandas DataFrame, one row per point
    ds = st.to_xarray()            # xarray Dataset over the grid axes (+ replica)
    loss = st.series("loss")       # tidy DataFrame: point, step, value
    st.raw                         # the numpy reader (dynsweep.store.Store)
"""
from ._deps import MissingDependency, require
from ._deps import CORE as _CORE

for _m in _CORE:
    require(_m)

from .store import (KNOWN_FORMAT_VERSIONS, STATUS_NAMES, STATUS_CODES, Axis,  # noqa: E402
                    StoreError, read_points)
from .store import Store as ArrayStore  # noqa: E402
from .frames import OUTCOME_NAMES, Store, open  # noqa: E402

__version__ = "0.1"
__all__ = ["open", "Store", "ArrayStore", "StoreError", "MissingDependency", "read_points",
           "Axis", "STATUS_NAMES", "STATUS_CODES", "OUTCOME_NAMES", "KNOWN_FORMAT_VERSIONS",
           "require"]
