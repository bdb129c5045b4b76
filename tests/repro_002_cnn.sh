# ctest repro_002_cnn: the reduced seed 002 Fig. 5 right reproduction
# (sweeps/repro/002_cnn_overparam.yaml, docs/repro/002_cnn.md): TensorFlow's
# MNIST CNN with and without factored dense layers on Fashion-MNIST
exec bash "$(dirname "$0")/repro.sh" 002_cnn
