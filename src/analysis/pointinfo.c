/* pointinfo.c -- one point's grid values as text, for `dynsweep show`'s
 * header: every axis of the sweep (model.type and other enum axes by name),
 * as `dynsweep ls` prints them (issue 24, item 6). */
#include <stdio.h>
#include <string.h>

#include "analysis_internal.h"
#include "dynsweep/analysis.h"
#include "dynsweep/util.h"

int ds_point_axes_text(const char *store_path, int64_t id, char *buf, size_t n) {
  an_table t;
  buf[0] = 0;
  int rc = an_open(store_path, &t);
  if (rc != DS_OK) return rc;
  int idx[DS_MAX_AXES + 2], na = 0;
  rc = an_axis_cols(&t, idx, &na);
  size_t w = 0;
  for (int a = 0; rc == DS_OK && a < na && w < n; a++) {
    char cell[128];
    an_cell_text(&t, idx[a], id, cell, sizeof cell, 0);
    w += (size_t)snprintf(buf + w, n - w, "%s%s %s", a ? " " : "", t.cols[idx[a]].name, cell);
  }
  an_close(&t);
  return rc;
}
