# Distributed training (src/spectra/dtrain.c) against the single-rank ds_mlp
# path, and the worker's train.distributed path: one binary on 1, 2 (1x2 grid)
# and 4 (2x2) ranks.
ds_mpi_test(test_dtrain_1 ${CMAKE_CURRENT_SOURCE_DIR}/test_dtrain.c 1 ds_worker ds_config
            ds_spectra ds_nn ds_optim ds_data ds_util)
foreach(np 2 4)
  add_test(NAME test_dtrain_${np} COMMAND ${DS_ENV_SH} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
           --oversubscribe $<TARGET_FILE:test_dtrain_1>)
  set_tests_properties(test_dtrain_${np} PROPERTIES LABELS mpi ENVIRONMENT "${DS_TEST_ENV}")
endforeach()

# The benchmark of docs/performance.md, "Distributed training" (not a test).
add_executable(dynsweep-bench-dtrain ${CMAKE_SOURCE_DIR}/tools/bench_dtrain.c)
target_link_libraries(dynsweep-bench-dtrain PRIVATE ds_spectra ds_nn ds_optim ds_util)
set_target_properties(dynsweep-bench-dtrain PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
