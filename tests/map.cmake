# `dynsweep map` and python/dynsweep/maps.py: the convergence measure, the boundary,
# box counting on shapes of known dimension, and a real map store (tests/map.sh);
# map sweeps: tiles, refinement, kill and drain (tests/mapsweep.sh).
ds_script_test(map map.sh)
ds_script_test(mapsweep mapsweep.sh)
