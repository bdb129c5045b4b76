/* lifecycle.c -- the store of a run: create it, or resume / extend it after
 * comparing the stored sweep with this one; load what is unfinished; wrap up. */
#include "state.h"

static int alloc_rows(sched *s, int64_t n) {
  size_t m = n ? (size_t)n : 1;
  s->n = n;
  s->sidx = ds_calloc(m, sizeof *s->sidx);
  s->cost = ds_calloc(m, sizeof *s->cost);
  s->blob = ds_calloc(m, sizeof *s->blob);
  s->bloblen = ds_calloc(m, sizeof *s->bloblen);
  s->queue = ds_calloc(m, sizeof *s->queue);
  free(s->tsize);
  s->tsize = ds_calloc(m, sizeof *s->tsize);
  free(s->lone);
  s->lone = ds_calloc(m, 1);
  free(s->est), free(s->t_run), free(s->nsteps);
  s->est = ds_calloc(m, sizeof *s->est);
  s->t_run = ds_calloc(m, sizeof *s->t_run);
  s->nsteps = ds_calloc(m, sizeof *s->nsteps);
  if (!s->rows) s->rows = ds_calloc(m, sizeof *s->rows);
  return s->sidx && s->cost && s->blob && s->bloblen && s->queue && s->tsize && s->lone && s->rows &&
                 s->est && s->t_run && s->nsteps
             ? DS_OK
             : DS_ENOMEM;
}

void sc_free_sched(sched *s) {
  for (int64_t i = 0; s->blob && i < s->n; i++) free(s->blob[i]);
  free(s->blob);
  free(s->bloblen);
  free(s->sidx);
  free(s->cost);
  free(s->rows);
  free(s->queue);
  free(s->tsize);
  free(s->lone);
  free(s->est);
  free(s->t_run);
  free(s->nsteps);
  free(s->run.parked);
  for (int c = 0; s->cls && c < s->ncls; c++) free(s->cls[c].q);
  free(s->cls);
  free(s->lead_size);
}

static int make_meta_and_create(sched *s, const char *hosts, int nranks) {
  const ds_sweep *sw = s->run.sw;
  int na = sw->naxes;
  const char **names = ds_calloc(na + 1, sizeof *names), **paths = ds_calloc(na + 1, sizeof *paths);
  double *vals = ds_calloc((size_t)s->n * (na ? na : 1) + 1, sizeof *vals);
  int rc = names && paths && vals ? DS_OK : DS_ENOMEM;
  for (int a = 0; rc == DS_OK && a < na; a++) {
    names[a] = sw->axes[a].name;
    paths[a] = sw->axes[a].path;
  }
  for (int64_t i = 0; rc == DS_OK && i < s->n; i++) sc_point_axis_vals(sw, s->sidx[i], vals + i * na);
  char start[32], ihash[17] = "";
  ds_iso_time(start, sizeof start);
  char *inputs = NULL; /* issue 11: the input files' content, recorded at create */
  uint64_t ih = 0;
  if (rc == DS_OK && !s->run.store) rc = ds_sweep_inputs_hash(sw, &inputs, &ih);
  snprintf(ihash, sizeof ihash, "%016llx", (unsigned long long)ih);
  ds_store_meta m = {
      .sweep_name = sw->name, .sweep_text = sw->text, .sweep_path = sw->path,
      .sweep_hash = sw->hash, .dynsweep_version = DYNSWEEP_VERSION,
      .library_versions = s->run.o->library_versions ? s->run.o->library_versions : "",
      .hosts = hosts, .start_time = start, .blas_kernel = ds_blas_kernel(), .nranks = nranks,
      .naxes = na, .axis_names = names, .axis_paths = paths, .npoints = s->n,
      .point_axis_vals = vals, .inputs = inputs, .inputs_hash = inputs ? ihash : NULL,
      .segments = sw->store_bytes >= DS_STORE_SEGMENTS_BYTES};
  if (rc == DS_OK && !s->run.store) rc = ds_store_create(s->run.o->store_path, &m, s->rows, &s->run.store);
  else if (rc == DS_OK) rc = ds_store_extend(s->run.store, &m, s->rows);
  free(names);
  free(paths);
  free(vals);
  free(inputs);
  return rc;
}

/* Issue 11: the hash recorded for path in an inputs list ("PATH\tSIZE\tHASH"
 * lines), or "none". */
static void input_hash_of(const char *list, const char *path, size_t plen, char out[17]) {
  snprintf(out, 17, "none");
  for (const char *l = list; l && *l;) {
    size_t len = strcspn(l, "\n");
    if (len > plen + 17 && !strncmp(l, path, plen) && l[plen] == '\t') snprintf(out, 17, "%.16s", l + len - 16);
    l += len + (l[len] == '\n');
  }
}

/* Warns for each input file whose content differs from what the store
 * recorded when it was created. */
static void warn_inputs_changed(const char *old, const char *now) {
  for (const char *l = now; *l;) {
    size_t len = strcspn(l, "\n"), plen = strcspn(l, "\t");
    char was[17], is[17];
    input_hash_of(old, l, plen, was);
    input_hash_of(now, l, plen, is);
    if (plen < len && strcmp(was, is))
      ds_warn("input %.*s changed since the store was created (hash %s -> %s); finished points used "
              "the old content", (int)plen, l, was, is);
    l += len + (l[len] == '\n');
  }
}

static int create_new(sched *s, const char *hosts, int nranks) {
  DS_TRY(alloc_rows(s, ds_sweep_npoints(s->run.sw)));
  for (int64_t i = 0; i < s->n; i++) {
    ds_point p;
    DS_TRY(ds_sweep_point(s->run.sw, i, &p));
    s->sidx[i] = i;
    sc_fill_row(&s->rows[i], i, &p);
  }
  return make_meta_and_create(s, hosts, nranks);
}

/* Why the sweep file sw cannot continue the store whose sweep is old (rows
 * and their axis values as stored); "" if it can. map gets each row's point
 * index in sw. */
static void compare_sweeps(const ds_sweep *old, const ds_sweep *sw, const double *vals,
                           int naxes, char **names, const ds_summary_row *rows, int64_t n,
                           int64_t *map, char *why, size_t wn) {
  why[0] = 0;
  if (strcmp(old->name, sw->name) != 0) {
    snprintf(why, wn, "the store's sweep is named '%s', the sweep file's '%s'", old->name, sw->name);
    return;
  }
  if (old->seed != sw->seed) {
    snprintf(why, wn, "seed %llu in the store, %llu in the sweep file",
             (unsigned long long)old->seed, (unsigned long long)sw->seed);
    return;
  }
  int same_axes = naxes == sw->naxes && old->naxes == sw->naxes;
  for (int a = 0; same_axes && a < sw->naxes; a++)
    same_axes = !strcmp(old->axes[a].path, sw->axes[a].path) && !strcmp(names[a], sw->axes[a].name);
  if (!same_axes) {
    size_t k = (size_t)snprintf(why, wn, "the grid axes differ (store:");
    for (int a = 0; a < old->naxes && k < wn; a++)
      k += (size_t)snprintf(why + k, wn - k, " %s", old->axes[a].name);
    if (k < wn) k += (size_t)snprintf(why + k, wn - k, "; sweep file:");
    for (int a = 0; a < sw->naxes && k < wn; a++)
      k += (size_t)snprintf(why + k, wn - k, " %s", sw->axes[a].name);
    if (k < wn) snprintf(why + k, wn - k, ")");
    return;
  }
  if (ds_sched_map_rows(sw, vals, rows, n, map) < n) {
    for (int64_t i = 0; i < n; i++) {
      if (map[i] >= 0) continue;
      if (rows[i].replica >= sw->replicas) {
        snprintf(why, wn, "replicas went down from %d to %d", old->replicas, sw->replicas);
        return;
      }
      for (int a = 0; a < sw->naxes; a++) {
        double v = vals[i * sw->naxes + a];
        int k = 0;
        while (k < sw->axes[a].nvals && memcmp(&sw->axes[a].val[k], &v, sizeof v) != 0) k++;
        if (k == sw->axes[a].nvals) {
          char vt[32]; /* the shortest text that reads back as v */
          for (int p = 6; p <= 17; p++) {
            snprintf(vt, sizeof vt, "%.*g", p, v);
            if (strtod(vt, NULL) == v) break;
          }
          snprintf(why, wn, "grid value %s of axis %s (point %lld) is gone from the sweep file",
                   vt, sw->axes[a].name, (long long)rows[i].id);
          return;
        }
      }
    }
    snprintf(why, wn, "some of its points are not in the sweep file");
    return;
  }
  if (old->hash == sw->hash) return;
  /* grid values were added or reordered: every old point must still mean
   * exactly the same configuration */
  int64_t *omap = ds_calloc(n ? (size_t)n : 1, sizeof *omap);
  if (!omap) {
    snprintf(why, wn, "out of memory comparing the sweeps");
    return;
  }
  ds_sched_map_rows(old, vals, rows, n, omap);
  static const char *const sect[] = {"model", "data", "loss", "optimizer", "train", "record"};
  for (int64_t i = 0; i < n && !why[0]; i++) {
    ds_point po, pn;
    if (omap[i] < 0 || ds_sweep_point(old, omap[i], &po) != DS_OK ||
        ds_sweep_point(sw, map[i], &pn) != DS_OK) {
      snprintf(why, wn, "point %lld of the store cannot be found in its own sweep", (long long)i);
      break;
    }
    const void *a[] = {&po.cfg.model, &po.cfg.data, &po.cfg.loss, &po.cfg.optimizer, &po.cfg.train,
                       &po.cfg.record};
    const void *b[] = {&pn.cfg.model, &pn.cfg.data, &pn.cfg.loss, &pn.cfg.optimizer, &pn.cfg.train,
                       &pn.cfg.record};
    const size_t sz[] = {sizeof po.cfg.model, sizeof po.cfg.data, sizeof po.cfg.loss,
                         sizeof po.cfg.optimizer, sizeof po.cfg.train, sizeof po.cfg.record};
    for (int k = 0; k < 6; k++)
      if (memcmp(a[k], b[k], sz[k]) != 0) {
        char keys[512];
        if (ds_cfg_diff(&po.cfg, &pn.cfg, keys, sizeof keys) > 0) /* what changed, old -> new */
          snprintf(why, wn, "%s changed (point %lld would not mean the same run any more)", keys,
                   (long long)i);
        else
          snprintf(why, wn, "settings in section '%s' changed (point %lld would not mean the same "
                            "run any more)", sect[k], (long long)i);
        break;
      }
  }
  free(omap);
}

/* Reads an existing store's sweep and grid (read-only), decides whether sw
 * continues it, then resumes it (and extends it with sw's new points). */
static int resume_existing(sched *s) {
  const char *path = s->run.o->store_path;
  ds_store *r = NULL;
  ds_summary_row *rows = NULL;
  int64_t n = 0, np = 0;
  char *text = NULL, **names = NULL;
  double *vals = NULL;
  int naxes = 0, have_old = 0;
  ds_sweep old;
  int rc = ds_store_open(path, &r);
  if (rc == DS_EINPUT) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ds_errmsg());
    return ds_fail(DS_EINPUT, "%s; refusing to use it as the store (it was left untouched)", msg);
  }
  if (rc == DS_OK && ds_store_is_map(r))
    rc = ds_fail(DS_EINPUT, "%s is a map store, but %s is not a map sweep (no map: section); write "
                 "to a new store, or add map: to run the map again", path, s->run.sw->path);
  if (rc == DS_OK) rc = ds_store_read_summary(r, &rows, &n);
  if (rc == DS_OK) rc = ds_store_sweep_text(r, &text);
  if (rc == DS_OK) rc = ds_store_read_axes(r, &naxes, &names, &vals, &np);
  if (rc == DS_OK && np != n) rc = ds_fail(DS_EIO, "%s: /grid and /summary disagree", path);
  char state[32] = "";
  if (rc == DS_OK && ds_store_attr(r, "run_state", state, sizeof state) != DS_OK) ds_clear_error();
  char old_ihash[17] = "", *old_inputs = ds_calloc(8192, 1), *inputs = NULL;
  uint64_t ih = 0;
  if (rc == DS_OK && !old_inputs) rc = DS_ENOMEM;
  if (rc == DS_OK && (ds_store_attr(r, "inputs_hash", old_ihash, sizeof old_ihash) != DS_OK ||
                      ds_store_attr(r, "inputs", old_inputs, 8192) != DS_OK))
    ds_clear_error(), old_ihash[0] = 0; /* a store made before issue 11 */
  if (rc == DS_OK) rc = ds_sweep_inputs_hash(s->run.sw, &inputs, &ih);
  char new_ihash[17];
  snprintf(new_ihash, sizeof new_ihash, "%016llx", (unsigned long long)ih);
  int inputs_changed = rc == DS_OK && strcmp(old_ihash, new_ihash) != 0;
  if (rc == DS_OK) {
    rc = ds_sweep_parse(path, text, &old);
    if (rc != DS_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", ds_errmsg());
      rc = ds_fail(DS_EINPUT, "%s: the sweep stored in it cannot be read: %s", path, msg);
    }
    have_old = rc == DS_OK;
  }
  ds_store_close(r);
  free(text);
  int64_t *map = NULL;
  char why[768] = "";
  if (rc == DS_OK && !(map = ds_calloc(n ? (size_t)n : 1, sizeof *map))) rc = DS_ENOMEM;
  if (rc == DS_OK) compare_sweeps(&old, s->run.sw, vals, naxes, names, rows, n, map, why, sizeof why);
  if (rc == DS_OK && why[0])
    rc = ds_fail(DS_EINPUT, "%s: made by a different sweep than %s: %s. A store continues only "
                            "the sweep that made it, or that sweep with grid values (or replicas) "
                            "added; nothing was changed. Use another -o path for a new sweep.",
                 path, s->run.sw->path, why);
  if (rc == DS_OK && inputs_changed && old_ihash[0]) warn_inputs_changed(old_inputs, inputs);
  int extend = rc == DS_OK && (old.hash != s->run.sw->hash || ds_sweep_npoints(s->run.sw) != n);
  int complete = rc == DS_OK && !extend && !strcmp(state, "complete");
  for (int64_t i = 0; complete && i < n; i++)
    complete = is_final(rows[i].status) && !(s->run.o->retry_failed && rows[i].status == DS_ST_FAILED);
  if (have_old) ds_sweep_free(&old);
  for (int a = 0; names && a < naxes; a++) free(names[a]);
  free(names);
  free(vals);
  free(rows);
  rows = NULL;
  if (complete) { /* nothing to do: not even the writer lock (read-only media) */
    s->run.nothing_to_do = 1;
    free(map);
    free(old_inputs);
    free(inputs);
    ds_store_tidy(path);
    return DS_OK;
  }
  /* the store's current rows (the journal of a killed run replayed) */
  if (rc == DS_OK) rc = ds_store_resume(path, &s->run.store);
  if (rc == DS_OK && inputs_changed) rc = ds_store_set_inputs(s->run.store, inputs, new_ihash);
  free(old_inputs);
  free(inputs);
  s->resumed = rc == DS_OK;
  if (rc == DS_OK) rc = ds_store_read_summary(s->run.store, &rows, &n);
  int64_t nsw = ds_sweep_npoints(s->run.sw);
  if (rc == DS_OK) {
    s->rows = rows;
    rows = NULL;
    if (extend) {
      ds_summary_row *grown = realloc(s->rows, (size_t)(nsw ? nsw : 1) * sizeof *grown);
      if (!grown) rc = ds_fail(DS_ENOMEM, "out of memory");
      else s->rows = grown;
    }
  }
  if (rc == DS_OK) rc = alloc_rows(s, extend ? nsw : n);
  if (rc == DS_OK) {
    char *used = ds_calloc(nsw ? (size_t)nsw : 1, 1);
    if (!used) rc = DS_ENOMEM;
    for (int64_t i = 0; rc == DS_OK && i < n; i++) {
      s->sidx[i] = map[i];
      used[map[i]] = 1;
      s->rows[i].combo = map[i] / s->run.sw->replicas;
    }
    int64_t k = n;
    for (int64_t j = 0; rc == DS_OK && extend && j < nsw; j++) {
      if (used[j]) continue;
      ds_point p;
      rc = ds_sweep_point(s->run.sw, j, &p);
      s->sidx[k] = j;
      sc_fill_row(&s->rows[k], k, &p);
      k++;
    }
    free(used);
    if (rc == DS_OK && extend) {
      s->n = k;
      ds_log("%s: the sweep file adds grid values: %lld new point(s) (ids %lld..%lld); the %lld "
             "old points keep their ids", path, (long long)(k - n), (long long)n,
             (long long)k - 1, (long long)n);
      rc = make_meta_and_create(s, "", 0);
    }
  }
  free(rows);
  free(map);
  return rc;
}

/* Checkpoints of unfinished points; rows left "running" by a killed run
 * become pending again. */
static int load_unfinished(sched *s) {
  int64_t nblob = 0;
  for (int64_t i = 0; i < s->n; i++) {
    ds_summary_row *r = &s->rows[i];
    if (is_final(r->status)) continue;
    char *b = NULL;
    size_t len = 0;
    int rc = ds_store_read_ckpt(s->run.store, i, &b, &len);
    if (rc == DS_OK) {
      s->blob[i] = b;
      s->bloblen[i] = len;
      nblob++;
    } else if (rc != DS_EINPUT) { /* damaged: never resumed from */
      ds_warn("%s; not resuming from it, point %lld restarts from step 0", ds_errmsg(), (long long)i);
      ds_clear_error();
    }
  }
  ds_clear_error();
  int64_t todo = s->n - s->nfinal;
  if (s->resumed || nblob > 0)
    ds_log("resuming %s: %lld of %lld points finished, %lld to run (%lld from a checkpoint)",
           s->run.o->store_path, (long long)s->nfinal, (long long)s->n, (long long)todo,
           (long long)nblob);
  return DS_OK;
}

static double attr_num(ds_store *st, const char *name) {
  char buf[64];
  if (ds_store_attr(st, name, buf, sizeof buf) != DS_OK) {
    ds_clear_error();
    return 0;
  }
  return strtod(buf, NULL);
}

/* --retry failed: failed rows become pending with no attempts (their old
 * series are superseded when they finish again); the others are kept. */
static int reopen_failed(sched *s) {
  int64_t k = 0;
  for (int64_t i = 0; i < s->n; i++) {
    if (s->rows[i].status != DS_ST_FAILED) continue;
    ds_point p;
    DS_TRY(ds_sweep_point(s->run.sw, s->sidx[i], &p));
    sc_fill_row(&s->rows[i], s->rows[i].id, &p);
    DS_TRY(ds_store_reopen_row(s->run.store, &s->rows[i]));
    k++;
  }
  if (!s->run.o->quiet) ds_log("--retry failed: %lld failed point(s) to run again", (long long)k);
  return k ? ds_store_publish(s->run.store, 1) : DS_OK;
}

int sc_prepare(sched *s, const char *hosts, int nranks) {
  struct stat st;
  int rc;
  if (lstat(s->run.o->store_path, &st) == 0) rc = resume_existing(s);
  else rc = create_new(s, hosts, nranks);
  if (rc == DS_OK && s->run.nothing_to_do) {
    if (!s->run.o->quiet) ds_log("%s: nothing to do, all points finished", s->run.o->store_path);
    return DS_OK;
  }
  if (rc == DS_OK && s->run.o->retry_failed) rc = reopen_failed(s);
  if (rc == DS_OK) rc = sc_build_queue(s);
  if (rc == DS_OK && s->nfinal == s->n) {
    s->run.nothing_to_do = 1;
    if (!s->run.o->quiet)
      ds_log("%s: nothing to do, all %lld points finished", s->run.o->store_path, (long long)s->n);
    char state[32] = "";
    if (ds_store_attr(s->run.store, "run_state", state, sizeof state) != DS_OK) ds_clear_error();
    if (strcmp(state, "complete") != 0) { /* killed after its last point: finish it now */
      char end[32];
      ds_iso_time(end, sizeof end);
      rc = ds_store_finish(s->run.store, end, attr_num(s->run.store, "rank0_cpu_s"),
                           attr_num(s->run.store, "wall_s"));
    }
    return rc;
  }
  if (rc == DS_OK) rc = load_unfinished(s);
  if (rc == DS_OK) {
    s->run.prev_wall = attr_num(s->run.store, "wall_s");
    s->run.prev_cpu = attr_num(s->run.store, "rank0_cpu_s");
    ds_store_set_publish_every(s->run.store, s->run.o->publish_every);
    ds_store_set_run(s->run.store, "running", (double)time(NULL), s->run.done0);
    rc = ds_store_publish(s->run.store, 1); /* the session is visible at once */
  }
  return rc;
}

/* After the work: finish (complete) or record the session (drained,
 * stopped), report, close. */
int sc_wrap_up(sched *s, int size, double cpu, double wall) {
  int complete = s->nfinal == s->n;
  ds_store_stats st;
  int rc = run_close(&s->run, complete, cpu, wall, &st);
  if (rc != DS_OK) return rc;
  if (!s->run.o->quiet) {
    /* the outcomes of the store's finished points, as `ls` counts them
     * (docs/store.md "Outcome"; a row written before issue 24 with code 0
     * counts as converged here, `ls` re-reads its loss) */
    int64_t oc[6] = {0}; /* converged unconverged catapult plateaus diverged failed */
    for (int64_t i = 0; i < s->n; i++) {
      const ds_summary_row *r = &s->rows[i];
      if (r->status == DS_ST_FAILED) oc[5]++;
      else if (r->status == DS_ST_DIVERGED) oc[4]++;
      else if (r->status != DS_ST_DONE) continue;
      else if (r->outcome == DS_OUT_CATAPULT) oc[2]++;
      else if (r->outcome == DS_OUT_UNCONVERGED) oc[1]++;
      else if (r->plateaus > 0) oc[3]++;
      else oc[0]++;
    }
    ds_log("%s %lld points in %.2f s: %lld converged, %lld unconverged, %lld catapult, %lld "
           "plateaus, %lld diverged, %lld failed of %lld; rank 0 CPU %.3f s (%.1f%% of a core)%s",
           complete ? "finished" : "drained after", (long long)s->run.session_done, wall,
           (long long)oc[0], (long long)oc[1], (long long)oc[2], (long long)oc[3], (long long)oc[4],
           (long long)oc[5], (long long)s->n, cpu, 100.0 * cpu / (wall > 0 ? wall : 1),
           size == 1 ? ", rank 0 also trained" : "");
    if (s->run.o->verbose) /* the store's own costs: with -v only (a tiny run's ratios mislead) */
      ds_log("store: %lld publishes, %.3f s (%.2f%% of wall; copy %.3f s, fsync+rename %.3f s, the "
           "rest HDF5 writing; last %.1f ms, file %.2f MB); journal %lld records, %.2f MB, %.3f s "
           "writing+fsync (%.2f%% of wall)", (long long)st.publishes, st.publish_s,
           100 * st.publish_s / (wall > 0 ? wall : 1), st.copy_s, st.sync_s,
           1e3 * st.last_publish_s, st.file_bytes * 1e-6, (long long)st.journal_records,
           st.journal_bytes * 1e-6, st.journal_s, 100 * st.journal_s / (wall > 0 ? wall : 1));
    if (!complete)
      ds_log("drained: %lld point(s) left; run the same command again to resume",
             (long long)(s->n - s->nfinal));
    if (s->nfail)
      ds_warn("%lld point(s) failed ('dynsweep ls %s' says why; 'dynsweep run ... --retry failed' "
              "runs them again)", (long long)s->nfail, s->run.o->store_path);
  }
  return rc;
}
