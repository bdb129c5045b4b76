/* sweep.c -- the sweep file: walks the YAML tree into ds_sweep (base point
 * configuration + grid axes), checks required keys and cross-field
 * constraints on every grid point, computes the canonical hash, and expands
 * point ids (combo * replicas + replica, last axis fastest).
 *
 * This file holds the top level and the entry points; the parts live in
 * sweep_sections.c (name, seed, file names, option sections, overrides),
 * sweep_grid.c (grid axes, map sweeps, point expansion), sweep_check.c
 * (cross-field checks) and sweep_err.c (messages), with sweep_internal.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/util.h"
#include "sweep_internal.h"

static const char *const sw_top_keys[] = {"name",      "seed",  "grid",  "model", "data",
                                          "loss",      "optimizer", "train", "record",
                                          "overrides", "map"};

/* ---- top level ----------------------------------------------------------- */

static int sw_walk(sw_ctx *x, const ds_yn *root) {
  if (!root)
    return sw_err(x, 1, 1, "empty sweep file: expected a map with at least 'name:' and 'loss: "
                           "{reduction: ...}'");
  if (root->kind != DS_YN_MAP)
    return sw_err(x, root->line, root->col,
                  "expected a map of sweep settings (name:, grid:, model:, ...) at top level, got %s",
                  ds_yaml_kind_name(root));
  for (int i = 0; i < root->n; i++) {
    const ds_yn *k = root->key[i], *v = root->item[i];
    int sec = -1;
    for (int j = 0; j < 6; j++)
      if (!strcmp(k->str, sw_sections[j])) sec = j;
    if (sec >= 0) {
      if (sec == 2) x->have_loss = 1, x->lline = k->line, x->lcol = k->col;
      x->secline[sec] = k->line;
      x->seccol[sec] = k->col;
      DS_TRY(sw_parse_section(x, sw_sections[sec], v));
    } else if (!strcmp(k->str, "name")) DS_TRY(sw_parse_name(x, v));
    else if (!strcmp(k->str, "seed")) DS_TRY(sw_parse_seed(x, v));
    else if (!strcmp(k->str, "grid")) DS_TRY(sw_parse_grid(x, k, v));
    else if (strchr(k->str, '.') != strrchr(k->str, '.') && ds_opt_find(k->str))
      return sw_err(x, k->line, k->col,
                    "unknown key '%s' at top level: write options as nested maps (%.*s: then each "
                    "further part indented under the one before), or put the path under grid: to "
                    "sweep it", k->str, (int)(strchr(k->str, '.') - k->str), k->str);
    else if (strchr(k->str, '.') && ds_opt_find(k->str))
      return sw_err(x, k->line, k->col,
                    "unknown key '%s' at top level: write options nested (%.*s: then %s: indented "
                    "under it), or put the path under grid: to sweep it", k->str,
                    (int)(strchr(k->str, '.') - k->str), k->str, strchr(k->str, '.') + 1);
    else if (!strcmp(k->str, "map")) DS_TRY(sw_parse_mapsec(x, v));
    else return sw_unknown_key(x, k, "the top level", sw_top_keys, 11, NULL);
  }
  return DS_OK;
}

static int sw_required(sw_ctx *x) {
  if (!x->have_name)
    return sw_err(x, 1, 1, "missing required key 'name' at top level (e.g. name: my-sweep)");
  const ds_option *red = ds_opt_find("loss.reduction");
  int ri = ds_opt_index(red);
  if (!x->set[ri] && x->axis_of[ri] < 0)
    return sw_err(x, x->have_loss ? x->lline : 1, x->have_loss ? x->lcol : 1,
                  "loss.reduction is required and must be stated explicitly: add 'reduction: "
                  "<choice>' under loss:, one of %s", ds_reduction_help);
  return DS_OK;
}

/* ---- hash ---------------------------------------------------------------- */

static uint64_t sw_hash_line(uint64_t h, const char *k, const char *v) {
  h = ds_fnv1a(k, strlen(k), h);
  h = ds_fnv1a("=", 1, h);
  h = ds_fnv1a(v, strlen(v), h);
  return ds_fnv1a("\n", 1, h);
}

/* FNV-1a over canonical "path=value" lines: the meaning, not the formatting. */
/* issue 26: the CNN's keys, hashed only when not at their default (as issue 4's) */
static int sw_cnn_key(const char *path) {
  static const char *const keys[] = {"model.kernel", "model.stride", "model.padding",
                                     "model.readout", "model.bias_scale", "model.image",
                                     "model.net", "model.pool", "model.pool_every",
                                     "model.pool_size", "model.hidden", "model.dropout",
                                     "model.overparam", "model.dag_drop",
                                     "model.dag_readout_drop"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!strcmp(path, keys[i])) return 1;
  /* issue 26's data keys, likewise */
  return !strcmp(path, "data.cifar100_labels") || !strcmp(path, "data.standardize_channels");
}

static uint64_t sw_hash(const ds_sweep *s) {
  char buf[4096];
  uint64_t h = ds_fnv1a("dynsweep-sweep-v1\n", 18, 0);
  h = sw_hash_line(h, "name", s->name);
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->seed);
  h = sw_hash_line(h, "seed", buf);
  snprintf(buf, sizeof buf, "%d", s->replicas);
  h = sw_hash_line(h, "replicas", buf);
  ds_point_cfg def;
  ds_opt_defaults(&def);
  for (int i = 0; i < ds_noptions; i++) {
    const ds_option *o = &ds_options[i];
    if (s->rank_auto && !strcmp(o->path, "data.rank")) snprintf(buf, sizeof buf, "auto");
    else ds_opt_format_cfg(o, &s->base, buf, sizeof buf);
    if (!strncmp(o->path, "record.spectra.", 15) || !strcmp(o->path, "train.ranks_per_point") ||
        !strcmp(o->path, "train.distributed") || !strcmp(o->path, "model.gain") ||
        !strcmp(o->path, "model.init_offset") || !strcmp(o->path, "optimizer.lr_in") ||
        !strcmp(o->path, "optimizer.lr_units") ||
        !strcmp(o->path, "optimizer.lr_out") || sw_cnn_key(o->path)) {
      /* added with issue 4: hashed only when not at its default, so sweeps that
       * do not use record.spectra keep the hash they had before */
      char dbuf[4096];
      ds_opt_format_cfg(o, &def, dbuf, sizeof dbuf);
      if (!strcmp(buf, dbuf)) continue;
    }
    h = sw_hash_line(h, o->path, buf);
  }
  if (s->map) { /* issue 13: only map sweeps hash these, so other hashes stay */
    snprintf(buf, sizeof buf, "tile %lld refine %d axes %d %d", (long long)s->map_tile,
             s->refine_levels, s->refine_axes[0], s->refine_axes[1]);
    h = sw_hash_line(h, "map", buf);
    if (s->map_early_stop) h = sw_hash_line(h, "map.early_stop", "true"); /* only when set */
  }
  for (int a = 0; a < s->naxes; a++) {
    h = ds_fnv1a("axis ", 5, h);
    h = ds_fnv1a(s->axes[a].path, strlen(s->axes[a].path), h);
    h = ds_fnv1a("=", 1, h);
    for (int i = 0; i < s->axes[a].nvals; i++) {
      if (i) h = ds_fnv1a(",", 1, h);
      h = ds_fnv1a(s->axes[a].text[i], strlen(s->axes[a].text[i]), h);
    }
    h = ds_fnv1a("\n", 1, h);
  }
  return h;
}

/* ---- entry points -------------------------------------------------------- */

void ds_sweep_free(ds_sweep *s) {
  if (!s) return;
  for (int a = 0; s->axes && a < DS_MAX_AXES; a++) {
    ds_axis *ax = &s->axes[a];
    for (int i = 0; ax->text && i < ax->nvals; i++) free(ax->text[i]);
    free(ax->text);
    free(ax->val);
  }
  free(s->axes);
  free(s->path);
  free(s->text);
  memset(s, 0, sizeof *s);
}

static int sw_build(sw_ctx *x, const ds_yn *root) {
  ds_sweep *s = x->s;
  DS_TRY(sw_walk(x, root));
  DS_TRY(sw_required(x));
  DS_TRY(sw_check_lists(x));
  x->raw_base = s->base;
  DS_TRY(sw_base_file_data(x));
  int ri = ds_opt_index(ds_opt_find("data.rank"));
  if (!x->set[ri]) s->rank_auto = x->axis_of[ri] < 0;
  sw_derive(s, &s->base);
  if (!x->set[ri])
    s->base.data.rank = s->base.data.d_in < s->base.data.d_out ? s->base.data.d_in : s->base.data.d_out;
  if (s->refine_levels > 0) s->map = 1; /* grid.refine makes a map sweep */
  DS_TRY(sw_check_points(x));
  s->hash = sw_hash(s);
  return DS_OK;
}

int ds_sweep_parse(const char *path, const char *text, ds_sweep *out) {
  return ds_sweep_parse_flags(path, text, 0, out);
}

int ds_sweep_parse_flags(const char *path, const char *text, int flags, ds_sweep *out) {
  ds_yn *root = NULL;
  memset(out, 0, sizeof *out);
  sw_ctx *x = ds_calloc(1, sizeof *x); /* large (file names, probe cache): not on the stack */
  if (!x) return DS_ENOMEM;
  for (int i = 0; i < SW_MAX_OPTS; i++) x->axis_of[i] = -1;
  x->flags = flags;
  sw_basedir(x, path);
  x->file = path;
  x->s = out;
  out->replicas = 1;
  ds_opt_defaults(&out->base);
  int rc = DS_ENOMEM;
  if ((out->path = ds_strdup(path)) && (out->text = ds_strdup(text))) {
    rc = ds_yaml_load(path, text, &root);
    if (rc == DS_OK) rc = sw_overrides(x, root);
    if (rc == DS_OK) rc = sw_build(x, root);
  }
  ds_yaml_free(root);
  for (int a = 0; a < DS_MAX_AXES; a++) {
    free(x->vline[a]);
    free(x->vcol[a]);
  }
  free(x);
  if (rc != DS_OK) ds_sweep_free(out);
  return rc;
}

/* ---- --set KEY=VALUE ------------------------------------------------------ */

/* KEY of a --set argument: letters, digits, '_' and '.'; VALUE one line. */
static int sw_set_check(const char *set, size_t *klen) {
  const char *eq = strchr(set, '=');
  if (!eq || eq == set)
    return ds_fail(DS_EINPUT, "--set %s: expected KEY=VALUE, e.g. --set optimizer.lr=0.3 or --set "
                   "'grid.lr={start: 0.1, stop: 1, num: 64}'", set);
  for (const char *c = set; c < eq; c++)
    if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.')
      return ds_fail(DS_EINPUT, "--set %s: KEY '%.*s' is not an option path (letters, digits, '_' "
                     "and '.', e.g. optimizer.lr or grid.lr)", set, (int)(eq - set), set);
  if (strpbrk(eq + 1, "\n\r"))
    return ds_fail(DS_EINPUT, "--set %s: VALUE must be one line (a YAML scalar or flow value such "
                   "as [1, 2] or {start: 1, stop: 2, num: 3})", set);
  *klen = (size_t)(eq - set);
  return DS_OK;
}

/* A message "PATH:LINE:COL: msg" about an appended --set line becomes
 * "--set KEY=VALUE: msg" (col counted within VALUE when it points there). */
static void sw_set_message(const char *path, const int *line_of, int nset, char *const *sets) {
  const char *msg = ds_errmsg();
  size_t pl = strlen(path);
  int line = 0, col = 0, used = 0;
  if (strncmp(msg, path, pl) || sscanf(msg + pl, ":%d:%d: %n", &line, &col, &used) < 2 || !used)
    return;
  int i = 0;
  while (i < nset && line_of[i] != line) i++;
  if (i == nset) return;
  char rest[2048];
  const char *r = msg + pl + used;
  if (!strncmp(r, "overrides: ", 11)) r += 11;
  snprintf(rest, sizeof rest, "%s", r);
  size_t klen = strcspn(sets[i], "=");
  int vcol = col - (int)(klen + 4); /* "  KEY: " */
  if (vcol >= 1)
    ds_fail(DS_EINPUT, "--set %s: %s (at character %d of the value)", sets[i], rest, vcol);
  else ds_fail(DS_EINPUT, "--set %s: %s", sets[i], rest);
}

int ds_sweep_parse_set(const char *path, const char *text, int nset, char *const *sets,
                       ds_sweep *out) {
  memset(out, 0, sizeof *out);
  if (nset <= 0) return ds_sweep_parse(path, text, out);
  size_t need = strlen(text) + 128, klen;
  for (int i = 0; i < nset; i++) {
    DS_TRY(sw_set_check(sets[i], &klen));
    need += strlen(sets[i]) + 8;
  }
  ds_yn *root = NULL;
  DS_TRY(ds_yaml_load(path, text, &root));
  int has = root && root->kind == DS_YN_MAP && ds_yaml_get(root, "overrides", NULL);
  int at = has ? ds_yaml_get(root, "overrides", NULL)->line : 0;
  ds_yaml_free(root);
  if (has)
    return ds_fail(DS_EINPUT, "%s:%d: the sweep already has an overrides: map (from an earlier "
                   "--set?); add KEY: VALUE lines to it instead of --set", path, at);
  char *all = ds_calloc(need, 1);
  if (!all) return DS_ENOMEM;
  size_t n = strlen(text);
  memcpy(all, text, n);
  if (n && text[n - 1] != '\n') all[n++] = '\n';
  int first = 2; /* line of the first --set entry */
  for (size_t q = 0; q < n; q++) first += all[q] == '\n';
  n += (size_t)snprintf(all + n, need - n, "overrides:  # dynsweep --set\n");
  int *line_of = ds_calloc((size_t)nset, sizeof *line_of), line = first; /* set -> its line */
  if (!line_of) {
    free(all);
    return DS_ENOMEM;
  }
  for (int i = 0; i < nset; i++) {
    sw_set_check(sets[i], &klen);
    int later = 0; /* a later --set of the same KEY wins */
    for (int j = i + 1; j < nset && !later; j++)
      later = strcspn(sets[j], "=") == klen && !strncmp(sets[i], sets[j], klen);
    line_of[i] = later ? 0 : line++;
    if (!later)
      n += (size_t)snprintf(all + n, need - n, "  %.*s: %s\n", (int)klen, sets[i], sets[i] + klen + 1);
  }
  int rc = ds_sweep_parse(path, all, out);
  if (rc == DS_EINPUT) sw_set_message(path, line_of, nset, sets);
  free(all);
  free(line_of);
  return rc;
}

int ds_sweep_load_set(const char *path, int nset, char *const *sets, ds_sweep *out) {
  char *text = NULL;
  memset(out, 0, sizeof *out);
  DS_TRY(ds_sweep_read(path, &text, NULL));
  int rc = ds_sweep_parse_set(path, text, nset, sets, out);
  free(text);
  return rc;
}

int ds_sweep_read(const char *path, char **text, size_t *len) {
  size_t n = 0;
  DS_TRY(ds_read_file(path, text, &n));
  const char *z = memchr(*text, 0, n);
  if (z) {
    int line = 1;
    size_t at = (size_t)(z - *text) + 1;
    for (const char *p = *text; p < z; p++) line += *p == '\n';
    free(*text);
    *text = NULL;
    return ds_fail(DS_EINPUT, "%s:%d: NUL byte at byte %zu: a sweep file is YAML text", path, line, at);
  }
  if (len) *len = n;
  return DS_OK;
}

int ds_sweep_load(const char *path, ds_sweep *out) {
  char *text = NULL;
  memset(out, 0, sizeof *out);
  DS_TRY(ds_sweep_read(path, &text, NULL));
  int rc = ds_sweep_parse(path, text, out);
  free(text);
  return rc;
}
