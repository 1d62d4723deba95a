#!/usr/bin/env python3
"""A safetensors checkpoint with the names, dtypes and shapes of a real one and random values,
for timing a model where the real weights cannot travel (the GPU machine takes 64 MiB a call;
all-MiniLM-L6-v2's weights are 87 MiB). Speed does not depend on the values.

    python3 random_checkpoint.py header SRC.safetensors > header.json   (where the real file is)
    python3 random_checkpoint.py fill header.json OUT.safetensors       (needs numpy)

Floats are normal with standard deviation 0.02 (BERT's initializer); integer tensors of shape
(1, n) are 0..n (position ids), other integers zero.
"""

import json
import struct
import sys


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


def fill(spec, out):
    import numpy as np

    dtypes = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64, "I32": np.int32}
    rng = np.random.default_rng(0)
    names = sorted((k for k in spec if k != "__metadata__"), key=lambda k: spec[k]["data_offsets"][0])
    blobs, entries, offset = [], {}, 0
    for name in names:
        t = spec[name]
        dtype = dtypes.get(t["dtype"])
        if dtype is None:
            sys.exit(f"{name}: dtype {t['dtype']} is not supported")
        shape = t["shape"]
        if np.issubdtype(dtype, np.floating):
            value = (rng.standard_normal(shape) * 0.02).astype(dtype)
        elif len(shape) == 2 and shape[0] == 1:
            value = np.arange(shape[1], dtype=dtype).reshape(shape)
        else:
            value = np.zeros(shape, dtype=dtype)
        data = value.tobytes()
        entries[name] = {"dtype": t["dtype"], "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    entries["__metadata__"] = spec.get("__metadata__", {"format": "pt"})
    text = json.dumps(entries).encode()
    text += b" " * (-len(text) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "header":
        json.dump(header(sys.argv[2]), sys.stdout)
    elif len(sys.argv) == 4 and sys.argv[1] == "fill":
        with open(sys.argv[2]) as f:
            fill(json.load(f), sys.argv[3])
    else:
        sys.exit(__doc__)
