#!/usr/bin/env python3
"""hone's best PolyBench gemm beside the BLAS's dgemm (OpenBLAS from Debian), side by side.

Issue 38's target "gemm within 3x of the machine's peak, or of OpenBLAS dgemm from Debian, measured
side by side by the bench". Takes the folder `hone tune` wrote the best variant into (its build.sh,
e.g. bench/suite.sh's OUT/variants/gemm-guided), builds that variant again with -DPOLYBENCH_TIME (its
kernel's own time), reads the problem's sizes NI NJ NK from its headers (the same -D and -I), builds
bench/gemm/blas_dgemm.c against OpenBLAS, then runs the two alternately, ROUNDS times each, and prints
the medians, GFLOP/s (2 NI NJ NK flops) and their ratio. A benchmark, not a test: timings are noisy
on a shared machine; the ratio is what counts, measured in one run.

  bench/gemm-peak.py VARIANT_DIR [--rounds N] [--cc CC]
Needs libopenblas-dev (scripts/install-deps.sh installs it); says so and exits 77 without it.
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message, code=1):
    print(f"gemm-peak: {message}", file=sys.stderr)
    sys.exit(code)


def compile_line(build_sh):
    """The project folder and the compiler's argv from hone's build.sh (`cd DIR`, then one command)."""
    folder, argv = None, None
    for line in open(build_sh):
        line = line.strip()
        if not line or line.startswith("#") or line.startswith("set "):
            continue
        words = shlex.split(line)
        if words[0] == "cd" and len(words) == 2:
            folder = words[1]
        elif argv is None:
            argv = words
    if folder is None or argv is None or "-o" not in argv:
        fail(f"{build_sh}: expected `cd DIR` and one compile command with -o (as `hone tune` writes it)")
    return folder, argv


def sizes(folder, argv, cc):
    """NI NJ NK as the variant's own headers define them under its -D and -I flags."""
    flags, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a in ("-I", "-iquote", "-D", "-include") and i + 1 < len(argv):
            flags += [a, argv[i + 1]]
            i += 2
            continue
        if a.startswith(("-I", "-D")):
            flags.append(a)
        i += 1
    sources = [a for a in argv if a.endswith(".c") and os.path.basename(a) == "gemm.c"]
    if not sources:
        fail("the build compiles no gemm.c: is this a PolyBench gemm variant?")
    probe = subprocess.run([cc, "-E", "-dM", "-DPOLYBENCH_TIME", *flags, sources[0]], cwd=folder,
                           capture_output=True, text=True)
    if probe.returncode != 0:
        fail(f"reading the sizes failed:\n{probe.stderr[-2000:]}")
    found = dict(re.findall(r"^#define (N[IJK]) ([0-9]+)\s*$", probe.stdout, re.M))
    if set(found) != {"NI", "NJ", "NK"}:
        fail("the variant's headers do not define NI, NJ and NK as numbers")
    return int(found["NI"]), int(found["NJ"]), int(found["NK"])


def seconds(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        fail(f"{cmd[0]} exited {r.returncode}:\n{r.stderr[-2000:]}")
    lines = [l for l in r.stdout.splitlines() if re.fullmatch(r"\s*[0-9]+\.[0-9]+\s*", l)]
    if not lines:
        fail(f"{cmd[0]} printed no time:\n{r.stdout[-500:]}")
    return float(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant", help="the folder of hone's best gemm (its build.sh)")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    args = ap.parse_args()
    build_sh = os.path.join(args.variant, "build.sh")
    if not os.path.isfile(build_sh):
        fail(f"{build_sh}: not found (give the folder `hone tune` wrote the best into)", 2)
    if not any(os.path.exists(p) for p in ("/usr/include/x86_64-linux-gnu/cblas.h", "/usr/include/cblas.h",
                                            "/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h")):
        fail("skipped: no OpenBLAS (install libopenblas-dev: scripts/install-deps.sh)", 77)
    folder, argv = compile_line(build_sh)
    ni, nj, nk = sizes(folder, argv, args.cc)
    with tempfile.TemporaryDirectory(prefix="hone-gemm-peak-") as tmp:
        variant = os.path.join(tmp, "variant")
        out = argv.index("-o")
        built = subprocess.run(argv[:out] + ["-DPOLYBENCH_TIME", "-o", variant] + argv[out + 2:], cwd=folder,
                               capture_output=True, text=True)
        if built.returncode != 0:
            fail(f"building the variant failed:\n{built.stderr[-2000:]}")
        blas = os.path.join(tmp, "blas_dgemm")
        built = subprocess.run([args.cc, "-O2", os.path.join(HERE, "gemm", "blas_dgemm.c"), "-o", blas, "-lopenblas"],
                               capture_output=True, text=True)
        if built.returncode != 0:
            fail(f"building the OpenBLAS driver failed:\n{built.stderr[-2000:]}")
        times = {"hone's best": [], "OpenBLAS dgemm": []}
        runs = [("hone's best", [variant], folder), ("OpenBLAS dgemm", [blas, str(ni), str(nj), str(nk)], tmp)]
        for r in range(args.rounds):
            for name, cmd, cwd in (runs if r % 2 == 0 else runs[::-1]):
                times[name].append(seconds(cmd, cwd))
    flops = 2.0 * ni * nj * nk
    print(f"gemm {ni}x{nj}x{nk} ({flops / 1e6:.1f} MFLOP), {args.rounds} rounds side by side, "
          f"{os.cpu_count()} cores")
    print("| program | median time | GFLOP/s |")
    print("|---|---|---|")
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, m in median.items():
        print(f"| {name} | {m * 1e3:.3f} ms | {flops / m / 1e9:.1f} |")
    ratio = median["hone's best"] / median["OpenBLAS dgemm"]
    print(f"hone's best takes {ratio:.2f}x OpenBLAS's time (target: within 3x)")


if __name__ == "__main__":
    main()
