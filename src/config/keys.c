/* keys.c -- `dynsweep keys`: every key a sweep file may hold, generated from
 * the option table (options.c) and the structural keys the parser reads
 * itself (sweep.c, sweep_sections.c, sweep_grid.c: name, seed, grid, map,
 * overrides), so the reference in docs/sweep-spec.md ("Key index") cannot
 * drift from the parser: a test regenerates that section and compares
 * (tests/keys.sh; issue 24, item 5). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config_internal.h"
#include "dynsweep/config.h"
#include "dynsweep/util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The keys the sweep parser reads itself (not options): path, type, range,
 * default, meaning. Keep in step with sw_top_keys and sw_parse_grid / _mapsec. */
static const struct {
  const char *path, *type, *range, *def, *doc;
} structural[] = {
    {"name", "string", "letters, digits, `-`, `_`, `.`; <= 127", "(required)", "sweep name"},
    {"seed", "uint64", "", "0", "keys every random stream with (seed, replica, stream)"},
    {"grid.PATH", "list or range", "", "none",
     "an axis: the values of option PATH (or its alias), a list or {start, stop, num, spacing}"},
    {"grid.replicas", "int", "1.." STR(DS_MAX_POINTS), "1", "independent repetitions of every grid point (seeds)"},
    {"grid.refine.levels", "int", "0.." STR(DS_MAX_REFINE_LEVELS), "(required with refine)",
     "map sweeps: adaptive refinement, how often a cell may split; only cells near the boundary "
     "are trained (docs/maps.md)"},
    {"grid.refine.axes", "list of 1 or 2 grid axes", "", "the axes with more than one value",
     "map sweeps: the refined axes"},
    {"map", "bool or map", "", "false",
     "true: a map sweep (outcomes only, in tiles, stored as arrays; docs/maps.md)"},
    {"map.tile", "int", "1..1048576", "auto", "map sweeps: points per tile"},
    {"map.early_stop", "bool", "", "false",
     "map sweeps: stop a point once its loss reaches 10^6 L_0 (faster; not the study's measure "
     "where the loss comes back; docs/maps.md)"},
    {"overrides", "map", "", "none", "option paths to values applied over the file (what --set writes)"},
};

static const char *type_name(ds_opt_type t) {
  switch (t) {
    case DS_OT_INT: return "int";
    case DS_OT_INT64: return "int64";
    case DS_OT_DOUBLE: return "double";
    case DS_OT_BOOL: return "bool";
    case DS_OT_ENUM: return "enum";
    case DS_OT_SERIES: return "series";
    case DS_OT_PATH: return "path";
    case DS_OT_INT_LIST: return "int list";
    case DS_OT_INT64_LIST: return "int64 list";
    case DS_OT_DOUBLE_LIST: return "double list";
  }
  return "?";
}

static void num(char *b, size_t n, double v) {
  if (v >= 1e15) snprintf(b, n, "%.0e", v);
  else snprintf(b, n, "%.10g", v);
}

/* "> 0", "1..64", ">= 1", "0..< 1", choices "a, b, c" */
static void range_text(const ds_option *o, char *b, size_t n) {
  b[0] = 0;
  if (o->choices) {
    size_t w = 0;
    for (int i = 0; o->choices[i] && w < n; i++)
      w += (size_t)snprintf(b + w, n - w, "%s`%s`", i ? ", " : "", o->choices[i]);
    return;
  }
  if (o->type == DS_OT_BOOL || o->type == DS_OT_PATH) return;
  char lo[32], hi[32];
  num(lo, sizeof lo, o->min);
  num(hi, sizeof hi, o->max);
  int has_lo = isfinite(o->min), has_hi = isfinite(o->max) && o->max < 1e18 && o->max < 2147483647.0;
  const char *each = ds_opt_is_list(o) ? "each " : "";
  if (has_lo && has_hi && !o->min_excl && !o->max_excl) snprintf(b, n, "%s%s..%s", each, lo, hi);
  else if (has_lo && has_hi)
    snprintf(b, n, "%s%s %s, %s %s", each, o->min_excl ? ">" : ">=", lo, o->max_excl ? "<" : "<=", hi);
  else if (has_lo) snprintf(b, n, "%s%s %s", each, o->min_excl ? ">" : ">=", lo);
  else if (has_hi) snprintf(b, n, "%s%s %s", each, o->max_excl ? "<" : "<=", hi);
}

void ds_keys_print(FILE *f, int markdown) {
  char range[512];
  if (markdown) {
    fputs("| key | grid alias | type | range | default | meaning |\n"
          "|-----|------------|------|-------|---------|---------|\n", f);
  }
  for (size_t i = 0; i < sizeof structural / sizeof *structural; i++) {
    if (markdown) {
      fprintf(f, "| `%s` | | %s | %s | %s | ", structural[i].path, structural[i].type,
              structural[i].range, structural[i].def);
      ds_print_md_cell(f, structural[i].doc);
      fputs(" |\n", f);
    } else {
      fprintf(f, "%s (%s%s%s; default %s)\n", structural[i].path, structural[i].type,
              structural[i].range[0] ? ", " : "", structural[i].range, structural[i].def);
      ds_print_wrapped(f, structural[i].doc);
    }
  }
  for (int i = 0; i < ds_noptions; i++) {
    const ds_option *o = &ds_options[i];
    range_text(o, range, sizeof range);
    if (markdown) {
      fprintf(f, "| `%s` | %s%s%s | %s | ", o->path, o->alias ? "`" : "", o->alias ? o->alias : "",
              o->alias ? "`" : "", type_name(o->type));
      ds_print_md_cell(f, range);
      fputs(" | ", f);
      ds_print_md_cell(f, o->def_text);
      fputs(" | ", f);
      ds_print_md_cell(f, o->doc);
      fputs(" |\n", f);
    } else {
      fprintf(f, "%s%s%s%s (%s; default %s)\n", o->path, o->alias ? " (alias " : "",
              o->alias ? o->alias : "", o->alias ? ")" : "", type_name(o->type), o->def_text);
      if (range[0]) {
        char r[600];
        snprintf(r, sizeof r, "range: %s", range);
        ds_print_wrapped(f, r);
      }
      ds_print_wrapped(f, o->doc);
    }
  }
}

/* "model.width 16 -> 32, optimizer.lr 0.01 -> 0.02": the options whose
 * canonical text differs between a and b (what a changed sweep file changed,
 * for the refusal of `run` on a store of another sweep). Returns how many. */
int ds_cfg_diff(const ds_point_cfg *a, const ds_point_cfg *b, char *buf, size_t n) {
  int count = 0;
  size_t w = 0;
  buf[0] = 0;
  for (int i = 0; i < ds_noptions; i++) {
    char va[256], vb[256];
    ds_opt_format_cfg(&ds_options[i], a, va, sizeof va);
    ds_opt_format_cfg(&ds_options[i], b, vb, sizeof vb);
    if (!strcmp(va, vb)) continue;
    if (w < n)
      w += (size_t)snprintf(buf + w, n - w, "%s%s %s -> %s", count ? ", " : "", ds_options[i].path, va, vb);
    count++;
  }
  return count;
}
