/* rankmem.c -- how much memory one rank really has, and whether a point's
 * estimated memory fits it (issue 11: a point that cannot fit is failed
 * before it runs instead of killing the job on every resume).
 *
 * A rank has the least of: --rank-memory (when given, it is the answer);
 * the cgroup memory limit (v2 memory.max or v1 memory.limit_in_bytes, the
 * smallest on the way up the hierarchy) shared by the node's ranks;
 * MemAvailable shared by the node's ranks; the address-space limit
 * (ulimit -v) less what the process has mapped already; Slurm's
 * SLURM_MEM_PER_CPU x SLURM_CPUS_PER_TASK, or SLURM_MEM_PER_NODE shared by
 * the node's ranks. MB here is 2^20 bytes, as in --rank-memory and Slurm. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "dynsweep/config.h"
#include "dynsweep/sched.h"

static const double MiB = 1048576.0;

/* A number from the first line of a file (cgroup files); "max" and v1's
 * "no limit" (>= 2^62) are infinity; missing or unreadable: NAN. */
static double file_num(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NAN;
  char line[64] = "";
  double v = NAN;
  if (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "max", 3)) v = INFINITY;
    else if (line[0] >= '0' && line[0] <= '9') v = strtod(line, NULL);
  }
  fclose(f);
  return v >= 4611686018427387904.0 ? INFINITY : v;
}

/* The smallest limit named file on the way from cgroup dir up to mount. */
static double cg_walk(const char *mount, const char *dir, const char *file) {
  char path[4096], d[2048];
  snprintf(d, sizeof d, "%s", dir);
  double best = NAN;
  for (;;) {
    snprintf(path, sizeof path, "%s%s/%s", mount, strcmp(d, "/") ? d : "", file);
    double v = file_num(path);
    if (!isnan(v) && (isnan(best) || v < best)) best = v;
    char *sl = strrchr(d, '/');
    if (!sl || sl == d) {
      if (!strcmp(d, "/")) break;
      snprintf(d, sizeof d, "/");
    } else {
      *sl = 0;
    }
  }
  return best;
}

/* The cgroup memory limit of this process (bytes), INFINITY if none. */
static double cgroup_limit(void) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (!f) return INFINITY;
  char line[4096];
  double best = INFINITY;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = 0;
    const char *ctl = c1 + 1, *dir = c2 + 1;
    double v = NAN;
    if (!*ctl) { /* v2 */
      v = cg_walk("/sys/fs/cgroup", dir, "memory.max");
      if (isnan(v)) v = cg_walk("/sys/fs/cgroup/unified", dir, "memory.max");
    } else {
      char ctls[256];
      snprintf(ctls, sizeof ctls, ",%s,", ctl);
      if (strstr(ctls, ",memory,")) v = cg_walk("/sys/fs/cgroup/memory", dir, "memory.limit_in_bytes");
    }
    if (!isnan(v) && v < best) best = v;
  }
  fclose(f);
  return best;
}

/* A "Key:   N kB" line of /proc/meminfo or /proc/self/status, bytes; NAN. */
static double kb_field(const char *file, const char *key) {
  FILE *f = fopen(file, "r");
  if (!f) return NAN;
  char line[256];
  size_t kl = strlen(key);
  double v = NAN;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ':') {
      v = strtod(line + kl + 1, NULL) * 1024.0;
      break;
    }
  fclose(f);
  return v;
}

static double env_mb(const char *name) {
  const char *e = getenv(name);
  if (!e || !*e) return NAN;
  char *end;
  double v = strtod(e, &end);
  if (end == e || !(v > 0)) return NAN;
  if (*end == 'G' || *end == 'g') v *= 1024; /* Slurm gives MB; be lenient */
  if (*end == 'T' || *end == 't') v *= 1048576;
  return v * MiB;
}

double ds_rank_memory(int node_ranks, double given_mb, char *why, size_t n) {
  char full[256];
  if (node_ranks < 1) node_ranks = 1;
  if (given_mb > 0) {
    snprintf(why, n, "--rank-memory");
    return given_mb * MiB;
  }
  double best = INFINITY;
  const char *src;
  full[0] = 0;
  struct { double v; const char *what; int shared; } c[5];
  c[0].v = cgroup_limit(), c[0].what = "cgroup limit", c[0].shared = 1;
  c[1].v = kb_field("/proc/meminfo", "MemAvailable"), c[1].what = "MemAvailable", c[1].shared = 1;
  struct rlimit rl;
  c[2].v = NAN, c[2].what = "ulimit -v, left", c[2].shared = 0;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    double vm = kb_field("/proc/self/status", "VmSize");
    c[2].v = (double)rl.rlim_cur - (isnan(vm) ? 0 : vm);
    if (c[2].v < 0) c[2].v = 0;
  }
  double cpt = env_mb("SLURM_CPUS_PER_TASK") / MiB;
  c[3].v = env_mb("SLURM_MEM_PER_CPU") * (cpt >= 1 ? cpt : 1), c[3].what = "SLURM_MEM_PER_CPU";
  c[3].shared = 0;
  c[4].v = env_mb("SLURM_MEM_PER_NODE"), c[4].what = "SLURM_MEM_PER_NODE", c[4].shared = 1;
  for (int k = 0; k < 5; k++) {
    if (isnan(c[k].v) || isinf(c[k].v)) continue;
    double per = c[k].shared ? c[k].v / node_ranks : c[k].v;
    if (per < best) {
      best = per;
      src = c[k].what;
      char b[32];
      ds_fmt_bytes(b, sizeof b, c[k].v);
      if (c[k].shared && node_ranks > 1) snprintf(full, sizeof full, "%s %s / %d ranks", src, b, node_ranks);
      else snprintf(full, sizeof full, "%s %s", src, b);
    }
  }
  snprintf(why, n, "%s", full[0] ? full : "no limit found");
  return best;
}

int ds_point_misfit(const ds_point_cfg *c, int team, double has, const char *src, char *reason,
                    size_t n) {
  double est = ds_point_mem_bytes(c), per = ds_point_rank_mem_bytes(c, team, has);
  if (!(per > has)) return 0;
  char e[32], p[32], h[32];
  ds_fmt_bytes(e, sizeof e, est);
  ds_fmt_bytes(p, sizeof p, per);
  ds_fmt_bytes(h, sizeof h, has);
  if (team > 1 && c->model.type == DS_MODEL_CNN) /* cost.c: replicated but for J */
    snprintf(reason, n, "does not fit: estimated %s on each of its %d team members (a CNN keeps "
             "theta, its data and work space on every member), a rank has %s (%s)", p, team, h, src);
  else if (team > 1)
    snprintf(reason, n, "does not fit: estimated %s = %d x %s, a rank has %s (%s)", e, team, p, h,
             src);
  else
    snprintf(reason, n, "does not fit: estimated %s, this rank has %s (%s)", e, h, src);
  return 1;
}
