# issue 13: map tiles trained together (src/nn/tile.c, src/worker/tile.c) against
# ds_worker_run_point, and a point's record independent of its tile (bitwise).
ds_mpi_test(test_tile ${CMAKE_CURRENT_SOURCE_DIR}/test_tile.c 1 ds_worker ds_config ds_spectra
            ds_nn ds_optim ds_data ds_util)
