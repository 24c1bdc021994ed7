#!/usr/bin/python3
"""Write the benchmark data sets of issue 27 into OUTDIR, from Debian's packages.

usage: /usr/bin/python3 prepare.py OUTDIR [--png-writer auto|pil|zlib]

Fashion-MNIST (dataset-fashion-mnist: /usr/share/datasets/fashion-mnist/*.gz),
train = the 60,000 train images, test = the 10,000 t10k images, in IDX order:
  fmnist/train.csv, fmnist/test.csv   header `label,p0,...,p783`, label first,
                                      pixels as integers 0..255 (row-major 28x28)
  fmnist/png/{train,test}/<c>/<i>.png grey 8-bit 28x28 PNG; <c> the class 0..9
                                      (one digit), <i> the sample's index in its
                                      split, 5 digits (00000..59999)
  fmnist/{train,test}_x.npy           uint8 [N, 28, 28]
  fmnist/{train,test}_y.npy           int64 [N]
scikit-learn's bundled tables (python3-sklearn), split with
train_test_split(test_size=0.25, random_state=0, stratify=y):
  sklearn/{digits,breast_cancer,wine}_{train,test}.csv
                                      header = feature names (spaces -> '_'),
                                      features as floats, last column `target`
                                      (the integer class)

Idempotent: an output that exists is skipped. Every output is written under a
temporary name and renamed into place when complete (the PNG tree as a whole
directory), so an interrupted run leaves no half-written file under its final
name. PNGs are written with PIL when it is importable (Debian python3-pil), else
with zlib + struct (--png-writer forces one); both give identical pixels.
"""
import argparse
import gzip
import os
import shutil
import struct
import sys
import time
import zlib

import numpy as np

FMNIST_DIR = "/usr/share/datasets/fashion-mnist"
SPLITS = {"train": "train", "test": "t10k"}
TABLES = ("digits", "breast_cancer", "wine")


def log(msg):
    print(msg, flush=True)


def read_idx(path):
    """Return the array stored in one gzip'd IDX file (ubyte data only)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {data.size} bytes of data, header says {dims}")
    return data.reshape(dims)


def load_fmnist(split):
    """(x uint8 [N,28,28], y int64 [N]) of one split from the Debian package."""
    stem = SPLITS[split]
    x = read_idx(os.path.join(FMNIST_DIR, f"{stem}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(FMNIST_DIR, f"{stem}-labels-idx1-ubyte.gz"))
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{split}: {x.shape[0]} images but {y.shape[0]} labels")
    return x, y.astype(np.int64)


def atomic_write(path, write_fn):
    """Call write_fn(tmp_path), then rename tmp_path to path."""
    tmp = path + ".tmp"
    write_fn(tmp)
    os.replace(tmp, path)


def write_npy(path, arr):
    def write(tmp):
        with open(tmp, "wb") as f:
            np.save(f, arr)
    atomic_write(path, write)


def write_fmnist_csv(path, x, y):
    """label,p0..p783 rows; integers formatted through a 0..255 lookup table."""
    text = [str(v) for v in range(256)]
    flat = x.reshape(x.shape[0], -1)
    header = "label," + ",".join(f"p{j}" for j in range(flat.shape[1])) + "\n"

    def write(tmp):
        with open(tmp, "w", newline="\n") as f:
            f.write(header)
            for label, row in zip(y.tolist(), flat.tolist()):
                f.write(text[label] + "," + ",".join(map(text.__getitem__, row)) + "\n")
    atomic_write(path, write)


def png_bytes_zlib(img):
    """Encode a 2-D uint8 array as a grey 8-bit PNG (filter 0 on every row)."""
    h, w = img.shape

    def chunk(kind, payload):
        body = kind + payload
        return struct.pack(">I", len(payload)) + body + struct.pack(">I", zlib.crc32(body))

    rows = np.zeros((h, w + 1), dtype=np.uint8)  # leading filter byte 0 per row
    rows[:, 1:] = img
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)  # 8-bit, greyscale
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def png_writer(choice):
    """(name, fn(path, img)) for the PNG encoder chosen."""
    if choice in ("auto", "pil"):
        try:
            from PIL import Image
            return "PIL", lambda path, img: Image.fromarray(img, mode="L").save(path)
        except ImportError:
            if choice == "pil":
                raise
    def write(path, img):
        with open(path, "wb") as f:
            f.write(png_bytes_zlib(img))
    return "zlib+struct", write


def write_png_tree(root, data, writer):
    """root/{train,test}/<class>/<index>.png, written in root.tmp then renamed."""
    name, write = writer
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    count = 0
    for split, (x, y) in data.items():
        for c in range(10):
            os.makedirs(os.path.join(tmp, split, str(c)))
        for i in range(x.shape[0]):
            write(os.path.join(tmp, split, str(int(y[i])), f"{i:05d}.png"), x[i])
            count += 1
    os.replace(tmp, root)
    return f"{count} PNG files ({name})"


def table_split(name):
    """(header names, X_train, X_test, y_train, y_test) of one sklearn table."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    bunch = getattr(datasets, f"load_{name}")()
    names = [str(n).replace(" ", "_") for n in bunch.feature_names]
    if "target" in names:
        raise ValueError(f"{name}: a feature is already called 'target'")
    x_tr, x_te, y_tr, y_te = train_test_split(
        bunch.data, bunch.target, test_size=0.25, random_state=0, stratify=bunch.target)
    return names, x_tr, x_te, y_tr, y_te


def write_table_csv(path, names, x, y):
    def write(tmp):
        with open(tmp, "w", newline="\n") as f:
            f.write(",".join(names + ["target"]) + "\n")
            for row, label in zip(x.tolist(), y.tolist()):
                f.write(",".join(repr(float(v)) for v in row) + f",{int(label)}\n")
    atomic_write(path, write)


class Outputs:
    """Runs each step only when its outputs are missing; logs what it did."""

    def __init__(self, outdir):
        self.outdir = outdir
        self.wrote = 0

    def step(self, rel_paths, fn):
        paths = [os.path.join(self.outdir, p) for p in rel_paths]
        if all(os.path.exists(p) for p in paths):
            log(f"exists  {', '.join(rel_paths)}")
            return
        t = time.perf_counter()
        what = fn()
        sizes = sum(du(p) for p in paths)
        extra = f" ({what})" if what else ""
        log(f"wrote   {', '.join(rel_paths)}: {sizes / 1e6:.1f} MB{extra}, "
            f"{time.perf_counter() - t:.1f} s")
        self.wrote += 1


def du(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for base, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(base, f)) for f in files)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--png-writer", choices=("auto", "pil", "zlib"), default="auto")
    args = ap.parse_args()
    t0 = time.perf_counter()
    fm = os.path.join(args.outdir, "fmnist")
    sk = os.path.join(args.outdir, "sklearn")
    os.makedirs(fm, exist_ok=True)
    os.makedirs(sk, exist_ok=True)
    out = Outputs(args.outdir)

    cache = {}

    def fmnist(split):
        if split not in cache:
            cache[split] = load_fmnist(split)
        return cache[split]

    for split in SPLITS:
        def npys(s=split):
            write_npy(os.path.join(fm, f"{s}_x.npy"), fmnist(s)[0])
            write_npy(os.path.join(fm, f"{s}_y.npy"), fmnist(s)[1])
        out.step([f"fmnist/{split}_x.npy", f"fmnist/{split}_y.npy"], npys)
        out.step([f"fmnist/{split}.csv"],
                 lambda s=split: write_fmnist_csv(os.path.join(fm, f"{s}.csv"), *fmnist(s)))
    out.step(["fmnist/png"],
             lambda: write_png_tree(os.path.join(fm, "png"),
                                    {s: fmnist(s) for s in SPLITS},
                                    png_writer(args.png_writer)))
    for name in TABLES:
        def tables(n=name):
            names, x_tr, x_te, y_tr, y_te = table_split(n)
            write_table_csv(os.path.join(sk, f"{n}_train.csv"), names, x_tr, y_tr)
            write_table_csv(os.path.join(sk, f"{n}_test.csv"), names, x_te, y_te)
            return (f"{len(y_tr)}+{len(y_te)} rows, {len(names)} features, "
                    f"{len(set(y_tr.tolist()))} classes")
        out.step([f"sklearn/{name}_train.csv", f"sklearn/{name}_test.csv"], tables)

    log(f"prepare: {out.wrote} step(s) written into {args.outdir} in "
        f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
