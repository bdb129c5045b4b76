# Analysis room: `dynsweep ls/export/phase` (C) and the Python report.
# Until the lead adds ds_room(analysis ...) to the top CMakeLists.txt, build the
# room here; afterwards reuse the lead's target.
if(NOT TARGET ds_analysis)
  file(GLOB analysis_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/analysis/*.c)
  add_library(ds_analysis STATIC ${analysis_srcs})
  target_include_directories(ds_analysis PUBLIC ${CMAKE_SOURCE_DIR}/include
                             PRIVATE ${CMAKE_SOURCE_DIR}/src/analysis)
  target_link_libraries(ds_analysis PUBLIC ds_store ds_config ds_util)
endif()
# Stand-alone driver: dynsweep-analysis ls|export|phase (same code as dynsweep's).
add_executable(dynsweep-analysis ${CMAKE_CURRENT_SOURCE_DIR}/analysis_main.c)
target_link_libraries(dynsweep-analysis PRIVATE ds_analysis)

set(DS_ANALYSIS_ENV "${DS_TEST_ENV};DS_TEST_KEEP=DYNSWEEP_ANALYSIS;DYNSWEEP=$<TARGET_FILE:dynsweep>;DYNSWEEP_ANALYSIS=$<TARGET_FILE:dynsweep-analysis>;DS_SRC=${CMAKE_SOURCE_DIR};DS_BUILD=${CMAKE_BINARY_DIR}")
add_test(NAME analysis_cli COMMAND ${DS_ENV_SH} bash ${CMAKE_CURRENT_SOURCE_DIR}/test_analysis.sh)
set_tests_properties(analysis_cli PROPERTIES LABELS integration ENVIRONMENT "${DS_ANALYSIS_ENV}")
add_test(NAME analysis_report COMMAND ${DS_ENV_SH} bash ${CMAKE_CURRENT_SOURCE_DIR}/report.sh)
set_tests_properties(analysis_report PROPERTIES LABELS integration ENVIRONMENT "${DS_ANALYSIS_ENV}")
