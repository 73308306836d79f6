/* device_scan.cuh - the emulated build's cub::DeviceScan: ExclusiveSum and
 * InclusiveSum (also their in-place overloads), the same signatures,
 * answered on the CPU when the stream runs.
 *
 * The sum is accumulated in the input's value type, as CUB does, and
 * integers wrap as on the device (no signed overflow on the host). d_in ==
 * d_out scans in place; ranges that overlap otherwise stop the process
 * (CUB: "shall not overlap in any other way").
 *
 * Temporary storage works as in CUB: a first call with d_temp_storage ==
 * NULL asks the size (nonzero, num_items == 0 included); a call with less
 * than that size, or a negative num_items, returns cudaErrorInvalidValue; a
 * temp_storage_bytes larger than the allocation d_temp_storage points into
 * stops the process; the run writes over the whole size, so that an
 * allocation smaller than the size asked for is reported by ASan. Pointer
 * operands must lie in one live device allocation with all num_items
 * elements (test/emu/cub/detail/emu_operands.cuh). */
#ifndef FIRN_EMU_DEVICE_SCAN_CUH
#define FIRN_EMU_DEVICE_SCAN_CUH

#include <cuda_runtime.h>

#include <cub/detail/emu_operands.cuh>

#include <type_traits>

namespace cub
{

struct DeviceScan {
    /* What CUB asks for, in shape: a fixed part and one tile descriptor per
     * tile of items. */
    static size_t temp_bytes_for(long long n) { return 512 + 16 * (size_t)((n + 4095) / 4096); }

    /* a + b with the wrap-around of the device for integers. */
    template <typename T> static T add(T a, T b)
    {
        if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value) {
            using U = typename std::make_unsigned<T>::type;
            return (T)(U)((U)a + (U)b);
        } else {
            return a + b;
        }
    }

    template <typename In, typename Out> struct scan_job : firn_emu::host_job {
        void *temp;
        size_t temp_bytes;
        In in;
        Out out;
        long long n;
        bool inclusive;
        scan_job(void *t, size_t tb, In i, Out o, long long count, bool inc)
            : temp(t), temp_bytes(tb), in(i), out(o), n(count), inclusive(inc)
        {
        }
        void run() override
        {
            using T = typename std::decay<decltype(in[0])>::type;
            memset(temp, 0xab, temp_bytes);
            T acc = T();
            for (long long i = 0; i < n; i++) {
                const T v = in[i]; /* before out[i] is written: in place */
                if (inclusive) {
                    acc = add(acc, v);
                    out[i] = acc;
                } else {
                    out[i] = acc;
                    acc = add(acc, v);
                }
            }
        }
    };

    template <typename In, typename Out, typename NumItemsT>
    static cudaError_t scan(const char *call, void *temp, size_t &temp_bytes, In d_in, Out d_out,
                            NumItemsT num_items, cudaStream_t stream, bool inclusive)
    {
        using namespace firn_emu::cub_operands;
        const long long n = (long long)num_items;
        if (n < 0)
            return cudaErrorInvalidValue;
        const size_t need = temp_bytes_for(n);
        if (!temp) {
            temp_bytes = need;
            return cudaSuccess;
        }
        if (temp_bytes < need)
            return cudaErrorInvalidValue;
        check_temp(call, temp, temp_bytes);
        check_iterator(call, "d_in", d_in, n);
        check_iterator(call, "d_out", d_out, n);
        if constexpr (std::is_pointer<In>::value && std::is_pointer<Out>::value) {
            const size_t bi = (size_t)n * sizeof(*d_in), bo = (size_t)n * sizeof(*d_out);
            if ((const void *)d_in != (const void *)d_out && overlap(d_in, bi, d_out, bo))
                firn_emu::fatal("%s: d_in %p and d_out %p overlap over num_items %lld without "
                                "being equal; CUB scans in place (d_in == d_out) or between "
                                "separate ranges",
                                call, (const void *)d_in, (const void *)d_out, n);
        }
        auto *j = new scan_job<In, Out>(temp, temp_bytes, d_in, d_out, n, inclusive);
        j->name = call;
        /* Pointers in the operands are checked as a kernel's arguments are. */
        const void *objects[] = {&j->temp, (const void *)sizeof(void *),
                                 &j->in,   (const void *)sizeof(In),
                                 &j->out,  (const void *)sizeof(Out)};
        firn_emu::enqueue_host_job(j, stream, objects, 6);
        return cudaSuccess;
    }

    template <typename InputIteratorT, typename OutputIteratorT, typename NumItemsT>
    static cudaError_t ExclusiveSum(void *d_temp_storage, size_t &temp_storage_bytes,
                                    InputIteratorT d_in, OutputIteratorT d_out, NumItemsT num_items,
                                    cudaStream_t stream = 0)
    {
        return scan("cub::DeviceScan::ExclusiveSum", d_temp_storage, temp_storage_bytes, d_in,
                    d_out, num_items, stream, false);
    }
    template <typename IteratorT, typename NumItemsT>
    static cudaError_t ExclusiveSum(void *d_temp_storage, size_t &temp_storage_bytes,
                                    IteratorT d_data, NumItemsT num_items, cudaStream_t stream = 0)
    {
        return ExclusiveSum(d_temp_storage, temp_storage_bytes, d_data, d_data, num_items, stream);
    }

    template <typename InputIteratorT, typename OutputIteratorT, typename NumItemsT>
    static cudaError_t InclusiveSum(void *d_temp_storage, size_t &temp_storage_bytes,
                                    InputIteratorT d_in, OutputIteratorT d_out, NumItemsT num_items,
                                    cudaStream_t stream = 0)
    {
        return scan("cub::DeviceScan::InclusiveSum", d_temp_storage, temp_storage_bytes, d_in,
                    d_out, num_items, stream, true);
    }
    template <typename IteratorT, typename NumItemsT>
    static cudaError_t InclusiveSum(void *d_temp_storage, size_t &temp_storage_bytes,
                                    IteratorT d_data, NumItemsT num_items, cudaStream_t stream = 0)
    {
        return InclusiveSum(d_temp_storage, temp_storage_bytes, d_data, d_data, num_items, stream);
    }
};

} // namespace cub

#endif
