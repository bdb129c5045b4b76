/* error.c -- errors as values: one message buffer, context prepended on the
 * way up, printed once by main(). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/util.h"

static _Thread_local char errbuf[4096];

int ds_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errbuf, sizeof errbuf, fmt, ap);
  va_end(ap);
  return code;
}

int ds_context(int code, const char *fmt, ...) {
  char ctx[1024], old[sizeof errbuf];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx, sizeof ctx, fmt, ap);
  va_end(ap);
  memcpy(old, errbuf, sizeof old);
  snprintf(errbuf, sizeof errbuf, "%s: %s", ctx, old);
  return code;
}

const char *ds_errmsg(void) { return errbuf[0] ? errbuf : "unknown error"; }
void ds_clear_error(void) { errbuf[0] = 0; }
int ds_exit_code(int code) { return code == DS_OK ? 0 : code == DS_EINPUT ? 2 : 1; }

void *ds_calloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) ds_fail(DS_ENOMEM, "out of memory allocating %zu x %zu bytes", n, size);
  return p;
}

char *ds_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = ds_calloc(n, 1);
  if (p) memcpy(p, s, n);
  return p;
}

int ds_read_file(const char *path, char **text, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return ds_fail(errno == ENOENT ? DS_EINPUT : DS_EIO, "%s: cannot open: %s", path, strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (n + 1 < cap) break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) { free(buf); buf = NULL; break; }
    buf = nb;
    cap *= 2;
  }
  int err = ferror(f);
  fclose(f);
  if (!buf) return ds_fail(DS_ENOMEM, "%s: out of memory reading file", path);
  if (err) { free(buf); return ds_fail(DS_EIO, "%s: read error", path); }
  buf[n] = 0;
  *text = buf;
  if (len) *len = n;
  return DS_OK;
}
