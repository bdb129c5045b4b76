# issue 13: map tiles trained together (src/nn/tile.c, src/worker/tile.c) against
# ds_worker_run_point, and a point's record independent of its tile (bitwise).
ds_mpi_test(test_tile ${CMAKE_CURRENT_SOURCE_DIR}/test_tile.c 1 ds_worker ds_config ds_spectra
            ds_nn ds_optim ds_data ds_util)
# A tile's trajectories against PyTorch autograd (skips, exit 77, without torch).
add_test(NAME tile_torch COMMAND ${DS_ENV_SH} /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/tile_torch.py
         $<TARGET_FILE:test_tile>)
set_tests_properties(tile_torch PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     ENVIRONMENT "${DS_TEST_ENV}")
