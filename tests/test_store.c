/* test_store.c -- tests of the HDF5 store: create, write points (scalar and
 * multi-column series, names with '/', reruns), read everything back bitwise,
 * error paths (existing file, missing directory, non-HDF5 file) and on-disk
 * size against the payload. Durability: a writer killed before it published
 * (a forked child that _exit()s) leaves the journal that ds_store_resume
 * replays, a torn journal tail is ignored, checkpoints are kept, replaced and
 * dropped, an extension keeps old ids, the writer lock refuses a second
 * writer, and a reader keeps a consistent view across publishes. With argv[1], the main store is left at that
 * path for tests/store_tools.sh (h5ls/h5dump/h5py checks). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dynsweep/knobs.h"
#include "dynsweep/store.h"
#include "dynsweep/traj.h"
#include "dynsweep/util.h"

#define NPTS 6
#define NAX 2
static const char *names5[] = {"loss", "grad_norm", "sv/W1", "sv/W2", "layer/norms/deep"};
static const int ncols5[] = {1, 1, 3, 3, 2};

/* Exactly representable values, reproduced by store_tools.sh's python check. */
static double val_of(int64_t p, int k, int64_t r, int c) {
  return (double)(p * 1000 + k * 100 + c) + (double)r / 64.0;
}

static void make_traj(ds_traj *t, int64_t p, int nrec, int specials) {
  ds_traj_init(t);
  for (int k = 0; k < 5; k++) {
    char def[64];
    snprintf(def, sizeof def, "definition of %s: x_%d", names5[k], k);
    int idx = ds_traj_add(t, names5[k], ncols5[k], k == 0 ? "nat" : "1", def);
    for (int r = 0; r < nrec; r++) {
      double v[3];
      for (int c = 0; c < ncols5[k]; c++) v[c] = val_of(p, k, r, c);
      ds_traj_append(t, idx, (int64_t)r * 10, v);
    }
  }
  if (specials) { /* bit patterns that must survive unchanged */
    ds_series *s = &t->s[1];
    uint64_t nanbits = 0x7ff8000000000123ULL;
    memcpy(&s->val[0], &nanbits, 8);
    s->val[1] = -0.0;
    s->val[2] = INFINITY;
    s->val[3] = 4.9406564584124654e-324;
    s->val[4] = 0.1;
    s->val[5] = -1.7976931348623157e308;
  }
}

static int same_bits(const double *a, const double *b, int64_t n) {
  return n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static void check_traj_equal(const ds_traj *a, const ds_traj *b, int64_t id) {
  CHECK(a->n == b->n, "point %lld: %d vs %d series", (long long)id, a->n, b->n);
  for (int i = 0; i < a->n && i < b->n; i++) {
    const ds_series *x = &a->s[i], *y = &b->s[i];
    CHECK(strcmp(x->name, y->name) == 0, "series %d name %s vs %s", i, x->name, y->name);
    CHECK(strcmp(x->unit, y->unit) == 0, "series %s unit %s vs %s", x->name, x->unit, y->unit);
    CHECK(strcmp(x->definition, y->definition) == 0, "series %s definition", x->name);
    CHECK(x->ncols == y->ncols && x->n == y->n, "series %s shape", x->name);
    if (x->ncols != y->ncols || x->n != y->n) continue;
    CHECK(x->n == 0 || memcmp(x->step, y->step, x->n * sizeof *x->step) == 0, "series %s steps",
          x->name);
    CHECK(same_bits(x->val, y->val, x->n * x->ncols), "series %s values bitwise", x->name);
  }
}

static ds_summary_row pending_row(int64_t id) {
  ds_summary_row r;
  memset(&r, 0, sizeof r);
  r.id = id;
  r.combo = id / 2;
  r.replica = (int32_t)(id % 2);
  r.width = 16 * (int32_t)(1 + id % 3);
  r.depth = 3;
  r.lr = 0.1 / (double)(1 + id);
  r.init_scale = 1.0;
  r.status = DS_ST_PENDING;
  r.final_loss = r.min_loss = r.final_test_loss = NAN;
  r.diverged_step = -1;
  r.rank = -1;
  return r;
}

static void check_row_equal(const ds_summary_row *a, const ds_summary_row *b) {
  int ok = a->id == b->id && a->combo == b->combo && a->replica == b->replica &&
           a->width == b->width && a->depth == b->depth && a->status == b->status &&
           a->steps == b->steps && a->diverged_step == b->diverged_step && a->rank == b->rank &&
           same_bits(&a->lr, &b->lr, 1) && same_bits(&a->init_scale, &b->init_scale, 1) &&
           same_bits(&a->final_loss, &b->final_loss, 1) && same_bits(&a->min_loss, &b->min_loss, 1) &&
           same_bits(&a->final_test_loss, &b->final_test_loss, 1) &&
           same_bits(&a->wall_s, &b->wall_s, 1) && strcmp(a->reason, b->reason) == 0;
  CHECK(ok, "summary row %lld differs", (long long)a->id);
}

static int file_bytes(const char *path, char **buf, size_t *len) {
  int rc = ds_read_file(path, buf, len);
  return rc == DS_OK;
}

static const char *axis_names[NAX] = {"lr", "optimizer.batch_size"};
static const char *axis_paths[NAX] = {"optimizer.lr", "optimizer.batch_size"};

static ds_store_meta make_meta(double *axv, int64_t npts) {
  ds_store_meta m;
  memset(&m, 0, sizeof m);
  m.sweep_name = "test-sweep";
  m.sweep_text = "name: test-sweep\ngrid:\n  lr: [0.1, 0.05]\n  # ünïcode comment\n";
  m.sweep_path = "/tmp/test.yaml";
  m.sweep_hash = 0x0123456789abcdefULL;
  m.dynsweep_version = "0.1.0";
  m.library_versions = "Open MPI 4.1.4; HDF5 1.10.8";
  m.hosts = "node1,node2";
  m.start_time = "2024-01-02T03:04:05Z";
  m.blas_kernel = "Haswell";
  m.nranks = 4;
  m.naxes = NAX;
  m.axis_names = axis_names;
  m.axis_paths = axis_paths;
  m.npoints = npts;
  for (int64_t p = 0; p < npts; p++) {
    axv[p * NAX] = 0.1 / (double)(1 + p);
    axv[p * NAX + 1] = (double)(32 << (p % 3));
  }
  m.point_axis_vals = axv;
  return m;
}

/* The main store: points 0, 2 (rerun), 3 (diverged), 4 (specials + empty
 * series), 1 marked running, 5 left pending. */
static void test_roundtrip(const char *path) {
  double axv[NPTS * NAX];
  ds_store_meta m = make_meta(axv, NPTS);
  ds_summary_row rows[NPTS];
  for (int i = 0; i < NPTS; i++) rows[i] = pending_row(i);
  ds_store *s = NULL;
  int rc = ds_store_create(path, &m, rows, &s);
  CHECK(rc == DS_OK, "create: %s", ds_errmsg());
  if (rc != DS_OK) return;

  ds_traj t[NPTS];
  for (int p = 0; p < NPTS; p++) make_traj(&t[p], p, 7 + p, p == 4);
  ds_traj_add(&t[4], "empty/series", 4, "1", "no records"); /* n = 0 */
  ds_traj first2;
  make_traj(&first2, 99, 30, 0); /* first run of point 2, replaced below */

  ds_summary_row r;
  r = rows[0], r.status = DS_ST_DONE, r.steps = 60, r.final_loss = 0.25, r.min_loss = 0.125;
  r.final_test_loss = 0.5, r.wall_s = 1.5, r.rank = 1, rows[0] = r;
  CHECK(ds_store_write_point(s, &r, &t[0]) == DS_OK, "write 0: %s", ds_errmsg());
  r = rows[2], r.status = DS_ST_FAILED, r.rank = 2;
  snprintf(r.reason, sizeof r.reason, "first attempt");
  CHECK(ds_store_write_point(s, &r, &first2) == DS_OK, "write 2: %s", ds_errmsg());
  r = rows[2], r.status = DS_ST_DONE, r.steps = 80, r.final_loss = 1.0 / 3.0, r.rank = 3, rows[2] = r;
  CHECK(ds_store_write_point(s, &r, &t[2]) == DS_OK, "rewrite 2: %s", ds_errmsg());
  r = rows[3], r.status = DS_ST_DIVERGED, r.steps = 50, r.diverged_step = 40, r.rank = 2;
  r.final_loss = INFINITY;
  snprintf(r.reason, sizeof r.reason, "loss %s", "exceeded 1e6 at step 40"), rows[3] = r;
  CHECK(ds_store_write_point(s, &r, &t[3]) == DS_OK, "write 3: %s", ds_errmsg());
  r = rows[4], r.status = DS_ST_DONE, r.steps = 110, r.rank = 1, rows[4] = r;
  CHECK(ds_store_write_point(s, &r, &t[4]) == DS_OK, "write 4: %s", ds_errmsg());
  r = rows[1], r.status = DS_ST_RUNNING, r.rank = 3, rows[1] = r;
  CHECK(ds_store_write_row(s, &r) == DS_OK, "write_row 1: %s", ds_errmsg());

  /* bad series name: refused, point group not left behind */
  ds_traj bad;
  ds_traj_init(&bad);
  ds_traj_add(&bad, "a//b", 1, "1", "");
  r = rows[5];
  rc = ds_store_write_point(s, &r, &bad);
  CHECK(rc != DS_OK && strstr(ds_errmsg(), "a//b"), "bad name accepted (%s)", ds_errmsg());
  ds_traj_free(&bad);
  r.id = 77;
  rc = ds_store_write_point(s, &r, &t[0]);
  CHECK(rc != DS_OK && strstr(ds_errmsg(), "77"), "unknown id accepted (%s)", ds_errmsg());

  /* readable through the writer handle too */
  ds_summary_row *got = NULL;
  int64_t n = 0;
  CHECK(ds_store_read_summary(s, &got, &n) == DS_OK && n == NPTS, "writer read_summary");
  if (got) check_row_equal(&got[3], &rows[3]);
  free(got);
  CHECK(ds_store_finish(s, "2024-01-02T04:00:00Z", 12.5, 3600.25) == DS_OK, "finish: %s",
        ds_errmsg());
  CHECK(ds_store_close(s) == DS_OK, "close: %s", ds_errmsg());

  /* read back */
  rc = ds_store_open(path, &s);
  CHECK(rc == DS_OK, "open: %s", ds_errmsg());
  if (rc != DS_OK) return;
  got = NULL;
  CHECK(ds_store_read_summary(s, &got, &n) == DS_OK && n == NPTS, "read_summary n=%lld",
        (long long)n);
  for (int i = 0; got && i < NPTS && i < n; i++) check_row_equal(&got[i], &rows[i]);
  if (got) CHECK(got[5].status == DS_ST_PENDING && got[5].rank == -1, "row 5 stays pending");
  if (got) CHECK(strcmp(got[3].reason, "loss exceeded 1e6 at step 40") == 0, "reason");
  free(got);

  int written[] = {0, 2, 3, 4};
  for (int i = 0; i < 4; i++) {
    ds_traj back;
    rc = ds_store_read_traj(s, written[i], &back);
    CHECK(rc == DS_OK, "read_traj %d: %s", written[i], ds_errmsg());
    if (rc == DS_OK) check_traj_equal(&t[written[i]], &back, written[i]);
    ds_traj_free(&back);
  }
  ds_traj back;
  rc = ds_store_read_traj(s, 5, &back);
  CHECK(rc == DS_EINPUT && back.n == 0, "pending point has no trajectory (rc %d)", rc);
  rc = ds_store_read_traj(s, 1, &back);
  CHECK(rc == DS_EINPUT, "running point has no trajectory (rc %d)", rc);

  int naxes = 0;
  char **an = NULL;
  double *av = NULL;
  int64_t np = 0;
  rc = ds_store_read_axes(s, &naxes, &an, &av, &np);
  CHECK(rc == DS_OK && naxes == NAX && np == NPTS, "read_axes: %s", ds_errmsg());
  if (rc == DS_OK) {
    CHECK(strcmp(an[0], "lr") == 0 && strcmp(an[1], "optimizer.batch_size") == 0, "axis names");
    CHECK(same_bits(av, axv, NPTS * NAX), "axis values bitwise");
    for (int a = 0; a < naxes; a++) free(an[a]);
  }
  free(an);
  free(av);

  char buf[256];
  struct { const char *name, *want; } attrs[] = {
      {"format", "dynsweep-store"}, {"format_version", getenv("DYNSWEEP_STORE_SEGMENTS") ? "5" : "4"},
      {"sweep_name", "test-sweep"},
      {"sweep_hash", "0123456789abcdef"}, {"hosts", "node1,node2"}, {"nranks", "4"},
      {"start_time", "2024-01-02T03:04:05Z"}, {"end_time", "2024-01-02T04:00:00Z"},
      {"blas_kernel", "Haswell"},
      {"dynsweep_version", "0.1.0"}, {"library_versions", "Open MPI 4.1.4; HDF5 1.10.8"}};
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    rc = ds_store_attr(s, attrs[i].name, buf, sizeof buf);
    CHECK(rc == DS_OK && strcmp(buf, attrs[i].want) == 0, "attr %s = '%s' (want '%s')",
          attrs[i].name, rc == DS_OK ? buf : ds_errmsg(), attrs[i].want);
  }
  /* the totals given to ds_store_finish plus its own publish (under a second here) */
  struct { const char *name; double lo; } tot[] = {{"rank0_cpu_s", 12.5}, {"wall_s", 3600.25}};
  for (int i = 0; i < 2; i++) {
    rc = ds_store_attr(s, tot[i].name, buf, sizeof buf);
    double v = rc == DS_OK ? strtod(buf, NULL) : -1;
    CHECK(v >= tot[i].lo && v < tot[i].lo + 1.0, "attr %s = %s (want %g + the finishing publish)",
          tot[i].name, buf, tot[i].lo);
  }
  rc = ds_store_attr(s, "sweep_name", buf, 5);
  CHECK(rc == DS_OK && strcmp(buf, "test") == 0, "attr truncates: '%s'", buf);
  rc = ds_store_attr(s, "no_such_attr", buf, sizeof buf);
  CHECK(rc == DS_EINPUT && strstr(ds_errmsg(), "no_such_attr"), "missing attr: %s", ds_errmsg());
  CHECK(ds_store_write_row(s, &rows[0]) != DS_OK, "read-only store refuses writes");
  CHECK(ds_store_close(s) == DS_OK, "close reader");
  for (int p = 0; p < NPTS; p++) ds_traj_free(&t[p]);
  ds_traj_free(&first2);
}

static void test_errors(const char *dir, const char *existing) {
  char *before = NULL, *after = NULL;
  size_t lb = 0, la = 0;
  double axv[NPTS * NAX];
  ds_store_meta m = make_meta(axv, NPTS);
  ds_summary_row rows[NPTS];
  for (int i = 0; i < NPTS; i++) rows[i] = pending_row(i);
  ds_store *s = NULL;

  CHECK(file_bytes(existing, &before, &lb), "read existing store");
  int rc = ds_store_create(existing, &m, rows, &s);
  CHECK(rc == DS_EINPUT && s == NULL, "create over existing: rc %d", rc);
  CHECK(strstr(ds_errmsg(), "already exists") && strstr(ds_errmsg(), existing), "msg: %s",
        ds_errmsg());
  CHECK(file_bytes(existing, &after, &la) && la == lb && memcmp(before, after, lb) == 0,
        "existing store byte-identical after refused create");
  free(before);
  free(after);

  char path[4096];
  snprintf(path, sizeof path, "%s/no/such/dir/s.h5", dir);
  rc = ds_store_create(path, &m, rows, &s);
  CHECK(rc == DS_EIO && strstr(ds_errmsg(), "does not exist") && strstr(ds_errmsg(), "no/such/dir"),
        "missing dir: rc %d: %s", rc, ds_errmsg());

  snprintf(path, sizeof path, "%s/not_hdf5.h5", dir);
  FILE *f = fopen(path, "w");
  if (f) fputs("this is not an HDF5 file\n", f), fclose(f);
  rc = ds_store_open(path, &s);
  CHECK(rc == DS_EINPUT && s == NULL && strstr(ds_errmsg(), path), "non-HDF5: rc %d: %s", rc,
        ds_errmsg());
  unlink(path);

  snprintf(path, sizeof path, "%s/missing.h5", dir);
  rc = ds_store_open(path, &s);
  CHECK(rc == DS_EINPUT && strstr(ds_errmsg(), path), "missing file: rc %d: %s", rc, ds_errmsg());
}

/* No axes and no points: still a valid store. */
static void test_empty(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/empty.h5", dir);
  ds_store_meta m = make_meta(NULL, 0);
  m.naxes = 0;
  m.axis_names = m.axis_paths = NULL;
  m.point_axis_vals = NULL;
  m.sweep_text = NULL;
  ds_store *s = NULL;
  int rc = ds_store_create(path, &m, NULL, &s);
  CHECK(rc == DS_OK, "create empty: %s", ds_errmsg());
  if (rc != DS_OK) return;
  ds_store_close(s);
  rc = ds_store_open(path, &s);
  CHECK(rc == DS_OK, "open empty: %s", ds_errmsg());
  if (rc != DS_OK) return;
  ds_summary_row *rows = NULL;
  int64_t n = -1, np = -1;
  CHECK(ds_store_read_summary(s, &rows, &n) == DS_OK && n == 0, "empty summary");
  free(rows);
  int naxes = -1;
  char **an = NULL;
  double *av = NULL;
  CHECK(ds_store_read_axes(s, &naxes, &an, &av, &np) == DS_OK && naxes == 0 && np == 0,
        "empty axes: %s", ds_errmsg());
  free(an);
  free(av);
  ds_store_close(s);
  unlink(path);
}

/* 20 points x 5 series x 200 records: file size vs payload. */
static void test_size(const char *dir) {
  enum { P = 20, R = 200 };
  char path[4096];
  snprintf(path, sizeof path, "%s/size.h5", dir);
  double axv[P * NAX];
  ds_store_meta m = make_meta(axv, P);
  ds_summary_row rows[P];
  for (int i = 0; i < P; i++) rows[i] = pending_row(i);
  ds_store *s = NULL;
  if (ds_store_create(path, &m, rows, &s) != DS_OK) {
    CHECK(0, "create size store: %s", ds_errmsg());
    return;
  }
  double payload = 0;
  for (int p = 0; p < P; p++) {
    ds_traj t;
    make_traj(&t, p, R, 0);
    for (int k = 0; k < t.n; k++) payload += (double)t.s[k].n * 8.0 * (1 + t.s[k].ncols);
    rows[p].status = DS_ST_DONE;
    CHECK(ds_store_write_point(s, &rows[p], &t) == DS_OK, "size write %d", p);
    ds_traj_free(&t);
  }
  ds_store_finish(s, "2024-01-02T04:00:00Z", 1, 2);
  ds_store_close(s);
  struct stat st;
  stat(path, &st);
  printf("size test: %d points x 5 series x %d records: payload %.0f bytes, file %lld bytes "
         "(%.2fx)\n", P, R, payload, (long long)st.st_size, st.st_size / payload);
  CHECK(st.st_size < 1.35 * payload + 16384, "store too large: %lld bytes for %.0f payload",
        (long long)st.st_size, payload);
  unlink(path);
}

/* ---- durability ------------------------------------------------------------- */

static void make_rows(ds_summary_row *rows, int n) {
  for (int i = 0; i < n; i++) rows[i] = pending_row(i);
}

static ds_summary_row done_row(int64_t id) {
  ds_summary_row r = pending_row(id);
  r.status = DS_ST_DONE;
  r.steps = 10 + id;
  r.final_loss = 1.0 / (1 + (double)id);
  r.rank = 1;
  return r;
}

static off_t file_size(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 ? st.st_size : -1;
}

/* A child writes points 0..2 (+ a checkpoint of 4, a running row 3), syncs
 * the journal and dies without publishing or closing. */
static void crash_writer(const char *path, int publish_first) {
  pid_t pid = fork();
  if (pid == 0) {
    ds_store *s = NULL;
    if (ds_store_resume(path, &s) != DS_OK) _exit(3);
    for (int p = 0; p < 3; p++) {
      ds_traj t;
      make_traj(&t, p, 5 + p, p == 1);
      ds_summary_row r = done_row(p);
      if (ds_store_write_point(s, &r, &t) != DS_OK) _exit(4);
      ds_traj_free(&t);
      if (publish_first && p == 0 && ds_store_publish(s, 1) != DS_OK) _exit(5);
    }
    ds_summary_row r = pending_row(3);
    r.status = DS_ST_RUNNING;
    r.rank = 2;
    if (ds_store_write_row(s, &r) != DS_OK) _exit(6);
    if (ds_store_write_ckpt(s, 4, "blob-of-point-4", 15) != DS_OK) _exit(7);
    if (ds_store_sync(s) != DS_OK) _exit(8);
    _exit(0); /* like SIGKILL: no publish, no close */
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "crash writer exit %d", WEXITSTATUS(st));
}

static void check_points_0_2(ds_store *s) {
  for (int p = 0; p < 3; p++) {
    ds_traj want, back;
    make_traj(&want, p, 5 + p, p == 1);
    int rc = ds_store_read_traj(s, p, &back);
    CHECK(rc == DS_OK, "replayed point %d: %s", p, ds_errmsg());
    if (rc == DS_OK) check_traj_equal(&want, &back, p);
    ds_traj_free(&want);
    ds_traj_free(&back);
  }
}

static void test_journal(const char *dir) {
  enum { N = 6 };
  char path[4096], jpath[4200];
  snprintf(path, sizeof path, "%s/durable.h5", dir);
  snprintf(jpath, sizeof jpath, "%s.journal", path);
  double axv[N * NAX];
  ds_store_meta m = make_meta(axv, N);
  ds_summary_row rows[N];
  make_rows(rows, N);
  ds_store *s = NULL;
  CHECK(ds_store_create(path, &m, rows, &s) == DS_OK, "create: %s", ds_errmsg());
  CHECK(ds_store_close(s) == DS_OK, "close new store");
  CHECK(access(jpath, F_OK) != 0, "clean close removes the journal");

  /* 1. killed before publishing: the published store has nothing new, the
   * live view and a resume have everything */
  crash_writer(path, 0);
  CHECK(access(jpath, F_OK) == 0, "journal left behind by the crash");
  CHECK(ds_store_open(path, &s) == DS_OK, "open after crash: %s", ds_errmsg());
  ds_summary_row *got = NULL;
  int64_t n = 0, nrec = 0;
  double mt = 0;
  CHECK(ds_store_read_summary(s, &got, &n) == DS_OK && n == N && got[0].status == DS_ST_PENDING,
        "published store has no new point before resume");
  free(got);
  /* the running row of point 3 is journaled too (it carries the attempt
   * count the scheduler needs after a kill, issue 11) */
  CHECK(ds_store_read_summary_live(s, &got, &n, &nrec, &mt) == DS_OK && n == N && nrec == 5 &&
            mt > 0 && got[0].status == DS_ST_DONE && got[2].status == DS_ST_DONE &&
            got[3].status == DS_ST_RUNNING && got[5].status == DS_ST_PENDING,
        "live view folds in the journal (nrec %lld)", (long long)nrec);
  free(got);
  ds_store_close(s);
  CHECK(ds_store_resume(path, &s) == DS_OK, "resume: %s", ds_errmsg());
  if (!s) return;
  CHECK(ds_store_read_summary(s, &got, &n) == DS_OK && got[1].status == DS_ST_DONE &&
            got[1].steps == 11, "resume replayed the rows");
  free(got);
  check_points_0_2(s);
  char *blob = NULL;
  size_t len = 0;
  CHECK(ds_store_read_ckpt(s, 4, &blob, &len) == DS_OK && len == 15 &&
            memcmp(blob, "blob-of-point-4", 15) == 0, "checkpoint replayed: %s", ds_errmsg());
  free(blob);
  CHECK(ds_store_read_ckpt(s, 5, &blob, &len) == DS_EINPUT, "no checkpoint for point 5");

  /* 2. a second writer is refused while this one holds the lock */
  ds_store *s2 = NULL;
  int rc = ds_store_resume(path, &s2);
  CHECK(rc != DS_OK && s2 == NULL && strstr(ds_errmsg(), "another dynsweep run"),
        "second writer refused: %s", ds_errmsg());

  /* 3. checkpoints: replace (larger, smaller), drop on result, ignore after */
  char big[10000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7);
  CHECK(ds_store_write_ckpt(s, 4, big, sizeof big) == DS_OK && ds_store_publish(s, 1) == DS_OK,
        "bigger checkpoint: %s", ds_errmsg());
  CHECK(ds_store_read_ckpt(s, 4, &blob, &len) == DS_OK && len == sizeof big &&
            memcmp(blob, big, len) == 0, "bigger checkpoint read back");
  free(blob);
  CHECK(ds_store_write_ckpt(s, 4, "xy", 2) == DS_OK && ds_store_publish(s, 1) == DS_OK,
        "smaller checkpoint: %s", ds_errmsg());
  CHECK(ds_store_read_ckpt(s, 4, &blob, &len) == DS_OK && len == 2 && memcmp(blob, "xy", 2) == 0,
        "smaller checkpoint read back");
  free(blob);
  /* a reader opened now keeps its view across the next publish */
  ds_store *r = NULL;
  CHECK(ds_store_open(path, &r) == DS_OK, "reader open: %s", ds_errmsg());
  ds_traj t4;
  make_traj(&t4, 4, 3, 0);
  ds_summary_row d4 = done_row(4);
  CHECK(ds_store_write_point(s, &d4, &t4) == DS_OK && ds_store_publish(s, 1) == DS_OK,
        "point 4 done: %s", ds_errmsg());
  CHECK(ds_store_read_ckpt(s, 4, &blob, &len) == DS_EINPUT, "checkpoint dropped when done");
  CHECK(ds_store_write_ckpt(s, 4, "late", 4) == DS_OK && ds_store_publish(s, 1) == DS_OK &&
            ds_store_read_ckpt(s, 4, &blob, &len) == DS_EINPUT, "late checkpoint ignored");
  ds_summary_row run4 = pending_row(4);
  run4.status = DS_ST_RUNNING;
  CHECK(ds_store_write_row(s, &run4) == DS_OK, "stale running row accepted");
  ds_traj back;
  CHECK(ds_store_read_traj(r, 4, &back) == DS_EINPUT, "old reader still sees its snapshot");
  ds_traj_free(&back);
  CHECK(ds_store_read_ckpt(r, 4, &blob, &len) == DS_OK && len == 2, "old reader's checkpoint");
  free(blob);
  ds_store_close(r);
  CHECK(ds_store_read_traj(s, 4, &back) == DS_OK, "point 4 written: %s", ds_errmsg());
  if (back.n) check_traj_equal(&t4, &back, 4);
  ds_traj_free(&back);
  ds_traj_free(&t4);
  /* a point written again: the new series replace the old ones (the old
   * /series/index rows are marked superseded), in this publish and the next */
  ds_traj t4b, t4c;
  make_traj(&t4b, 4, 6, 1);
  make_traj(&t4c, 4, 2, 0);
  CHECK(ds_store_write_point(s, &d4, &t4b) == DS_OK && ds_store_write_point(s, &d4, &t4c) == DS_OK &&
            ds_store_publish(s, 1) == DS_OK, "point 4 rewritten twice: %s", ds_errmsg());
  CHECK(ds_store_read_traj(s, 4, &back) == DS_OK && back.n == t4c.n && back.s[0].n == 2,
        "rewritten point 4 reads the last version: %s", ds_errmsg());
  if (back.n == t4c.n) check_traj_equal(&t4c, &back, 4);
  ds_traj_free(&back);
  CHECK(ds_store_write_point(s, &d4, &t4b) == DS_OK && ds_store_publish(s, 1) == DS_OK &&
            ds_store_read_traj(s, 4, &back) == DS_OK && back.n == t4b.n && back.s[0].n == 6,
        "point 4 rewritten in a later publish: %s", ds_errmsg());
  if (back.n == t4b.n) check_traj_equal(&t4b, &back, 4);
  ds_traj_free(&back);
  ds_traj_free(&t4b);
  ds_traj_free(&t4c);
  CHECK(ds_store_read_summary(s, &got, &n) == DS_OK && got[4].status == DS_ST_DONE,
        "final row never replaced by a stale running row");
  free(got);

  /* 4. extension: 3 more points, old ids and trajectories kept */
  enum { N2 = N + 3 };
  double axv2[N2 * NAX];
  ds_store_meta m2 = make_meta(axv2, N2);
  m2.sweep_text = "name: test-sweep\ngrid:\n  lr: [0.1, 0.05, 0.01]\n";
  m2.sweep_hash = 0xfedcba9876543210ULL;
  ds_summary_row rows2[N2];
  CHECK(ds_store_read_summary(s, &got, &n) == DS_OK && n == N, "rows before extension");
  for (int i = 0; i < N2; i++) rows2[i] = i < N && got ? got[i] : pending_row(i);
  free(got);
  CHECK(ds_store_extend(s, &m2, rows2) == DS_OK, "extend: %s", ds_errmsg());
  ds_traj t7;
  make_traj(&t7, 7, 4, 0);
  ds_summary_row d7 = done_row(7);
  CHECK(ds_store_write_point(s, &d7, &t7) == DS_OK, "write new point 7: %s", ds_errmsg());
  CHECK(ds_store_close(s) == DS_OK, "close: %s", ds_errmsg());
  CHECK(access(jpath, F_OK) != 0, "journal removed at close");
  CHECK(ds_store_open(path, &s) == DS_OK, "reopen: %s", ds_errmsg());
  if (!s) return;
  CHECK(ds_store_read_summary(s, &got, &n) == DS_OK && n == N2 && got[7].status == DS_ST_DONE &&
            got[0].status == DS_ST_DONE && got[8].status == DS_ST_PENDING && got[8].id == 8,
        "extended summary (n %lld)", (long long)n);
  free(got);
  check_points_0_2(s);
  CHECK(ds_store_read_traj(s, 7, &back) == DS_OK, "new point 7 readable");
  if (back.n) check_traj_equal(&t7, &back, 7);
  ds_traj_free(&back);
  ds_traj_free(&t7);
  char buf[256], *text = NULL;
  CHECK(ds_store_attr(s, "sweep_hash", buf, sizeof buf) == DS_OK &&
            strcmp(buf, "fedcba9876543210") == 0, "extended hash %s", buf);
  CHECK(ds_store_sweep_text(s, &text) == DS_OK && strstr(text, "0.01"), "extended sweep text");
  free(text);
  int naxes = 0;
  char **an = NULL;
  double *av = NULL;
  int64_t np = 0;
  CHECK(ds_store_read_axes(s, &naxes, &an, &av, &np) == DS_OK && np == N2 &&
            same_bits(av, axv2, N2 * NAX), "extended axes");
  for (int a = 0; an && a < naxes; a++) free(an[a]);
  free(an);
  free(av);
  CHECK(ds_store_attr(s, "run_state", buf, sizeof buf) == DS_OK, "run_state attribute");
  ds_store_close(s);

  /* 5. torn tail: the last record cut in half is ignored, the others kept */
  crash_writer(path, 1); /* publishes point 0, journals 1, 2, row 3, ckpt 4 */
  off_t js = file_size(jpath);
  CHECK(js > 64 && truncate(jpath, js - 7) == 0, "tear the journal (%lld bytes)", (long long)js);
  CHECK(ds_store_resume(path, &s) == DS_OK, "resume torn: %s", ds_errmsg());
  if (!s) return;
  check_points_0_2(s);
  CHECK(ds_store_read_summary(s, &got, &n) == DS_OK && got[3].status == DS_ST_RUNNING,
        "row 3 running (journaled; the scheduler counts the attempt)");
  free(got);
  CHECK(ds_store_read_ckpt(s, 4, &blob, &len) == DS_EINPUT, "torn checkpoint record ignored");
  ds_store_close(s);

  /* 6. a journal of another store is ignored with a warning */
  crash_writer(path, 0);
  char other[4096], ojpath[4200];
  snprintf(other, sizeof other, "%s/other.h5", dir);
  snprintf(ojpath, sizeof ojpath, "%s.journal", other);
  CHECK(ds_store_create(other, &m, rows, &s) == DS_OK, "create other: %s", ds_errmsg());
  ds_store_close(s);
  CHECK(rename(jpath, ojpath) == 0, "move journal to the other store");
  CHECK(ds_store_resume(other, &s) == DS_OK, "resume other: %s", ds_errmsg());
  if (s) {
    CHECK(ds_store_read_summary(s, &got, &n) == DS_OK && n == N &&
              got[0].status == DS_ST_PENDING, "foreign journal not replayed");
    free(got);
    ds_store_close(s);
  }
  unlink(other);
  unlink(path);
}

int main(int argc, char **argv) {
  char dir[] = "/tmp/ds_test_store_XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  char path[4096];
  if (argc > 1) snprintf(path, sizeof path, "%s", argv[1]);
  else snprintf(path, sizeof path, "%s/store.h5", dir);
  unlink(path);
  /* hermetic: the first part is format 4 whatever the environment says */
  static const char *const knobs[] = {"DYNSWEEP_STORE_SEGMENTS", "DYNSWEEP_SEG_CAP",
                                      "DYNSWEEP_BLOCK_ROWS", "DYNSWEEP_STORE_BLOCKS",
                                      "DYNSWEEP_PUBLISH_FACTOR"};
  for (size_t k = 0; k < sizeof knobs / sizeof *knobs; k++) unsetenv(knobs[k]);
  ds_knobs_reload(); /* the knobs are read once: again after a change */
  CHECK(strcmp(ds_status_name(DS_ST_DIVERGED), "diverged") == 0, "status name");
  CHECK(strcmp(ds_status_name(42), "unknown") == 0, "unknown status name");
  test_roundtrip(path);
  test_errors(dir, path);
  test_empty(dir);
  test_size(dir);
  test_journal(dir);
  if (argc <= 1) unlink(path);
  /* format 5 (segment files, a merge cap small enough to merge here): the
   * round trip (several publishes, a rewritten point) and the journal replays */
  char dir5[4200], path5[4300], cmd[4400];
  snprintf(dir5, sizeof dir5, "%s/f5", dir);
  snprintf(path5, sizeof path5, "%s/store.h5", dir5);
  if (mkdir(dir5, 0755) == 0) {
    setenv("DYNSWEEP_STORE_SEGMENTS", "1", 1);
    setenv("DYNSWEEP_SEG_CAP", "4000", 1);
    setenv("DYNSWEEP_BLOCK_ROWS", "3", 1); /* row blocks of 3: a rewritten point's rows span older blocks */
    ds_knobs_reload();
    test_roundtrip(path5);
    test_journal(dir5);
    unsetenv("DYNSWEEP_STORE_SEGMENTS");
    unsetenv("DYNSWEEP_SEG_CAP");
    unsetenv("DYNSWEEP_BLOCK_ROWS");
    ds_knobs_reload();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir5);
    CHECK(system(cmd) == 0, "remove %s", dir5);
  }
  rmdir(dir);
  return ds_check_report("test_store");
}
