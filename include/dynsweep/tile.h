/* tile.h -- training the points of a map tile together (issue 13). */
#ifndef DYNSWEEP_TILE_H
#define DYNSWEEP_TILE_H
#include "dynsweep/config.h"
#include "dynsweep/map.h"
int ds_tile_supported(const ds_point_cfg *c, char *why, int whylen);
int ds_tile_train(const ds_sweep *sw, const ds_point *pts, int npts, ds_map_rec *out);
#endif
