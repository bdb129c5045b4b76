# spectra room: one binary (test_spectra_1) run on 1, 2 and 4 ranks.
ds_mpi_test(test_spectra_1 ${CMAKE_CURRENT_SOURCE_DIR}/test_spectra.c 1 ds_spectra ds_util)
foreach(np 2 4)
  add_test(NAME test_spectra_${np} COMMAND ${DS_ENV_SH} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
           --oversubscribe $<TARGET_FILE:test_spectra_1>)
  set_tests_properties(test_spectra_${np} PROPERTIES LABELS mpi ENVIRONMENT "${DS_TEST_ENV}")
endforeach()
# A team of one rank uses LAPACK dgesdd by default; this run forces ScaLAPACK's
# pdgesvd on the 1x1 grid so both paths stay checked against dgesdd.
add_test(NAME test_spectra_1_scalapack COMMAND ${DS_ENV_SH} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 1
         --oversubscribe $<TARGET_FILE:test_spectra_1>)
set_tests_properties(test_spectra_1_scalapack PROPERTIES LABELS mpi
                     ENVIRONMENT "${DS_TEST_ENV};DS_TEST_KEEP=DYNSWEEP_SVD;DYNSWEEP_SVD=scalapack")
