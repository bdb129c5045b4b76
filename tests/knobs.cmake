# Issue 25 (tests/knobs.sh): every DYNSWEEP_* setting in one table
# (src/util/knobs.c), docs/environment.md generated from it, `dynsweep
# version` lists the knobs set; DS_TRY's file:line printed by `run -v`.
ds_script_test(knobs knobs.sh)
set_tests_properties(knobs PROPERTIES TIMEOUT 120 LABELS "integration;config")
