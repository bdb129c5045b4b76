/* chain.c -- the Slurm job chain of a store: STORE.chain.tsv.
 *
 * The job script of `dynsweep submit` (and of the templates in slurm/) calls
 * `dynsweep chain STORE begin ...` when a job starts and `dynsweep chain
 * STORE end ...` when its run has ended. `begin` adds the job's row (state
 * running, the points finished so far) and chooses the job's drain margin
 * from the drain costs measured by the jobs before it; `end` records the
 * outcome, the points finished in the job and the measured drain cost (the
 * seconds from the drain signal to the launcher's exit: checkpoint, publish,
 * MPI teardown). `dynsweep status STORE [--chain]` prints the chain
 * (ds_chain_print). The file is rewritten whole, to a temporary file that is
 * renamed over it, so a reader never sees half of it; only one job of a
 * chain runs at a time (afterany), so there is one writer. docs/slurm.md. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dynsweep/store.h"
#include "dynsweep/submit.h"
#include "dynsweep/util.h"

#define CH_NF 10
static const char ch_header[] =
    "# dynsweep job chain (written by the Slurm job script; 'dynsweep status STORE --chain')\n"
    "# job\tsegment\tstate\tstart\tend\tdone_before\tpoints\tmargin_s\tdrain_s\tmargin_why\n";

typedef struct {
  char job[32], state[16], why[256];
  long seg, done0, points, margin; /* points -1: not recorded */
  double start, end, drain;         /* end, drain < 0: not recorded */
} ch_row;

typedef struct {
  ch_row *r;
  int n, cap;
} ch_file;

static ch_row *ch_add(ch_file *c) {
  if (c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 16;
    ch_row *r = realloc(c->r, (size_t)cap * sizeof *r);
    if (!r) return NULL;
    c->r = r;
    c->cap = cap;
  }
  memset(&c->r[c->n], 0, sizeof c->r[0]);
  return &c->r[c->n++];
}

/* Reads STORE.chain.tsv into c; a missing file is an empty chain (*exists 0). */
static int ch_read(const char *path, ch_file *c, int *exists) {
  memset(c, 0, sizeof *c);
  FILE *f = fopen(path, "r");
  *exists = f != NULL;
  if (!f) return errno == ENOENT ? DS_OK : ds_fail(DS_EIO, "%s: cannot read: %s", path, strerror(errno));
  char line[1024];
  int ln = 0, rc = DS_OK;
  while (rc == DS_OK && fgets(line, sizeof line, f)) {
    ln++;
    line[strcspn(line, "\n")] = 0;
    if (!line[0] || line[0] == '#') continue;
    char *fld[CH_NF], *p = line;
    int nf = 0;
    while (nf < CH_NF) {
      fld[nf++] = p;
      char *tab = strchr(p, '\t');
      if (!tab) break;
      *tab = 0;
      p = tab + 1;
    }
    if (nf != CH_NF) {
      rc = ds_fail(DS_EINPUT, "%s:%d: expected %d tab-separated fields (job, segment, state, start, "
                   "end, done_before, points, margin_s, drain_s, margin_why), got %d", path, ln, CH_NF, nf);
      break;
    }
    ch_row *r = ch_add(c);
    if (!r) { rc = ds_fail(DS_EIO, "out of memory"); break; }
    char *end;
    snprintf(r->job, sizeof r->job, "%s", fld[0]);
    snprintf(r->state, sizeof r->state, "%s", fld[2]);
    snprintf(r->why, sizeof r->why, "%s", fld[9]);
    r->seg = strtol(fld[1], &end, 10);
    int bad = !fld[0][0] || *end || r->seg < 1;
    r->start = strtod(fld[3], &end);
    bad |= *end || !fld[3][0];
    r->end = strcmp(fld[4], "-") ? strtod(fld[4], &end) : -1;
    bad |= strcmp(fld[4], "-") && *end;
    r->done0 = strtol(fld[5], &end, 10);
    bad |= *end || !fld[5][0];
    r->points = strcmp(fld[6], "-") ? strtol(fld[6], &end, 10) : -1;
    bad |= strcmp(fld[6], "-") && *end;
    r->margin = strtol(fld[7], &end, 10);
    bad |= *end || !fld[7][0];
    r->drain = strcmp(fld[8], "-") ? strtod(fld[8], &end) : -1;
    bad |= strcmp(fld[8], "-") && *end;
    if (bad) rc = ds_fail(DS_EINPUT, "%s:%d: a field is not a number where one was expected", path, ln);
  }
  fclose(f);
  if (rc != DS_OK) free(c->r);
  return rc;
}

/* The chain file of store (its path in path) into c; on failure prints
 * "dynsweep: WHO<message>" and returns the exit code, else 0. */
static int ch_load(const char *store, char *path, size_t pn, ch_file *c, int *exists, const char *who) {
  snprintf(path, pn, "%s.chain.tsv", store);
  int rc = ch_read(path, c, exists);
  if (rc == DS_OK) return 0;
  fprintf(stderr, "dynsweep: %s%s\n", who, ds_errmsg());
  return ds_exit_code(rc);
}

/* Writes c to path atomically (temporary file, fsync, rename). */
static int ch_write(const char *path, const ch_file *c) {
  char tmp[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return ds_fail(DS_EIO, "%s: cannot write: %s", tmp, strerror(errno));
  fputs(ch_header, f);
  for (int i = 0; i < c->n; i++) {
    const ch_row *r = &c->r[i];
    fprintf(f, "%s\t%ld\t%s\t%.0f\t", r->job, r->seg, r->state, r->start);
    if (r->end >= 0) fprintf(f, "%.0f", r->end); else fputc('-', f);
    fprintf(f, "\t%ld\t", r->done0);
    if (r->points >= 0) fprintf(f, "%ld", r->points); else fputc('-', f);
    fprintf(f, "\t%ld\t", r->margin);
    if (r->drain >= 0) fprintf(f, "%.2f", r->drain); else fputc('-', f);
    fprintf(f, "\t%s\n", r->why);
  }
  int bad = fflush(f) || fsync(fileno(f)) || ferror(f);
  if (fclose(f) || bad || rename(tmp, path)) {
    int e = errno;
    unlink(tmp);
    return ds_fail(DS_EIO, "%s: cannot write: %s", path, strerror(e));
  }
  return DS_OK;
}

/* Points finished (done, diverged, failed) in the store; 0 if it does not
 * exist yet, -1 if it cannot be read. */
static long ch_finished(const char *store) {
  struct stat st;
  if (stat(store, &st)) return 0;
  ds_store *s = NULL;
  ds_summary_row *rows = NULL;
  int64_t n = 0, nrec = 0;
  double jm = 0;
  long fin = -1;
  if (ds_store_open(store, &s) == DS_OK && ds_store_read_summary_live(s, &rows, &n, &nrec, &jm) == DS_OK) {
    fin = 0;
    for (int64_t i = 0; i < n; i++)
      fin += ds_status_is_final(rows[i].status);
    free(rows);
  }
  if (s) ds_store_close(s);
  ds_clear_error();
  return fin;
}

static double ch_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ch_row *ch_find(ch_file *c, const char *job) {
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->r[i].job, job)) return &c->r[i];
  return NULL;
}

/* The drain margin of a job from the rows of the jobs before it (rows 0..n-1):
 *   - the drain costs of the last 3 jobs that measured one: D = their maximum,
 *     margin = max(floor, ceil(factor * D + slack));
 *   - the job just before it has no end recorded (killed at its limit, before
 *     the script could record anything): twice that job's margin, at least
 *     the above;
 *   - nothing measured yet: the first-segment estimate, max(first,
 *     ceil(factor * store bytes / 100 MB/s + slack));
 * at most half the job's time limit (limit > 0). */
static long ch_margin(const ch_file *c, int n, const char *store, long first, long floor_s, double factor,
                      long slack, long limit, char *why, size_t wn) {
  double d = -1;
  const char *djob = NULL;
  int nm = 0;
  for (int i = n - 1; i >= 0 && nm < 3; i--) {
    if (c->r[i].drain < 0) continue;
    nm++;
    if (c->r[i].drain > d) {
      d = c->r[i].drain;
      djob = c->r[i].job;
    }
  }
  long m;
  if (d >= 0) {
    long k = (long)ceil(factor * d + slack);
    m = k > floor_s ? k : floor_s;
    snprintf(why, wn, "max(floor %ld s, %g x %.1f s drain measured in job %s + %ld s)%s", floor_s, factor,
             d, djob, slack, nm > 1 ? " (largest of the last jobs that drained)" : "");
  } else {
    struct stat st;
    double mb = stat(store, &st) ? 0 : (double)st.st_size / 1e6;
    long k = (long)ceil(factor * mb / 100.0 + slack);
    m = first > k ? first : k;
    snprintf(why, wn, "no drain measured yet: first-segment estimate max(%ld s, %g x %.0f MB store / "
             "100 MB/s + %ld s)", first, factor, mb, slack);
  }
  if (n > 0 && c->r[n - 1].end < 0) {
    long k = 2 * c->r[n - 1].margin;
    if (k > m) {
      m = k;
      size_t l = strlen(why);
      snprintf(why + l, wn - l, "; doubled to %ld s: job %s recorded no end (killed at its limit?)", m,
               c->r[n - 1].job);
    }
  }
  if (limit > 0 && m > limit / 2) {
    m = limit / 2 > 1 ? limit / 2 : 1;
    size_t l = strlen(why);
    snprintf(why + l, wn - l, "; capped at half the time limit (%ld s)", m);
  }
  for (char *p = why; *p; p++)
    if (*p == '\t' || *p == '\n') *p = ' ';
  return m;
}

static const char usage_chain[] =
    "usage: dynsweep chain STORE.h5 begin --job ID --segment N [--limit S]\n"
    "                      [--first S] [--floor S] [--factor K] [--slack S]\n"
    "       dynsweep chain STORE.h5 end --job ID --state STATE [--drain-start T]\n"
    "\n"
    "For the Slurm job scripts of 'dynsweep submit' (docs/slurm.md): records the job\n"
    "chain in STORE.chain.tsv ('dynsweep status STORE --chain' prints it).\n"
    "begin: adds job ID (state running) and prints its drain margin in seconds, a\n"
    "  tab and why: max(floor, factor x measured drain cost + slack), the cost being\n"
    "  the largest of the last 3 measured; before any measurement max(first, factor x\n"
    "  store MB / 100 MB/s + slack); twice the previous job's margin if that job\n"
    "  recorded no end; at most half of --limit (the job's time limit, seconds).\n"
    "  Defaults: --first 90 --floor 10 --factor 2 --slack 5.\n"
    "end: records STATE (drained, completed, failed, killed), the points finished in\n"
    "  the job and, with --drain-start T (unix time of the drain signal), the drain\n"
    "  cost; prints the cost.\n"
    "Exit codes: 0 ok, 2 bad input or a malformed chain file, 1 I/O failure.\n";

static int ch_bad(const char *fmt, const char *arg) {
  fprintf(stderr, "dynsweep: chain: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n%s", usage_chain);
  return 2;
}

int ds_cli_chain(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage_chain, stdout);
      return 0;
    }
  if (argc < 2) return ch_bad("expected STORE.h5 and begin or end%s", "");
  const char *store = argv[0], *what = argv[1], *job = NULL, *state = NULL;
  int begin = !strcmp(what, "begin");
  if (!begin && strcmp(what, "end")) return ch_bad("expected begin or end, got '%s'", what);
  double seg = 0, limit = 0, first = 90, floor_s = 10, factor = 2, slack = 5, dstart = -1;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    double *num = !strcmp(a, "--segment") ? &seg : !strcmp(a, "--limit") ? &limit
                : !strcmp(a, "--first") ? &first : !strcmp(a, "--floor") ? &floor_s
                : !strcmp(a, "--factor") ? &factor : !strcmp(a, "--slack") ? &slack
                : !strcmp(a, "--drain-start") ? &dstart : NULL;
    if (i + 1 == argc) return ch_bad("%s needs a value", a);
    const char *v = argv[++i];
    if (num) {
      char *end;
      errno = 0;
      *num = strtod(v, &end);
      if (errno || end == v || *end || !(*num >= 0) || *num > 1e10)
        return ch_bad("expected a number >= 0, got '%s'", v);
    } else if (!strcmp(a, "--job")) {
      job = v;
    } else if (!strcmp(a, "--state")) {
      state = v;
    } else {
      return ch_bad("unknown option '%s'", a);
    }
  }
  if (!job || !*job || strlen(job) >= sizeof((ch_row *)0)->job || strpbrk(job, "\t\n "))
    return ch_bad("--job: expected a job id%s", "");
  if (begin && seg < 1) return ch_bad("begin needs --segment N (N >= 1)%s", "");
  if (!begin && (!state || (strcmp(state, "drained") && strcmp(state, "completed") && strcmp(state, "failed") &&
                            strcmp(state, "killed"))))
    return ch_bad("end needs --state drained, completed, failed or killed%s", "");
  char path[PATH_MAX];
  ch_file c;
  int exists, rc = ch_load(store, path, sizeof path, &c, &exists, "chain: ");
  if (rc) return rc;
  double now = ch_now();
  ch_row *r = ch_find(&c, job);
  if (begin) {
    /* a requeued job begins again: its row is replaced, its margin comes
     * from the jobs before it */
    int before = r ? (int)(r - c.r) : c.n;
    char why[256];
    long m = ch_margin(&c, before, store, (long)first, (long)floor_s, factor, (long)slack, (long)limit, why,
                       sizeof why);
    if (!r) r = ch_add(&c);
    if (!r) {
      rc = ds_fail(DS_EIO, "out of memory");
    } else {
      memset(r, 0, sizeof *r);
      snprintf(r->job, sizeof r->job, "%s", job);
      snprintf(r->state, sizeof r->state, "running");
      snprintf(r->why, sizeof r->why, "%s", why);
      r->seg = (long)seg;
      r->start = floor(now);
      r->end = r->drain = -1;
      r->points = -1;
      long fin = ch_finished(store);
      r->done0 = fin > 0 ? fin : 0;
      r->margin = m;
      rc = ch_write(path, &c);
    }
    if (rc == DS_OK) printf("%ld\t%s\n", m, why);
  } else {
    if (!r) {
      free(c.r);
      fprintf(stderr, "dynsweep: chain: %s: no row for job %s (its 'begin' was not recorded)\n", path, job);
      return 2;
    }
    snprintf(r->state, sizeof r->state, "%s", state);
    r->end = floor(now);
    long fin = ch_finished(store);
    r->points = fin >= r->done0 ? fin - r->done0 : -1;
    r->drain = dstart > 0 && now >= dstart ? now - dstart : -1;
    rc = ch_write(path, &c);
    if (rc == DS_OK && r->drain >= 0) printf("%.2f\n", r->drain);
  }
  free(c.r);
  if (rc != DS_OK) {
    fprintf(stderr, "dynsweep: chain: %s\n", ds_errmsg());
    return ds_exit_code(rc);
  }
  return 0;
}

static void ch_time(char *buf, size_t n, double t) {
  if (t < 0) {
    snprintf(buf, n, "-");
    return;
  }
  time_t tt = (time_t)t;
  struct tm tm;
  localtime_r(&tt, &tm);
  strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
}

int ds_chain_print(const char *store, FILE *out, int required) {
  char path[PATH_MAX];
  ch_file c;
  int exists, rc = ch_load(store, path, sizeof path, &c, &exists, "");
  if (rc) return rc;
  if (!exists || !c.n) {
    if (required)
      fprintf(out, "chain:   none (%s %s: the store was not run by 'dynsweep submit')\n", path,
              exists ? "has no job" : "does not exist");
    free(c.r);
    return 0;
  }
  fprintf(out, "chain:   %d Slurm job%s (%s; Slurm's view: sacct -j ", c.n, c.n == 1 ? "" : "s", path);
  for (int i = 0; i < c.n; i++) fprintf(out, "%s%s", i ? "," : "", c.r[i].job);
  fprintf(out, ")\n");
  fprintf(out, "  %-10s %4s  %-9s  %-19s  %-19s  %6s  %6s  %7s\n", "job", "seg", "state", "start", "end",
          "points", "margin", "drain");
  for (int i = 0; i < c.n; i++) {
    const ch_row *r = &c.r[i];
    /* a job that began and recorded no end while a later one began was
     * killed (time limit plus KillWait, node failure, scancel of that job) */
    const char *st = !strcmp(r->state, "running") && i + 1 < c.n ? "killed" : r->state;
    char t0[32], t1[32], pts[24], dr[24];
    ch_time(t0, sizeof t0, r->start);
    ch_time(t1, sizeof t1, r->end);
    if (r->points >= 0) snprintf(pts, sizeof pts, "%ld", r->points);
    else snprintf(pts, sizeof pts, "-");
    if (r->drain >= 0) snprintf(dr, sizeof dr, "%.1f s", r->drain);
    else snprintf(dr, sizeof dr, "-");
    fprintf(out, "  %-10s %4ld  %-9s  %-19s  %-19s  %6s  %4ld s  %7s\n", r->job, r->seg, st, t0, t1, pts,
            r->margin, dr);
  }
  for (int i = 0; i < c.n; i++) fprintf(out, "  margin of job %s: %s\n", c.r[i].job, c.r[i].why);
  free(c.r);
  return 0;
}
