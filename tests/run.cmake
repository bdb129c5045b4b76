# Whole-program tests of `dynsweep run/plan/ls/show` (label integration).
ds_script_test(run_determinism run_determinism.sh)
ds_script_test(run_divergence run_divergence.sh)
ds_script_test(cli cli.sh)
