"""dynsweep.refine -- the outcomes of a refined map (grid.refine) at full
resolution from its trained pixels. numpy only; below both dynsweep.store (which
fills a map store's outcomes with it) and dynsweep.maps (which exports it as
dynsweep.maps.fill_refined)."""
import numpy as np


def fill_refined(raw, levels, axes):
    """The full-resolution outcomes of a refined map (grid.refine) from its trained
    pixels: raw is the stored outcome byte array (255 = not computed), levels and
    axes (the two refined axes' indices) as stored. From the coarsest cells down,
    every cell whose four corners are known and agree gives its class to the
    midpoints nobody trained (flagged with the inferred bit 0x40), which become the
    corners of the next level's cells. Returns the filled byte array."""
    out = np.array(raw, dtype=np.uint8, copy=True)
    if levels <= 0:
        return out
    if len(axes) < 2 or axes[1] < 0:  # one refined axis: intervals
        a = np.moveaxis(out, axes[0], -1)
        H = 1 << levels
        while H >= 2:
            h = H // 2
            c = a[..., ::H]
            k = c & 0x3F
            known = c != 255
            agree = known[..., :-1] & known[..., 1:] & (k[..., :-1] == k[..., 1:])
            v = a[..., h::H][..., :agree.shape[-1]]
            v[...] = np.where((v == 255) & agree, (k[..., :-1] | 0x40).astype(np.uint8), v)
            H = h
        return out
    a = np.moveaxis(out, (axes[0], axes[1]), (-2, -1))  # a view: filling it fills out
    H = 1 << levels
    while H >= 2:
        h = H // 2
        c = a[..., ::H, ::H]
        k = c & 0x3F
        known = c != 255
        agree = (known[..., :-1, :-1] & known[..., 1:, :-1] & known[..., :-1, 1:] & known[..., 1:, 1:]
                 & (k[..., :-1, :-1] == k[..., 1:, :-1]) & (k[..., :-1, :-1] == k[..., :-1, 1:])
                 & (k[..., :-1, :-1] == k[..., 1:, 1:]))
        val = (k[..., :-1, :-1] | 0x40).astype(np.uint8)
        ca, cb = agree.shape[-2], agree.shape[-1]
        # the five midpoints of cell (i, j): (i+h, j), (i, j+h), (i+h, j+h), (i+h, j+H), (i+H, j+h)
        for v in (a[..., h::H, ::H][..., :ca, :cb], a[..., ::H, h::H][..., :ca, :cb],
                  a[..., h::H, h::H][..., :ca, :cb], a[..., h::H, ::H][..., :ca, 1:cb + 1],
                  a[..., ::H, h::H][..., 1:ca + 1, :cb]):
            v[...] = np.where((v == 255) & agree, val, v)
        H = h
    return out
