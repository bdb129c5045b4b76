/* estimate.c -- a sweep's time: each point's seconds from the probed rates
 * (ds_point_seconds), the wall time on R ranks (rank 0 schedules, R - 1
 * workers take the longest points first, as the scheduler does), and what
 * `plan` and `submit --dry-run` print of it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config_internal.h"
#include "dynsweep/models.h"
#include "dynsweep/util.h"

/* Seconds from `mpirun` to the first point (MPI start, the store created) and
 * after the last (the store published): measured ~0.6 s on the demo host. */
#define EST_START_S 0.6

int ds_sweep_estimate(const ds_sweep *sw, const ds_probe *pr, double rank_mem_bytes, ds_estimate *e) {
  memset(e, 0, sizeof *e);
  e->n = ds_sweep_npoints(sw);
  e->sec = malloc(sizeof(double) * (e->n ? e->n : 1));
  e->team = malloc(sizeof(int) * (e->n ? e->n : 1));
  e->dist = malloc(e->n ? e->n : 1);
  if (!e->sec || !e->team || !e->dist) {
    ds_estimate_free(e);
    return ds_fail(DS_ENOMEM, "out of memory for the estimate of %lld points", (long long)e->n);
  }
  for (int64_t i = 0; i < e->n; i++) {
    ds_point p;
    int rc = ds_sweep_point(sw, i, &p);
    if (rc) {
      ds_estimate_free(e);
      return rc;
    }
    int dims[65], wide = 0;
    if (p.cfg.model.depth >= 1 && p.cfg.model.depth <= 64) {
      ds_point_dims(&p.cfg, dims);
      for (int l = 0; l <= p.cfg.model.depth; l++) wide = dims[l] > wide ? dims[l] : wide;
    }
    e->sec[i] = ds_point_seconds(&p.cfg, pr);
    e->team[i] = ds_point_team_size(&p.cfg, rank_mem_bytes);
    /* a CNN on a team splits its samples unless train.distributed is off
     * (src/worker/point.c): its work divides over the team as an MLP's does
     * on the grid */
    e->dist[i] = p.cfg.train.distributed == DS_DIST_ON ||
                 (p.cfg.train.distributed == DS_DIST_AUTO &&
                  (wide >= DS_DIST_AUTO_WIDTH || p.cfg.model.type == DS_MODEL_CNN));
    /* a team trains on every member (the same steps) unless distributed */
    e->core_s += e->dist[i] ? e->sec[i] : e->sec[i] * e->team[i];
  }
  return DS_OK;
}

void ds_estimate_free(ds_estimate *e) {
  free(e->sec), free(e->team), free(e->dist);
  e->sec = NULL, e->team = NULL, e->dist = NULL;
}

/* ---- the schedule: longest first onto the earliest free worker(s) ---- */

static const double *g_sec; /* for the sort */
static int by_time(const void *a, const void *b) {
  double x = g_sec[*(const int64_t *)a], y = g_sec[*(const int64_t *)b];
  return x < y ? 1 : x > y ? -1 : 0;
}

static void sift_down(double *h, int n, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && h[l] < h[m]) m = l;
    if (r < n && h[r] < h[m]) m = r;
    if (m == i) return;
    double t = h[i];
    h[i] = h[m], h[m] = t, i = m;
  }
}
static void sift_up(double *h, int i) {
  while (i > 0 && h[(i - 1) / 2] > h[i]) {
    double t = h[i];
    h[i] = h[(i - 1) / 2], h[(i - 1) / 2] = t, i = (i - 1) / 2;
  }
}

double ds_estimate_wall(const ds_estimate *e, int ranks) {
  int workers = ranks > 1 ? ranks - 1 : 1;
  if (e->n == 0) return EST_START_S;
  double enough = 0; /* more workers than every point's team at once: idle */
  for (int64_t i = 0; i < e->n && enough < workers; i++) enough += e->team[i];
  if (enough < workers) workers = (int)enough;
  int64_t *ord = malloc(sizeof(int64_t) * e->n);
  double *h = calloc((size_t)workers, sizeof(double)), *pop = malloc(sizeof(double) * workers);
  double *dur = malloc(sizeof(double) * e->n);
  if (!ord || !h || !pop || !dur) {
    free(ord), free(h), free(pop), free(dur);
    return EST_START_S + e->core_s / workers; /* the even share */
  }
  for (int64_t i = 0; i < e->n; i++) {
    int t = e->team[i];
    while (t > workers) t /= 2; /* as the scheduler caps auto teams */
    dur[i] = e->dist[i] && t > 1 ? e->sec[i] / t : e->sec[i];
    ord[i] = i;
  }
  g_sec = dur;
  qsort(ord, (size_t)e->n, sizeof ord[0], by_time);
  double end = 0;
  for (int64_t j = 0; j < e->n; j++) {
    int64_t i = ord[j];
    int t = e->team[i];
    while (t > workers) t /= 2;
    double start = 0;
    for (int k = 0; k < t; k++) { /* the t earliest-free workers, together */
      pop[k] = h[0];
      start = pop[k] > start ? pop[k] : start;
      h[0] = h[workers - 1 - k];
      sift_down(h, workers - 1 - k, 0);
    }
    double fin = start + dur[i];
    for (int k = 0; k < t; k++) {
      h[workers - t + k] = fin;
      sift_up(h, workers - t + k);
    }
    end = fin > end ? fin : end;
  }
  free(ord), free(h), free(pop), free(dur);
  return EST_START_S + end;
}

/* "4.2 s", "2.5 min", "12 min", "3.1 h", "4.5 d", "278 d" */
void ds_estimate_fmt(double s, char *buf, size_t n) {
  if (s < 99.5) snprintf(buf, n, "%.2g s", s);
  else if (s < 599.5) snprintf(buf, n, "%.1f min", s / 60);
  else if (s < 5940) snprintf(buf, n, "%.0f min", s / 60);
  else if (s < 86400 * 3) snprintf(buf, n, "%.1f h", s / 3600);
  else snprintf(buf, n, s < 86400 * 99.5 ? "%.1f d" : "%.0f d", s / 86400);
}

/* Two lines: where the rates come from, and three of them. */
void ds_estimate_basis(const ds_probe *pr, char *buf, size_t n) {
  char when[32], rates[200];
  time_t t = (time_t)pr->when;
  strftime(when, sizeof when, "%Y-%m-%d %H:%MZ", gmtime(&t));
  ds_probe_basis(pr, rates, sizeof rates);
  if (pr->nominal) {
    snprintf(buf, n, "  NOT calibrated: nominal rates, every GEMM at 5 GFLOP/s (a rough guess)");
    return;
  }
  snprintf(buf, n, "  calibrated on this host by a probe (%s, %s, load %.1f):\n  %s", when,
           pr->cached ? "cached" : "run now", pr->load, rates);
}

/* The cache file, ~ for $HOME, on a line of its own (or why there is none). */
static void cache_line(FILE *f, const ds_probe *pr) {
  const char *h = getenv("HOME");
  size_t hl = h ? strlen(h) : 0;
  if (pr->note[0]) fprintf(f, "  (%s)\n", pr->note);
  else if (hl > 1 && !strncmp(pr->path, h, hl) && pr->path[hl] == '/')
    fprintf(f, "  cache ~%s\n", pr->path + hl);
  else fprintf(f, "  cache %s\n", pr->path);
}

/* A host busier than its CPUs now runs points slower than the estimate. */
static void load_line(FILE *f) {
  double la = 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  FILE *l = fopen("/proc/loadavg", "r");
  if (!l) return;
  if (fscanf(l, "%lf", &la) != 1) la = 0;
  fclose(l);
  if (cpus > 0 && la > cpus)
    fprintf(f, "  this host is busy now (load %.1f on %ld CPUs): a run here shares its cores\n"
               "  and may take up to ~%.1fx longer\n",
            la, cpus, la / cpus);
}

void ds_estimate_print(FILE *f, const ds_estimate *e, const ds_probe *pr) {
  char basis[800], tot[32], t[32];
  ds_estimate_basis(pr, basis, sizeof basis);
  ds_estimate_fmt(e->core_s, tot, sizeof tot);
  fprintf(f, "time: about %s of work (%.4g core-seconds; every step counted: points\n"
             "  that diverge or reach train.tol stop sooner),\n%s\n",
          tot, e->core_s, basis);
  cache_line(f, pr);
  /* ranks 1, 2, 4, ... until every point has its workers (rank 0 schedules) */
  int maxteam = 1;
  for (int64_t i = 0; i < e->n; i++) maxteam = e->team[i] > maxteam ? e->team[i] : maxteam;
  double need = (double)e->n * maxteam + 1;
  char l1[128] = "  ranks", l2[128] = "  wall ";
  int step = need <= 256 ? 2 : need <= 65536 ? 4 : 8; /* at most 9 columns */
  for (int r = 1, k = 0; k < 9; r *= step, k++) {
    int last = r >= need || k == 8;
    if (last && r > need) r = (int)need; /* the first rank count with nothing to wait for */
    ds_estimate_fmt(ds_estimate_wall(e, r), t, sizeof t);
    size_t a = strlen(l1), b = strlen(l2);
    snprintf(l1 + a, sizeof l1 - a, " %7d", r);
    snprintf(l2 + b, sizeof l2 - b, " %7s", t);
    if (last) break;
  }
  fprintf(f, "%s\n%s\n  (rank 0 schedules, ranks - 1 work, longest points first; 1 rank runs them\n"
             "  itself; +%.1f s to start and publish; each rank on a core of its own)\n",
          l1, l2, EST_START_S);
  load_line(f);
}

/* submit --dry-run: the --time to ask for on `ranks` ranks and, for the time
 * limit given, how many jobs of the chain: each job works from its start
 * (EST_JOB_START_S, MPI and the store) until the drain signal. */
#define EST_SAFETY 1.5
#define EST_JOB_START_S 30.0
void ds_estimate_print_submit(FILE *f, const ds_estimate *e, const ds_probe *pr, int ranks, const char *ranks_why,
                              const char *time, int time_given, long time_s, long signal_s, int signal_given,
                              long max_jobs) {
  char basis[800], w[32];
  ds_estimate_basis(pr, basis, sizeof basis);
  double wall = ds_estimate_wall(e, ranks);
  ds_estimate_fmt(wall, w, sizeof w);
  /* the shortest limit in whole minutes that leaves the work x safety after
   * the start and the drain (--signal-time, else submit's default for it) */
  long minutes = 1;
  for (; minutes < 525600; minutes++) {
    long lim = minutes * 60, sig = signal_given ? signal_s : (lim >= 600 ? 90 : lim / 3);
    if (lim - sig - EST_JOB_START_S >= wall * EST_SAFETY) break;
  }
  fprintf(f, "estimate: %s on %d rank(s) (%s)\n  for %.4g core-seconds of work,\n%s\n", w, ranks, ranks_why,
          e->core_s, basis);
  cache_line(f, pr);
  fprintf(f, "suggested: --time %ld:%02ld:00 (one job: the estimate x %.1f, %.0f s to start and\n"
             "  the drain, in whole minutes; compute nodes slower than this host need more)\n",
          minutes / 60, minutes % 60, EST_SAFETY, EST_JOB_START_S);
  double useful = (double)time_s - (double)signal_s - EST_JOB_START_S;
  if (useful <= 0) {
    fprintf(f, "with --time %s: too short: ~%.0f s to start and %ld s to drain leave no time\n"
               "  to work\n", time, EST_JOB_START_S, signal_s);
    return;
  }
  long jobs = (long)ceil(wall * EST_SAFETY / useful);
  if (jobs < 1) jobs = 1;
  fprintf(f, "with --time %s%s: %ld job(s) expected\n"
             "  (each works ~%.0f s: its limit less %.0f s to start and %ld s to drain)%s\n",
          time, time_given ? "" : " (the default)", jobs, useful, EST_JOB_START_S,
          signal_s, jobs > max_jobs ? ";\n  more than --max-jobs: the chain stops before the sweep is done" : "");
}

/* ---- map sweeps (issue 13) ----------------------------------------------------- */

/* Pixels of sw's map on the refined axes' grid of every 2^s-th value (s =
 * refine_levels: the coarse grid; s = 0: all), times the other axes' values. */
static double grid_pixels(const ds_sweep *sw, int64_t pixels, int s) {
  int two = sw->refine_axes[1] >= 0;
  int64_t na = sw->axes[sw->refine_axes[0]].nvals, nb = two ? sw->axes[sw->refine_axes[1]].nvals : 1;
  double slices = (double)pixels / ((double)na * nb), S = ldexp(1.0, s);
  return ((double)(na - 1) / S + 1) * (two ? (double)(nb - 1) / S + 1 : 1) * slices;
}

void ds_map_bytes(const ds_sweep *sw, ds_map_cost *mc) {
  memset(mc, 0, sizeof *mc);
  mc->pixels = ds_sweep_npoints(sw);
  mc->tile = ds_map_tile_points(sw);
  mc->rank0_bytes = (double)mc->pixels; /* one outcome byte per pixel */
  mc->disk_bytes = DS_MAP_DISK_BYTES * (double)mc->pixels;
  mc->trained_lo = mc->trained_hi = (double)mc->pixels;
  if (sw->refine_levels > 0) {
    int two = sw->refine_axes[1] >= 0;
    int64_t na = sw->axes[sw->refine_axes[0]].nvals, nb = two ? sw->axes[sw->refine_axes[1]].nvals : 1;
    double slices = (double)mc->pixels / ((double)na * nb), S = ldexp(1.0, sw->refine_levels);
    double ca = (double)(na - 1) / S + 1, cb = two ? (double)(nb - 1) / S + 1 : 1;
    double coarse = grid_pixels(sw, mc->pixels, sw->refine_levels);
    /* a straight boundary across the coarse grid splits ~max(ca, cb) cells per
     * level, each adding ~3 new points (5 midpoints, shared with neighbours) */
    double per = 0, side = ca > cb ? ca : cb;
    /* one axis: a boundary crosses a fixed number of intervals, one midpoint each */
    for (int k = 1; k <= sw->refine_levels; k++) per += two ? 3 * side * ldexp(1.0, k - 1) : 2;
    mc->trained_lo = coarse + per * slices;
    if (mc->trained_lo > mc->pixels) mc->trained_lo = (double)mc->pixels;
    mc->coarse = coarse;
    mc->rank0_bytes += 8 * mc->trained_lo; /* the level's point list (grows with a rough boundary) */
  }
  mc->rank0_bytes += 64.0 * 1024 * 1024; /* the process itself, HDF5's caches */
}

/* New pixels at refinement level k of sw (k >= 1): the level's grid less the one before. */
static double level_pixels(const ds_sweep *sw, const ds_map_cost *mc, int k) {
  int L = sw->refine_levels;
  return grid_pixels(sw, mc->pixels, L - k) - grid_pixels(sw, mc->pixels, L - k + 1);
}

/* plan --from: the levels trained so far, then each deeper level the last
 * growth a level times the one before (at most the level's new pixels);
 * returns the estimate of all trained pixels */
static double levels_print(FILE *f, const ds_sweep *sw, const ds_map_cost *mc, const ds_map_levels *from) {
  int known = from->levels < sw->refine_levels ? from->levels : sw->refine_levels;
  double g = (double)from->trained[from->levels] / (double)from->trained[from->levels - 1];
  double total = mc->coarse, c = 0;
  fprintf(f, "  from %s, %d level%s trained%s:\n   ", from->path, from->levels,
          from->levels == 1 ? "" : "s", from->running ? " (the next still running: not used)" : "");
  for (int k = 1; k <= known; k++) {
    c = (double)from->trained[k];
    total += c;
    fprintf(f, " %lld", (long long)from->trained[k]);
  }
  fprintf(f, " (growth");
  for (int k = 2; k <= from->levels; k++)
    fprintf(f, " %.2fx", (double)from->trained[k] / (double)from->trained[k - 1]);
  fprintf(f, ")\n");
  if (known < sw->refine_levels) {
    fprintf(f, "  at %.2fx a level, levels %d..%d about", g, known + 1, sw->refine_levels);
    for (int k = known + 1; k <= sw->refine_levels; k++) {
      double cap = level_pixels(sw, mc, k);
      c = c * g < cap ? c * g : cap;
      total += c;
      fprintf(f, " %.0f", c);
    }
    fprintf(f, "\n");
  }
  if (total > (double)mc->pixels) total = (double)mc->pixels;
  fprintf(f, "  so about %.0f trained (%.2g%%)\n", total, 100.0 * total / (double)mc->pixels);
  return total;
}

int ds_map_plan_print(FILE *f, const ds_sweep *sw, const ds_probe *pr, double has, const char *has_why,
                      const ds_map_levels *from, double tile_sec) {
  ds_map_cost mc;
  ds_map_bytes(sw, &mc);
  ds_point p;
  DS_TRY(ds_sweep_point(sw, 0, &p));
  double sec = ds_point_seconds(&p.cfg, pr);
  fprintf(f, "map: %lld pixels in tiles of %lld points\n  ", (long long)mc.pixels, (long long)mc.tile);
  for (int a = 0; a < sw->naxes; a++)
    fprintf(f, "%s%s %d", a ? " x " : "", sw->axes[a].name, sw->axes[a].nvals);
  fprintf(f, "\n");
  if (sw->refine_levels > 0) {
    fprintf(f, "refined over %s%s%s, %d levels:\n  coarse grid %.0f pixels; with a smooth "
               "boundary about %.0f trained\n  (%.2g%%), a rough one more, at most all\n",
            sw->axes[sw->refine_axes[0]].name, sw->refine_axes[1] >= 0 ? " x " : "",
            sw->refine_axes[1] >= 0 ? sw->axes[sw->refine_axes[1]].name : "", sw->refine_levels,
            mc.coarse, mc.trained_lo, 100.0 * mc.trained_lo / (double)mc.pixels);
    if (from) { /* the measured growth instead of the smooth boundary's */
      double est = levels_print(f, sw, &mc, from);
      mc.rank0_bytes += 8 * (est - mc.trained_lo);
      mc.trained_lo = est;
    }
  }
  char t1[32], t2[32], hb[32], rb[32], db[32];
  if (tile_sec > 0) { /* measured on this host: the time the map will take */
    fprintf(f, "time: %.3g s per point in tiles (point 0's net, every step counted,\n"
               "  measured here; %.3g s one at a time; %s):\n",
            tile_sec, sec, sw->map_early_stop ? "early_stop: diverging ones stop early"
                                              : "a pixel stops once non-finite");
    sec = tile_sec;
  } else {
    char why[200];
    fprintf(f, "time: %.3g s per point one at a time (point 0, every step counted; tiles\n"
               "  trained together are faster; %s):\n", sec,
            sw->map_early_stop ? "early_stop: diverging ones stop early"
                               : "a pixel stops once non-finite");
    if (!ds_net_supported(&p.cfg, DS_TRAINER_TILE, why, sizeof why)) /* models.h */
      fprintf(f, "  (the tile trainer does not take point 0: %s)\n", why);
  }
  ds_estimate_fmt(sec * mc.trained_lo, t1, sizeof t1);
  ds_estimate_fmt(sec * (double)mc.pixels, t2, sizeof t2);
  fprintf(f, "  %s of work%s%s\n", sw->refine_levels ? t1 : t2, sw->refine_levels ? ", dense " : "",
          sw->refine_levels ? t2 : "");
  fprintf(f, "  ranks  ");
  for (int r = 2; r <= 1024; r *= 4) fprintf(f, " %7d", r);
  fprintf(f, "\n  wall   ");
  for (int r = 2; r <= 1024; r *= 4) {
    double n = sw->refine_levels ? mc.trained_lo : (double)mc.pixels;
    double tiles = ceil(n / (double)mc.tile), per_rank = ceil(tiles / (r - 1));
    ds_estimate_fmt(EST_START_S + per_rank * (double)mc.tile * sec, t1, sizeof t1);
    fprintf(f, " %7s", t1);
  }
  fprintf(f, "\n");
  ds_fmt_bytes(rb, sizeof rb, mc.rank0_bytes);
  ds_fmt_bytes(hb, sizeof hb, has);
  ds_fmt_bytes(db, sizeof db, mc.disk_bytes);
  fprintf(f, "memory: rank 0 needs about %s (1 byte per pixel)%s\n  a rank has %s (%s)\n", rb,
          mc.rank0_bytes > has ? ": DOES NOT FIT" : "", hb, has_why);
  fprintf(f, "disk: the store takes at most %s (%d bytes per pixel) plus a copy at\n"
             "  each publish\n", db, DS_MAP_DISK_BYTES);
  return mc.rank0_bytes > has ? ds_fail(DS_EINPUT, "%s: the map needs %s at rank 0, a rank has %s "
                                        "(%s); use fewer pixels", sw->path, rb, hb, has_why)
                              : DS_OK;
}
