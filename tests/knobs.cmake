# Issue 25 (tests/knobs.sh): every DYNSWEEP_* setting in one table
# (src/util/knobs.c), docs/environment.md generated from it, `dynsweep
# version` lists the knobs set; DS_TRY's file:line printed by `run -v`.
ds_script_test(knobs knobs.sh)
set_tests_properties(knobs PROPERTIES TIMEOUT 120 LABELS "integration;config")
# the table parses each knob as its reader did before (old expressions written
# out), reads the environment once; DS_TRY records file:line (tests/test_knobs.c)
ds_unit_test(test_knobs ${CMAKE_CURRENT_SOURCE_DIR}/test_knobs.c ds_util)
