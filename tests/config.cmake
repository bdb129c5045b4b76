# config room tests: unit test of the sweep-file parser, and the CLI over the
# bad sweep files in tests/bad_sweeps/ (plus the good demo sweep).
ds_unit_test(test_config ${CMAKE_CURRENT_SOURCE_DIR}/test_config.c ds_config ds_util)
target_compile_definitions(test_config PRIVATE DS_SRC_DIR="${CMAKE_SOURCE_DIR}")
ds_script_test(bad_sweeps bad_sweeps.sh)
