# ctest repro_003_cnn: the reduced 5-layer CNN reproductions of study 003 on
# Fashion-MNIST (sweeps/repro/003_cnn_*.yaml, docs/repro/003_cnn.md): one
# catapult in GD, catapults from lr raises, SGD loss rises vs eta_crit(batch)
exec bash "$(dirname "$0")/repro.sh" 003_cnn
