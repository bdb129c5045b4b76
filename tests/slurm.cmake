# Slurm room (issue 5): `dynsweep submit`, its job script and the templates in
# slurm/. slurm_submit runs without a cluster (stand-in sbatch/srun); slurm_sweep
# starts a real single-node Slurm cluster (tools/slurm-cluster.sh) and runs a
# sweep across time limits (~3-4 minutes, one busy core; labels integration and slurm, so
# `ctest -LE slurm` leaves it out).
ds_script_test(slurm_submit slurm_submit.sh)
ds_script_test(slurm_sweep slurm_sweep.sh)
set_tests_properties(slurm_sweep PROPERTIES LABELS "integration;slurm" TIMEOUT 900)
