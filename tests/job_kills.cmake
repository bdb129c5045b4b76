# Issue 23 (tests/job_kills.sh): whole-job SIGKILLs never fail a point (the
# resumed store equals an uninterrupted run; CI: 2 trials of 4 kills, the
# full form DS_KILL_TRIALS=20 DS_KILLS=8), and points killed by a real memory
# limit (k = 1, 2, 3) or by SIGSEGV fail alone, in at most 2 runs.
ds_script_test(job_kills job_kills.sh)
set_tests_properties(job_kills PROPERTIES TIMEOUT 600 LABELS "integration;durability")
