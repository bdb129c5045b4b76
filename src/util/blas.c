/* blas.c -- make sure OpenBLAS runs its fast kernel, and say which one ran.
 *
 * Debian's OpenBLAS is built with DYNAMIC_ARCH and picks a kernel when the
 * library loads. On some virtual machines the CPUID it sees makes it fall back
 * to a generic kernel ("Prescott") that runs DGEMM ~5x slower than the
 * AVX-512 one the CPU supports. OPENBLAS_CORETYPE overrides the choice but is
 * read only at load time, so the fix is to re-exec ourselves with it set. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynsweep/util.h"

extern char *openblas_get_corename(void);
extern char *openblas_get_config(void);
extern void openblas_set_num_threads(int);

static const char *detected_kernel(void) {
  const char *fake = getenv("DYNSWEEP_ASSUME_DETECTED"); /* testing the re-exec path */
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

/* What to ask OpenBLAS for at load time: a kernel name (NULL = keep) and
 * whether the thread count must be pinned to 1. */
static const char *wanted_kernel(void) {
  const char *best = ds_blas_best_kernel();
  const char *k = detected_kernel();
  if (!best || good_enough(k, best)) return NULL;
  if (getenv("DYNSWEEP_REEXECED")) {
    ds_warn("OpenBLAS still runs kernel %s after re-exec with OPENBLAS_CORETYPE=%s", k, best);
    return NULL;
  }
  if (getenv("OPENBLAS_CORETYPE")) {
    ds_warn("OpenBLAS kernel %s was requested by OPENBLAS_CORETYPE; this CPU supports the "
            "faster %s (unset OPENBLAS_CORETYPE to let dynsweep choose)", k, best);
    return NULL;
  }
  if (getenv("DYNSWEEP_NO_REEXEC")) {
    ds_warn("OpenBLAS chose kernel %s but this CPU supports %s (~5x faster DGEMM); "
            "set OPENBLAS_CORETYPE=%s", k, best, best);
    return NULL;
  }
  return best;
}

/* Both the kernel and the thread pool are fixed when the library loads:
 * OPENBLAS_NUM_THREADS unset means a pool of one thread per core whose idle
 * threads still poll after openblas_set_num_threads(1), taking time from the
 * neighbouring rank. So when either needs changing we set the variables and
 * exec ourselves once (DYNSWEEP_EXECED guards against a loop). */
void ds_blas_ensure_fast_kernel(char **argv) {
  int pin_threads = !getenv("OPENBLAS_NUM_THREADS") && !getenv("OMP_NUM_THREADS");
  const char *best = wanted_kernel();
  if (pin_threads) openblas_set_num_threads(1);
  if ((!best && !pin_threads) || getenv("DYNSWEEP_EXECED") || getenv("DYNSWEEP_NO_REEXEC")) {
    if (best) ds_warn("running OpenBLAS kernel %s, not %s", ds_blas_kernel(), best);
    return;
  }
  if (pin_threads) setenv("OPENBLAS_NUM_THREADS", "1", 1);
  if (best) {
    setenv("OPENBLAS_CORETYPE", best, 1);
    setenv("DYNSWEEP_REEXECED", detected_kernel(), 1);
  }
  setenv("DYNSWEEP_EXECED", "1", 1);
  unsetenv("DYNSWEEP_ASSUME_DETECTED");
  /* exec the resolved path, not /proc/self/exe itself: the new process is
   * named after the file it runs, so ps/top/perf would all show "exe" */
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len > 0 && (size_t)len < sizeof self - 1) {
    self[len] = '\0';
    execv(self, argv);
  }
  execv("/proc/self/exe", argv); /* the binary was replaced or deleted, or the path is too long */
  ds_warn("re-exec failed; running OpenBLAS kernel %s", ds_blas_kernel());
}
