# issue 26: the convolution layer and the CNN (src/nn/conv.c, cnn.c): central
# finite differences and known answers; then PyTorch float64 (skips, exit 77,
# without torch) on the forward output, the gradient and a 20-step GD trajectory.
ds_unit_test(test_cnn ${CMAKE_CURRENT_SOURCE_DIR}/test_cnn.c ds_diag ds_nn ds_data ds_util)
# test_cnn and test_cnn_quad share the layer-list specs and the dumps' head (cnn_testlib.c)
target_sources(test_cnn PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cnn_testlib.c)
add_test(NAME cnn_torch COMMAND ${DS_ENV_SH} /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cnn_torch.py
         $<TARGET_FILE:test_cnn>)
set_tests_properties(cnn_torch PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     ENVIRONMENT "${DS_TEST_ENV}")
# Layer lists and named nets (pooling, residual blocks, hidden dense, dropout;
# cnn5, myrtle5, tf_mnist, wrn): forward, both gradients and a 12-step GD
# trajectory with dropout on against PyTorch float64 (tests/cnn_layers_torch.py).
add_test(NAME cnn_layers_torch COMMAND ${DS_ENV_SH} /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/cnn_layers_torch.py $<TARGET_FILE:test_cnn>)
set_tests_properties(cnn_layers_torch PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     ENVIRONMENT "${DS_TEST_ENV}")
# issue 26: record.spectra.activations of CNNs (src/diag/cnnact.c through
# cnn.h's ds_cnn_relu_map): every layer list and named net's ReLUs (relu
# layers, a resblock's two, a DAG's depths) at their initial weights on 9
# samples -- top-6 singular values of each output (n x C H W) and the
# nonlinearity ratio -- against PyTorch float64 (torch.linalg.svdvals of the
# maps the torch rebuild records; tests/cnn_act_torch.py, ~5 s).
add_test(NAME cnn_act_torch COMMAND ${DS_ENV_SH} /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/cnn_act_torch.py $<TARGET_FILE:test_cnn>)
set_tests_properties(cnn_act_torch PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     ENVIRONMENT "${DS_TEST_ENV}")
# Hessian-vector products (ds_cnn_hvp, src/nn/cnnrop.c; test_cnn checks them
# against central differences of the gradient): every layer list and named
# net against functorch jvp(grad) in float64 (tests/cnn_hvp_torch.py).
add_test(NAME cnn_hvp_torch COMMAND ${DS_ENV_SH} /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/cnn_hvp_torch.py $<TARGET_FILE:test_cnn>)
set_tests_properties(cnn_hvp_torch PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     ENVIRONMENT "${DS_TEST_ENV}")

# issue 26 step 3: CNN sweeps end to end (tests/cnn_sweep.sh): a sweep of CNN
# points on Fashion-MNIST run with mpirun -n 1 and -n 2 (equal stores), its loss
# trajectories against PyTorch float64 (cnn_sweep.py, from the initial weights
# cnn_sweep_dump draws as the point trainer does), a drain and resume, and the
# plan-time refusals.
# (with STEPS it writes a layer-list dump with the dropout masks: cnn_testlib.c)
add_executable(cnn_sweep_dump ${CMAKE_CURRENT_SOURCE_DIR}/cnn_sweep_dump.c
               ${CMAKE_CURRENT_SOURCE_DIR}/cnn_testlib.c ${CMAKE_CURRENT_SOURCE_DIR}/check.c)
target_link_libraries(cnn_sweep_dump PRIVATE ds_worker ds_config ds_data ds_nn ds_util)
ds_script_test(cnn_sweep cnn_sweep.sh)
set_tests_properties(cnn_sweep PROPERTIES SKIP_RETURN_CODE 77)

# issue 26: CNN diagnostics (src/diag/cnn.c, layers.c, agop.c through cnn.h):
# blocked NTK = one-block NTK, J against central differences, layer statistics,
# AGOP trace; then PyTorch float64 (functorch jacrev over parameters and inputs,
# torch.linalg.svdvals of the reshaped kernels; skips, exit 77, without torch).
ds_mpi_test(test_cnn_diag ${CMAKE_CURRENT_SOURCE_DIR}/test_cnn_diag.c 1 ds_diag ds_nn ds_spectra ds_util)
add_test(NAME cnn_diag_torch COMMAND ${DS_ENV_SH} /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/cnn_diag_torch.py $<TARGET_FILE:test_cnn_diag>)
set_tests_properties(cnn_diag_torch PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     ENVIRONMENT "${DS_TEST_ENV}")

# issue 26: CNN diagnostics in a sweep, end to end (tests/cnn_diag.sh): plan's
# refusals, mpirun -n 1 store against PyTorch float64 (cnn_diag_sweep.py), -n 2
# equal, lr_units lambda0; a point with dropout: its GD from every step's masks
# and its dropout-off Hessian (cnn_dropout_sweep.py).
ds_script_test(cnn_diag cnn_diag.sh)
set_tests_properties(cnn_diag PROPERTIES SKIP_RETURN_CODE 77)
# issue 26: seed 003's synthetic image task (data.kind image_rank2) and a CNN's
# AGOP alignment with its exact G* as it trains (tests/cnn_agop.sh, ~10 s).
ds_script_test(cnn_agop cnn_agop.sh)

# issue 26: f_quad of a CNN (ds_cnn_quad, src/nn/cnnquad.c): D2F[v, v] and the
# gradient of the f_quad loss against finite differences for every layer kind
# (test_cnn_quad), then PyTorch float64 functorch (jvp of jvp; autograd of the
# f_quad loss through them; an 8-step GD trajectory with dropout on) in
# tests/cnn_quad_torch.py.
ds_unit_test(test_cnn_quad ${CMAKE_CURRENT_SOURCE_DIR}/test_cnn_quad.c ds_nn ds_util)
target_sources(test_cnn_quad PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cnn_testlib.c)
add_test(NAME cnn_quad_torch COMMAND ${DS_ENV_SH} /usr/bin/python3
         ${CMAKE_CURRENT_SOURCE_DIR}/cnn_quad_torch.py $<TARGET_FILE:test_cnn_quad>)
set_tests_properties(cnn_quad_torch PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                     ENVIRONMENT "${DS_TEST_ENV}")
# ... and in a sweep (tests/cnn_quad_sweep.sh): model.approx quad on CNN points,
# 40 GD steps' train and test losses against PyTorch's f_quad replay.
ds_script_test(cnn_quad_sweep cnn_quad_sweep.sh)
set_tests_properties(cnn_quad_sweep PROPERTIES SKIP_RETURN_CODE 77)

# issue 26: seed 003's DenseNet-DAG from a sweep (tests/dag_sweep.sh): -n 2 =
# -n 1, and loss, lambda_max(K_t) and the kernel change of every step against
# PyTorch float64 (functorch NTK) from the point's own weights and edge mask.
ds_script_test(dag_sweep dag_sweep.sh)
set_tests_properties(dag_sweep PROPERTIES SKIP_RETURN_CODE 77)

# issue 26, "Big CNNs run on teams": the CNN NTK split over a team
# (tests/test_cnn_team.c, 3 ranks: rows of J per member, MPI_Alltoallv to
# parameter slices, summed DSYRKs = one rank's K; a small budget falls back to
# the blocked row path; issue 26: activation spectra = one rank's), and CNN
# points whose samples are split over teams of
# 1, 2 and 3 ranks end to end (tests/cnn_team.sh).
ds_mpi_test(test_cnn_team ${CMAKE_CURRENT_SOURCE_DIR}/test_cnn_team.c 3 ds_diag ds_nn ds_spectra ds_util)
ds_script_test(cnn_team cnn_team.sh)
set_tests_properties(cnn_team PROPERTIES SKIP_RETURN_CODE 77)
