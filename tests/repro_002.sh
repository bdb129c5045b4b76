# ctest repro_002: the reduced study 002 reproduction (tests/repro.sh)
exec bash "$(dirname "$0")/repro.sh" 002
