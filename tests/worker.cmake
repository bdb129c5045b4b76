# The worker: checkpoint / resume of a point is bitwise exact.
ds_mpi_test(test_worker ${CMAKE_CURRENT_SOURCE_DIR}/test_worker.c 1 ds_worker ds_config ds_spectra
            ds_nn ds_optim ds_data ds_util)
