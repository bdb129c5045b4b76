/* blas.c -- make sure OpenBLAS runs its fast kernel, and say which one ran.
 *
 * Debian's OpenBLAS is built with DYNAMIC_ARCH and picks a kernel when the
 * library loads. On some virtual machines the CPUID it sees makes it fall back
 * to a generic kernel ("Prescott") that runs DGEMM ~5x slower than the
 * AVX-512 one the CPU supports. OPENBLAS_CORETYPE overrides the choice but is
 * read only at load time, so the fix is to re-exec ourselves with it set. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dynsweep/knobs.h"
#include "dynsweep/util.h"

extern char *openblas_get_corename(void);
extern char *openblas_get_config(void);
extern void openblas_set_num_threads(int);

static const char *detected_kernel(void) {
  const char *fake = ds_knob_str(DS_KNOB_ASSUME_DETECTED); /* testing the re-exec path */
  return fake && *fake ? fake : openblas_get_corename();
}

const char *ds_blas_kernel(void) { return openblas_get_corename(); }
const char *ds_blas_config(void) { return openblas_get_config(); }

const char *ds_blas_best_kernel(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return NULL; /* nothing better to ask for */
}

/* Is kernel k as fast as best for DGEMM? (kernel names as OpenBLAS prints them) */
static int good_enough(const char *k, const char *best) {
  static const char *avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids", NULL};
  static const char *avx2[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", NULL};
  const char **ok = strcmp(best, "SkylakeX") == 0 ? avx512 : avx2;
  for (int i = 0; ok[i]; i++)
    if (strcasecmp(k, ok[i]) == 0) return 1;
  return 0;
}

/* Why the kernel that runs is not the best one ("" when it is, or is as
 * fast), and what the library chose before a re-exec. Set once per process
 * by ds_blas_ensure_fast_kernel, printed only where a user wants it: once by
 * rank 0 of `run` (ds_blas_warn), by `version` (ds_blas_explain). */
static char g_why[320], g_chosen[64];

/* The guard against an exec loop is this process's pid (exec keeps it), so a
 * dynsweep started by a dynsweep (submit -> sbatch -> mpirun, a test) does
 * not mistake its parent's variables for its own re-exec. */
static int reexeced_here(void) {
  const char *e = ds_knob_str(DS_KNOB_EXECED);
  return e && strtol(e, NULL, 10) == (long)getpid();
}

/* What to ask OpenBLAS for at load time: a kernel name (NULL = keep). */
static const char *wanted_kernel(void) {
  const char *best = ds_blas_best_kernel();
  const char *k = detected_kernel();
  const char *user = getenv("OPENBLAS_CORETYPE");
  if (!best || good_enough(k, best)) return NULL;
  if (reexeced_here() && g_chosen[0])
    snprintf(g_why, sizeof g_why, "dynsweep re-executed itself with OPENBLAS_CORETYPE=%s, but "
             "OpenBLAS still chose %s", best, k);
  else if (user)
    snprintf(g_why, sizeof g_why, "OPENBLAS_CORETYPE=%s is set in the environment (unset it and "
             "dynsweep picks %s)", user, best);
  else if (ds_knob_on(DS_KNOB_NO_REEXEC))
    snprintf(g_why, sizeof g_why, "the library chose %s when it loaded and DYNSWEEP_NO_REEXEC "
             "is set (unset it, or set OPENBLAS_CORETYPE=%s)", k, best);
  else if (reexeced_here())
    snprintf(g_why, sizeof g_why, "the library chose %s after dynsweep re-executed itself", k);
  else
    return best;
  return NULL;
}

/* Both the kernel and the thread pool are fixed when the library loads:
 * OPENBLAS_NUM_THREADS unset means a pool of one thread per core whose idle
 * threads still poll after openblas_set_num_threads(1), taking time from the
 * neighbouring rank. So when either needs changing we set the variables and
 * exec ourselves once. Prints nothing: see g_why. Drain signals (SIGTERM,
 * SIGUSR1) are blocked across the exec, so one that arrives meanwhile stays
 * pending for the new image, whose handlers are installed first thing. */
void ds_blas_ensure_fast_kernel(char **argv) {
  if (reexeced_here()) { /* the new image: remember, then forget the guard */
    const char *c = ds_knob_str(DS_KNOB_REEXECED);
    snprintf(g_chosen, sizeof g_chosen, "%s", c ? c : "");
  }
  int pin_threads = !getenv("OPENBLAS_NUM_THREADS") && !getenv("OMP_NUM_THREADS");
  const char *best = wanted_kernel();
  if (pin_threads) openblas_set_num_threads(1);
  int done = reexeced_here();
  unsetenv("DYNSWEEP_EXECED");
  unsetenv("DYNSWEEP_REEXECED");
  if ((!best && !pin_threads) || done || ds_knob_on(DS_KNOB_NO_REEXEC)) return;
  if (pin_threads) setenv("OPENBLAS_NUM_THREADS", "1", 1);
  if (best) {
    setenv("OPENBLAS_CORETYPE", best, 1);
    setenv("DYNSWEEP_REEXECED", detected_kernel(), 1);
  }
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  setenv("DYNSWEEP_EXECED", pid, 1);
  unsetenv("DYNSWEEP_ASSUME_DETECTED");
  sigset_t drain, old;
  sigemptyset(&drain);
  sigaddset(&drain, SIGTERM);
  sigaddset(&drain, SIGUSR1);
  sigprocmask(SIG_BLOCK, &drain, &old);
  if (ds_signal_drain_requested()) raise(SIGUSR1); /* pending across the exec */
  /* exec the resolved path, not /proc/self/exe itself: the new process is
   * named after the file it runs, so ps/top/perf would all show "exe" */
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len > 0 && (size_t)len < sizeof self - 1) {
    self[len] = '\0';
    execv(self, argv);
  }
  execv("/proc/self/exe", argv); /* the binary was replaced or deleted, or the path is too long */
  int err = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  unsetenv("DYNSWEEP_EXECED");
  unsetenv("DYNSWEEP_REEXECED");
  if (best)
    snprintf(g_why, sizeof g_why, "the library chose %s and re-executing dynsweep with "
             "OPENBLAS_CORETYPE=%s failed (%s)", ds_blas_kernel(), best, strerror(err));
}

const char *ds_blas_explain(void) {
  static char buf[512];
  const char *best = ds_blas_best_kernel(), *k = ds_blas_kernel();
  if (g_why[0]) snprintf(buf, sizeof buf, "differs because %s", g_why);
  else if (!best) snprintf(buf, sizeof buf, "this CPU has no faster kernel than the generic one");
  else if (g_chosen[0])
    snprintf(buf, sizeof buf, "the library chose %s when it loaded; dynsweep re-executed itself "
             "with OPENBLAS_CORETYPE=%s", g_chosen, best);
  else if (strcasecmp(k, best) != 0)
    snprintf(buf, sizeof buf, "%s runs DGEMM as fast as %s on this CPU (same instruction set)", k,
             best);
  else snprintf(buf, sizeof buf, "the library chose it");
  return buf;
}

void ds_blas_warn(void) {
  if (g_why[0])
    ds_warn("OpenBLAS runs kernel %s, not the faster %s this CPU supports: %s", ds_blas_kernel(),
            ds_blas_best_kernel(), g_why);
}
