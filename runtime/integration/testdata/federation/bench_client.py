"""hello-numpy's client (examples/hello-world/hello-numpy/client.py) for the
federation benchmark: the same receive, train, evaluate and send per round,
where training also waits --train_seconds (a stand-in for the time a real
model trains, which costs no CPU on the benchmark's two cores)."""

import argparse
import time

import numpy as np

import nvflare.client as flare
from nvflare.app_common.np.constants import NPConstants


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--update_type", choices=["full", "diff"], default="full")
    parser.add_argument("--train_seconds", type=float, default=0.0)
    args = parser.parse_args()

    flare.init()
    while flare.is_running():
        input_model = flare.receive()
        input_np_arr = input_model.params[NPConstants.NUMPY_KEY]
        time.sleep(args.train_seconds)
        new_params = input_np_arr + 1
        metrics = {"weight_mean": float(np.mean(new_params))}
        if args.update_type == "diff":
            params, params_type = new_params - input_np_arr, flare.ParamsType.DIFF
        else:
            params, params_type = new_params, flare.ParamsType.FULL
        flare.send(
            flare.FLModel(
                params={NPConstants.NUMPY_KEY: params},
                params_type=params_type,
                metrics=metrics,
                current_round=input_model.current_round,
            )
        )


if __name__ == "__main__":
    main()
