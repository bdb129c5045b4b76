/* digest.c -- the CRC-32 digests of the string data HDF5 does not checksum
 * (variable-length strings live in the global heap): computed and sealed as
 * root attributes at every publish, checked at every open (docs/store.md,
 * "Integrity"; integrity.c has `dynsweep verify`). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/util.h"
#include "store_priv.h"

/* ---- digests of the string data -------------------------------------------- */

const char *const ds_store_digest_names[DS_DIGESTS] = {"digest_attrs", "digest_sweep",
                                                       "digest_grid", "digest_kinds"};
const char *const ds_store_digest_what[DS_DIGESTS] = {
    "attributes of /, /summary, /grid and /sweep/yaml", "/sweep/yaml (the sweep file)",
    "/grid/axis_names and axis_paths", "/series/names, units and definitions"};

typedef struct {
  uint32_t crc;
  int bad;
} ds_digest_acc;

static void ds_digest_str(ds_digest_acc *a, const char *s) {
  a->crc = ds_crc32(s, strlen(s) + 1, a->crc); /* with the NUL: "ab","c" != "a","bc" */
}

static herr_t ds_digest_attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *arg) {
  (void)info;
  ds_digest_acc *a = arg;
  char buf[8192];
  if (!strncmp(name, "digest_", 7)) return 0;
  /* format 5 block lists (n x 2 integers, in the checksummed object header) */
  if (!strcmp(name, "blocks") || !strcmp(name, "retired")) return 0;
  if (ds_store_get_text(loc, name, buf, sizeof buf) < 0) {
    a->bad = 1;
    return -1;
  }
  ds_digest_str(a, name);
  ds_digest_str(a, buf);
  return 0;
}

static void ds_digest_attrs(hid_t file, const char *obj, ds_digest_acc *a) {
  hid_t o = H5Oopen(file, obj, H5P_DEFAULT);
  hsize_t idx = 0;
  if (o < 0 || H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, ds_digest_attr_cb, a) < 0)
    a->bad = 1;
  if (o >= 0) H5Oclose(o);
}

static void ds_digest_strs(hid_t file, const char *name, ds_digest_acc *a) {
  hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
  char **v = NULL;
  int64_t n = 0;
  if (d < 0 || ds_store_get_strs_dset(d, &v, &n) < 0) a->bad = 1;
  for (int64_t i = 0; i < n; i++) ds_digest_str(a, v[i]);
  ds_store_free_strs(v, n);
  if (d >= 0) H5Dclose(d);
}

int ds_store_digests_compute(ds_store *s, uint32_t crc[DS_DIGESTS]) {
  ds_digest_acc a[DS_DIGESTS];
  memset(a, 0, sizeof a);
  const char *objs[] = {"/", "summary", "grid", "sweep/yaml"};
  for (int i = 0; i < 4; i++) ds_digest_attrs(s->file, objs[i], &a[0]);
  char *text = NULL;
  if (ds_store_sweep_text(s, &text) == DS_OK) ds_digest_str(&a[1], text);
  else a[1].bad = 1;
  free(text);
  ds_digest_strs(s->file, "grid/axis_names", &a[2]);
  ds_digest_strs(s->file, "grid/axis_paths", &a[2]);
  const char *kinds[] = {"series/names", "series/units", "series/definitions"};
  for (int i = 0; i < 3; i++) ds_digest_strs(s->file, kinds[i], &a[3]);
  int bad = 0;
  for (int i = 0; i < DS_DIGESTS; i++) {
    crc[i] = a[i].crc;
    if (a[i].bad) bad |= 1 << i;
  }
  H5Eclear2(H5E_DEFAULT);
  return bad;
}

int ds_store_digests_seal(ds_store *s) {
  uint32_t crc[DS_DIGESTS];
  int bad = ds_store_digests_compute(s, crc);
  for (int i = 0; i < DS_DIGESTS && !bad; i++)
    if (ds_store_put_i64(s->file, ds_store_digest_names[i], (int64_t)crc[i]) < 0) bad = 1;
  return bad ? ds_store_h5fail(DS_EIO, s->path, "cannot write the digests of the string data")
             : DS_OK;
}

/* bad_mask gets one bit per part whose digest does not match (or that could
 * not be read); DS_OK when all match or the store has no digests (format < 4). */
int ds_store_digests_check(ds_store *s, int *bad_mask) {
  uint32_t crc[DS_DIGESTS];
  *bad_mask = 0;
  htri_t ex = H5Aexists(s->file, ds_store_digest_names[0]);
  if (ex == 0 && s->version < 4) { /* older stores have none */
    H5Eclear2(H5E_DEFAULT);
    return DS_OK;
  }
  int unread = ex > 0 ? ds_store_digests_compute(s, crc) : (1 << DS_DIGESTS) - 1;
  for (int i = 0; i < DS_DIGESTS; i++) {
    int64_t v = -1;
    if ((unread & (1 << i)) || ds_store_get_i64(s->file, ds_store_digest_names[i], &v) < 0 ||
        (uint32_t)v != crc[i])
      *bad_mask |= 1 << i;
  }
  H5Eclear2(H5E_DEFAULT);
  if (!*bad_mask) return DS_OK;
  char what[512] = "";
  for (int i = 0; i < DS_DIGESTS; i++)
    if (*bad_mask & (1 << i))
      snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s", what[0] ? "; " : "",
               ds_store_digest_what[i]);
  return ds_fail(DS_EIO, "%s: the file is damaged: %s fail their CRC-32 digest (bit rot?); "
                         "'dynsweep verify %s' lists what is damaged", s->path, what, s->path);
}
