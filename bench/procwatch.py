#!/usr/bin/env python3
"""procwatch.py -- run a command and sample its process tree from /proc.

  procwatch.py OUT.json -- COMMAND ARGS...

Every 10 ms it reads /proc/PID/status and /proc/PID/stat of every descendant
of COMMAND and keeps, per process, the last VmHWM (peak resident set, kB;
monotonic, so the last sample before exit is the peak up to ~10 ms before
exit), the largest VmRSS seen, and the CPU seconds (utime + stime). MPI
ranks are named by OMPI_COMM_WORLD_RANK / PMIX_RANK from /proc/PID/environ.
Writes OUT.json with the command's wall seconds, its exit code and the per
process figures; exits with the command's exit code. Standard library only.
"""
import json
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()
        kids.setdefault(int(rest[1]), []).append(int(d))
    return kids


def descendants(root):
    kids, out, todo = children_map(), [], [root]
    while todo:
        p = todo.pop()
        for c in kids.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def sample(pid, info):
    try:
        with open("/proc/%d/status" % pid) as f:
            st = f.read()
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return
    d = info.setdefault(pid, {"pid": pid, "rank": None, "comm": "", "vmhwm_kb": 0,
                              "vmrss_max_kb": 0, "cpu_s": 0.0})
    for line in st.splitlines():
        k, _, v = line.partition(":")
        if k == "VmHWM":
            d["vmhwm_kb"] = max(d["vmhwm_kb"], int(v.split()[0]))
        elif k == "VmRSS":
            d["vmrss_max_kb"] = max(d["vmrss_max_kb"], int(v.split()[0]))
        elif k == "Name":
            d["comm"] = v.strip()
    rest = s[s.rindex(")") + 2:].split()
    d["cpu_s"] = (int(rest[11]) + int(rest[12])) / TICK
    if d["rank"] is None:
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            for e in env:
                if e.startswith(b"OMPI_COMM_WORLD_RANK=") or e.startswith(b"PMIX_RANK="):
                    d["rank"] = int(e.split(b"=", 1)[1])
                    break
        except OSError:
            pass


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    out, cmd = sys.argv[1], sys.argv[3:]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd)
    info = {}
    while p.poll() is None:
        for d in descendants(p.pid):
            sample(d, info)
        time.sleep(0.01)
    wall = time.monotonic() - t0
    procs = [v for v in info.values() if v["rank"] is not None]
    with open(out, "w") as f:
        json.dump({"cmd": cmd, "wall_s": wall, "rc": p.returncode,
                   "ranks": sorted(procs, key=lambda v: v["rank"])}, f, indent=1)
    sys.exit(p.returncode)


if __name__ == "__main__":
    main()
