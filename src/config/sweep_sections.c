/* sweep_sections.c -- the sweep file's top-level scalars (name, seed), file
 * names resolved against the sweep file's directory, the option sections
 * (model:, data:, loss:, optimizer:, train:, record:) and the overrides map
 * (--set KEY=VALUE). Part of sweep.c's parser (sweep_internal.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/util.h"
#include "sweep_internal.h"

/* ---- top-level scalars --------------------------------------------------- */

int sw_parse_name(sw_ctx *x, const ds_yn *v) {
  if (v->kind != DS_YN_SCALAR || !v->str[0] || ds_yaml_is_null(v))
    return sw_err(x, v->line, v->col, "name: expected a short name such as 'width-sweep', got %s%s%s",
                  v->kind != DS_YN_SCALAR ? ds_yaml_kind_name(v) : !v->str[0] ? "an empty value"
                                                                  : "the null value '",
                  v->kind == DS_YN_SCALAR && v->str[0] ? v->str : "",
                  v->kind == DS_YN_SCALAR && v->str[0] ? "'" : "");
  size_t n = strlen(v->str);
  if (n >= sizeof x->s->name)
    return sw_err(x, v->line, v->col, "name: too long (%zu characters, limit %zu)", n,
                  sizeof x->s->name - 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)v->str[i];
    if (!isalnum(c) && c != '-' && c != '_' && c != '.')
      return sw_err(x, v->line, v->col,
                    "name: use only letters, digits, '-', '_' and '.', got '%s'", v->str);
  }
  memcpy(x->s->name, v->str, n + 1);
  x->have_name = 1;
  return DS_OK;
}

int sw_parse_seed(sw_ctx *x, const ds_yn *v) {
  const char *s = v->kind == DS_YN_SCALAR ? v->str : "";
  int ok = v->kind == DS_YN_SCALAR && s[0] && strspn(s, "0123456789") == strlen(s);
  char *end;
  errno = 0;
  unsigned long long u = ok ? strtoull(s, &end, 10) : 0;
  if (!ok || errno == ERANGE)
    return sw_err(x, v->line, v->col, "seed: expected an integer in 0..18446744073709551615, got %s%s%s",
                  v->kind == DS_YN_SCALAR ? "'" : "", v->kind == DS_YN_SCALAR ? s : ds_yaml_kind_name(v),
                  v->kind == DS_YN_SCALAR ? "'" : "");
  x->s->seed = (uint64_t)u;
  return DS_OK;
}

/* ---- file names --------------------------------------------------------- */

/* Appends the segments of p to out (an absolute path being built), dropping
 * empty and "." segments; ".." is kept (symlinks make dropping it wrong). */
static void sw_path_append(char *out, size_t n, const char *p) {
  while (*p) {
    while (*p == '/') p++;
    size_t len = strcspn(p, "/");
    if (len && !(len == 1 && p[0] == '.')) {
      size_t used = strlen(out);
      if (used + len + 2 > n) return; /* caller checks the length first */
      if (used == 0 || out[used - 1] != '/') out[used++] = '/';
      memcpy(out + used, p, len);
      out[used + len] = 0;
    }
    p += len;
  }
}

/* Absolute directory of the sweep file: relative names in it are resolved
 * against this directory, whatever the working directory of the run. */
void sw_basedir(sw_ctx *x, const char *path) {
  char dir[DS_MAX_PATH * 2] = "";
  const char *slash = strrchr(path, '/');
  if (path[0] != '/' && !getcwd(dir, sizeof dir)) snprintf(dir, sizeof dir, ".");
  if (slash) {
    char rel[DS_MAX_PATH * 2];
    size_t len = (size_t)(slash - path);
    if (len >= sizeof rel) len = sizeof rel - 1;
    memcpy(rel, path, len);
    rel[len] = 0;
    if (path[0] == '/') snprintf(dir, sizeof dir, "/");
    sw_path_append(dir, sizeof dir, rel);
  }
  if (!dir[0]) snprintf(dir, sizeof dir, "/");
  snprintf(x->basedir, sizeof x->basedir, "%s", dir);
}

/* A file name option: stored resolved against the sweep file's directory;
 * the file must exist and be readable (unless DS_SWEEP_NO_FILES). "" = unset. */
static int sw_parse_path(sw_ctx *x, const ds_option *o, const ds_yn *v) {
  if (v->kind != DS_YN_SCALAR)
    return sw_err(x, v->line, v->col, "%s: expected a file name, got %s", o->path, ds_yaml_kind_name(v));
  if (ds_yaml_is_null(v))
    return sw_err(x, v->line, v->col, "%s: expected a file name, got %s%s%s (null values are not "
                  "allowed; write \"\" for no file, or omit the key)", o->path,
                  v->str[0] ? "the null value '" : "an empty value", v->str, v->str[0] ? "'" : "");
  char *dst = (char *)&x->s->base + o->off;
  size_t n = strlen(v->str);
  if (n >= DS_MAX_PATH)
    return sw_err(x, v->line, v->col, "%s: file name too long (%zu characters, limit %d)", o->path, n,
                  DS_MAX_PATH - 1);
  snprintf(x->given[ds_opt_index(o)], DS_MAX_PATH, "%s", v->str);
  if (!n) {
    dst[0] = 0;
    return DS_OK;
  }
  char full[DS_MAX_PATH * 3] = "";
  if (v->str[0] == '/') snprintf(full, sizeof full, "/");
  else snprintf(full, sizeof full, "%s", x->basedir);
  if (strlen(full) + n + 2 > sizeof full || strlen(full) + n + 1 >= DS_MAX_PATH)
    return sw_err(x, v->line, v->col,
                  "%s: file name too long once resolved against '%s' (limit %d characters)", o->path,
                  x->basedir, DS_MAX_PATH - 1);
  sw_path_append(full, sizeof full, v->str);
  snprintf(dst, DS_MAX_PATH, "%s", full);
  for (int k = 0; k < DS_NFILE_OPTS; k++)
    if (!strcmp(ds_file_opts[k], o->path)) x->s->file_line[k] = v->line, x->s->file_col[k] = v->col;
  if (x->flags & DS_SWEEP_NO_FILES) return DS_OK;
  struct stat st; /* before opening: a FIFO would block, a device never end */
  /* issue 26: data.path / data.test_path may name a directory of CIFAR batch
   * files (the loaders refuse a directory for the other kinds) */
  int dir_ok = !strcmp(o->path, "data.path") || !strcmp(o->path, "data.test_path");
  if (stat(full, &st) == 0 && dir_ok && S_ISDIR(st.st_mode)) return DS_OK;
  if (stat(full, &st) == 0 && !S_ISREG(st.st_mode))
    return sw_err(x, v->line, v->col, "%s: '%s' is %s, not a regular file; give a data file", o->path,
                  full, S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)" : S_ISDIR(st.st_mode) ? "a directory"
                  : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a special file");
  FILE *f = fopen(full, "rb");
  if (!f) {
    int e = errno;
    if (v->str[0] == '/')
      return sw_err(x, v->line, v->col, "%s: cannot open '%s': %s", o->path, v->str, strerror(e));
    return sw_err(x, v->line, v->col, "%s: cannot open '%s': %s (relative names are resolved "
                  "against the sweep file's directory: looked for '%s')", o->path, v->str,
                  strerror(e), full);
  }
  fclose(f);
  return DS_OK;
}

/* Checks on a whole list beyond the range of each element. */
static int sw_list_checks(sw_ctx *x, const ds_option *o, const ds_yn *v) {
  const ds_point_cfg *b = &x->s->base;
  if (!strcmp(o->path, "optimizer.schedule_steps")) {
    for (int i = 1; i < v->n; i++)
      if (b->optimizer.schedule_steps[i] <= b->optimizer.schedule_steps[i - 1])
        return sw_err(x, v->item[i]->line, v->item[i]->col,
                      "optimizer.schedule_steps: steps must be strictly increasing, got %lld after %lld",
                      (long long)b->optimizer.schedule_steps[i],
                      (long long)b->optimizer.schedule_steps[i - 1]);
  } else if (!strcmp(o->path, "record.spectra.split")) {
    for (int i = 1; i < v->n; i++)
      if (b->record.spectra.split[i] <= b->record.spectra.split[i - 1])
        return sw_err(x, v->item[i]->line, v->item[i]->col,
                      "record.spectra.split: sizes must be strictly increasing, got %d after %d",
                      b->record.spectra.split[i], b->record.spectra.split[i - 1]);
  } else if (!strcmp(o->path, "data.classes")) {
    for (int i = 1; i < v->n; i++)
      for (int j = 0; j < i; j++)
        if (b->data.classes[i] == b->data.classes[j])
          return sw_err(x, v->item[i]->line, v->item[i]->col,
                        "data.classes: class %d is listed twice; list each class once",
                        b->data.classes[i]);
  }
  return DS_OK;
}

/* ---- option sections (model:, data:, ...) -------------------------------- */

/* The distinct next path components under prefix ("record" -> series, every,
 * ..., spectra), in table order: the keys a map at prefix may hold. */
static int sw_sub_keys(const char *prefix, const char **cands, char (*buf)[64], int cap) {
  size_t pl = strlen(prefix);
  int n = 0;
  for (int j = 0; j < ds_noptions && n < cap; j++) {
    const char *p = ds_options[j].path;
    if (strncmp(p, prefix, pl) || p[pl] != '.') continue;
    const char *k = p + pl + 1;
    size_t kl = strcspn(k, ".");
    if (kl >= 64) continue;
    int dup = 0;
    for (int i = 0; i < n && !dup; i++) dup = strlen(cands[i]) == kl && !strncmp(cands[i], k, kl);
    if (dup) continue;
    memcpy(buf[n], k, kl);
    buf[n][kl] = 0;
    cands[n] = buf[n];
    n++;
  }
  return n;
}

/* Options below path exist (path names a nested map such as record.spectra). */
static int sw_is_group(const char *path) {
  size_t pl = strlen(path);
  for (int j = 0; j < ds_noptions; j++)
    if (!strncmp(ds_options[j].path, path, pl) && ds_options[j].path[pl] == '.') return 1;
  return 0;
}

/* A diagnostic's cadence map (record.spectra.ntk: {every, per_decade, on_loss_rise}). */
static int sw_is_cadence(const char *path) {
  char p[200];
  snprintf(p, sizeof p, "%s.on_loss_rise", path);
  return ds_opt_find(p) != NULL;
}

/* A map of options at prefix: a section (model, ..., record) or a nested map
 * (record.spectra, record.spectra.ntk); nested maps recurse. */
static int sw_parse_map(sw_ctx *x, const char *prefix, const ds_yn *m) {
  int nested = strchr(prefix, '.') != NULL, cadence = sw_is_cadence(prefix);
  if (sw_is_null(m) && !cadence) /* as every other null (issue 24): never a silent default */
    return sw_err(x, m->line, m->col, "%s: expected a map of %s options, got %s%s%s (null values "
                  "are not allowed; omit %s: for the defaults, or write %s: {})", prefix, prefix,
                  m->str && m->str[0] ? "the null value '" : "an empty value",
                  m->str ? m->str : "", m->str && m->str[0] ? "'" : "", prefix, prefix);
  if (sw_is_null(m) || (m->kind == DS_YN_MAP && m->n == 0)) {
    if (cadence)
      return sw_err(x, m->line, m->col,
                    "%s: empty; give at least one of every, per_decade, on_loss_rise (e.g. {every: 10})",
                    prefix);
    return DS_OK;
  }
  if (m->kind != DS_YN_MAP) {
    const char *got = m->kind == DS_YN_SCALAR ? m->str : ds_yaml_kind_name(m);
    const char *q = m->kind == DS_YN_SCALAR ? "'" : "";
    if (cadence)
      return sw_err(x, m->line, m->col,
                    "%s: expected a map of when to compute it, such as {every: 10, per_decade: 5, "
                    "on_loss_rise: true}, got %s%s%s", prefix, q, got, q);
    if (nested)
      return sw_err(x, m->line, m->col, "%s: expected a map of %s options (key: value lines, e.g. "
                    "ntk: {every: 10}), got %s%s%s", prefix, prefix, q, got, q);
    return sw_err(x, m->line, m->col, "%s: expected a map of %s options (key: value lines), got %s",
                  prefix, prefix, ds_yaml_kind_name(m));
  }
  for (int i = 0; i < m->n; i++) {
    const ds_yn *k = m->key[i];
    char path[200];
    snprintf(path, sizeof path, "%s.%s", prefix, k->str);
    const ds_option *o = strchr(k->str, '.') ? NULL : ds_opt_find(path);
    if (o && strcmp(o->path, path) != 0) o = NULL; /* a grid alias is not a key */
    if (!o && !strchr(k->str, '.') && sw_is_group(path)) {
      DS_TRY(sw_parse_map(x, path, m->item[i]));
      continue;
    }
    if (!o) {
      const char *cands[SW_MAX_OPTS];
      char buf[SW_MAX_OPTS][64];
      int n = sw_sub_keys(prefix, cands, buf, SW_MAX_OPTS);
      if (strchr(k->str, '.') && ds_opt_find(path))
        return sw_err(x, k->line, k->col,
                      "unknown key '%s' in %s: keys cannot contain '.'; write each part of the path "
                      "as a nested map key, indented under the one before", k->str, prefix);
      return sw_unknown_key(x, k, prefix, cands, n, NULL);
    }
    int oi = ds_opt_index(o);
    if (o->type == DS_OT_PATH) {
      DS_TRY(sw_parse_path(x, o, m->item[i]));
    } else if (ds_opt_is_list(o)) {
      DS_TRY(ds_opt_parse_list(x->file, o, m->item[i], &x->s->base));
      DS_TRY(sw_list_checks(x, o, m->item[i]));
      x->listn[oi] = m->item[i]->n;
    } else {
      double v;
      DS_TRY(ds_opt_parse_scalar(x->file, o, m->item[i], &v));
      ds_opt_set(o, &x->s->base, v);
    }
    x->set[oi] = 1;
    x->sline[oi] = m->item[i]->line;
    x->scol[oi] = m->item[i]->col;
  }
  return DS_OK;
}

int sw_parse_section(sw_ctx *x, const char *sec, const ds_yn *m) {
  return sw_parse_map(x, sec, m);
}

/* ---- overrides (issue 13: --set KEY=VALUE) --------------------------------
 * A top-level map "overrides: {KEY: VALUE, ...}" is applied to the tree before
 * anything else is read, whatever its place in the file: KEY is an option's
 * dotted path (or grid alias: lr), name, seed, grid, grid.replicas or grid.AXIS;
 * VALUE replaces what the file gives there (an option set this way stops
 * being a grid axis; grid.AXIS replaces that axis or adds it). `dynsweep
 * plan/run --set KEY=VALUE` appends such a map to the sweep text
 * (ds_sweep_parse_set), so the text kept in a store says what ran. */

static ds_yn *sw_node(ds_yn_kind kind, const ds_yn *at, const char *str) {
  ds_yn *n = ds_calloc(1, sizeof *n);
  if (!n) return NULL;
  n->kind = kind;
  n->line = at->line;
  n->col = at->col;
  if (str && !(n->str = ds_strdup(str))) {
    free(n);
    return NULL;
  }
  return n;
}

/* Sets m[k] = v (replacing and freeing an old value), appending k if absent. */
static int sw_map_put(ds_yn *m, const char *k, ds_yn *v, const ds_yn *at) {
  int ki = -1;
  if (ds_yaml_get(m, k, &ki)) {
    ds_yaml_free(m->item[ki]);
    m->item[ki] = v;
    return DS_OK;
  }
  if (m->n == m->cap) {
    int cap = m->cap ? 2 * m->cap : 4;
    ds_yn **item = realloc(m->item, (size_t)cap * sizeof *item);
    if (!item) return DS_ENOMEM;
    m->item = item;
    ds_yn **key = realloc(m->key, (size_t)cap * sizeof *key);
    if (!key) return DS_ENOMEM;
    m->key = key;
    m->cap = cap;
  }
  if (!(m->key[m->n] = sw_node(DS_YN_SCALAR, at, k))) return DS_ENOMEM;
  m->item[m->n++] = v;
  return DS_OK;
}

static void sw_map_remove(ds_yn *m, int i) {
  ds_yaml_free(m->key[i]);
  ds_yaml_free(m->item[i]);
  memmove(m->key + i, m->key + i + 1, (size_t)(m->n - i - 1) * sizeof *m->key);
  memmove(m->item + i, m->item + i + 1, (size_t)(m->n - i - 1) * sizeof *m->item);
  m->n--;
}

/* The map at key k of m, made (or an empty value turned into one) if needed;
 * NULL if m[k] is something else. */
static ds_yn *sw_map_child(ds_yn *m, const char *k, const ds_yn *at) {
  ds_yn *c = ds_yaml_get(m, k, NULL);
  if (c && c->kind == DS_YN_MAP) return c;
  if (c && !sw_is_null(c)) return NULL;
  ds_yn *n = sw_node(DS_YN_MAP, at, NULL);
  if (!n || sw_map_put(m, k, n, at) != DS_OK) {
    free(n);
    return NULL;
  }
  return n;
}

/* The grid key of m naming option o (path or alias), or -1. */
static int sw_grid_key_of(const ds_yn *g, const ds_option *o) {
  for (int j = 0; g && g->kind == DS_YN_MAP && j < g->n; j++)
    if (strcmp(g->key[j]->str, "replicas") && ds_opt_find(g->key[j]->str) == o) return j;
  return -1;
}

static int sw_override(sw_ctx *x, ds_yn *root, const ds_yn *k, ds_yn *v) {
  const char *K = k->str;
  if (!strcmp(K, "name") || !strcmp(K, "seed") || !strcmp(K, "grid") || !strcmp(K, "map"))
    return sw_map_put(root, K, v, k);
  if (!strncmp(K, "map.", 4) || !strncmp(K, "grid.refine.", 12)) {
    int g = K[0] == 'g';
    ds_yn *m = g ? sw_map_child(root, "grid", k) : sw_map_child(root, "map", k);
    if (m && g) m = sw_map_child(m, "refine", k);
    if (!m) return sw_err(x, k->line, k->col, "overrides: %s: the file's %s is not a map", K,
                          g ? "grid.refine" : "map:");
    return sw_map_put(m, K + (g ? 12 : 4), v, k);
  }
  if (!strncmp(K, "grid.", 5)) {
    ds_yn *g = sw_map_child(root, "grid", k);
    if (!g) return sw_err(x, k->line, k->col, "overrides: %s: the file's grid: is not a map", K);
    if (!strcmp(K + 5, "replicas") || !strcmp(K + 5, "refine")) return sw_map_put(g, K + 5, v, k);
    const ds_option *o = ds_opt_find(K + 5);
    if (!o) {
      const char *cands[2 * SW_MAX_OPTS];
      int nc = 0;
      for (int j = 0; j < ds_noptions; j++) {
        if (ds_options[j].alias) cands[nc++] = ds_options[j].alias;
        if (ds_opt_is_scalar(&ds_options[j])) cands[nc++] = ds_options[j].path;
      }
      const char *sug = ds_suggest(K + 5, cands, nc);
      return sw_err(x, k->line, k->col, "overrides: unknown grid axis '%s'%s%s%s; an axis is the "
                    "dotted path of an option (grid.optimizer.lr) or an alias (grid.lr)", K + 5,
                    sug ? " (did you mean 'grid." : "", sug ? sug : "", sug ? "'?)" : "");
    }
    int j = sw_grid_key_of(g, o);
    return sw_map_put(g, j >= 0 ? g->key[j]->str : K + 5, v, k);
  }
  const ds_option *o = ds_opt_find(K);
  const char *path = o ? o->path : K;
  if (!o && !sw_is_group(K)) {
    const char *sug = ds_opt_suggest(K);
    return sw_err(x, k->line, k->col, "overrides: unknown option '%s'%s%s%s; give an option's dotted "
                  "path (optimizer.lr), name, seed, grid, grid.replicas or grid.AXIS", K,
                  sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
  }
  if (o) { /* an option given a value is no longer swept */
    ds_yn *g = ds_yaml_get(root, "grid", NULL);
    int j = sw_grid_key_of(g, o);
    if (j >= 0) sw_map_remove(g, j);
  }
  ds_yn *cur = root;
  char part[200];
  const char *p = path;
  for (const char *dot; (dot = strchr(p, '.')); p = dot + 1) {
    snprintf(part, sizeof part, "%.*s", (int)(dot - p), p);
    ds_yn *next = sw_map_child(cur, part, k);
    if (!next)
      return sw_err(x, k->line, k->col, "overrides: %s: '%.*s' in the file is not a map of options",
                    path, (int)(dot - path), path);
    cur = next;
  }
  return sw_map_put(cur, p, v, k);
}

int sw_overrides(sw_ctx *x, ds_yn *root) {
  int ki = -1;
  ds_yn *ov = root && root->kind == DS_YN_MAP ? ds_yaml_get(root, "overrides", &ki) : NULL;
  if (!ov) return DS_OK;
  if (ov->kind != DS_YN_MAP && !sw_is_null(ov))
    return sw_err(x, ov->line, ov->col, "overrides: expected a map of option paths to values, e.g. "
                  "{optimizer.lr: 0.3, grid.lr: [0.1, 0.2]}, got %s", ds_yaml_kind_name(ov));
  for (int i = 0; ov->kind == DS_YN_MAP && i < ov->n; i++) {
    ds_yn *v = ov->item[i];
    ov->item[i] = NULL; /* moved into the tree (freed with it) */
    int rc = sw_override(x, root, ov->key[i], v);
    if (rc != DS_OK) {
      if (v && ov->item[i] == NULL) ov->item[i] = v;
      return rc;
    }
  }
  ds_yaml_get(root, "overrides", &ki);
  sw_map_remove(root, ki);
  return DS_OK;
}
