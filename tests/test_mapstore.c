/* test_mapstore.c -- map stores (issue 13; docs/store.md, "Map stores"):
 * create, tiles through the journal, publish, the inferred-never-replaces-
 * trained rule, the row readers refused, a writer child SIGKILLed mid-stream
 * and resumed (nothing journaled lost), bytes per point on disk for a
 * 512 x 512 map of realistic values (<= 16), and a corrupted chunk found by
 * ds_store_verify.
 *
 *   test_mapstore                     the unit test (ctest)
 *   test_mapstore --make PATH NX NY [--partial]   a map store for the script tests
 *   test_mapstore --bench N [TILE] [PUBLISH_EVERY_TILES]   N x N, publish/apply rate */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "check.h"
#include "dynsweep/store.h"
#include "dynsweep/util.h"

static const char *axis_names[2] = {"lr_in", "lr_out"};
static const char *axis_paths[2] = {"optimizer.lr_in", "optimizer.lr_out"};

typedef struct {
  int64_t shape[2];
  double *vals[2];
} grid2;

static void grid_make(grid2 *g, int64_t ny, int64_t nx) {
  g->shape[0] = ny;
  g->shape[1] = nx;
  for (int a = 0; a < 2; a++) {
    g->vals[a] = malloc((size_t)g->shape[a] * sizeof(double));
    for (int64_t i = 0; i < g->shape[a]; i++)
      g->vals[a][i] = pow(10.0, -3.0 + 4.0 * (double)i / (double)(g->shape[a] > 1 ? g->shape[a] - 1 : 1));
  }
}

static void grid_free(grid2 *g) { free(g->vals[0]), free(g->vals[1]); }

static int create_map(const char *path, grid2 *g, int64_t steps, ds_store **out) {
  ds_store_meta m;
  memset(&m, 0, sizeof m);
  m.sweep_name = "maptest";
  m.sweep_text = "name: maptest\nmap: {}\n";
  m.sweep_path = "maptest.yaml";
  m.sweep_hash = 0x1234;
  m.dynsweep_version = "test";
  m.nranks = 1;
  m.naxes = 2;
  m.axis_names = axis_names;
  m.axis_paths = axis_paths;
  m.npoints = g->shape[0] * g->shape[1];
  ds_map_meta mm;
  memset(&mm, 0, sizeof mm);
  mm.naxes = 2;
  mm.shape = g->shape;
  mm.axis_vals = (const double *const *)g->vals;
  mm.steps = steps;
  mm.tile_points = 1024;
  return ds_store_create_map(path, &m, &mm, out);
}

/* A realistic pixel: a wavy converged/diverged boundary, catapults near it,
 * measures of random magnitude (the sign is the outcome), decided steps. */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

static ds_map_rec pixel(int64_t idx, int64_t nx, int64_t ny, int64_t steps, int random) {
  ds_map_rec r;
  memset(&r, 0, sizeof r);
  double x = (double)(idx % nx) / (double)nx, y = (double)(idx / nx) / (double)ny;
  double b = 0.5 + 0.1 * sin(20 * x) + 0.03 * sin(97 * x * y);
  double u = random ? urand() : (double)((idx * 2654435761u) % 1000) / 1000.0;
  int conv = y < b;
  r.outcome = conv ? (y > b - 0.05 ? 2 : 0) : 1;
  r.step = (int32_t)(u * (double)steps);
  r.measure = (float)(conv ? -(1.0 + u * (double)steps) : 1e-6 * (1.0 + u * (double)steps));
  r.final_ratio = (float)(conv ? pow(10.0, -6.0 * u) : 1e6);
  r.peak_ratio = (float)(conv ? 1.0 + 3.0 * u : 1e6);
  return r;
}

static int same_rec(const ds_map_rec *a, const ds_map_rec *b) {
  return a->outcome == b->outcome && a->step == b->step &&
         !memcmp(&a->measure, &b->measure, 4) && !memcmp(&a->final_ratio, &b->final_ratio, 4) &&
         !memcmp(&a->peak_ratio, &b->peak_ratio, 4);
}

/* Tile t of a map in row-major order: indices t*tile .. (clipped). */
static int write_tile(ds_store *s, int64_t t, int64_t tile, int64_t nx, int64_t ny, int64_t steps,
                      int random) {
  int64_t np = nx * ny, lo = t * tile, hi = lo + tile < np ? lo + tile : np;
  int64_t *idx = malloc((size_t)(hi - lo) * sizeof *idx);
  ds_map_rec *r = malloc((size_t)(hi - lo) * sizeof *r);
  for (int64_t i = lo; i < hi; i++) {
    idx[i - lo] = i;
    r[i - lo] = pixel(i, nx, ny, steps, random);
  }
  int rc = ds_store_write_map(s, hi - lo, idx, r);
  free(idx), free(r);
  return rc;
}

static void rmstore(const char *p) {
  char b[600];
  unlink(p);
  snprintf(b, sizeof b, "%s.journal", p);
  unlink(b);
  snprintf(b, sizeof b, "%s.tmp", p);
  unlink(b);
}

/* ---- basics ---------------------------------------------------------------- */

static void test_basics(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/basic.h5", dir);
  rmstore(path);
  grid2 g;
  grid_make(&g, 40, 70); /* 2800 pixels, not a multiple of the tile */
  int64_t nx = 70, ny = 40, np = nx * ny, steps = 1000;
  ds_store *s = NULL;
  CHECK(create_map(path, &g, steps, &s) == DS_OK, "create: %s", ds_errmsg());
  if (!s) return;
  CHECK(ds_store_is_map(s) == 1, "is_map");
  uint8_t *o = NULL;
  int64_t n = 0;
  CHECK(ds_store_read_map_outcomes(s, &o, &n) == DS_OK && n == np, "outcomes of a new map");
  int all_unset = 1;
  for (int64_t i = 0; o && i < n; i++) all_unset &= o[i] == DS_MAP_UNSET;
  CHECK(all_unset, "new map all unset");
  free(o);
  for (int64_t t = 0; t < 2; t++) CHECK(write_tile(s, t, 1024, nx, ny, steps, 0) == DS_OK, "tile");
  /* inferred fills: over trained pixels (dropped) and unset ones (kept) */
  int64_t idx[4] = {5, 6, 2500, 2501};
  ds_map_rec inf[4];
  for (int i = 0; i < 4; i++) {
    memset(&inf[i], 0, sizeof inf[i]);
    inf[i].outcome = DS_MAP_INFERRED | 1;
    inf[i].step = -1;
    inf[i].measure = NAN;
  }
  CHECK(ds_store_write_map(s, 4, idx, inf) == DS_OK, "inferred: %s", ds_errmsg());
  CHECK(ds_store_read_map_outcomes(s, &o, &n) == DS_OK, "writer outcomes");
  CHECK(o && o[5] == pixel(5, nx, ny, steps, 0).outcome && o[2500] == (DS_MAP_INFERRED | 1) &&
            o[2047] != DS_MAP_UNSET && o[2048] == DS_MAP_UNSET,
        "writer outcomes folded (%u %u)", o ? o[5] : 0, o ? o[2500] : 0);
  free(o);
  /* bad input refused */
  int64_t bad[2] = {9, 3};
  CHECK(ds_store_write_map(s, 2, bad, inf) == DS_EINTERNAL, "descending indices refused");
  ds_clear_error();
  ds_map_rec big = inf[0];
  big.outcome = 0;
  big.step = 70000;
  CHECK(ds_store_write_map(s, 1, idx, &big) == DS_EINTERNAL, "step over uint16 refused");
  ds_clear_error();
  /* the row readers refuse a map store with a clear message */
  ds_summary_row *rows = NULL;
  CHECK(ds_store_read_summary(s, &rows, &n) == DS_EINPUT && strstr(ds_errmsg(), "is a map store") &&
            strstr(ds_errmsg(), "2800 points"),
        "read_summary refused: %s", ds_errmsg());
  ds_clear_error();
  CHECK(ds_store_publish(s, 1) == DS_OK, "publish: %s", ds_errmsg());
  {
    ds_map_rec *pr = NULL, w5 = pixel(5, nx, ny, steps, 0);
    CHECK(ds_store_read_map(s, &pr, &n) == DS_OK && n == np && pr[2500].outcome == (DS_MAP_INFERRED | 1) &&
              pr[2500].step == -1 && isnan(pr[2500].measure) && same_rec(&pr[5], &w5) &&
              pr[2700].outcome == DS_MAP_UNSET && isnan(pr[2700].peak_ratio),
          "published: inferred kept where unset, dropped over trained");
    free(pr);
  }
  /* the trained pixel 5 still wins after the publish applied everything */
  for (int64_t t = 2; t < 3; t++) CHECK(write_tile(s, t, 1024, nx, ny, steps, 0) == DS_OK, "tile 3");
  inf[0].outcome = DS_MAP_INFERRED | 0;
  int64_t i2600 = 2600;
  CHECK(ds_store_write_map(s, 1, &i2600, inf) == DS_OK, "inferred over a trained journaled pixel");
  CHECK(ds_store_finish(s, "2024-01-01T00:00:00Z", 1.0, 2.0) == DS_OK, "finish: %s", ds_errmsg());
  CHECK(ds_store_close(s) == DS_OK, "close");
  struct stat st;
  char jp[600];
  snprintf(jp, sizeof jp, "%s.journal", path);
  CHECK(stat(jp, &st) != 0, "journal removed at close");
  /* a reader */
  CHECK(ds_store_open(path, &s) == DS_OK, "open: %s", ds_errmsg());
  if (!s) return;
  CHECK(ds_store_is_map(s) == 1, "reader is_map");
  int na = 0, lv = -1, ra[2];
  int64_t *shape = NULL;
  CHECK(ds_store_map_info(s, &na, &shape, &lv, ra) == DS_OK && na == 2 && shape[0] == ny &&
            shape[1] == nx && lv == 0,
        "map_info");
  free(shape);
  char **an = NULL;
  double **av = NULL;
  CHECK(ds_store_read_map_axes(s, &na, &an, &av) == DS_OK && na == 2 && !strcmp(an[1], "lr_out") &&
            av[0][ny - 1] == g.vals[0][ny - 1] && av[1][3] == g.vals[1][3],
        "map axes");
  for (int a = 0; an && a < na; a++) free(an[a]), free(av[a]);
  free(an), free(av);
  char **nm = NULL;
  double *vals = NULL;
  int64_t npv = 0;
  CHECK(ds_store_read_axes(s, &na, &nm, &vals, &npv) == DS_EINPUT, "read_axes refused");
  ds_clear_error();
  ds_map_rec *r = NULL;
  CHECK(ds_store_read_map(s, &r, &n) == DS_OK && n == np, "read_map: %s", ds_errmsg());
  int64_t wrong = 0;
  for (int64_t i = 0; r && i < np; i++) {
    ds_map_rec want = pixel(i, nx, ny, steps, 0);
    wrong += !same_rec(&r[i], &want); /* trained tiles replaced the inferred pixels 2500, 2501 */
  }
  CHECK(wrong == 0, "%lld pixels differ", (long long)wrong);
  free(r);
  char state[32] = "";
  CHECK(ds_store_attr(s, "run_state", state, sizeof state) == DS_OK && !strcmp(state, "complete"),
        "run_state %s", state);
  ds_store_close(s);
  int64_t nbad = -1;
  FILE *dn = fopen("/dev/null", "w");
  CHECK(ds_store_verify(path, dn, &nbad) == DS_OK && nbad == 0, "verify clean: %lld", (long long)nbad);
  fclose(dn);
  /* a map store resumes (no /summary rows needed) */
  CHECK(ds_store_resume(path, &s) == DS_OK, "resume: %s", ds_errmsg());
  if (s) {
    CHECK(ds_store_read_map_outcomes(s, &o, &n) == DS_OK &&
              o[2500] == pixel(2500, nx, ny, steps, 0).outcome && o[2600] == pixel(2600, nx, ny, steps, 0).outcome &&
              o[5] == pixel(5, nx, ny, steps, 0).outcome && o[2800 - 1] != DS_MAP_UNSET,
          "resumed outcomes %s %u %u", ds_errmsg(), o ? o[2500] : 0, o ? o[5] : 0);
    free(o);
    CHECK(ds_store_close(s) == DS_OK, "close resumed");
  }
  grid_free(&g);
  rmstore(path);
}

/* ---- kill -9 mid-stream ---------------------------------------------------- */

/* The child resumes (or creates) the store and writes tiles from `from`,
 * publishing often, and reports each tile once ds_store_write_map returned
 * (journaled) on the pipe; the parent SIGKILLs it after `after` reports. */
static void test_kill(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/kill.h5", dir);
  rmstore(path);
  int64_t nx = 256, ny = 128, np = nx * ny, tile = 256, ntiles = np / tile, steps = 500;
  grid2 g;
  grid_make(&g, ny, nx);
  ds_store *s = NULL;
  CHECK(create_map(path, &g, steps, &s) == DS_OK, "create: %s", ds_errmsg());
  if (!s) return;
  CHECK(ds_store_close(s) == DS_OK, "close");
  int64_t acked = 0;
  int kills = 0;
  signal(SIGPIPE, SIG_IGN); /* a go-ahead to a child that has finished: EPIPE, not death */
  for (int round = 0; acked < ntiles && round < 12; round++) {
    /* fd: the child's acknowledgements; go: the parent's go-aheads, so the
     * child runs at most one tile ahead of what the parent has read (on a
     * loaded machine it otherwise finished the map before the kill came, and
     * later rounds had too few tiles left for a kill to land) */
    int fd[2], go[2];
    if (pipe(fd) != 0) break;
    if (pipe(go) != 0) break;
    pid_t pid = fork();
    if (pid == 0) {
      close(fd[0]);
      close(go[1]);
      int written = 0;
      ds_store *w = NULL;
      if (ds_store_resume(path, &w) != DS_OK) _exit(3);
      ds_store_set_publish_every(w, 0.0);
      uint8_t *o = NULL;
      int64_t n = 0;
      if (ds_store_read_map_outcomes(w, &o, &n) != DS_OK) _exit(4);
      for (int64_t t = 0; t < ntiles; t++) {
        if (o[t * tile] != DS_MAP_UNSET) continue; /* done: resume per tile */
        char tok;
        if (written++ > 0 && read(go[0], &tok, 1) != 1) _exit(8); /* the parent read the last */
        if (write_tile(w, t, tile, nx, ny, steps, 0) != DS_OK) _exit(5);
        int64_t tt = t;
        if (write(fd[1], &tt, sizeof tt) != (ssize_t)sizeof tt) _exit(6);
        if (t % 3 == 0 && ds_store_publish(w, 0) != DS_OK) _exit(7);
      }
      ds_store_close(w);
      _exit(0);
    }
    close(fd[1]);
    close(go[0]);
    int64_t want = 5 + round * 3, got = 0, t;
    while (got < want && read(fd[0], &t, sizeof t) == (ssize_t)sizeof t)
      if (++got < want && write(go[1], "g", 1) != 1) break;
    if (got == want) {
      kill(pid, SIGKILL);
      kills++;
    }
    close(go[1]); /* a child still running (no kill) sees EOF only if it wants more */
    while (read(fd[0], &t, sizeof t) == (ssize_t)sizeof t) got++; /* reported before the kill */
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    acked += got;
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
          "child status %d", status);
    /* whatever was acknowledged is in the store after a resume */
    ds_store *r = NULL;
    CHECK(ds_store_resume(path, &r) == DS_OK, "resume after kill %d: %s", kills, ds_errmsg());
    if (!r) break;
    CHECK(ds_store_close(r) == DS_OK, "close after resume");
    CHECK(ds_store_open(path, &r) == DS_OK, "open");
    ds_map_rec *rec = NULL;
    int64_t n = 0;
    CHECK(r && ds_store_read_map(r, &rec, &n) == DS_OK && n == np, "read_map after kill");
    int64_t done_tiles = 0, lost = 0, wrong = 0;
    for (int64_t tt = 0; rec && tt < ntiles; tt++) {
      int done = rec[tt * tile].outcome != DS_MAP_UNSET;
      done_tiles += done;
      for (int64_t i = tt * tile; done && i < (tt + 1) * tile; i++) {
        ds_map_rec want = pixel(i, nx, ny, steps, 0);
        wrong += !same_rec(&rec[i], &want);
      }
    }
    lost = acked - done_tiles; /* every acknowledged tile is there (a tile written but not yet
                                  acknowledged when the kill came may be there too) */
    CHECK(lost <= 0 && wrong == 0, "round %d: %lld acknowledged tiles, %lld in the store, %lld "
          "pixels wrong", round, (long long)acked, (long long)done_tiles, (long long)wrong);
    acked = done_tiles;
    free(rec);
    ds_store_close(r);
  }
  CHECK(kills >= 3, "only %d kills landed", kills);
  CHECK(acked == ntiles, "map complete after the rounds (%lld of %lld tiles)", (long long)acked,
        (long long)ntiles);
  printf("kill test: %d SIGKILLs mid-stream, nothing journaled lost\n", kills);
  grid_free(&g);
  rmstore(path);
}

/* ---- bytes per point; a corrupted chunk --------------------------------------- */

static double fill_copy_s, fill_sync_s, fill_journal_s;
static double fill_map(const char *path, int64_t n, int64_t tile, int64_t pub_every, int random,
                       double *publish_s, int64_t *publishes) {
  grid2 g;
  grid_make(&g, n, n);
  ds_store *s = NULL;
  rmstore(path);
  if (create_map(path, &g, 1000, &s) != DS_OK) {
    fprintf(stderr, "%s\n", ds_errmsg());
    grid_free(&g);
    return -1;
  }
  ds_store_set_publish_every(s, 1e9);
  int64_t ntiles = (n * n + tile - 1) / tile;
  for (int64_t t = 0; t < ntiles; t++) {
    if (write_tile(s, t, tile, n, n, 1000, random) != DS_OK) return -1;
    if ((t + 1) % pub_every == 0 && ds_store_publish(s, 1) != DS_OK) return -1;
  }
  ds_store_finish(s, "2024-01-01T00:00:00Z", 0, 0);
  ds_store_stats st;
  ds_store_get_stats(s, &st);
  *publish_s = st.publish_s;
  *publishes = st.publishes;
  fill_copy_s = st.copy_s;
  fill_sync_s = st.sync_s;
  fill_journal_s = st.journal_s;
  ds_store_close(s);
  grid_free(&g);
  struct stat fs;
  return stat(path, &fs) == 0 ? (double)fs.st_size / (double)(n * n) : -1;
}

static void test_bytes_and_verify(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/bytes.h5", dir);
  double pub = 0;
  int64_t npub = 0;
  double bpp = fill_map(path, 512, 1024, 16, 1, &pub, &npub);
  printf("512 x 512 map, random measures, 1024-point tiles, %lld publishes: %.2f bytes per point "
         "on disk\n", (long long)npub, bpp);
  CHECK(bpp > 0 && bpp <= 16.0, "bytes per point %.2f", bpp);
  /* corrupt bytes inside a chunk of /map/measure: verify names it */
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = f >= 0 ? H5Dopen2(f, "map/measure", H5P_DEFAULT) : -1;
  hsize_t off[2] = {256, 256};
  haddr_t addr = 0;
  hsize_t size = 0;
  unsigned mask = 0;
  int ok = d >= 0 && H5Dget_chunk_info_by_coord(d, off, &mask, &addr, &size) >= 0 && size > 64;
  if (d >= 0) H5Dclose(d);
  if (f >= 0) H5Fclose(f);
  CHECK(ok, "chunk info");
  if (ok) {
    FILE *fp = fopen(path, "r+b");
    unsigned char b[8];
    fseek(fp, (long)(addr + size / 2), SEEK_SET);
    CHECK(fread(b, 1, 8, fp) == 8, "read");
    for (int i = 0; i < 8; i++) b[i] ^= 0x5a;
    fseek(fp, (long)(addr + size / 2), SEEK_SET);
    fwrite(b, 1, 8, fp);
    fclose(fp);
    char out[8192] = "";
    FILE *mem = fmemopen(out, sizeof out - 1, "w");
    int64_t nbad = 0;
    CHECK(ds_store_verify(path, mem, &nbad) == DS_OK, "verify runs");
    fclose(mem);
    CHECK(nbad >= 1 && strstr(out, "/map/measure chunk of pixels [256-511, 256-511]"),
          "verify finds the corrupted chunk: %s", out);
  }
  rmstore(path);
}

/* ---- --make, --bench ---------------------------------------------------------------- */

static int make_store(const char *path, int64_t nx, int64_t ny, int partial) {
  grid2 g;
  grid_make(&g, ny, nx);
  ds_store *s = NULL;
  if (create_map(path, &g, 1000, &s) != DS_OK) {
    fprintf(stderr, "test_mapstore: %s\n", ds_errmsg());
    return 1;
  }
  int64_t ntiles = (nx * ny + 1023) / 1024;
  for (int64_t t = 0; t < (partial ? ntiles / 2 : ntiles); t++)
    if (write_tile(s, t, 1024, nx, ny, 1000, 0) != DS_OK) return 1;
  if (!partial && ds_store_finish(s, "2024-01-01T00:00:00Z", 0, 0) != DS_OK) return 1;
  int rc = ds_store_close(s);
  grid_free(&g);
  return rc == DS_OK ? 0 : 1;
}

static int bench(int64_t n, int64_t tile, int64_t every) {
  char path[512];
  snprintf(path, sizeof path, "%s/dynsweep-mapbench-%d.h5", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (int)getpid());
  double t0 = ds_now(), pub = 0;
  int64_t npub = 0;
  double bpp = fill_map(path, n, tile, every, 1, &pub, &npub);
  double wall = ds_now() - t0, pts = (double)n * (double)n;
  double apply = pub - fill_copy_s - fill_sync_s;
  printf("map %lld x %lld, %lld-point tiles, publish every %lld tiles: %lld publishes, %.2f s "
         "publishing (%.3g points/s) of which copy %.2f s, fsync+rename %.2f s, HDF5 apply %.2f s "
         "(%.3g points/s); journal appends %.2f s (%.3g points/s); %.2f s wall (%.3g points/s); "
         "%.2f bytes/point\n", (long long)n, (long long)n, (long long)tile, (long long)every,
         (long long)npub, pub, pts / pub, fill_copy_s, fill_sync_s, apply, pts / apply,
         fill_journal_s, pts / fill_journal_s, wall, pts / wall, bpp);
  rmstore(path);
  return bpp > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc >= 5 && !strcmp(argv[1], "--make"))
    return make_store(argv[2], atoll(argv[3]), atoll(argv[4]), argc > 5 && !strcmp(argv[5], "--partial"));
  if (argc >= 3 && !strcmp(argv[1], "--bench"))
    return bench(atoll(argv[2]), argc > 3 ? atoll(argv[3]) : 1024, argc > 4 ? atoll(argv[4]) : 256);
  char dir[] = "/tmp/ds_mapstore_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  double t0 = ds_now();
  test_basics(dir);
  test_kill(dir);
  test_bytes_and_verify(dir);
  printf("test_mapstore: %.1f s\n", ds_now() - t0);
  rmdir(dir);
  return ds_check_report("test_mapstore");
}
