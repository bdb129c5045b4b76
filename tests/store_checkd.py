"""store_checkd.py -- tests/store_check.py, tests/seg_files.py and
tests/store_diff.py in one long-lived process, for tests/durability.sh: it
checks the store after each of its 50+ kills, and two Python start-ups (h5py,
numpy) a kill cost more than the checks themselves. Reads requests from stdin, one a line, the
arguments separated by tabs:
  check STORE [REFERENCE]   what `store_check.py STORE [REFERENCE]` does
  seg STORE                 what `seg_files.py STORE` does
  diff A B [OPTIONS]        what `store_diff.py A B [OPTIONS]` does
and answers each with that script's output (stdout and stderr; a traceback
if it raised) and then a line "=rc N", N its exit code. Every request opens
the files anew (the scripts open and close them per call)."""
import contextlib
import io
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seg_files  # noqa: E402
import store_check  # noqa: E402
import store_diff  # noqa: E402

MODS = {"check": store_check, "seg": seg_files, "diff": store_diff}


def serve():
    for line in sys.stdin:
        args = line.rstrip("\n").split("\t")
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                mod = MODS[args[0]]
                sys.argv = [mod.__file__] + args[1:]
                rc = mod.main() or 0
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
            except BaseException:  # noqa: B902 -- reported, the request fails
                traceback.print_exc()
                rc = 1
        sys.stdout.write(out.getvalue())
        sys.stdout.write("=rc %d\n" % rc)
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
