# Hardening (issue 5): the sweep-file parser against hostile input.
#  - fuzz_replay (unit): the libFuzzer harness tests/fuzz/fuzz_sweep.c, linked
#    with a plain main, replays the fuzz corpus, the crash reproducers and the
#    project's own sweep files through ds_sweep_parse in every build (and under
#    ASan/UBSan in tests/sanitize.sh).
#  - hardening_limits (integration): alias expansion and huge grids are
#    refused by `dynsweep plan` with exit 2 and a message.
#  - fuzz_sweep: the libFuzzer binary itself, only with -DDYNSWEEP_FUZZ=ON and
#    clang (tests/fuzz/fuzz.sh configures that build).
# docs/hardening.md describes all of it.
add_executable(fuzz_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_sweep.c
               ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay.c)
target_link_libraries(fuzz_replay PRIVATE ds_config ds_util)
add_test(NAME fuzz_replay COMMAND ${DS_ENV_SH} $<TARGET_FILE:fuzz_replay>
         ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/crashes
         ${CMAKE_SOURCE_DIR}/sweeps ${CMAKE_SOURCE_DIR}/sweeps/examples ${CMAKE_CURRENT_SOURCE_DIR}/sweeps
         ${CMAKE_CURRENT_SOURCE_DIR}/bad_sweeps)
set_tests_properties(fuzz_replay PROPERTIES LABELS unit ENVIRONMENT "${DS_TEST_ENV}")

ds_script_test(hardening_limits hardening_limits.sh)

option(DYNSWEEP_FUZZ "Build the libFuzzer harness fuzz_sweep (needs clang; see tests/fuzz/fuzz.sh)" OFF)
if(DYNSWEEP_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DYNSWEEP_FUZZ needs clang (CC=clang); got ${CMAKE_C_COMPILER_ID}")
  endif()
  add_executable(fuzz_sweep ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_sweep.c)
  target_link_libraries(fuzz_sweep PRIVATE ds_config ds_util)
  target_link_options(fuzz_sweep PRIVATE -fsanitize=fuzzer)
endif()
