# Slurm room (issues 5, 12): `dynsweep submit`, its job script and the templates in
# slurm/. slurm_submit runs without a cluster (stand-in sbatch/srun); slurm_sweep
# starts a real single-node Slurm cluster (tools/slurm-cluster.sh) and runs a
# sweep across time limits (~3-4 minutes, one busy core; labels integration and slurm, so
# `ctest -LE slurm` leaves it out). slurm_chain: the same with job accounting
# (MariaDB + slurmdbd), checks sacct's states, `status`'s chain and the drain
# margins (~3-4 minutes). One cluster at a time (ports): RESOURCE_LOCK.
ds_script_test(slurm_submit slurm_submit.sh)
ds_script_test(slurm_sweep slurm_sweep.sh)
set_tests_properties(slurm_sweep PROPERTIES LABELS "integration;slurm" TIMEOUT 900 RESOURCE_LOCK slurm_cluster)
ds_script_test(slurm_chain slurm_chain.sh)
set_tests_properties(slurm_chain PROPERTIES LABELS "integration;slurm" TIMEOUT 600 RESOURCE_LOCK slurm_cluster)
# slurm_multinode (issue 14): a cluster of two nodes on this machine; the sweep
# through both templates across time limits, then a node lost mid-job (~3 min).
ds_script_test(slurm_multinode slurm_multinode.sh)
set_tests_properties(slurm_multinode PROPERTIES LABELS "integration;slurm" TIMEOUT 900 RESOURCE_LOCK slurm_cluster)
# slurm_fractal (issue 13): tools/repro_fractal.py --submit, each map of a zoom
# sequence as a job chain, against the same driver under mpirun; a chain
# cancelled mid-map (~2 min).
ds_script_test(slurm_fractal slurm_fractal.sh)
set_tests_properties(slurm_fractal PROPERTIES LABELS "integration;slurm" TIMEOUT 600 RESOURCE_LOCK slurm_cluster)
