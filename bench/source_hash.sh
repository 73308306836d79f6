#!/usr/bin/env bash
# source_hash.sh - one SHA-1 over the files the binaries are built from
# (Makefile, host/, kernels/, include/, test/), by content and path, so that
# bench/gpu_check.sh can tell whether binaries packed by bench/pack_gpu.sh
# were built from the tree it runs in. Needs no git.
set -euo pipefail
cd "$(dirname "$0")/.."
find Makefile host kernels include test -type f \( -name Makefile -o -name '*.[ch]' \
    -o -name '*.cu' -o -name '*.cuh' \) | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -c1-40
