# Drain signals at any moment, bounded drain waits, live/dead status (tests/signals.sh).
ds_script_test(signals signals.sh)
set_tests_properties(signals PROPERTIES TIMEOUT 300 LABELS "integration;durability")
