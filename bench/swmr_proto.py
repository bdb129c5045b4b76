#!/usr/bin/python3
"""swmr_proto.py -- can ordinary readers use a store written in place under
HDF5 1.10 SWMR, while it is written and after a kill -9 of the writer? (issue 14)

  /usr/bin/python3 bench/swmr_proto.py [--dir DIR]

A child process creates f.h5 (libver latest), an extendible chunked /value,
switches to SWMR write mode, appends and flushes 64 KiB blocks in a loop.
While it runs, and again after it was SIGKILLed, the parent tries the readers
the store promises: h5py.File(p, "r") (plain), h5py.File(p, "r", swmr=True),
`h5dump -H`, and after the kill also `h5clear -s` followed by h5dump/h5py.
Prints one line per attempt: ok / the first line of the error.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

WRITER = r'''
import sys, time, h5py, numpy as np
p = sys.argv[1]
f = h5py.File(p, "w", libver="latest")
d = f.create_dataset("value", shape=(0,), maxshape=(None,), chunks=(2048,), dtype="f8")
f.swmr_mode = True
open(p + ".ready", "w").close()
i = 0
while True:
    d.resize((d.shape[0] + 8192,))
    d[-8192:] = np.arange(i * 8192, (i + 1) * 8192, dtype="f8")
    d.flush()
    i += 1
    time.sleep(0.001)
'''


def attempt(what, fn):
    try:
        r = fn()
        print("  %-44s ok%s" % (what, (" (" + r + ")") if r else ""))
    except Exception as e:  # report, do not stop
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print("  %-44s FAILS: %s" % (what, msg[:150]))


def py_plain(p):
    with h5py.File(p, "r") as f:
        return "%d values" % f["value"].shape[0]


def py_swmr(p):
    with h5py.File(p, "r", libver="latest", swmr=True) as f:
        return "%d values" % f["value"].shape[0]


def dump(p):
    r = subprocess.run(["h5dump", "-H", p], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("h5dump exit %d: %s" % (r.returncode, (r.stderr or r.stdout).strip().splitlines()[-1:]))
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="ds-swmr.")
    p = os.path.join(d, "f.h5")
    try:
        w = subprocess.Popen([sys.executable, "-c", WRITER, p])
        while not os.path.exists(p + ".ready"):
            time.sleep(0.01)
        time.sleep(0.5)
        print("while the SWMR writer appends (HDF5_USE_FILE_LOCKING unset):")
        attempt("h5py.File(p, 'r')", lambda: py_plain(p))
        attempt("h5py.File(p, 'r', swmr=True)", lambda: py_swmr(p))
        attempt("h5dump -H", lambda: dump(p))
        os.environ["HDF5_USE_FILE_LOCKING"] = "FALSE"
        print("same, HDF5_USE_FILE_LOCKING=FALSE:")
        attempt("h5py.File(p, 'r')", lambda: py_plain(p))
        attempt("h5py.File(p, 'r', swmr=True)", lambda: py_swmr(p))
        attempt("h5dump -H", lambda: dump(p))
        del os.environ["HDF5_USE_FILE_LOCKING"]
        w.send_signal(signal.SIGKILL)
        w.wait()
        print("after kill -9 of the writer:")
        attempt("h5py.File(p, 'r')", lambda: py_plain(p))
        attempt("h5py.File(p, 'r', swmr=True)", lambda: py_swmr(p))
        attempt("h5dump -H", lambda: dump(p))
        r = subprocess.run(["h5clear", "-s", p], capture_output=True, text=True)
        print("  h5clear -s: exit %d" % r.returncode)
        attempt("h5py.File(p, 'r') after h5clear", lambda: py_plain(p))
        attempt("h5dump -H after h5clear", lambda: dump(p))
    finally:
        if not a.dir:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
