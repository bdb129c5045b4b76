# The small-layer fast paths of src/nn/layers.c are bitwise the plain formulation (issue 7).
ds_unit_test(test_nn_fast ${CMAKE_CURRENT_SOURCE_DIR}/test_nn_fast.c ds_nn ds_util)
