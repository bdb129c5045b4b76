# The suite is hermetic: every test starts through tests/env.sh (tests/hermetic.sh).
ds_script_test(hermetic hermetic.sh)
