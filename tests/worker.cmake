# The worker: checkpoint / resume of a point is bitwise exact.
ds_mpi_test(test_worker ${CMAKE_CURRENT_SOURCE_DIR}/test_worker.c 1 ds_worker ds_config ds_spectra
            ds_nn ds_optim ds_data ds_util)

# Whole trajectories against PyTorch autograd (skips, exit 77, without torch).
add_test(NAME torch_reference COMMAND ${DS_ENV_SH} /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/torch_reference.py
         $<TARGET_FILE:dynsweep>)
set_tests_properties(torch_reference PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     ENVIRONMENT "${DS_TEST_ENV}")
