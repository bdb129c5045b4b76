# config room tests: unit test of the sweep-file parser, and the CLI over the
# bad sweep files in tests/bad_sweeps/ (plus the good demo sweep).
ds_unit_test(test_config ${CMAKE_CURRENT_SOURCE_DIR}/test_config.c ds_config ds_util)
target_compile_definitions(test_config PRIVATE DS_SRC_DIR="${CMAKE_SOURCE_DIR}")
ds_script_test(bad_sweeps bad_sweeps.sh)
# broken data / init / reference files written by mk_bad_inputs, and sweep
# files that are FIFOs, directories, devices or too large: plan and run (issue 11)
add_executable(mk_bad_inputs ${CMAKE_CURRENT_SOURCE_DIR}/mk_bad_inputs.c)
target_include_directories(mk_bad_inputs PRIVATE ${HDF5_C_INCLUDE_DIRS})
target_link_libraries(mk_bad_inputs PRIVATE ${HDF5_C_LIBRARIES} MPI::MPI_C m)
ds_script_test(bad_inputs bad_inputs.sh)
set_tests_properties(bad_inputs PROPERTIES TIMEOUT 600)
# Issue 24, item 5 (tests/keys.sh): docs/sweep-spec.md's Key index equals
# `dynsweep keys --markdown`; no doc points outside the repository.
ds_script_test(keys keys.sh)
set_tests_properties(keys PROPERTIES TIMEOUT 120 LABELS "integration;config")
# Issue 26, "One network definition" (tests/models.sh): docs/models.md equals
# `dynsweep models --markdown`, and plan refuses (or, for the tile trainer,
# prices one at a time) exactly what the table's trainer columns say.
ds_script_test(models models.sh)
set_tests_properties(models PROPERTIES TIMEOUT 120 LABELS "integration;config")
