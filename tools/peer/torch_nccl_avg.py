# Peer check for docs/gpu.md: does NCCL itself leave the tail of a one-rank out-of-place ncclAvg reduce-scatter unwritten?
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29517")
dist.init_process_group("nccl", rank=0, world_size=1)
print("nccl", torch.cuda.nccl.version())
for op, name in [(dist.ReduceOp.AVG, "avg"), (dist.ReduceOp.SUM, "sum")]:
    for n in (100003, 100000, 4099):
        x = torch.randn(n, device="cuda"); out = torch.full((n,), float("nan"), device="cuda")
        dist.reduce_scatter_tensor(out, x, op=op); torch.cuda.synchronize()
        bad = torch.nonzero(torch.isnan(out)).flatten().tolist()
        print(f"torch reduce_scatter {name} n={n}: {len(bad)} unwritten {bad[:5]}")
dist.destroy_process_group()
