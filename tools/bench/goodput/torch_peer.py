#!/usr/bin/python3
"""The torchrun peer of the goodput benchmark: ../shared/peers/torch_elastic_fmnist.py
unchanged but for its global batch, which --global-batch sets (default 126, so
that 3 workers take 42 each, as dtrain's 3 replicas do; the peer's own 128 does
not split over 3). Every other argument goes to the peer; its path is
$DTRAIN_PEERS_DIR/torch_elastic_fmnist.py (default: ../../../../shared/peers
from this file, i.e. /work/shared/peers beside the checkout).
"""
import importlib.util
import os
import sys


def main():
    args = sys.argv[1:]
    batch = 126
    if "--global-batch" in args:
        i = args.index("--global-batch")
        batch = int(args[i + 1])
        del args[i:i + 2]
    here = os.path.dirname(os.path.abspath(__file__))
    peers = os.environ.get("DTRAIN_PEERS_DIR",
                           os.path.join(here, "..", "..", "..", "..", "shared", "peers"))
    path = os.path.join(peers, "torch_elastic_fmnist.py")
    if not os.path.exists(path):
        sys.exit(f"torch_peer.py: no peer at {path} (set DTRAIN_PEERS_DIR)")
    spec = importlib.util.spec_from_file_location("torch_elastic_fmnist", path)
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    peer.GLOBAL_BATCH = batch  # read by main() and report() at call time
    sys.argv = [path] + args
    peer.main()


if __name__ == "__main__":
    main()
