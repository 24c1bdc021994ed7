#!/usr/bin/python3
"""Peer: PyTorch 1.13 DataLoader throughput over the files prepare.py writes.

usage: /usr/bin/python3 torch_loader.py DATADIR [--workers 2] [--nranks 1 2]
           [--formats csv png npy] [--epochs 5] [--batch 128] [--split train]
           [--png-decoder auto|pil|zlib]

DATADIR is prepare.py's OUTDIR. Each case reads the Fashion-MNIST `train`
split (60,000 samples) the way a PyTorch user would:
  csv  fmnist/train.csv parsed ONCE with np.loadtxt (timed and printed), then
       a Dataset over the float32 array: sample = 784 floats (raw 0..255, as
       dtrain's CSV reader gives them), label int64.
  png  fmnist/png/train/<class>/*.png listed like torchvision's ImageFolder
       (classes and files in sorted order); __getitem__ opens and decodes one
       file: with PIL when importable (Debian python3-pil), else with a zlib
       PNG decoder in this file (8-bit grey only). torchvision is not used (not
       installed here). sample = float32 [1,28,28] in [0,1].
  npy  fmnist/train_{x,y}.npy opened with np.load(mmap_mode='r');
       sample = x[i] converted to float32 [28,28] (raw 0..255).
Every case: DataLoader(batch_size=128, num_workers=W, default collate, no
pinning, non-persistent workers -- PyTorch's defaults) over a
DistributedSampler(num_replicas=N, rank=r, shuffle=True, seed=0) with
set_epoch(e). The N ranks are N OS processes (forked; no process group: the
sampler takes N and r directly), each with its own DataLoader and W workers.
An epoch starts for all ranks at one barrier; its time is from the earliest
rank's start to the latest rank's end; samples/s = samples delivered by all
ranks / that time. Prints per case
  torch <format> N=<n> workers=<w>: <samples/s> samples/s (median of <E>)
followed by an indented line with every epoch's time.
"""
import argparse
import multiprocessing as mp
import os
import queue as queue_mod
import statistics
import struct
import sys
import time
import zlib

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

RANK_TIMEOUT_S = 600   # one epoch of one rank; the barrier waits as long
LOADER_TIMEOUT_S = 120  # a DataLoader worker batch


# ---------------------------------------------------------------- datasets
class ArrayDataset(Dataset):
    """Rows of an in-memory float32 matrix with int64 labels (the CSV case)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), int(self.y[i])


class NpyDataset(Dataset):
    """x[i] of a memory-mapped .npy converted to float32 on access."""

    def __init__(self, x_path, y_path):
        self.x = np.load(x_path, mmap_mode="r")
        self.y = np.load(y_path, mmap_mode="r")
        if len(self.x) != len(self.y):
            raise ValueError(f"{x_path}: {len(self.x)} rows, {y_path}: {len(self.y)}")

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(np.asarray(self.x[i], dtype=np.float32)), int(self.y[i])


class PngFolderDataset(Dataset):
    """root/<class>/*.png in sorted order, decoded in __getitem__."""

    def __init__(self, root, decode):
        self.classes = sorted(d for d in os.listdir(root)
                              if os.path.isdir(os.path.join(root, d)))
        self.samples = []
        for k, c in enumerate(self.classes):
            folder = os.path.join(root, c)
            self.samples += [(os.path.join(folder, f), k)
                             for f in sorted(os.listdir(folder)) if f.lower().endswith(".png")]
        if not self.samples:
            raise ValueError(f"{root}: no PNG files under any class folder")
        self.decode = decode

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, k = self.samples[i]
        img = self.decode(path)  # uint8 [H, W]
        return torch.from_numpy(img).to(torch.float32).div_(255.0).unsqueeze_(0), k


# ------------------------------------------------------------- PNG decoders
def decode_pil(path):
    from PIL import Image
    with Image.open(path) as im:
        # np.array copies: a writable array (np.asarray of an image is read-only)
        return np.array(im.convert("L") if im.mode != "L" else im, dtype=np.uint8)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _unfilter_row(kind, row, prev):
    """Undo one PNG scanline filter (1 byte per pixel), in place on int arrays."""
    if kind == 0:
        return row
    if kind == 2:
        return (row + prev) & 0xFF
    out = row.tolist()
    up = prev.tolist()
    for j in range(len(out)):
        left = out[j - 1] if j else 0
        if kind == 1:
            out[j] = (out[j] + left) & 0xFF
        elif kind == 3:
            out[j] = (out[j] + ((left + up[j]) >> 1)) & 0xFF
        elif kind == 4:
            out[j] = (out[j] + _paeth(left, up[j], up[j - 1] if j else 0)) & 0xFF
        else:
            raise ValueError(f"unknown PNG filter type {kind}")
    return np.array(out, dtype=np.int32)


def decode_zlib(path):
    """Decode an 8-bit greyscale, non-interlaced PNG with zlib only."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, hdr = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if hdr is None or hdr[2:5] != (8, 0, 0) or hdr[6] != 0:
        raise ValueError(f"{path}: only 8-bit grey non-interlaced PNGs are supported")
    w, h = hdr[0], hdr[1]
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    if raw.size != h * (w + 1):
        raise ValueError(f"{path}: {raw.size} bytes of pixel data, expected {h * (w + 1)}")
    rows = raw.reshape(h, w + 1).astype(np.int32)
    img = np.empty((h, w), dtype=np.uint8)
    prev = np.zeros(w, dtype=np.int32)
    for r in range(h):
        prev = _unfilter_row(int(rows[r, 0]), rows[r, 1:], prev)
        img[r] = prev
    return img


def png_decoder(choice):
    if choice in ("auto", "pil"):
        try:
            import PIL  # noqa: F401
            return "PIL", decode_pil
        except ImportError:
            if choice == "pil":
                raise
    return "zlib (pure Python unfilter)", decode_zlib


# ------------------------------------------------------------------ running
def rank_main(rank, nranks, ds, workers, batch, epochs, barrier, results):
    """One rank: `epochs` epochs of its DistributedSampler share."""
    try:
        torch.set_num_threads(1)
        sampler = DistributedSampler(ds, num_replicas=nranks, rank=rank, shuffle=True, seed=0)
        loader = DataLoader(ds, batch_size=batch, sampler=sampler, num_workers=workers,
                            timeout=LOADER_TIMEOUT_S if workers > 0 else 0)
        for e in range(epochs):
            sampler.set_epoch(e)
            barrier.wait(timeout=RANK_TIMEOUT_S)
            t0, n = time.monotonic(), 0
            for xb, yb in loader:
                n += int(yb.shape[0])
            results.put((rank, e, t0, time.monotonic(), n, None))
    except Exception as exc:  # reported to the parent, which fails the case
        results.put((rank, -1, 0.0, 0.0, 0, f"{type(exc).__name__}: {exc}"))
        barrier.abort()


def run_case(ds, nranks, workers, batch, epochs):
    """Epoch times (s) and samples per epoch over all ranks."""
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(nranks), ctx.Queue()
    procs = [ctx.Process(target=rank_main,
                         args=(r, nranks, ds, workers, batch, epochs, barrier, results))
             for r in range(nranks)]
    for p in procs:
        p.start()
    rows, waited = [], 0.0
    try:
        while len(rows) < nranks * epochs:
            try:
                row = results.get(timeout=1.0)
            except queue_mod.Empty:
                waited += 1.0
                dead = [(r, p.exitcode) for r, p in enumerate(procs)
                        if p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"rank {dead[0][0]} died (exit code {dead[0][1]})")
                if waited > RANK_TIMEOUT_S:
                    raise RuntimeError(f"no epoch finished within {RANK_TIMEOUT_S} s")
                continue
            waited = 0.0
            if row[5] is not None:
                raise RuntimeError(f"rank {row[0]}: {row[5]}")
            rows.append(row)
    except BaseException:
        barrier.abort()  # wakes ranks waiting for the next epoch
        grace = 5
        raise
    else:
        grace = 30
    finally:
        for p in procs:
            p.join(timeout=grace)
            if p.is_alive():
                p.kill()
                p.join(timeout=10)
    times, counts = [], []
    for e in range(epochs):
        ep = [r for r in rows if r[1] == e]
        times.append(max(r[3] for r in ep) - min(r[2] for r in ep))
        counts.append(sum(r[4] for r in ep))
    return times, counts


def open_format(fmt, datadir, split, decoder):
    """(dataset, note) for one format; the CSV parse is timed here."""
    fm = os.path.join(datadir, "fmnist")
    if fmt == "csv":
        path = os.path.join(fm, f"{split}.csv")
        t = time.perf_counter()
        a = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float32)
        dt = time.perf_counter() - t
        ds = ArrayDataset(np.ascontiguousarray(a[:, 1:]), a[:, 0].astype(np.int64))
        mb = os.path.getsize(path) / 1e6
        return ds, f"np.loadtxt parse of {split}.csv ({mb:.0f} MB, {a.shape[0]} x {a.shape[1]}): {dt:.2f} s"
    if fmt == "npy":
        ds = NpyDataset(os.path.join(fm, f"{split}_x.npy"), os.path.join(fm, f"{split}_y.npy"))
        return ds, f"np.load(mmap_mode='r') of {split}_x.npy {ds.x.shape} {ds.x.dtype}"
    if fmt == "png":
        name, fn = decoder
        t = time.perf_counter()
        ds = PngFolderDataset(os.path.join(fm, "png", split), fn)
        dt = time.perf_counter() - t
        return ds, f"{len(ds)} PNG files listed in {dt:.2f} s; decoder: {name}"
    raise ValueError(f"unknown format '{fmt}'")


def load_average():
    """The 1/5/15-minute load averages: other work on the box skews every figure."""
    return "/".join(f"{v:.1f}" for v in os.getloadavg())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datadir")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--nranks", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--formats", nargs="+", default=["csv", "png", "npy"],
                    choices=["csv", "png", "npy"])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--split", default="train", choices=["train", "test"])
    ap.add_argument("--png-decoder", default="auto", choices=["auto", "pil", "zlib"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"batch {args.batch}, split {args.split}, load average {load_average()}", flush=True)
    decoder = png_decoder(args.png_decoder)
    for fmt in args.formats:
        ds, note = open_format(fmt, args.datadir, args.split, decoder)
        print(f"torch {fmt}: {note}", flush=True)
        for n in args.nranks:
            times, counts = run_case(ds, n, args.workers, args.batch, args.epochs)
            expected = -(-len(ds) // n) * n  # DistributedSampler pads to a multiple of N
            if any(c != expected for c in counts):
                raise RuntimeError(f"{fmt} N={n}: epochs delivered {counts}, expected {expected}")
            rate = statistics.median(c / t for c, t in zip(counts, times))
            print(f"torch {fmt} N={n} workers={args.workers}: {rate:,.0f} samples/s "
                  f"(median of {args.epochs})", flush=True)
            print("    epoch s: " + " ".join(f"{t:.2f}" for t in times), flush=True)
        del ds
    print(f"torch loader: done, load average {load_average()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
