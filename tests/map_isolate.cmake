# Issue 23, maps (tests/map_isolate.sh): a run after a job death runs every
# tile in a child process and bisects a tile whose child dies down to its
# poison pixels (SIGSEGV; k = 1, 2, 3 out-of-memory kills in a memory cgroup;
# a refined map): 2 runs, exactly those pixels failed, the rest bitwise the
# clean map; --isolate always bitwise never; a map store failure exits 1.
ds_script_test(map_isolate map_isolate.sh)
set_tests_properties(map_isolate PROPERTIES TIMEOUT 300 LABELS "integration;durability")
