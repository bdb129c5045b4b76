# Rank 0's progress bar on a terminal, also under mpirun (tests/progress_bar.sh).
ds_script_test(progress_bar progress_bar.sh)
# Issue 24, item 6 (tests/progress_eta.sh): the ETA from the plan's cost model
# from the first second (status shows it), the end-of-run outcome counts, the
# store-timing line only with -v.
ds_script_test(progress_eta progress_eta.sh)
# Issue 24, item 6 (tests/terminal.sh): a changed sweep names its keys, stat
# suggests status, show names every axis, mpirun -q leaves rank 0's message last.
ds_script_test(terminal terminal.sh)
