# ctest repro_003: the reduced study 003 reproduction (tests/repro.sh)
exec bash "$(dirname "$0")/repro.sh" 003
