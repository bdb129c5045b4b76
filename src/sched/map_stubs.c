/* TEMPORARY stand-ins until the map store and tile kernel branches merge. */
#include <stdio.h>
#include "dynsweep/store.h"
#include "dynsweep/tile.h"
#include "dynsweep/util.h"
int ds_tile_supported(const ds_point_cfg *c, char *why, int whylen) { (void)c; snprintf(why, whylen, "stub"); return 0; }
int ds_tile_train(const ds_sweep *sw, const ds_point *pts, int npts, ds_map_rec *out) { (void)sw; (void)pts; (void)npts; (void)out; return DS_EINTERNAL; }
