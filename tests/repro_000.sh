# ctest repro_000: the reduced study 000 reproduction (tests/repro.sh)
exec bash "$(dirname "$0")/repro.sh" 000
