/* knobs.c -- the table of every DYNSWEEP_* environment setting (knobs.h).
 *
 * One row a knob: its name, how its value is parsed (the parse each reader
 * did with getenv before the table existed, kept exactly), the type and
 * default as the docs show them, and one line of doc. Adding a knob: a
 * DS_KNOB_* in knobs.h, a row here (same order), tools/update-keys.sh. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/knobs.h"
#include "dynsweep/util.h"

enum kind { K_STR, K_WORD, K_FLAG, K_FLAG1, K_ON, K_TRI, K_INT, K_REAL };
enum { KF_TEST = 1, KF_LIVE = 2 }; /* test-only; read at every access (internal) */

typedef struct {
  const char *name;
  enum kind kind;
  int flags;
  const char *num;  /* K_INT, K_REAL: the value when unset or empty */
  const char *type; /* as the docs show it */
  const char *def;  /* as the docs show it */
  const char *doc;
} knob_def;

static const knob_def knobs[DS_KNOB_COUNT] = {
    [DS_KNOB_PROGRESS] = {"DYNSWEEP_PROGRESS", K_WORD, 0, NULL, "`log`",
     "a bar on a terminal",
     "log: progress as plain lines, never the one-line bar, even on a terminal (util/console.c)"},
    [DS_KNOB_NO_REEXEC] = {"DYNSWEEP_NO_REEXEC", K_FLAG, 0, NULL, "set/unset", "unset",
     "set (any value): dynsweep does not re-execute itself to get the fastest OpenBLAS kernel "
     "or a one-thread OpenBLAS pool; rank 0 of run warns when the kernel is slower (util/blas.c)"},
    [DS_KNOB_EXECED] = {"DYNSWEEP_EXECED", K_STR, KF_LIVE, NULL, "pid", "unset",
     "internal: set by dynsweep to its pid across its OpenBLAS re-exec (the guard against an "
     "exec loop), unset again by the new image"},
    [DS_KNOB_REEXECED] = {"DYNSWEEP_REEXECED", K_STR, KF_LIVE, NULL, "kernel name", "unset",
     "internal: the kernel OpenBLAS chose before the re-exec (for dynsweep version)"},
    [DS_KNOB_ASSUME_DETECTED] = {"DYNSWEEP_ASSUME_DETECTED", K_STR, KF_TEST, NULL, "kernel name",
     "unset", "test-only: act as if OpenBLAS had chosen this kernel (tests the re-exec path)"},
    [DS_KNOB_TANH] = {"DYNSWEEP_TANH", K_WORD, 0, NULL, "`portable`, `sse2`",
     "FMA family where the CPU has AVX2+FMA",
     "portable: the non-FMA SLEEF tanh family on every CPU (the same bits on CPUs with and "
     "without FMA); sse2: the sse2 kernel (tests: the bits of avx) (nn/tanh.c)"},
    [DS_KNOB_NN_GEMM] = {"DYNSWEEP_NN_GEMM", K_WORD, 0, NULL, "`openblas`", "LIBXSMM",
     "openblas: the nets' small GEMMs through OpenBLAS instead of LIBXSMM, and the "
     "convolutions as im2col + OpenBLAS instead of LIBXSMM's implicit GEMM (comparisons, "
     "benchmarks; nn/layers.c, nn/conv.c)"},
    [DS_KNOB_NN_BLOCK] = {"DYNSWEEP_NN_BLOCK", K_ON, 0, NULL, "0/1", "1",
     "0: the nets' training step never runs over blocks of samples (bitwise the same; "
     "comparisons; nn/mlp.c)"},
    [DS_KNOB_NN_E2E] = {"DYNSWEEP_NN_E2E", K_ON, 0, NULL, "0/1", "1",
     "0: deep linear nets never take the end-to-end product path (nn/mlp.c)"},
    [DS_KNOB_TILE_ISA] = {"DYNSWEEP_TILE_ISA", K_WORD, 0, NULL, "`avx2`",
     "the widest the CPU has",
     "avx2: the map tiles' AVX2 kernels on an AVX-512 CPU (comparisons; nn/tile.c)"},
    [DS_KNOB_TILE_GENERIC] = {"DYNSWEEP_TILE_GENERIC", K_FLAG, 0, NULL, "set/unset", "unset",
     "set (any value): the map tiles' plain C pass and tanh instead of the intrinsics ones "
     "(tests: the same bits; nn/tile.c)"},
    [DS_KNOB_TILE_TANH] = {"DYNSWEEP_TILE_TANH", K_WORD, 0, NULL, "`sleef`", "the tiles' own",
     "sleef: the map tiles use the per-point path's SLEEF tanh (comparisons, about half the "
     "speed; nn/tile.c)"},
    [DS_KNOB_TILE_GEMM] = {"DYNSWEEP_TILE_GEMM", K_WORD, 0, NULL, "`openblas`", "LIBXSMM",
     "openblas: the map tiles' GEMMs through OpenBLAS instead of LIBXSMM JIT kernels "
     "(benchmarks; nn/tile.c)"},
    [DS_KNOB_TILE_NOSTOP] = {"DYNSWEEP_TILE_NOSTOP", K_FLAG1, 0, NULL, "0/1", "0",
     "1: map tiles train points whose loss is no longer finite to the end instead of stopping "
     "them (tests: the records agree; nn/tile.c)"},
    [DS_KNOB_SVD] = {"DYNSWEEP_SVD", K_WORD, 0, NULL, "`scalapack`", "LAPACK on one rank",
     "scalapack: singular values through ScaLAPACK's pdgesvd even on a 1x1 process grid "
     "(tests; spectra/svd.c)"},
    [DS_KNOB_SCHED_STATS] = {"DYNSWEEP_SCHED_STATS", K_STR, 0, NULL, "file", "unset",
     "a file: rank 0 of a run appends one JSON line of scheduler statistics (assignments, "
     "service latency, ticks, memory) when the run ends (sched/dispatch.c)"},
    [DS_KNOB_BENCH_NOWORK] = {"DYNSWEEP_BENCH_NOWORK", K_FLAG1, 0, NULL, "0/1", "0",
     "1: map tiles are not trained, records are made from the grid index (benchmarks of rank 0 "
     "alone; sched/maps.c)"},
    [DS_KNOB_STORE_SEGMENTS] = {"DYNSWEEP_STORE_SEGMENTS", K_TRI, 0, NULL, "0/1",
     "what the plan picks",
     "1: new stores are format 5 (series in segment files); 0: format 4; unset or empty: the "
     "plan's choice (store/segments.c)"},
    [DS_KNOB_STORE_BLOCKS] = {"DYNSWEEP_STORE_BLOCKS", K_ON, 0, NULL, "0/1", "1",
     "0: a format-5 store keeps /summary and /series/index in the top file, not in row blocks "
     "(the layout before blocks; comparisons; store/store_write.c)"},
    [DS_KNOB_BLOCK_ROWS] = {"DYNSWEEP_BLOCK_ROWS", K_INT, 0, "0", "rows (> 0)",
     "a block <= 1 MiB",
     "rows per row block of a format-5 store (tests; default: the largest power of two that "
     "keeps a block within DS_BLK_BYTES = 1 MiB; store/blocks.c)"},
    [DS_KNOB_SEG_CAP] = {"DYNSWEEP_SEG_CAP", K_REAL, 0, "0", "bytes (> 0)",
     "4% of the series, >= 4 MiB",
     "the merge cap of a format-5 store's segment files: adjacent segments whose sum is at "
     "most this many bytes are merged (tests; store/segments.c)"},
    [DS_KNOB_PUBLISH_FACTOR] = {"DYNSWEEP_PUBLISH_FACTOR", K_REAL, 0, "100", "number", "100",
     "a publish waits at least this many times the cost of the last one (tests: 0 publishes "
     "every --publish-every; store/publish.c)"},
    [DS_KNOB_TOOLS] = {"DYNSWEEP_TOOLS", K_STR, 0, NULL, "directory", "the tools/ of the source tree built",
     "where dynsweep map finds dynsweep-map (analysis/map.c)"},
    [DS_KNOB_TEST_CRASH] = {"DYNSWEEP_TEST_CRASH", K_STR, KF_TEST, NULL, "KIND:N[:HOW],...",
     "unset",
     "test-only: the process dies for real at a point (KIND point, a row id) or a map pixel "
     "(pixel, a grid index) N; HOW segv (default) or oom (include/dynsweep/isolate.h)"},
    [DS_KNOB_TEST_FSFAIL] = {"DYNSWEEP_TEST_FSFAIL", K_STR, KF_TEST, NULL, "OP:N[:ERRNO]", "unset",
     "test-only: the store's Nth OS file operation OP fails as the OS would (OP copy, reserve, "
     "fsync, jsync, rename, link, unlink, syncdir, write, truncate, mkdir, rmdir or create; fsync:3, "
     "rename:1; ERRNO a number or "
     "EIO, ENOSPC, ...: default EIO, ENOSPC for reserve; src/store/fsio.c)"},
};

static char *values[DS_KNOB_COUNT];
static int present[DS_KNOB_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

void ds_knobs_reload(void) {
  for (int i = 0; i < DS_KNOB_COUNT; i++) {
    free(values[i]);
    values[i] = NULL;
    const char *v = knobs[i].name ? getenv(knobs[i].name) : NULL;
    present[i] = v != NULL;
    if (v) values[i] = strdup(v); /* NULL if out of memory: set, value "" */
  }
}

static void load(void) { ds_knobs_reload(); }

static const knob_def *def_of(ds_knob k) {
  return (unsigned)k < DS_KNOB_COUNT && knobs[k].name ? &knobs[k] : NULL;
}

const char *ds_knob_name(ds_knob k) {
  const knob_def *d = def_of(k);
  return d ? d->name : "DYNSWEEP_?";
}

const char *ds_knob_str(ds_knob k) {
  const knob_def *d = def_of(k);
  if (!d) return NULL;
  if (d->flags & KF_LIVE) return getenv(d->name);
  pthread_once(&once, load);
  return present[k] ? (values[k] ? values[k] : "") : NULL;
}

int ds_knob_on(ds_knob k) {
  const knob_def *d = def_of(k);
  const char *v = ds_knob_str(k);
  switch (d ? d->kind : K_FLAG) {
  case K_FLAG1: return v && !strcmp(v, "1");
  case K_ON: return !(v && !strcmp(v, "0"));
  case K_TRI: return !v || !v[0] ? -1 : strcmp(v, "0") != 0;
  default: return v != NULL;
  }
}

int ds_knob_is(ds_knob k, const char *word) {
  const char *v = ds_knob_str(k);
  return v && word && !strcmp(v, word);
}

int64_t ds_knob_int(ds_knob k) {
  const knob_def *d = def_of(k);
  const char *v = ds_knob_str(k);
  return v && v[0] ? atoll(v) : d && d->num ? atoll(d->num) : 0;
}

double ds_knob_real(ds_knob k) {
  const knob_def *d = def_of(k);
  const char *v = ds_knob_str(k);
  return v && v[0] ? atof(v) : d && d->num ? atof(d->num) : 0;
}

/* ---- listings ---------------------------------------------------------------- */

#define DS_KNOBS_DOC "docs/environment.md"

void ds_knobs_print_set(FILE *f) {
  int nset = 0;
  for (int i = 0; i < DS_KNOB_COUNT; i++) nset += ds_knob_str((ds_knob)i) != NULL;
  fprintf(f, "knobs: %d DYNSWEEP_* environment settings known (dynsweep version --knobs, %s); "
          "%d set%s\n", DS_KNOB_COUNT, DS_KNOBS_DOC, nset, nset ? ":" : "");
  for (int i = 0; i < DS_KNOB_COUNT; i++) {
    const char *v = ds_knob_str((ds_knob)i);
    if (v) fprintf(f, "  %s=%s\n", knobs[i].name, v);
  }
}

void ds_knobs_print_all(FILE *f, int markdown) {
  if (markdown)
    fputs("| variable | value | default | what it does |\n"
          "|----------|-------|---------|--------------|\n", f);
  for (int i = 0; i < DS_KNOB_COUNT; i++) {
    const knob_def *d = &knobs[i];
    if (!d->name) continue;
    if (markdown) {
      fprintf(f, "| `%s` | ", d->name);
      ds_print_md_cell(f, d->type);
      fputs(" | ", f);
      ds_print_md_cell(f, d->def);
      fputs(" | ", f);
      ds_print_md_cell(f, d->doc);
      fputs(" |\n", f);
    } else {
      char ty[128];
      snprintf(ty, sizeof ty, "%s", d->type);
      for (char *p = ty, *q = ty;; p++) { /* the docs' `code` quotes, without the quotes */
        if (*p != '`') *q++ = *p;
        if (!*p) break;
      }
      fprintf(f, "%s (%s; default %s)\n", d->name, ty, d->def);
      ds_print_wrapped(f, d->doc);
    }
  }
}
