/* gzio.c -- the data room's door to its files: gzip-transparent opening and
 * reading (gzopen reads plain files as they are), whole-file reads, and
 * ds_raw's release; files.c (IDX, libsvm, CSV, HDF5) and images.c (CIFAR,
 * SVHN) read through it. Errors are DS_EINPUT naming the path. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "data_internal.h"

void ds_raw_free(ds_raw *r) {
  if (!r) return;
  free(r->X);
  free(r->T);
  free(r->C);
  memset(r, 0, sizeof *r);
}

/* gzopen reads plain files as they are, so every reader goes through it. */
int ds_gz_open(const char *path, gzFile *f) {
  if (!path || !path[0]) return ds_fail(DS_EINPUT, "data: a file path is required");
  errno = 0;
  *f = gzopen(path, "rb");
  if (!*f)
    return ds_fail(DS_EINPUT, "%s: cannot open: %s", path, errno ? strerror(errno) : "gzopen failed");
  gzbuffer(*f, 1 << 17);
  return DS_OK;
}

/* Read up to n bytes; *got is how many arrived. A gzip stream error is DS_EINPUT. */
int ds_gz_read(gzFile f, const char *path, void *buf, size_t n, size_t *got) {
  unsigned char *p = buf;
  *got = 0;
  while (*got < n) {
    size_t chunk = n - *got;
    if (chunk > (1u << 30)) chunk = 1u << 30;
    int k = gzread(f, p + *got, (unsigned)chunk);
    if (k < 0) {
      int err = 0;
      const char *msg = gzerror(f, &err);
      return ds_fail(DS_EINPUT, "%s: read error: %s", path, msg ? msg : "unknown");
    }
    if (k == 0) {
      int err = 0;
      const char *msg = gzerror(f, &err);
      if (err != Z_OK && err != Z_BUF_ERROR)
        return ds_fail(DS_EINPUT, "%s: corrupt compressed data: %s", path, msg);
      if (err == Z_BUF_ERROR) return ds_fail(DS_EINPUT, "%s: truncated compressed data", path);
      break;
    }
    *got += (size_t)k;
  }
  return DS_OK;
}

int ds_gz_read_exact(gzFile f, const char *path, void *buf, size_t n, const char *what) {
  size_t got = 0;
  DS_TRY(ds_gz_read(f, path, buf, n, &got));
  if (got != n)
    return ds_fail(DS_EINPUT, "%s: truncated: expected %zu bytes of %s, found %zu", path, n, what,
                   got);
  return DS_OK;
}

int ds_gz_slurp(const char *path, char **out, size_t *len) {
  *out = NULL;
  gzFile f;
  DS_TRY(ds_gz_open(path, &f));
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  int rc = DS_OK;
  for (;;) {
    if (!buf) {
      rc = ds_fail(DS_ENOMEM, "%s: out of memory reading the file", path);
      break;
    }
    size_t got = 0;
    if ((rc = ds_gz_read(f, path, buf + n, cap - n - 1, &got)) != DS_OK) break;
    n += got;
    if (n + 1 < cap) break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) free(buf);
    buf = nb;
    cap *= 2;
  }
  gzclose(f);
  if (rc != DS_OK) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *out = buf;
  if (len) *len = n;
  return DS_OK;
}
