# plan room (issue 12): the calibrated time estimate of `dynsweep plan` (the
# BLAS probe, its cache, the estimate against a real run of the same sweep)
# and `submit --dry-run`'s --time suggestion.
ds_script_test(plan plan.sh)
set_tests_properties(plan PROPERTIES TIMEOUT 300)
# the time model on a made-up probe (exact figures): tests/test_plan.c
ds_unit_test(test_plan ${CMAKE_CURRENT_SOURCE_DIR}/test_plan.c ds_config ds_util)
# issue 26: plan's memory estimate of CNN points (f_lin, f_quad, Hessian, DAG)
# against their peak RSS (tests/cnn_plan_mem.sh, ~30 s)
ds_script_test(cnn_plan_mem cnn_plan_mem.sh)
