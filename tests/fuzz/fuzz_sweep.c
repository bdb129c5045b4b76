/* fuzz_sweep.c -- libFuzzer harness for the sweep-file parser.
 *
 * Feeds the input as sweep-file text to ds_sweep_parse and, when it parses,
 * expands a few grid points (first, last and some between) and asks each for
 * its cost, store size and the text of every axis value -- everything
 * `dynsweep plan` does with a file. Any crash, sanitizer report, leak or
 * timeout is a finding; a parse error is a normal outcome.
 *
 * Built two ways: with clang -fsanitize=fuzzer (tests/fuzz/fuzz.sh), and into
 * the plain test binary fuzz_replay (tests/fuzz/replay.c), which replays the
 * corpus and the crash reproducers in every ctest run. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/config.h"
#include "dynsweep/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 20) return 0; /* the parser's own limits refuse far less */
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0; /* an embedded NUL ends the text, as ds_read_file's callers see it */
  ds_sweep sw;
  memset(&sw, 0, sizeof sw);
  if (ds_sweep_parse("fuzz.yaml", text, &sw) == DS_OK) {
    int64_t n = ds_sweep_npoints(&sw);
    int64_t ids[6] = {0, n - 1, n / 2, n / 3, 1, n - 2};
    for (int k = 0; k < 6; k++) {
      if (ids[k] < 0 || ids[k] >= n) continue;
      ds_point p;
      if (ds_sweep_point(&sw, ids[k], &p) != DS_OK) continue;
      volatile double c = ds_point_cost(&p.cfg) + ds_point_store_bytes(&p.cfg);
      (void)c;
      int *dims = p.cfg.model.depth >= 1 ? calloc((size_t)p.cfg.model.depth + 1, sizeof *dims) : NULL;
      if (dims) ds_point_dims(&p.cfg, dims);
      free(dims);
      for (int a = 0; a < sw.naxes; a++) {
        char t[64];
        ds_cfg_get_text(&p.cfg, sw.axes[a].path, t, sizeof t);
      }
    }
    ds_sweep_free(&sw);
  }
  ds_clear_error();
  free(text);
  return 0;
}
