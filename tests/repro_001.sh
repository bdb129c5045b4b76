# ctest repro_001: the reduced study 001 reproduction (tests/repro.sh)
exec bash "$(dirname "$0")/repro.sh" 001
