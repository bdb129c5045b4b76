# `dynsweep map` and python/dynsweep/maps.py: the convergence measure, the boundary,
# box counting on shapes of known dimension, and a real map store (tests/map.sh);
# map sweeps: tiles, refinement, kill and drain (tests/mapsweep.sh).
ds_script_test(map map.sh)
ds_script_test(mapsweep mapsweep.sh)
# refine_plan: `status` lists a refined map's pixels per level, `plan --from
# STORE` extrapolates deeper levels from them, checked against the store
# extended to those levels; bad --from stores refused (~40 s).
ds_script_test(refine_plan refine_plan.sh)
