#!/usr/bin/python3
"""repro_reduce.py STUDY OUTDIR -- write reduced copies of sweeps/repro/<STUDY>*.yaml
into OUTDIR (fewer points and steps, file names made absolute) and print
their base names, one a line. Used by tests/repro.sh."""
import os
import sys

import yaml

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sweeps", "repro")

# per sweep file: option overrides (dotted paths) and grid replacements
REDUCED = {
    "000": {
        "000_pc_bias": {"set": {"train.steps": 800}, "grid": {"model.init": ["def4"], "depth": [2]}},
        "000_init_width": {"grid": {"model.init": ["def4", "glorot_uniform"], "width": [16, 256],
                                    "data.d_out": [16, 256], "replicas": 4}},
    },
    "001": {
        "001_convergence": {},
        "001_no_margin": {"set": {"train.steps": 2000}},
    },
    "002": {
        "002_acceleration": {"set": {"train.steps": 1500},
                             "grid": {"loss.p": [4], "model.type": ["linear"], "depth": [1, 2, 3],
                                      "lr": [1.0e-2, 5.0e-2, 1.0e-1, 5.0e-1]}},
        "002_e2e": {"set": {"train.steps": 600}, "grid": {"model.type": ["linear", "e2e"], "depth": [2, 3],
                                                          "width": [1, 100]}},
    },
    # seed 002 Fig. 5 right: tf_mnist at 8 channels (dense 128), 128 images, 200 steps, one replica
    "002_cnn": {
        "002_cnn_overparam": {"set": {"model.width": 8, "data.n_train": 128, "data.n_test": 64,
                                      "train.steps": 200, "record.every": 25},
                              "grid": {"model.overparam": [False, True]}},
    },
    "003": {
        "003_catapult": {"set": {"train.steps": 400},
                         "grid": {"width": [64, 1024], "lr": {"start": 0.0003, "stop": 0.0036, "num": 12}}},
        "003_catapult_relu": {"set": {"train.steps": 500},
                              "grid": {"width": [256], "lr": {"start": 0.00125, "stop": 0.0165, "num": 10}}},
        "003_catapult_nqm": {"set": {"train.steps": 500},
                             "grid": {"width": [256], "lr": {"start": 0.00125, "stop": 0.0165, "num": 10}}},
        # one replica; NTK and AGOP every 50 steps (the lr changes at 50/150/250/300 stay records)
        "003_repeated": {"set": {"train.steps": 400, "record.spectra.ntk.every": 50, "record.spectra.agop.every": 50},
                         "grid": {"optimizer.schedule": ["constant", "piecewise"]}},
        # smallest and a large SGD batch, one replica, 1200 steps, batch NTK every 100th step
        "003_sgd_batch": {"set": {"train.steps": 1200, "record.spectra.ntk.every": 100},
                          "grid": {"optimizer.batch_size": [5, 100]}},
    },
    # the 5-layer CNN with 8 channels instead of 16 (a quarter of the work), fewer steps
    "003_cnn": {
        "003_cnn_catapult": {"set": {"model.width": 8, "train.steps": 25}, "grid": {"lr": [64, 512]}},
        "003_cnn_repeated": {"set": {"model.width": 8, "train.steps": 80},
                             "grid": {"optimizer.schedule": ["piecewise"]}},
        "003_cnn_sgd": {"set": {"model.width": 8, "train.steps": 60}, "grid": {"replicas": 2}},
    },
    "004": {
        "004_saddles": {"set": {"train.steps": 2500}, "grid": {"depth": [6], "init_scale": [0.1, 0.2]}},
    },
}
PATHS = ("model.init_file", "data.path", "data.labels_path", "data.test_path", "data.test_labels_path",
         "record.spectra.agop_reference")


def setp(y, path, v):
    *head, last = path.split(".")
    for k in head:
        y = y.setdefault(k, {})
    y[last] = v


def getp(y, path):
    for k in path.split("."):
        if not isinstance(y, dict) or k not in y:
            return None
        y = y[k]
    return y


def main():
    study, out = sys.argv[1], sys.argv[2]
    for name, red in REDUCED[study].items():
        with open(os.path.join(SRC, name + ".yaml")) as f:
            y = yaml.safe_load(f)
        y["name"] = y["name"] + "-reduced"
        for p in PATHS:
            v = getp(y, p)
            if v and not os.path.isabs(v):
                setp(y, p, os.path.normpath(os.path.join(SRC, v)))
        for p, v in red.get("set", {}).items():
            setp(y, p, v)
        if "grid" in red:
            y["grid"] = red["grid"]
        with open(os.path.join(out, name + ".yaml"), "w") as f:
            yaml.safe_dump(y, f, sort_keys=False)
        print(name)


if __name__ == "__main__":
    main()
