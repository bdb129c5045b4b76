/* sweep_err.c -- messages of the sweep file's parser: "file:line:col: ..."
 * and unknown keys with a suggestion (sweep_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dynsweep/util.h"
#include "sweep_internal.h"

const char *const sw_sections[] = {"model", "data", "loss", "optimizer", "train", "record"};

int sw_err(const sw_ctx *x, int line, int col, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ds_fail(DS_EINPUT, "%s:%d:%d: %s", x->file, line, col, msg);
}

/* "unknown key 'k' in WHERE (did you mean 'x'?)" or the list of valid keys. */
int sw_unknown_key(const sw_ctx *x, const ds_yn *k, const char *where,
                   const char *const *cands, int n, const char *extra) {
  const char *sug = ds_suggest(k->str, cands, n);
  if (sug)
    return sw_err(x, k->line, k->col, "unknown key '%s' in %s (did you mean '%s'?)", k->str, where, sug);
  char list[1024];
  int used = 0;
  list[0] = 0;
  for (int i = 0; i < n && used < (int)sizeof list; i++)
    used += snprintf(list + used, sizeof list - (size_t)used, "%s%s", i ? ", " : "", cands[i]);
  return sw_err(x, k->line, k->col, "unknown key '%s' in %s (valid keys: %s%s)", k->str, where, list,
                extra ? extra : "");
}

/* An empty plain value ("model:" with nothing under it) counts as an empty map. */
int sw_is_null(const ds_yn *v) {
  return v->kind == DS_YN_SCALAR && !v->quoted && (!v->str[0] || !strcmp(v->str, "~") || !strcmp(v->str, "null"));
}
