/* cub.cuh - the emulated build's <cub/cub.cuh>: the CUB stand-ins firn
 * uses (test/emu/cub/device/), answered on the CPU when the stream runs
 * (docs/EMULATION.md). Not used by the nvcc build. */
#ifndef FIRN_EMU_CUB_CUH
#define FIRN_EMU_CUB_CUH

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#endif
