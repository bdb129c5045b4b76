# Normalised axes (lambda0, eta_crit0, lr_lambda0, lr_eta_crit) in ls, export and
# phase, checked against the stored series read with h5py (tests/normalised_axes.sh).
ds_script_test(normalised_axes normalised_axes.sh)
