"""PyTorch timings of the workloads of `cargo bench -p wgrad-tensor --bench workloads`, for
comparison in the same run (`cargo xtask bench` runs both when torch imports).

Each workload: wall time per call (calls back to back, then a synchronize) and device time
per call (CUDA events around each call: the GPU time from the call's first kernel to its
last), as GB/s or TFLOP/s, counted as the Rust benchmark counts them. Needs numpy and
torch only. `python3 bench/torch_bench.py [--quick]`.
"""

import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def measure(call, device, iters):
    """(wall seconds, device seconds or None) per call."""
    for _ in range(2):
        call()
    sync(device)
    start = time.perf_counter()
    for _ in range(iters):
        call()
    sync(device)
    wall = (time.perf_counter() - start) / iters
    if device.type != "cuda":
        return wall, None
    times = []
    for _ in range(3):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end) / 1e3)
    return wall, sum(times) / len(times)


def beautiful_mnist():
    """tinygrad's beautiful_mnist CNN, as crates/tensor/examples/mnist/model.rs builds it."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(576, 10),
    )


def conv_flops(batch):
    """Multiply-adds of the four convolutions (forward, input and weight gradients) and the
    head, times 2: the step's arithmetic without the elementwise work."""
    convs = [(1, 32, 5, 24), (32, 32, 5, 20), (32, 64, 3, 8), (64, 64, 3, 6)]
    forward = sum(batch * co * o * o * ci * k * k for ci, co, k, o in convs) + batch * 576 * 10
    first_input = batch * 32 * 24 * 24 * 25  # the first conv needs no input gradient
    return 2 * (3 * forward - first_input)


def main():
    quick = "--quick" in sys.argv
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    print(f"torch {torch.__version__} on {name}")
    rows, cols = (256, 1024) if quick else (4096, 8192)
    n = (1 << 20) if quick else (32 << 20)
    sizes = (256, 128) if quick else (4096, 1024)
    batches = (16,) if quick else (64, 512)  # the README's main job's batch, the issue's
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 FMA, as wgrad computes
    torch.backends.cudnn.allow_tf32 = False
    x = torch.rand(rows, cols, device=device)
    flat = torch.rand(n, device=device)
    work = [
        (f"row sum {rows}x{cols} f32", lambda: x.sum(1), 4.0 * (rows * cols + rows), False),
        (f"softmax {rows}x{cols} f32", lambda: torch.softmax(x, -1), 8.0 * rows * cols, False),
        (f"x*2+1 {n >> 20}M f32", lambda: flat * 2 + 1, 8.0 * n, False),
    ]
    for s in sizes:
        a, b = torch.rand(s, s, device=device), torch.rand(s, s, device=device)
        work.append((f"f32 GEMM {s}", lambda a=a, b=b: a @ b, 2.0 * s**3, True))
    if device.type == "cuda":  # wgrad's f16 GEMM rows (tensor cores), f16 in and out
        for s in sizes:
            a, b = torch.rand(s, s, device=device).half(), torch.rand(s, s, device=device).half()
            work.append((f"f16 GEMM {s}", lambda a=a, b=b: a @ b, 2.0 * s**3, True))
    s = sizes[0]  # nn.Linear's form: a row-major (n, k) weight, transposed
    x, w = torch.rand(s, s, device=device), torch.rand(s, s, device=device)
    work.append((f"f32 GEMM {s}, x @ W.T", lambda x=x, w=w: x @ w.t(), 2.0 * s**3, True))
    model = beautiful_mnist().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for batch in batches:
        images = torch.rand(batch, 1, 28, 28, device=device)
        labels = torch.randint(0, 10, (batch,), device=device)

        def step(images=images, labels=labels):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            opt.step()

        work.append((f"beautiful_mnist step, batch {batch}, Adam", step, float(conv_flops(batch)), True))
    print("| workload | wall / call | wall rate | device time | device rate |")
    print("| --- | --- | --- | --- | --- |")
    for label, call, amount, flops in work:
        wall, dev = measure(call, device, 3 if quick else 10)

        def rate(t):
            if t is None:
                return "-"
            return f"{amount / t / 1e12:.3f} TFLOP/s" if flops else f"{amount / t / 1e9:.1f} GB/s"

        dev_ms = "-" if dev is None else f"{dev * 1e3:.3f} ms"
        print(f"| {label} | {wall * 1e3:.3f} ms | {rate(wall)} | {dev_ms} | {rate(dev)} |")
    print("(the MNIST step's rate counts the convolutions' and head's multiply-adds only)")


if __name__ == "__main__":
    main()
