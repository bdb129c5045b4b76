# Issue 11: one failing point never wedges a sweep (tests/attempts.sh): a
# point that cannot fit a real memory limit (a cgroup) is failed before it
# runs; one killed by the OOM killer is retried after the others and failed
# after --max-attempts; the Slurm follow-on chain ends; --retry failed.
ds_script_test(attempts attempts.sh)
set_tests_properties(attempts PROPERTIES TIMEOUT 300 LABELS "integration;durability")
