/* test_knobs.c -- issue 25: the knob table (util/knobs.c) parses each
 * DYNSWEEP_* variable exactly as its reader's getenv code did before the
 * table existed (the old expressions are written out here), for values that
 * matter (unset, empty, 0, 1, the words, numbers, junk); the environment is
 * read once (a setenv shows after ds_knobs_reload only), but the re-exec's
 * internal variables live; and DS_TRY records file and line. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/knobs.h"
#include "dynsweep/util.h"

static const char *vals[] = {NULL, "", "0", "1", "log", "portable", "sse2", "openblas", "avx2",
                             "sleef", "scalapack", "3", "-5", "4000", "2.5", "abc", " 7"};
enum { NVALS = sizeof vals / sizeof *vals };

static void put(const char *name, const char *v) {
  if (v) setenv(name, v, 1);
  else unsetenv(name);
  ds_knobs_reload();
}

static int is(const char *e, const char *w) { return e && !strcmp(e, w); }

static int fail_inner(void) { return ds_fail(DS_EINPUT, "inner failure"); }
static int fail_outer(void) {
  DS_TRY(fail_inner());
  return DS_OK;
}

int main(void) {
  for (int i = 0; i < NVALS; i++) {
    const char *e = vals[i], *shown = e ? e : "(unset)";
    put("DYNSWEEP_PROGRESS", e);
    CHECK(ds_knob_is(DS_KNOB_PROGRESS, "log") == is(e, "log"), "PROGRESS=%s", shown);
    put("DYNSWEEP_NO_REEXEC", e);
    CHECK(ds_knob_on(DS_KNOB_NO_REEXEC) == (e != NULL), "NO_REEXEC=%s", shown);
    put("DYNSWEEP_TANH", e);
    CHECK(ds_knob_is(DS_KNOB_TANH, "portable") == is(e, "portable") &&
              ds_knob_is(DS_KNOB_TANH, "sse2") == is(e, "sse2"), "TANH=%s", shown);
    put("DYNSWEEP_NN_GEMM", e);
    CHECK(!ds_knob_is(DS_KNOB_NN_GEMM, "openblas") == !(e && !strcmp(e, "openblas")), "NN_GEMM=%s", shown);
    const char *on_unless_0[] = {"DYNSWEEP_NN_BLOCK", "DYNSWEEP_NN_E2E", "DYNSWEEP_STORE_BLOCKS"};
    ds_knob on_k[] = {DS_KNOB_NN_BLOCK, DS_KNOB_NN_E2E, DS_KNOB_STORE_BLOCKS};
    for (int k = 0; k < 3; k++) {
      put(on_unless_0[k], e);
      CHECK(ds_knob_on(on_k[k]) == !(e && !strcmp(e, "0")), "%s=%s", on_unless_0[k], shown);
    }
    put("DYNSWEEP_TILE_ISA", e);
    CHECK(ds_knob_is(DS_KNOB_TILE_ISA, "avx2") == (e && !strcmp(e, "avx2")), "TILE_ISA=%s", shown);
    put("DYNSWEEP_TILE_TANH", e);
    CHECK(ds_knob_is(DS_KNOB_TILE_TANH, "sleef") == is(e, "sleef"), "TILE_TANH=%s", shown);
    put("DYNSWEEP_TILE_GEMM", e);
    CHECK(ds_knob_is(DS_KNOB_TILE_GEMM, "openblas") == is(e, "openblas"), "TILE_GEMM=%s", shown);
    put("DYNSWEEP_SVD", e);
    CHECK(ds_knob_is(DS_KNOB_SVD, "scalapack") == (e && strcmp(e, "scalapack") == 0), "SVD=%s", shown);
    put("DYNSWEEP_TILE_GENERIC", e);
    CHECK(ds_knob_on(DS_KNOB_TILE_GENERIC) == (e != NULL), "TILE_GENERIC=%s", shown);
    put("DYNSWEEP_TILE_NOSTOP", e);
    CHECK(ds_knob_on(DS_KNOB_TILE_NOSTOP) == (e && !strcmp(e, "1")), "TILE_NOSTOP=%s", shown);
    put("DYNSWEEP_BENCH_NOWORK", e);
    CHECK(ds_knob_on(DS_KNOB_BENCH_NOWORK) == (e && !strcmp(e, "1")), "BENCH_NOWORK=%s", shown);
    put("DYNSWEEP_STORE_SEGMENTS", e);
    for (int dflt = 0; dflt < 2; dflt++) {
      int old = !e || !e[0] ? dflt != 0 : strcmp(e, "0") != 0;
      int on = ds_knob_on(DS_KNOB_STORE_SEGMENTS);
      CHECK((on < 0 ? dflt != 0 : on) == old, "STORE_SEGMENTS=%s (default %d)", shown, dflt);
    }
    put("DYNSWEEP_BLOCK_ROWS", e);
    long long rows = ds_knob_int(DS_KNOB_BLOCK_ROWS);
    CHECK((rows > 0 ? rows : -1) == (e && atoll(e) > 0 ? atoll(e) : -1), "BLOCK_ROWS=%s", shown);
    put("DYNSWEEP_SEG_CAP", e);
    double cap = ds_knob_real(DS_KNOB_SEG_CAP);
    CHECK((cap > 0 ? cap : -1) == (e && atof(e) > 0 ? atof(e) : -1), "SEG_CAP=%s", shown);
    put("DYNSWEEP_PUBLISH_FACTOR", e);
    CHECK(ds_knob_real(DS_KNOB_PUBLISH_FACTOR) == (e && e[0] ? atof(e) : 100.0), "PUBLISH_FACTOR=%s", shown);
    const char *strs[] = {"DYNSWEEP_SCHED_STATS", "DYNSWEEP_TOOLS", "DYNSWEEP_TEST_CRASH",
                          "DYNSWEEP_ASSUME_DETECTED", "DYNSWEEP_EXECED", "DYNSWEEP_REEXECED",
                          "DYNSWEEP_TEST_FSFAIL"};
    ds_knob str_k[] = {DS_KNOB_SCHED_STATS, DS_KNOB_TOOLS, DS_KNOB_TEST_CRASH, DS_KNOB_ASSUME_DETECTED,
                       DS_KNOB_EXECED, DS_KNOB_REEXECED, DS_KNOB_TEST_FSFAIL};
    for (int k = 0; k < 7; k++) {
      put(strs[k], e);
      const char *v = ds_knob_str(str_k[k]);
      CHECK(e ? v && !strcmp(v, e) : v == NULL, "%s=%s", strs[k], shown);
      CHECK(!strcmp(ds_knob_name(str_k[k]), strs[k]), "the name of %s", strs[k]);
      unsetenv(strs[k]);
    }
  }
  /* read once: a change shows after a reload; the re-exec's guard lives */
  put("DYNSWEEP_SVD", NULL);
  setenv("DYNSWEEP_SVD", "scalapack", 1);
  CHECK(!ds_knob_is(DS_KNOB_SVD, "scalapack"), "a setenv after the read does not show");
  ds_knobs_reload();
  CHECK(ds_knob_is(DS_KNOB_SVD, "scalapack"), "... until ds_knobs_reload");
  setenv("DYNSWEEP_EXECED", "123", 1);
  CHECK(is(ds_knob_str(DS_KNOB_EXECED), "123"), "DYNSWEEP_EXECED is read live");
  unsetenv("DYNSWEEP_EXECED");
  CHECK(ds_knob_str(DS_KNOB_EXECED) == NULL, "... also when unset");
  for (int k = 0; k < DS_KNOB_COUNT; k++)
    CHECK(!strncmp(ds_knob_name((ds_knob)k), "DYNSWEEP_", 9), "knob %d has a row", k);
  /* DS_TRY: the message unchanged, the places recorded (ds_fail's, then DS_TRY's) */
  CHECK(fail_outer() == DS_EINPUT && !strcmp(ds_errmsg(), "inner failure"), "%s", ds_errmsg());
  char buf[1024] = "";
  FILE *f = fmemopen(buf, sizeof buf, "w");
  ds_errtrace_print(f);
  fclose(f);
  CHECK(strstr(buf, "dynsweep:   at tests/test_knobs.c:") && strstr(buf, "(fail_inner)\n") &&
            strstr(buf, "(fail_outer)\n") && strstr(buf, "(fail_inner)") < strstr(buf, "(fail_outer)"),
        "the trace: %s", buf);
  ds_clear_error();
  buf[0] = 0;
  f = fmemopen(buf, sizeof buf, "w");
  ds_errtrace_print(f);
  fclose(f);
  CHECK(buf[0] == 0, "ds_clear_error empties the trace: %s", buf);
  return ds_check_report("test_knobs");
}
