# Issue 11: one failing point never wedges a sweep (tests/attempts.sh): a
# point that cannot fit a real memory limit (a cgroup) is failed before it
# runs; one killed by the OOM killer is retried after the others and failed
# after --max-attempts; the Slurm follow-on chain ends; --retry failed.
ds_script_test(attempts attempts.sh)
set_tests_properties(attempts PROPERTIES TIMEOUT 300 LABELS "integration;durability")
# The same on a real single-node Slurm cluster (tools/slurm-cluster.sh, its
# daemons in the test's memory cgroup): the follow-on chain ends after 3 jobs.
ds_script_test(slurm_attempts slurm_attempts.sh)
set_tests_properties(slurm_attempts PROPERTIES TIMEOUT 600 LABELS "integration;slurm")
