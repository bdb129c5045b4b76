/* traj.c -- growable (step, value) series and their byte packing. */
#include <stdlib.h>
#include <string.h>

#include "dynsweep/traj.h"
#include "dynsweep/util.h"

void ds_traj_init(ds_traj *t) { memset(t, 0, sizeof *t); }

void ds_traj_free(ds_traj *t) {
  for (int i = 0; i < t->n; i++) {
    free(t->s[i].step);
    free(t->s[i].val);
  }
  free(t->s);
  memset(t, 0, sizeof *t);
}

int ds_traj_add(ds_traj *t, const char *name, int ncols, const char *unit, const char *def) {
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 16;
    ds_series *s = realloc(t->s, cap * sizeof *s);
    if (!s) return -ds_fail(DS_ENOMEM, "out of memory adding series %s", name);
    t->s = s;
    t->cap = cap;
  }
  ds_series *s = &t->s[t->n];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  snprintf(s->unit, sizeof s->unit, "%s", unit ? unit : "1");
  snprintf(s->definition, sizeof s->definition, "%s", def ? def : "");
  s->ncols = ncols;
  return t->n++;
}

int ds_traj_find(const ds_traj *t, const char *name) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->s[i].name, name) == 0) return i;
  return -1;
}

int ds_traj_append(ds_traj *t, int idx, int64_t step, const double *vals) {
  ds_series *s = &t->s[idx];
  if (s->n == s->cap) {
    int64_t cap = s->cap ? 2 * s->cap : 64;
    int64_t *st = realloc(s->step, cap * sizeof *st);
    if (!st) return ds_fail(DS_ENOMEM, "out of memory recording %s", s->name);
    s->step = st;
    double *v = realloc(s->val, cap * s->ncols * sizeof *v);
    if (!v) return ds_fail(DS_ENOMEM, "out of memory recording %s", s->name);
    s->val = v;
    s->cap = cap;
  }
  s->step[s->n] = step;
  memcpy(s->val + s->n * s->ncols, vals, s->ncols * sizeof *vals);
  s->n++;
  return DS_OK;
}

/* Packed form: int32 nseries, then per series: the fixed header fields
 * (name, unit, definition, ncols, n) followed by n steps and n*ncols values. */
#define HDR (sizeof(((ds_series *)0)->name) + sizeof(((ds_series *)0)->unit) + \
             sizeof(((ds_series *)0)->definition) + sizeof(int32_t) + sizeof(int64_t))

int ds_traj_pack(const ds_traj *t, char **buf, size_t *len) {
  size_t n = sizeof(int32_t);
  for (int i = 0; i < t->n; i++)
    n += HDR + t->s[i].n * (sizeof(int64_t) + t->s[i].ncols * sizeof(double));
  char *b = malloc(n), *p = b;
  if (!b) return ds_fail(DS_ENOMEM, "out of memory packing trajectory (%zu bytes)", n);
  int32_t ns = t->n;
  memcpy(p, &ns, sizeof ns); p += sizeof ns;
  for (int i = 0; i < t->n; i++) {
    const ds_series *s = &t->s[i];
    int32_t nc = s->ncols;
    memcpy(p, s->name, sizeof s->name); p += sizeof s->name;
    memcpy(p, s->unit, sizeof s->unit); p += sizeof s->unit;
    memcpy(p, s->definition, sizeof s->definition); p += sizeof s->definition;
    memcpy(p, &nc, sizeof nc); p += sizeof nc;
    memcpy(p, &s->n, sizeof s->n); p += sizeof s->n;
    if (s->n) { /* an empty series has NULL buffers */
      memcpy(p, s->step, s->n * sizeof *s->step); p += s->n * sizeof *s->step;
      memcpy(p, s->val, s->n * nc * sizeof *s->val); p += s->n * nc * sizeof *s->val;
    }
  }
  *buf = b;
  *len = n;
  return DS_OK;
}

int ds_traj_unpack(const char *buf, size_t len, ds_traj *t) {
  const char *p = buf, *end = buf + len;
  int32_t ns;
  ds_traj_init(t);
  if (len < sizeof ns) return ds_fail(DS_EINTERNAL, "truncated trajectory message");
  memcpy(&ns, p, sizeof ns); p += sizeof ns;
  for (int i = 0; i < ns; i++) {
    ds_series h;
    int32_t nc;
    int64_t n;
    if ((size_t)(end - p) < HDR) goto bad;
    memcpy(h.name, p, sizeof h.name); p += sizeof h.name;
    memcpy(h.unit, p, sizeof h.unit); p += sizeof h.unit;
    memcpy(h.definition, p, sizeof h.definition); p += sizeof h.definition;
    memcpy(&nc, p, sizeof nc); p += sizeof nc;
    memcpy(&n, p, sizeof n); p += sizeof n;
    h.name[sizeof h.name - 1] = h.unit[sizeof h.unit - 1] = h.definition[sizeof h.definition - 1] = 0;
    if (nc < 1 || n < 0 || (size_t)(end - p) < (size_t)n * (sizeof(int64_t) + nc * sizeof(double)))
      goto bad;
    int idx = ds_traj_add(t, h.name, nc, h.unit, h.definition);
    if (idx < 0) { ds_traj_free(t); return -idx; }
    ds_series *s = &t->s[idx];
    s->step = malloc((n ? n : 1) * sizeof *s->step);
    s->val = malloc((n ? n : 1) * nc * sizeof *s->val);
    if (!s->step || !s->val) { ds_traj_free(t); return ds_fail(DS_ENOMEM, "out of memory unpacking"); }
    s->n = s->cap = n;
    memcpy(s->step, p, n * sizeof *s->step); p += n * sizeof *s->step;
    memcpy(s->val, p, n * nc * sizeof *s->val); p += n * nc * sizeof *s->val;
  }
  return DS_OK;
bad:
  ds_traj_free(t);
  return ds_fail(DS_EINTERNAL, "malformed trajectory message");
}
