# issue 26: the convolution layer and the CNN (src/nn/conv.c, cnn.c): central
# finite differences and known answers; then PyTorch float64 (skips, exit 77,
# without torch) on the forward output, the gradient and a 20-step GD trajectory.
ds_unit_test(test_cnn ${CMAKE_CURRENT_SOURCE_DIR}/test_cnn.c ds_nn ds_data ds_util)
add_test(NAME cnn_torch COMMAND ${DS_ENV_SH} /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cnn_torch.py
         $<TARGET_FILE:test_cnn>)
set_tests_properties(cnn_torch PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     ENVIRONMENT "${DS_TEST_ENV}")
