# Issue 24, items 1 and 2: the absolute learning rate under optimizer.lr_units
# lambda0 (lr_lambda0 = eta x lambda0, not lr x lambda0) and "converged" with a
# criterion of its own (include/dynsweep/outcome.h), with "unconverged" beside it,
# in ls, phase, export and Python; older stores re-classified (tests/outcome_eta.sh).
ds_script_test(outcome_eta outcome_eta.sh)
