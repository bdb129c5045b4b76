# ctest repro_004: the reduced study 004 reproduction (tests/repro.sh)
exec bash "$(dirname "$0")/repro.sh" 004
