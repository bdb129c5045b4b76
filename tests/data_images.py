#!/usr/bin/env python3
"""data_images.py DIR -- SVHN-style .mat files written by scipy.io.savemat (an
independent MAT level 5 writer), for tests/data_images.sh: DIR/scipy_plain.mat
and DIR/scipy_z.mat (do_compression=True), 17 images with
X[r, c, ch, i] = (7 i + 3 ch + 5 r + c) mod 256 (uint8, [32, 32, 3, 17],
column-major as MATLAB stores it) and y[i] = i mod 10 with 0 stored as 10
(uint8, [17, 1]): the generator test_data_images checks the loader against.
Exit 77 without numpy/scipy."""
import os
import sys

try:
    import numpy as np
    import scipy.io
except ImportError as e:  # pragma: no cover
    print(f"skip: {e} (install python3-numpy python3-scipy)")
    sys.exit(77)


def main():
    out = sys.argv[1]
    n = 17
    r, c, ch, i = np.meshgrid(np.arange(32), np.arange(32), np.arange(3), np.arange(n), indexing="ij")
    X = ((7 * i + 3 * ch + 5 * r + c) % 256).astype(np.uint8)
    y = (np.arange(n) % 10).astype(np.uint8)
    y[y == 0] = 10
    y = y.reshape(n, 1)
    for name, z in (("scipy_plain.mat", False), ("scipy_z.mat", True)):
        scipy.io.savemat(os.path.join(out, name), {"X": X, "y": y}, format="5", do_compression=z)
    # the loader's CHW order is torchvision's transpose(X, (3, 2, 0, 1)) then a
    # transpose of each plane: out[i, ch, r, c] = X[r, c, ch, i]
    chw = np.transpose(X, (3, 2, 0, 1))
    assert chw[5, 2, 7, 11] == X[7, 11, 2, 5] == (7 * 5 + 3 * 2 + 5 * 7 + 11) % 256
    return 0


if __name__ == "__main__":
    sys.exit(main())
