/* inputs.c -- every file a sweep names, checked against what its points need
 * before any work (issue 11): data files read in full with the workers'
 * loaders, the init file's W1..WL / b1..bL in the shape of every depth and
 * width of the grid, the AGOP reference G. Each distinct requirement is
 * checked once (a set of keys), so a grid of 10^6 points costs one pass over
 * the points plus one read per distinct file/shape. Also the content hash
 * of the input files the store records. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_internal.h"
#include "dynsweep/data.h"
#include "dynsweep/util.h"

const char *const ds_file_opts[DS_NFILE_OPTS] = {"model.init_file", "data.path", "data.labels_path",
                                                  "data.test_path", "data.test_labels_path",
                                                  "record.spectra.agop_reference"};
enum { IN_INIT, IN_DATA, IN_LABELS, IN_TEST, IN_TEST_LABELS, IN_AGOP };

/* ---- a set of strings: the requirements already checked ------------------- */

typedef struct {
  char **key;
  size_t n, cap;
  size_t *slot; /* open addressing: key index + 1, 0 = empty */
  size_t nslot;
} in_set;

static void set_free(in_set *s) {
  for (size_t i = 0; i < s->n; i++) free(s->key[i]);
  free(s->key);
  free(s->slot);
  memset(s, 0, sizeof *s);
}

static size_t set_find(const in_set *s, const char *k, uint64_t h) {
  size_t i = (size_t)h & (s->nslot - 1);
  while (s->slot[i] && strcmp(s->key[s->slot[i] - 1], k)) i = (i + 1) & (s->nslot - 1);
  return i;
}

/* Adds k; *added = 0 when it was there already. */
static int set_add(in_set *s, const char *k, int *added) {
  *added = 0;
  if (2 * (s->n + 1) > s->nslot) { /* grow and rehash */
    size_t ns = s->nslot ? 2 * s->nslot : 64;
    size_t *slot = ds_calloc(ns, sizeof *slot);
    if (!slot) return DS_ENOMEM;
    free(s->slot);
    s->slot = slot;
    s->nslot = ns;
    for (size_t i = 0; i < s->n; i++)
      s->slot[set_find(s, s->key[i], ds_fnv1a(s->key[i], strlen(s->key[i]), 0))] = i + 1;
  }
  uint64_t h = ds_fnv1a(k, strlen(k), 0);
  size_t at = set_find(s, k, h);
  if (s->slot[at]) return DS_OK;
  if (s->n == s->cap) {
    size_t nc = s->cap ? 2 * s->cap : 64;
    char **nk = realloc(s->key, nc * sizeof *nk);
    if (!nk) return ds_fail(DS_ENOMEM, "out of memory checking the input files");
    s->key = nk;
    s->cap = nc;
  }
  if (!(s->key[s->n] = ds_strdup(k))) return DS_ENOMEM;
  s->slot[at] = ++s->n;
  *added = 1;
  return DS_OK;
}

/* ---- messages ------------------------------------------------------------- */

/* "SWEEP:LINE:COL: OPTION: <the data room's message><ctx>" */
static int in_err(const ds_sweep *sw, int f, int rc, const char *ctx) {
  if (rc == DS_ENOMEM) return rc;
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", ds_errmsg());
  if (sw->file_line[f])
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: %s%s", sw->path, sw->file_line[f], sw->file_col[f],
                   ds_file_opts[f], msg, ctx);
  return ds_fail(DS_EINPUT, "%s: %s: %s%s", sw->path, ds_file_opts[f], msg, ctx);
}

/* Which data option's file a data-room message is about (it starts "PATH:"). */
static int data_opt_of(const ds_data_spec *d, const char *msg) {
  const char *p[] = {d->path, d->labels_path, d->test_path, d->test_labels_path};
  for (int k = 0; k < 4; k += 2) { /* a batch file of a CIFAR directory (issue 26) */
    struct stat st;
    char(*list)[DS_MAX_PATH] = NULL;
    int nl = 0, hit = 0;
    if (!p[k][0] || stat(p[k], &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", msg);
    if (ds_data_files(d->kind, p[k], k == 2, &list, &nl) != DS_OK) {
      ds_fail(DS_EINPUT, "%s", saved); /* the message being attributed stays */
      continue;
    }
    for (int q = 0; q < nl && !hit; q++) {
      size_t n = strlen(list[q]);
      hit = !strncmp(msg, list[q], n) && msg[n] == ':';
    }
    free(list);
    if (hit) return IN_DATA + k;
  }
  for (int k = 0; k < 4; k++) {
    size_t n = strlen(p[k]);
    /* "DIR/data_batch_2.bin: ..." is about a directory's batch file (issue 26) */
    if (n && !strncmp(msg, p[k], n) && (msg[n] == ':' || msg[n] == '/' || p[k][n - 1] == '/'))
      return IN_DATA + k;
  }
  return IN_DATA;
}

static void dims_text(const int *dims, int depth, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (int l = 0; l <= depth && used < n; l++)
    used += (size_t)snprintf(buf + used, n - used, "%s%d", l ? ", " : "", dims[l]);
}

/* ---- the checks ------------------------------------------------------------ */

static int is_file_kind(ds_data_kind k) {
  return ds_data_is_file_kind(k);
}

/* What of a data spec the loaders and the split depend on (paths cannot be axes). */
static void data_key(const ds_data_spec *d, char *buf, size_t n) {
  size_t used = (size_t)snprintf(buf, n, "%d|%d|%d|%d|%.17g|%d|%d|", (int)d->kind, (int)d->labels, d->d_out,
                                 d->libsvm_target_after_semicolon, d->test_fraction, d->n_test,
                                 d->cifar100_coarse);
  for (int i = 0; i < d->nclasses && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, "%d,", d->classes[i]);
}

/* What a matrix requirement is for, formatted only when it fails. */
typedef struct {
  const ds_point *p;
  const int *dims;
  int l; /* layer (W / b), 0: the AGOP reference G */
} in_why;

static void why_text(const in_why *w, const char *name, char *ctx, size_t n) {
  int L = w->p->cfg.model.depth;
  char dt[512];
  if (w->l == 0) {
    snprintf(ctx, n, " (G is data.d_in x data.d_in = %d x %d for point %lld)", w->dims[0], w->dims[0],
             (long long)w->p->id);
    return;
  }
  dims_text(w->dims, L, dt, sizeof dt);
  if (name[0] == 'W')
    snprintf(ctx, n, " (W%d is d_%d x d_%d; point %lld has depth %d and layer sizes d_0..d_%d = %s)", w->l,
             w->l, w->l - 1, (long long)w->p->id, L, L, dt);
  else
    snprintf(ctx, n, " (b%d has d_%d entries; point %lld has layer sizes d_0..d_%d = %s)", w->l, w->l,
             (long long)w->p->id, L, dt);
}

/* Matrix `name` of the file option f, rows x cols, finite; once per distinct
 * (file, name, shape). */
static int need_matrix(const ds_sweep *sw, in_set *done, int f, const char *file, const char *name,
                       int rows, int cols, const in_why *why) {
  char key[128];
  int added;
  snprintf(key, sizeof key, "%d|%s|%d|%d", f, name, rows, cols);
  DS_TRY(set_add(done, key, &added));
  if (!added) return DS_OK;
  double *m = ds_calloc((size_t)rows * (size_t)cols, sizeof *m);
  if (!m) return DS_ENOMEM;
  int rc = ds_h5_read_matrix(file, name, rows, cols, m);
  free(m);
  if (rc == DS_OK) return DS_OK;
  char ctx[800];
  why_text(why, name, ctx, sizeof ctx);
  return in_err(sw, f, rc, ctx);
}

/* init: file -- W1..WL (d_l x d_{l-1}) and with model.bias b1..bL (d_l). */
static int check_init(const ds_sweep *sw, in_set *done, const ds_point *p) {
  const ds_point_cfg *c = &p->cfg;
  int L = c->model.depth, dims[DS_MAX_LIST + 2];
  if (L < 1 || L > DS_MAX_LIST) return DS_OK; /* refused by the parser */
  ds_point_dims(c, dims);
  int bias = c->model.bias && c->model.type != DS_MODEL_E2E;
  for (int l = 1; l <= L; l++) {
    char name[16];
    in_why why = {p, dims, l};
    snprintf(name, sizeof name, "W%d", l);
    DS_TRY(need_matrix(sw, done, IN_INIT, c->model.init_file, name, dims[l], dims[l - 1], &why));
    if (!bias) continue;
    snprintf(name, sizeof name, "b%d", l);
    char key[64];
    int added;
    snprintf(key, sizeof key, "exists|%s", name);
    DS_TRY(set_add(done, key, &added));
    if (added && !ds_h5_exists(c->model.init_file, name)) {
      ds_fail(DS_EINPUT, "%s: no dataset '%s', but model.bias is true: the file must hold b1..b%d "
              "(b_l has d_l entries; missing biases are not filled with zeros)", c->model.init_file,
              name, L);
      return in_err(sw, IN_INIT, DS_EINPUT, "");
    }
    DS_TRY(need_matrix(sw, done, IN_INIT, c->model.init_file, name, dims[l], 1, &why));
  }
  return DS_OK;
}

/* An axis that cannot change what a point reads (data, initial weights, the
 * AGOP reference) or the shapes they are checked in: learning rates and the
 * rest of the optimiser, training, the loss, the initial scale, offset and
 * gain. Only the other axes are enumerated below, so a map of 4097 x 4097
 * learning rates checks its files once, not 16.8 million times. */
static int axis_inert(const char *path) {
  static const char *const prefix[] = {"optimizer.", "train.", "loss."};
  static const char *const exact[] = {"model.init_offset", "model.init_scale", "model.init_std",
                                      "model.gain"};
  for (size_t i = 0; i < sizeof prefix / sizeof *prefix; i++)
    if (!strncmp(path, prefix[i], strlen(prefix[i]))) return 1;
  for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
    if (!strcmp(path, exact[i])) return 1;
  return 0;
}

int ds_sweep_check_inputs(const ds_sweep *sw) {
  int reps = sw->replicas > 0 ? sw->replicas : 1;
  int64_t nlive = 1, stride[DS_MAX_AXES];
  int live[DS_MAX_AXES];
  for (int a = sw->naxes - 1; a >= 0; a--) { /* combo = sum idx[a] stride[a] */
    stride[a] = a == sw->naxes - 1 ? 1 : stride[a + 1] * sw->axes[a + 1].nvals;
    live[a] = !axis_inert(sw->axes[a].path);
    if (live[a]) nlive *= sw->axes[a].nvals;
  }
  in_set done = {0};
  int rc = DS_OK;
  for (int64_t k = 0; rc == DS_OK && k < nlive; k++) {
    int64_t combo = 0, r = k;
    for (int a = sw->naxes - 1; a >= 0; a--) { /* the live axes' values, inert ones at 0 */
      if (!live[a]) continue;
      combo += (r % sw->axes[a].nvals) * stride[a];
      r /= sw->axes[a].nvals;
    }
    ds_point p;
    if ((rc = ds_sweep_point(sw, combo * reps, &p)) != DS_OK) break;
    const ds_point_cfg *c = &p.cfg;
    char key[1024];
    int added = 0;
    if (is_file_kind(c->data.kind) && c->data.path[0]) {
      data_key(&c->data, key, sizeof key);
      if ((rc = set_add(&done, key, &added)) != DS_OK) break;
      if (added && (rc = ds_data_check(&c->data)) != DS_OK) {
        rc = in_err(sw, data_opt_of(&c->data, ds_errmsg()), rc, "");
        break;
      }
    }
    if (c->model.init == DS_INIT_FILE && c->model.init_file[0] &&
        (rc = check_init(sw, &done, &p)) != DS_OK)
      break;
    const ds_spectra_spec *sp = &c->record.spectra;
    if (ds_cadence_on(&sp->agop) && sp->agop_reference[0]) {
      in_why why = {&p, &c->data.d_in, 0};
      rc = need_matrix(sw, &done, IN_AGOP, sp->agop_reference, "G", c->data.d_in, c->data.d_in, &why);
    }
  }
  set_free(&done);
  return rc;
}

/* ---- content hash ------------------------------------------------------------ */

/* FNV-1a 64 of the bytes of a regular file, and its size. */
static int file_hash(const char *path, uint64_t *h, long long *size) {
  struct stat st;
  if (stat(path, &st) != 0) return ds_fail(DS_EINPUT, "%s: cannot open: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return ds_fail(DS_EINPUT, "%s: not a regular file", path);
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ds_fail(DS_EINPUT, "%s: cannot open: %s", path, strerror(errno));
  enum { CHUNK = 1 << 20 };
  unsigned char *buf = malloc(CHUNK);
  if (!buf) {
    close(fd);
    return ds_fail(DS_ENOMEM, "out of memory hashing %s", path);
  }
  *h = 0;
  *size = 0;
  int rc = DS_OK;
  for (;;) {
    ssize_t got = read(fd, buf, CHUNK);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) rc = ds_fail(DS_EIO, "%s: read error: %s", path, strerror(errno));
    if (got <= 0) break;
    *h = ds_fnv1a(buf, (size_t)got, *h);
    *size += got;
  }
  free(buf);
  close(fd);
  return rc;
}

int ds_sweep_inputs_hash(const ds_sweep *sw, char **list, uint64_t *hash) {
  const ds_point_cfg *b = &sw->base;
  const char *files[DS_NFILE_OPTS] = {b->model.init_file, b->data.path, b->data.labels_path,
                                      b->data.test_path, b->data.test_labels_path,
                                      b->record.spectra.agop_reference};
  size_t cap = DS_NFILE_OPTS * (DS_MAX_PATH + 48) + 1, used = 0;
  char *out = ds_calloc(cap, 1);
  if (!out) return DS_ENOMEM;
  for (int k = 0; k < DS_NFILE_OPTS; k++) {
    /* a directory of CIFAR batches (data.path / data.test_path): its files,
     * which differ for the two even when both name the same directory */
    struct stat st;
    int isdir = (k == IN_DATA || k == IN_TEST) && stat(files[k], &st) == 0 && S_ISDIR(st.st_mode);
    int dup = 0;
    for (int j = 0; j < k; j++) dup |= !strcmp(files[j], files[k]);
    if (!files[k][0] || (dup && !isdir)) continue;
    char(*list)[DS_MAX_PATH] = NULL;
    int nl = 1, rc = DS_OK;
    if (isdir) rc = ds_data_files(b->data.kind, files[k], k == IN_TEST, &list, &nl);
    for (int q = 0; rc == DS_OK && q < nl; q++) {
      const char *f = list ? list[q] : files[k];
      uint64_t h = 0;
      long long size = 0;
      if ((rc = file_hash(f, &h, &size)) != DS_OK) break;
      if (used + strlen(f) + 64 > cap) {
        char *no = realloc(out, cap * 2);
        if (!no) {
          rc = DS_ENOMEM;
          break;
        }
        out = no;
        cap *= 2;
      }
      used += (size_t)snprintf(out + used, cap - used, "%s\t%lld\t%016" PRIx64 "\n", f, size, h);
    }
    free(list);
    if (rc != DS_OK) {
      free(out);
      return rc;
    }
  }
  *hash = ds_fnv1a(out, used, ds_fnv1a("dynsweep-inputs-v1\n", 19, 0));
  *list = out;
  return DS_OK;
}
