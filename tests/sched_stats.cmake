# Rank 0's scheduler record, DYNSWEEP_SCHED_STATS and --verbose (tests/sched_stats.sh).
ds_script_test(sched_stats sched_stats.sh)
