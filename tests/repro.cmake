# Study reproductions (sweeps/repro/, docs/repro/): each test runs the reduced
# form of one study and checks its qualitative claim (tests/repro.sh STUDY).
foreach(study 000 001 002 003 004)
  ds_script_test(repro_${study} repro_${study}.sh)
  set_tests_properties(repro_${study} PROPERTIES TIMEOUT 300)
endforeach()
# seed 003's 5-layer CNN on Fashion-MNIST (issue 26): catapults, lr raises, SGD vs eta_crit(batch)
ds_script_test(repro_003_cnn repro_003_cnn.sh)
set_tests_properties(repro_003_cnn PROPERTIES TIMEOUT 300)
# the trainability-fractal map: dense, then adaptive zoom windows (issue 13)
ds_script_test(repro_fractal repro_fractal.sh)
set_tests_properties(repro_fractal PROPERTIES TIMEOUT 400)
# seed 003's catapult map: boundaries at eta*lambda_0 = 2 and 4 by refinement (issue 13)
ds_script_test(repro_003_map repro_003_map.sh)
set_tests_properties(repro_003_map PROPERTIES TIMEOUT 400)
# seed 003 Ch. 3 with a 2-layer CNN (issue 26): f, f_quad, f_lin below and above eta_crit
ds_script_test(repro_003_cnn_quad repro_003_cnn_quad.sh)
set_tests_properties(repro_003_cnn_quad PROPERTIES TIMEOUT 300)
# seed 002 Fig. 5 right (issue 26): TensorFlow's MNIST CNN with and without its
# over-parameterised dense layers, on Fashion-MNIST (reduced: 4 channels)
ds_script_test(repro_002_cnn repro_002_cnn.sh)
set_tests_properties(repro_002_cnn PROPERTIES TIMEOUT 300)
