"""Which interpreter and packages dynsweep's Python side needs, and a clear error
when they are missing (instead of a bare ModuleNotFoundError)."""
import importlib
import os
import sys

#: Debian package of each Python module dynsweep uses.
DEBIAN_PACKAGES = {"h5py": "python3-h5py", "numpy": "python3-numpy", "yaml": "python3-yaml",
                   "pandas": "python3-pandas", "xarray": "python3-xarray"}
CORE = ("h5py", "numpy")
APT_LINE = "apt-get install python3-h5py python3-numpy python3-yaml python3-pandas python3-xarray"


class MissingDependency(ImportError):
    """A module dynsweep needs cannot be imported by this interpreter."""


def message(module, err, what="dynsweep"):
    exe = sys.executable or "(unknown)"
    if sys.prefix != sys.base_prefix:
        why = ("this Python is a virtual environment (%s) that does not see Debian's python3-* "
               "packages: run /usr/bin/python3, or make the venv with --system-site-packages"
               % sys.prefix)
    elif os.path.realpath(exe) != os.path.realpath("/usr/bin/python3"):
        why = ("this Python is not Debian's interpreter (a pyenv, conda, venv or self-built Python "
               "does not see Debian's python3-* packages): run it with /usr/bin/python3")
    elif sys.flags.no_site:
        why = "site-packages are off (python3 -S or -I): run /usr/bin/python3 without -S/-I"
    else:
        why = "install the packages (as root)"
    if os.path.realpath(exe) != os.path.realpath("/usr/bin/python3") or sys.prefix != sys.base_prefix:
        # outside Debian's interpreter the package and its dependencies also come from pip
        why += ("; or, in this interpreter, from the dynsweep source tree: "
                "pip install './python[core,frames]'")
    return (
        "%s cannot import %s (%s: %s) in this interpreter: %s (Python %d.%d).\n"
        "dynsweep's Python package needs Debian's /usr/bin/python3 with python3-h5py and "
        "python3-numpy (python3-yaml to decode enum axes; python3-pandas and python3-xarray "
        "for summary(), series() and to_xarray()).\n"
        "Fix: %s.\nDebian packages: %s"
        % (what, module, type(err).__name__, err, exe, sys.version_info[0],
           sys.version_info[1], why, APT_LINE))


def require(module, what="dynsweep"):
    """import module, or raise MissingDependency with the message above."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependency(message(module, e, what), name=module) from None
