# diagnostics room (issue 4): one binary run on 1, 2 and 4 ranks (teams of 1, 2, 4).
ds_mpi_test(test_diag_1 ${CMAKE_CURRENT_SOURCE_DIR}/test_diag.c 1 ds_diag ds_nn ds_spectra ds_util)
foreach(np 2 4)
  add_test(NAME test_diag_${np} COMMAND ${DS_ENV_SH} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
           --oversubscribe $<TARGET_FILE:test_diag_1>)
  set_tests_properties(test_diag_${np} PROPERTIES LABELS mpi ENVIRONMENT "${DS_TEST_ENV}")
endforeach()
