"""Export an NVFlare job built on hello-numpy's recipe (NumpyFedAvgRecipe).

usage: mkjob.py OUT NAME TRAIN_SCRIPT ROUNDS [META_JSON [TRAIN_ARGS]]

Run in a directory holding TRAIN_SCRIPT; META_JSON is merged into the job's
meta.json (e.g. a launcher_spec); TRAIN_ARGS are the script's arguments
(default --update_type full).
"""

import json
import os
import sys
import types


class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {})


# nvflare.recipe imports the POC tool, which imports pyhocon (not packaged by
# Debian); exporting a job never calls it.
sys.modules.setdefault("pyhocon", _Stub("pyhocon"))

from nvflare.app_common.np.recipes.fedavg import NumpyFedAvgRecipe  # noqa: E402

out, name, script, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
extra = (json.loads(sys.argv[5]) if len(sys.argv) > 5 else None) or {}
train_args = sys.argv[6] if len(sys.argv) > 6 else "--update_type full"
recipe = NumpyFedAvgRecipe(
    name=name,
    min_clients=1,
    num_rounds=rounds,
    model=[[1, 2, 3], [4, 5, 6], [7, 8, 9]],
    train_script=script,
    train_args=train_args,
)
recipe.export(out)
meta_file = os.path.join(out, name, "meta.json")
with open(meta_file) as f:
    meta = json.load(f)
meta.update(extra)
with open(meta_file, "w") as f:
    json.dump(meta, f, indent=2)
