# Tests of the nn, data and optim rooms (and the RNG known answers they rely on).
ds_unit_test(test_nn ${CMAKE_CURRENT_SOURCE_DIR}/test_nn.c ds_nn ds_util)
ds_unit_test(test_data ${CMAKE_CURRENT_SOURCE_DIR}/test_data.c ds_data ds_util)
ds_unit_test(test_optim ${CMAKE_CURRENT_SOURCE_DIR}/test_optim.c ds_optim ds_nn ds_data ds_util)
# issue 3: derivatives (FD checks of gradients, JVP, HVP, f_lin/f_quad), inits/losses/L*,
# and the studies' closed-form predictions.
ds_unit_test(test_nn_products ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_products.c ds_nn ds_util)
ds_unit_test(test_nn_init ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_init.c ds_nn ds_util)
ds_unit_test(test_science ${CMAKE_CURRENT_SOURCE_DIR}/test_science.c ds_nn ds_util)
# issue 13: the tanh map under -n 2 and -n 3 (bitwise), and --set overrides.
ds_script_test(tanh_map tanh_map.sh)
ds_script_test(set_overrides set_overrides.sh)
