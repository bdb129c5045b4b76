/* tilerun.c -- a map tile on a worker (include/dynsweep/worker.h,
 * ds_worker_train_tile): the tiles' training policy (which points train
 * together through ds_tile_train, which one at a time through
 * ds_worker_run_point) and isolation (a tile in a child process, bisected
 * when the child dies). The scheduler only hands tiles out and takes their
 * records (src/sched/). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/isolate.h"
#include "dynsweep/knobs.h"
#include "dynsweep/map.h"
#include "dynsweep/tile.h"
#include "dynsweep/util.h"
#include "dynsweep/worker.h"

/* Fields that points trained together may differ in. */
static void batch_key(ds_point_cfg *c) {
  c->optimizer.lr = c->optimizer.lr_in = c->optimizer.lr_out = 0;
  c->model.init_offset = 0;
}

/* One point by itself: the worker's trajectory, its loss fed to the record. */
static void train_one(const ds_sweep *sw, ds_point *p, ds_team *team, ds_map_rec *rec) {
  ds_point_cfg *c = &p->cfg;
  c->record.series = DS_REC_LOSS;
  c->record.every = 1;
  c->record.per_decade = 0;
  c->train.diverge_above = INFINITY; /* the record decides, relative to L_0 */
  ds_traj tr;
  ds_point_result res;
  ds_traj_init(&tr);
  int rc = ds_worker_run_point(sw, p, team, &tr, &res, NULL);
  int li = rc == DS_OK ? ds_traj_find(&tr, "loss") : -1;
  const ds_series *ls = li >= 0 ? &tr.s[li] : NULL;
  if (!ls || ls->n == 0) {
    if (rc != DS_OK) ds_clear_error();
    ds_map_rec_failed(rec);
    ds_traj_free(&tr);
    return;
  }
  ds_map_acc acc;
  ds_map_acc_start_rule(&acc, sw->map_early_stop); /* the study's measure, or map.early_stop */
  int64_t T = c->train.steps, t = 0, done = 0;
  for (; t < ls->n && ls->step[t] < T && !done; t++) done = ds_map_acc_add(&acc, ls->val[t * ls->ncols]);
  /* a series that ended early without blowing up (train.tol): the loss stays */
  for (int64_t k = acc.t; !done && k < T; k++) done = ds_map_acc_add(&acc, ls->val[(ls->n - 1) * ls->ncols]);
  ds_map_acc_finish(&acc, T, c->record.spectra.catapult_factor, rec);
  ds_traj_free(&tr);
}

/* Trains the count points idx[] (a tile): runs of points that may be trained
 * together go through ds_tile_train, the others one at a time. Benchmark knob
 * DYNSWEEP_BENCH_NOWORK=1: no training, a record made from the index (to
 * measure rank 0 alone). Test-only fault switch DYNSWEEP_TEST_CRASH=pixel:N
 * (isolate.h): the process dies for real before it trains a tile holding
 * grid index N, whichever trainer the tile would use. */
static void run_tile(const ds_sweep *sw, ds_team *team, const int64_t *idx, int64_t count,
                        ds_map_rec *recs) {
  const char *tc = ds_knob_str(DS_KNOB_TEST_CRASH);
  if (tc && *tc)
    for (int64_t i = 0; i < count; i++) ds_test_crash("pixel", idx[i]);
  if (ds_knob_on(DS_KNOB_BENCH_NOWORK)) {
    for (int64_t i = 0; i < count; i++) {
      memset(&recs[i], 0, sizeof recs[i]);
      recs[i].outcome = (uint8_t)(idx[i] % 3);
      recs[i].step = (int32_t)(idx[i] % 1000);
      recs[i].measure = (float)(idx[i] % 7) - 3.0f;
      recs[i].final_ratio = recs[i].peak_ratio = 1.0f;
    }
    return;
  }
  ds_point *pts = ds_calloc((size_t)(count ? count : 1), sizeof *pts);
  if (!pts) {
    for (int64_t i = 0; i < count; i++) ds_map_rec_failed(&recs[i]);
    ds_clear_error();
    return;
  }
  for (int64_t i = 0; i < count; i++) {
    if (ds_sweep_point(sw, idx[i], &pts[i]) != DS_OK) {
      ds_clear_error();
      pts[i].id = -1;
    }
  }
  for (int64_t a = 0, b; a < count; a = b) {
    ds_point_cfg ka = pts[a].cfg, kb;
    batch_key(&ka);
    for (b = a + 1; b < count && pts[a].id >= 0 && pts[b].id >= 0; b++) {
      kb = pts[b].cfg;
      batch_key(&kb);
      if (memcmp(&ka, &kb, sizeof ka)) break;
    }
    if (pts[a].id < 0) {
      ds_map_rec_failed(&recs[a]);
      continue;
    }
    char why[160];
    /* a run of one point goes through the tile too: a point's bits must not
     * depend on its neighbours (the tile trainer's are batch-independent) */
    if (ds_tile_supported(&pts[a].cfg, why, sizeof why) &&
        ds_tile_train(sw, pts + a, (int)(b - a), recs + a) == DS_OK)
      continue;
    ds_clear_error();
    for (int64_t i = a; i < b; i++) train_one(sw, &pts[i], team, &recs[i]);
  }
  free(pts);
}

/* ---- isolation: a tile in a child process, bisected when the child dies ----
 * (docs/maps.md, "A pixel that kills its process"). The child trains the
 * tile exactly as the worker would (run_tile: the tile trainer's bits do
 * not depend on which points share its batch) and sends the records back;
 * the worker survives the child's death (a signal: out of memory, a
 * segfault; or an exit without its records) and runs each half of the tile
 * in a child of its own, down to single pixels: a pixel whose own child dies
 * is recorded failed, with how it died (ds_pixel_fail, logged by rank 0). A
 * child that exits without its records after a drain request was forwarded
 * to it is no evidence: its pixels come back DS_MAP_UNSET (the tile is not
 * written; it runs again). */

enum { ISO_RECS = 1 };

typedef struct {
  const ds_sweep *sw;
  ds_team *team;
  ds_pixel_fail *fails; /* room for one per pixel of the tile */
  int64_t nfail;
} iso_ctx;

typedef struct {
  iso_ctx *t;
  const int64_t *idx;
  int64_t count;
  ds_map_rec *recs;
  int got;
} iso_part;

static int iso_body(void *arg, ds_iso_chan *ch) { /* in the child */
  iso_part *p = arg;
  run_tile(p->t->sw, p->t->team, p->idx, p->count, p->recs);
  return ds_iso_send(ch, ISO_RECS, p->recs, (size_t)p->count * sizeof *p->recs) ? 1 : 0;
}

static int iso_recv(void *arg, uint32_t type, const char *buf, size_t len) { /* in the parent */
  iso_part *p = arg;
  if (type == ISO_RECS && len == (size_t)p->count * sizeof *p->recs) {
    memcpy(p->recs, buf, len);
    p->got = 1;
  }
  return 0;
}

static void iso_tile(iso_ctx *t, const int64_t *idx, int64_t count, ds_map_rec *recs) {
  if (count <= 0) return;
  iso_part part = {t, idx, count, recs, 0};
  ds_iso_fate f;
  if (ds_isolate_run(iso_body, &part, iso_recv, &part, &f) != DS_OK) {
    /* no child (fork failed): train here, as without isolation */
    ds_warn("%s; the tile is trained in the worker itself", ds_errmsg());
    ds_clear_error();
    run_tile(t->sw, t->team, idx, count, recs);
    return;
  }
  if (part.got) return; /* whole records: the tile is done, however the child ended */
  if (!f.signo && f.drained) {
    for (int64_t i = 0; i < count; i++) ds_map_rec_failed(&recs[i]), recs[i].outcome = DS_MAP_UNSET;
    return;
  }
  if (count == 1) {
    ds_map_rec_failed(recs);
    ds_pixel_fail *e = &t->fails[t->nfail++];
    e->idx = idx[0], e->signo = f.signo, e->code = f.code, e->maxrss_kb = f.maxrss_kb;
    return;
  }
  int64_t h = count / 2;
  iso_tile(t, idx, h, recs);
  iso_tile(t, idx + h, count - h, recs + h);
}

/* The tile idx[] trained into recs, in this process or (isolate) in child
 * processes; the pixels whose own child died are listed in *fails (malloc'd,
 * *nfail of them; NULL when none). */
void ds_worker_train_tile(const ds_sweep *sw, ds_team *team, int isolate, const int64_t *idx,
                     int64_t count, ds_map_rec *recs, ds_pixel_fail **fails, int64_t *nfail) {
  *fails = NULL;
  *nfail = 0;
  iso_ctx t = {sw, team, isolate ? ds_calloc((size_t)count, sizeof(ds_pixel_fail)) : NULL, 0};
  if (!isolate || !t.fails) {
    if (isolate) ds_clear_error(); /* no room to isolate: as without */
    run_tile(sw, team, idx, count, recs);
    return;
  }
  iso_tile(&t, idx, count, recs);
  if (t.nfail) *fails = t.fails, *nfail = t.nfail;
  else free(t.fails);
}

