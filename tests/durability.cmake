# Durability, resume and fault tests of `dynsweep run` (issue 5): the kill
# test (>= 50 SIGKILLs of mpirun and its ranks, store checked after each),
# resume / extend / refuse / drain, and fault handling (disk full, read-only
# directory, foreign and damaged stores, missing data file, numerical faults).
ds_script_test(durability durability.sh)
ds_script_test(resume resume.sh)
ds_script_test(faults faults.sh)
ds_script_test(fsio_faults fsio_faults.sh)
set_tests_properties(durability PROPERTIES TIMEOUT 900 LABELS "integration;durability")
set_tests_properties(resume faults fsio_faults PROPERTIES TIMEOUT 900 LABELS "integration;durability")
