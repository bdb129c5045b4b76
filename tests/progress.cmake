# Rank 0's progress bar on a terminal, also under mpirun (tests/progress_bar.sh).
ds_script_test(progress_bar progress_bar.sh)
