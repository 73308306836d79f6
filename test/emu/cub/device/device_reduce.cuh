/* device_reduce.cuh - the emulated build's cub::DeviceReduce: the same
 * signatures, answered on the CPU when the stream runs. Temporary storage
 * works as in CUB: a first call with temp == NULL asks the size; a call
 * with less than that size returns cudaErrorInvalidValue; a size larger than
 * the allocation that temp points into stops the process; the run writes
 * over the whole size, so that an allocation smaller than the size asked for
 * is reported by ASan.
 *
 * Sum adds in the accumulator type CUB uses (the output's value type, here
 * float or double), pairwise as CUB's tree of blocks and warps does rather
 * than in one serial loop, so rounding behaves like the device's (the bits
 * of a float sum still differ from a GPU's); num_items == 0 writes 0. Its
 * pointer operands must lie in one live device allocation with all their
 * elements (test/emu/cub/detail/emu_operands.cuh). */
#ifndef FIRN_EMU_DEVICE_REDUCE_CUH
#define FIRN_EMU_DEVICE_REDUCE_CUH

#include <cuda_runtime.h>

#include <cub/detail/emu_operands.cuh>

#include <type_traits>

namespace cub
{

struct DeviceReduce {
    /* What CUB asks for, in shape: a fixed part and one slot per tile. */
    static size_t temp_bytes_for(long long n) { return 512 + 16 * (size_t)((n + 4095) / 4096); }

    template <typename In, typename Out, typename Op, typename Tr, typename T>
    struct transform_reduce_job : firn_emu::host_job {
        void *temp;
        size_t temp_bytes;
        In in;
        Out out;
        long long n;
        Op op;
        Tr tr;
        T init;
        transform_reduce_job(void *t, size_t tb, In i, Out o, long long count, Op p, Tr r, T v)
            : temp(t), temp_bytes(tb), in(i), out(o), n(count), op(p), tr(r), init(v)
        {
        }
        void run() override
        {
            memset(temp, 0xab, temp_bytes);
            T acc = init;
            for (long long i = 0; i < n; i++)
                acc = op(acc, tr(in[i]));
            *out = acc;
        }
    };

    template <typename In, typename Out, typename Op, typename Tr, typename T>
    static cudaError_t TransformReduce(void *temp, size_t &temp_bytes, In in, Out out, long long n,
                                       Op op, Tr tr, T init, cudaStream_t stream = 0)
    {
        const size_t need = temp_bytes_for(n);
        if (!temp) {
            temp_bytes = need;
            return cudaSuccess;
        }
        if (temp_bytes < need)
            return cudaErrorInvalidValue;
        const size_t have = firn_emu::device_bytes_from(temp);
        if (have < temp_bytes)
            firn_emu::fatal("cub::DeviceReduce::TransformReduce: temp_storage_bytes is %zu, but "
                            "the device allocation at d_temp_storage %p holds %zu bytes from there",
                            temp_bytes, temp, have);
        auto *j = new transform_reduce_job<In, Out, Op, Tr, T>(temp, temp_bytes, in, out, n, op, tr,
                                                               init);
        j->name = "cub::DeviceReduce::TransformReduce";
        /* Pointers in the operands are checked as a kernel's arguments are. */
        const void *objects[] = {
            &j->temp, (const void *)sizeof(void *), &j->in, (const void *)sizeof(In),
            &j->out,  (const void *)sizeof(Out),    &j->tr, (const void *)sizeof(Tr)};
        firn_emu::enqueue_host_job(j, stream, objects, 8);
        return cudaSuccess;
    }

    template <typename In, typename Out, typename Acc> struct sum_job : firn_emu::host_job {
        void *temp;
        size_t temp_bytes;
        In in;
        Out out;
        long long n;
        sum_job(void *t, size_t tb, In i, Out o, long long count)
            : temp(t), temp_bytes(tb), in(i), out(o), n(count)
        {
        }
        /* The sum of in[lo, hi): halves, down to runs of 8 added in order. */
        Acc pairwise(long long lo, long long hi) const
        {
            if (hi - lo <= 8) {
                Acc acc = Acc();
                for (long long i = lo; i < hi; i++)
                    acc = acc + (Acc)in[i];
                return acc;
            }
            const long long mid = lo + (hi - lo) / 2;
            return pairwise(lo, mid) + pairwise(mid, hi);
        }
        void run() override
        {
            memset(temp, 0xab, temp_bytes);
            *out = pairwise(0, n);
        }
    };

    template <typename InputIteratorT, typename OutputIteratorT, typename NumItemsT>
    static cudaError_t Sum(void *d_temp_storage, size_t &temp_storage_bytes, InputIteratorT d_in,
                           OutputIteratorT d_out, NumItemsT num_items, cudaStream_t stream = 0)
    {
        using namespace firn_emu::cub_operands;
        static const char call[] = "cub::DeviceReduce::Sum";
        using Acc = typename std::decay<decltype(*d_out)>::type;
        static_assert(std::is_arithmetic<Acc>::value, "the emulated Sum adds numbers");
        const long long n = (long long)num_items;
        if (n < 0)
            return cudaErrorInvalidValue;
        const size_t need = temp_bytes_for(n);
        if (!d_temp_storage) {
            temp_storage_bytes = need;
            return cudaSuccess;
        }
        if (temp_storage_bytes < need)
            return cudaErrorInvalidValue;
        check_temp(call, d_temp_storage, temp_storage_bytes);
        check_iterator(call, "d_in", d_in, n);
        check_iterator(call, "d_out", d_out, 1);
        auto *j = new sum_job<InputIteratorT, OutputIteratorT, Acc>(
            d_temp_storage, temp_storage_bytes, d_in, d_out, n);
        j->name = call;
        const void *objects[] = {&j->temp, (const void *)sizeof(void *),
                                 &j->in,   (const void *)sizeof(InputIteratorT),
                                 &j->out,  (const void *)sizeof(OutputIteratorT)};
        firn_emu::enqueue_host_job(j, stream, objects, 6);
        return cudaSuccess;
    }
};

} // namespace cub

#endif
