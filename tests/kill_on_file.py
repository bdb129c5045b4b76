"""kill_on_file.py SID STORE DIR REGEX TIMEOUT_S -- a targeted SIGKILL for
tests/durability.sh: once STORE exists, waits for a file whose name matches
REGEX to appear in DIR (one that was not there when STORE was first seen: the
files a new store is created with do not count), then SIGKILLs every
process of the session SID at once (mpirun and its ranks: `start_bg` in
tests/lib.sh) and prints the file's name. Exits 1, killing nothing, if the
session ends or TIMEOUT_S passes first.

A random kill moment lands in a publish's block writes (a few ms of a
publish every 50 ms) only now and then, and on an unlucky seed not at all;
this lands one there on purpose, while the writer is between creating a new
block file and listing it in the store. It polls the directory (every
~0.2 ms) rather than using inotify, which Python's standard library lacks."""
import os
import re
import signal
import subprocess
import sys
import time


def session_pids(sid):
    """The live processes of session SID, as kill_session in tests/lib.sh finds them."""
    out = subprocess.run(["ps", "-o", "pid=,stat=", "-s", str(sid)], capture_output=True, text=True).stdout
    return [int(f[0]) for f in (line.split() for line in out.splitlines()) if len(f) == 2 and not f[1].startswith("Z")]


def main():
    sid, store, d = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    pat, timeout = re.compile(sys.argv[4]), float(sys.argv[5])
    t_end = time.monotonic() + timeout
    seen = None
    pids, t_pids = [], 0.0
    while time.monotonic() < t_end:
        now = time.monotonic()
        if now - t_pids > 0.05:  # ranks start after mpirun: refresh the list
            pids, t_pids = session_pids(sid), now
            if not pids:
                return 1
        names = None
        if seen is not None or os.path.exists(store):
            try:
                names = [n for n in os.listdir(d) if pat.fullmatch(n)]
            except FileNotFoundError:
                pass
        if names is not None:
            if seen is None:
                seen = set(names)
            else:
                new = [n for n in names if n not in seen]
                if new:
                    for p in pids:
                        try:
                            os.kill(p, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    print(new[0])
                    return 0
        time.sleep(0.0002)
    return 1


if __name__ == "__main__":
    sys.exit(main())
