/* store_priv.h -- private to the store room: the store handle and the small
 * HDF5 helpers shared by store_h5.c, store_write.c and store_read.c. */
#ifndef DYNSWEEP_STORE_PRIV_H
#define DYNSWEEP_STORE_PRIV_H
#include <hdf5.h>
#include <stdint.h>

#include "dynsweep/store.h"

#define DS_STORE_FORMAT "dynsweep-store"
#define DS_STORE_FORMAT_VERSION 1
#define DS_STORE_REASON_LEN 96

struct ds_store {
  char *path;
  int writable;
  hid_t file;
  hid_t summary;    /* /summary dataset */
  hid_t points;     /* /points group */
  hid_t row_mem;    /* in-memory compound type of ds_summary_row */
  int64_t npoints;
  int64_t *ids;     /* ids[i] = id of summary row i */
};

/* Errors: records "PATH: OP (HDF5: <innermost message of the latest HDF5
 * failure>)". ds_store_silence_hdf5() installs the quiet recording handler
 * (nothing is printed) and forgets old failures; called by create/open and
 * at the start of each write. */
int ds_store_h5fail(int code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ds_store_silence_hdf5(void);

/* Types (caller closes). */
hid_t ds_store_vlen_str(void);
hid_t ds_store_row_memtype(void);
hid_t ds_store_row_filetype(void);
hid_t ds_store_gcpl(unsigned est_links); /* link creation order tracked + indexed */
hid_t ds_store_dcpl(int no_attrs);
hid_t ds_store_fapl(void); /* sec2, libver latest, close degree strong */

/* Attributes on any object (loc). Return 0 on success, -1 on HDF5 failure. */
int ds_store_put_str(hid_t loc, const char *name, const char *val);
int ds_store_put_strs(hid_t loc, const char *name, const char *const *vals, int64_t n);
int ds_store_put_i64(hid_t loc, const char *name, int64_t val);
int ds_store_put_i32(hid_t loc, const char *name, int32_t val);
int ds_store_put_f64(hid_t loc, const char *name, double val);
/* Reads a scalar attribute as text into buf (n bytes); -1 on failure. */
int ds_store_get_text(hid_t loc, const char *name, char *buf, int n);
int ds_store_get_i64(hid_t loc, const char *name, int64_t *val);
/* Reads a 1-D string attribute or dataset into a malloc'd array of n
 * malloc'd strings (free with ds_store_free_strs). */
int ds_store_get_strs_attr(hid_t attr, char ***out, int64_t *n);
int ds_store_get_strs_dset(hid_t dset, char ***out, int64_t *n);
void ds_store_free_strs(char **v, int64_t n);

/* Handle allocation (all ids -1) and quiet release (-1 if H5Fclose failed). */
ds_store *ds_store_alloc(const char *path);
int ds_store_release(ds_store *s);

/* Summary row index of point id, or -1. */
int64_t ds_store_row_index(const ds_store *s, int64_t id);
void ds_store_point_name(int64_t id, char *buf, size_t n);
#endif
