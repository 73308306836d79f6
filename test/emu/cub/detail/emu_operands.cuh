/* emu_operands.cuh - what the emulated CUB stand-ins (test/emu/cub/device/)
 * share: the checks on their operands before a call is queued, and the
 * temporary-storage check. Not a CUB header: nothing in kernels/ includes
 * it directly.
 *
 * A data pointer must point into one live device allocation (cudaMalloc)
 * that holds all num_items elements from there; anything else (a host
 * address, freed memory, a range running past the allocation's end) stops
 * the process naming the call and the operand, as a kernel argument holding
 * a host address does (test/emu/runtime.cpp). Iterators that are not
 * pointers (thrust::counting_iterator, functors) are left to the scan of
 * the operands' bytes that firn_emu::enqueue_host_job does. */
#ifndef FIRN_EMU_CUB_OPERANDS_CUH
#define FIRN_EMU_CUB_OPERANDS_CUH

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace firn_emu
{
namespace cub_operands
{

/* [p, p + bytes) lies in one live device allocation, else the process stops. */
static inline void check_device_range(const char *call, const char *operand, const void *p,
                                      long long n, size_t bytes)
{
    if (n <= 0)
        return;
    const size_t have = firn_emu::device_bytes_from(p);
    if (have == 0)
        firn_emu::fatal("%s: %s %p is not device memory (a host address, freed memory, or no "
                        "pointer at all); CUB reads and writes only device memory (cudaMalloc)",
                        call, operand, p);
    if (have < bytes)
        firn_emu::fatal("%s: %s %p: num_items %lld need %zu bytes from there, but its device "
                        "allocation holds %zu",
                        call, operand, p, n, bytes, have);
}

/* The same for an iterator that is a pointer; other iterators pass. */
template <typename It>
static inline void check_iterator(const char *call, const char *operand, It it, long long n)
{
    if constexpr (std::is_pointer<It>::value) {
        using T = typename std::remove_cv<typename std::remove_pointer<It>::type>::type;
        static_assert(!std::is_void<T>::value, "a CUB iterator points at its element type");
        check_device_range(call, operand, (const void *)it, n, (size_t)n * sizeof(T));
    } else {
        (void)call, (void)operand, (void)it, (void)n;
    }
}

/* Two element ranges of n items that share any byte. */
static inline bool overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
{
    const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a_bytes && b_bytes && x < y + b_bytes && y < x + a_bytes;
}

/* d_temp_storage holds temp_bytes, else the process stops (the size passed
 * is the caller's claim about the buffer: a larger claim is a bug CUB would
 * not see until it overwrote what follows). */
static inline void check_temp(const char *call, void *temp, size_t temp_bytes)
{
    const size_t have = firn_emu::device_bytes_from(temp);
    if (have < temp_bytes)
        firn_emu::fatal("%s: temp_storage_bytes is %zu, but the device allocation at "
                        "d_temp_storage %p holds %zu bytes from there",
                        call, temp_bytes, temp, have);
}

static inline size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

} // namespace cub_operands
} // namespace firn_emu

#endif
