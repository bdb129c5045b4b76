# Tests of the optim room: every optimiser and schedule (no nn dependency), and
# the seed-002 end-to-end update (uses ds_mlp_* for the deep-GD comparison).
ds_unit_test(test_optimizers ${CMAKE_CURRENT_SOURCE_DIR}/test_optimizers.c ds_optim ds_util)
ds_unit_test(test_e2e ${CMAKE_CURRENT_SOURCE_DIR}/test_e2e.c ds_optim ds_nn ds_util)
