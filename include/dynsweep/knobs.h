/* knobs.h -- every DYNSWEEP_* environment setting in one table (util/knobs.c).
 *
 * A knob changes how dynsweep runs, never what a sweep means (the sweep file
 * does that): kernels for comparisons, store layouts and publish pacing for
 * tests, test-only fault switches. Each has one entry in the table: name,
 * type, default, one line of doc. `dynsweep version` lists those set,
 * `dynsweep version --knobs` all of them, docs/environment.md is generated
 * from the table (tools/update-keys.sh; tests/knobs.sh checks both, and that
 * every DYNSWEEP_ name in src/ is in the table).
 *
 * The environment is read once, at the first access (thread-safe), and kept:
 * a value is what it was then. Each accessor parses as its knob always did:
 *   ds_knob_str   the raw value, NULL when unset ("" when set empty)
 *   ds_knob_on    flags: FLAG on when set at all; FLAG1 on when "1"; ON on
 *                 unless "0"; TRI -1 when unset or empty, else 0 for "0", 1
 *   ds_knob_is    set and equal to a word (WORD knobs: "sleef", "openblas")
 *   ds_knob_int   INT: atoll of a non-empty value, else the table's default
 *   ds_knob_real  REAL: atof of a non-empty value, else the table's default
 * The two internal variables of the OpenBLAS re-exec (DYNSWEEP_EXECED,
 * DYNSWEEP_REEXECED), which util/blas.c sets and unsets, are read live. */
#ifndef DYNSWEEP_KNOBS_H
#define DYNSWEEP_KNOBS_H
#include <stdint.h>
#include <stdio.h>

typedef enum {
  /* console, OpenBLAS re-exec */
  DS_KNOB_PROGRESS,
  DS_KNOB_NO_REEXEC,
  DS_KNOB_EXECED,
  DS_KNOB_REEXECED,
  DS_KNOB_ASSUME_DETECTED,
  /* kernels of the nets, tiles and spectra (comparisons, benchmarks) */
  DS_KNOB_TANH,
  DS_KNOB_NN_GEMM,
  DS_KNOB_NN_BLOCK,
  DS_KNOB_NN_E2E,
  DS_KNOB_TILE_ISA,
  DS_KNOB_TILE_GENERIC,
  DS_KNOB_TILE_TANH,
  DS_KNOB_TILE_GEMM,
  DS_KNOB_TILE_NOSTOP,
  DS_KNOB_SVD,
  /* the scheduler */
  DS_KNOB_SCHED_STATS,
  DS_KNOB_BENCH_NOWORK,
  /* the store */
  DS_KNOB_STORE_SEGMENTS,
  DS_KNOB_STORE_BLOCKS,
  DS_KNOB_BLOCK_ROWS,
  DS_KNOB_SEG_CAP,
  DS_KNOB_PUBLISH_FACTOR,
  /* analysis */
  DS_KNOB_TOOLS,
  /* test-only fault switches */
  DS_KNOB_TEST_CRASH,
  DS_KNOB_TEST_FSFAIL,
  DS_KNOB_COUNT
} ds_knob;

const char *ds_knob_name(ds_knob k); /* "DYNSWEEP_SEG_CAP" */
const char *ds_knob_str(ds_knob k);
int ds_knob_on(ds_knob k);
int ds_knob_is(ds_knob k, const char *word);
int64_t ds_knob_int(ds_knob k);
double ds_knob_real(ds_knob k);

/* Read the environment again (for tests that setenv in-process; not
 * thread-safe: call it while no other thread reads a knob). */
void ds_knobs_reload(void);

/* `dynsweep version`: the knobs set (name=value, one a line, indented) after a
 * line saying how many are known and where they are documented. */
void ds_knobs_print_set(FILE *f);
/* `dynsweep version --knobs [--markdown]`: every knob with its type, default
 * and doc; markdown = the table of docs/environment.md. */
void ds_knobs_print_all(FILE *f, int markdown);
#endif
