"""seg_files.py [--listed] STORE -- the segment files of a format-5 store (docs/store.md,
"Segments"), for tests/durability.sh: prints one line
  <listed> <retired> <garbage> <garbage merges> <garbage summary blocks> <garbage blocks>
(--listed: the names of the listed segments, one a line, largest first)
counting this store's files in its segment directory that /series lists,
that it retired, and the others (left by a kill during a publish: new records
written, k = 0, or a merge, k >= 1), then the block files (blocks.c: <uuid>-sum|idx|axv-
<gen>-<b>.h5) that no dataset lists or retired: of /summary, and of all three. Prints
"0 0 0 0 0 0" for older formats."""
import os
import re
import sys

import h5py


def main():
    listed_only = sys.argv[1] == "--listed"
    path = sys.argv[-1]
    with h5py.File(path, "r") as f:
        if int(f.attrs["format_version"]) < 5:
            print("0 0 0 0 0 0")
            return 0
        g = f["series"]
        segdir = g.attrs["segment_dir"]
        segdir = segdir.decode() if isinstance(segdir, bytes) else str(segdir)
        uuid = f.attrs["store_uuid"]
        uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        segs = g.attrs.get("segments", [])
        listed = {(int(x[0]), int(x[1])) for x in segs}
        if listed_only:
            for x in sorted(segs, key=lambda x: -int(x[3])):
                print("%s-%d-%d.h5" % (uuid, int(x[0]), int(x[1])))
            return 0
        retired = {(int(x[0]), int(x[1])) for x in g.attrs.get("retired", [])}
        blocks = set()  # (tag, gen, b) listed or retired
        for dname, tag in (("summary", "sum"), ("series/index", "idx"), ("grid/axis_values", "axv")):
            if dname in f and "block_rows" in f[dname].attrs:
                a = f[dname].attrs
                blocks |= {(tag, int(x[0]), b) for b, x in enumerate(a.get("blocks", []))}
                blocks |= {(tag, int(x[1]), int(x[0])) for x in a.get("retired", [])}
    d = os.path.join(os.path.dirname(os.path.abspath(path)), segdir)
    n = [0, 0, 0, 0, 0, 0]
    for name in os.listdir(d) if os.path.isdir(d) else []:
        m = re.fullmatch(re.escape(uuid) + r"-(sum|idx|axv)-(\d+)-(\d+)\.h5", name)
        if m:
            if (m.group(1), int(m.group(2)), int(m.group(3))) not in blocks:
                n[4] += m.group(1) == "sum"
                n[5] += 1
            continue
        m = re.fullmatch(re.escape(uuid) + r"-(\d+)-(\d+)\.h5", name)
        if not m:
            continue
        key = (int(m.group(1)), int(m.group(2)))
        if key in listed:
            n[0] += 1
        elif key in retired:
            n[1] += 1
        else:
            n[2] += 1
            n[3] += key[1] >= 1
    print(*n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
