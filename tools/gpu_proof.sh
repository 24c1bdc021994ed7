#!/usr/bin/env bash
# The GPU proof (../shared/notes/gpu.md, docs/gpu.md), one command on a GPU
# machine, from the repository's root, with the bundle made here first:
#   ../shared/tools/gpu-bundle .gpu build/bin/dtrain-core-test \
#     build/bin/dtrain-bench-cnn-step build/bin/dtrain-fashion-mnist \
#     -- /usr/share/datasets/fashion-mnist
#   (then, there)  bash tools/gpu_proof.sh
# Writes its logs under $OUT (or /tmp/out) and prints the figures.
set -u
mkdir -p /tmp/b && tar -xJf .gpu/bundle.tar.xz -C /tmp/b || exit 3
R=/tmp/b/run
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$O/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))' | tee -a "$O/gpu.txt"
echo "== suites"; timeout 150 $R dtrain-core-test --run_test=cuda_ops,cuda_layers,cuda_mixed_precision,nccl_communicator --log_level=message > "$O/suites.txt" 2>&1; echo "suites rc=$?" | tee -a "$O/suites.txt"
grep -a "error" "$O/suites.txt" | grep -v "max relative error\|error vs float32" | tail -8; tail -3 "$O/suites.txt"
echo "== torch nccl"; timeout 60 python3 tools/peer/torch_nccl_avg.py 2>&1 | grep -v Warn | tail -8
echo "== memcheck"; timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --leak-check full --target-processes all --error-exitcode 9 $R dtrain-core-test --run_test=cuda_ops,cuda_layers,cuda_mixed_precision,nccl_communicator > "$O/memcheck.txt" 2>&1; echo "memcheck rc=$?" | tee -a "$O/memcheck.txt"
tail -4 "$O/memcheck.txt"
echo "== bench"; for p in fp32 tf32 bf16 fp16; do timeout 45 $R dtrain-bench-cnn-step --device cuda --precision $p --repeats 3 --steps 100 --peer tools/peer/torch_cnn_step.py > "$O/bench_$p.txt" 2>&1; echo "bench $p rc=$?"; tail -6 "$O/bench_$p.txt"; done
echo "== fashion-mnist"; timeout 60 $R dtrain-fashion-mnist --device cuda --epochs 3 --data-dir /tmp/b/extra/fashion-mnist > "$O/fmnist.txt" 2>&1; echo "fmnist rc=$?"; tail -6 "$O/fmnist.txt"
