/* device_radix_sort.cuh - the emulated build's cub::DeviceRadixSort: the
 * same signatures, answered on the CPU when the stream runs.
 *
 * SortPairs (pointers, not the DoubleBuffer overload) sorts integer keys
 * over bits [begin_bit, end_bit) as CUB does: an LSD radix sort of 8-bit
 * digits, so STABLE (pairs with equal key bits keep their input order),
 * signed keys with the sign bit flipped (negative before positive), the
 * alternate key and value buffers inside d_temp_storage. begin_bit ==
 * end_bit copies the input to the output, num_items == 0 does nothing.
 *
 * Temporary storage works as in CUB: a first call with d_temp_storage ==
 * NULL asks the size (nonzero, 1 for num_items == 0 as CUB answers); a call
 * with less than that size returns cudaErrorInvalidValue, as does a bit
 * range outside [0, bits of the key] or a negative num_items; a
 * temp_storage_bytes larger than the allocation d_temp_storage points into
 * stops the process; the run writes over the whole size first, so that an
 * allocation smaller than the size asked for is reported by ASan.
 * A key or value range not inside one live device allocation, and ranges
 * that overlap (CUB: "In-place operations are not supported"), stop the
 * process naming the operand (test/emu/cub/detail/emu_operands.cuh). */
#ifndef FIRN_EMU_DEVICE_RADIX_SORT_CUH
#define FIRN_EMU_DEVICE_RADIX_SORT_CUH

#include <cuda_runtime.h>

#include <cub/detail/emu_operands.cuh>

#include <cstring>
#include <type_traits>

namespace cub
{

struct DeviceRadixSort {
    static constexpr int RADIX_BITS = 8;

    /* What CUB asks for, in shape: alternate key and value buffers, one
     * histogram of 256 counters per pass, and a fixed part. */
    template <typename K, typename V>
    static size_t sort_pairs_temp_bytes(long long n, int begin_bit, int end_bit)
    {
        using firn_emu::cub_operands::align256;
        if (n == 0)
            return 1;
        const size_t passes = (size_t)(end_bit - begin_bit + RADIX_BITS - 1) / RADIX_BITS;
        return 512 + align256((size_t)n * sizeof(K)) + align256((size_t)n * sizeof(V)) +
               align256((passes + 1) * 256 * sizeof(size_t));
    }

    /* Key bits as CUB orders them: unsigned, with a signed key's sign bit
     * flipped. */
    template <typename K> struct key_bits {
        static_assert(std::is_integral<K>::value && !std::is_same<K, bool>::value,
                      "the emulated SortPairs takes integer keys");
        using U = typename std::make_unsigned<K>::type;
        static constexpr U flip = std::is_signed<K>::value ? (U)((U)1 << (sizeof(K) * 8 - 1)) : 0;
        static U in(K k)
        {
            U u;
            std::memcpy(&u, &k, sizeof u);
            return u ^ flip;
        }
        static K out(U u)
        {
            u ^= flip;
            K k;
            std::memcpy(&k, &u, sizeof k);
            return k;
        }
    };

    template <typename K, typename V> struct sort_pairs_job : firn_emu::host_job {
        void *temp;
        size_t temp_bytes;
        const K *keys_in;
        K *keys_out;
        const V *values_in;
        V *values_out;
        long long n;
        int begin_bit, end_bit;
        sort_pairs_job(void *t, size_t tb, const K *ki, K *ko, const V *vi, V *vo, long long count,
                       int b, int e)
            : temp(t), temp_bytes(tb), keys_in(ki), keys_out(ko), values_in(vi), values_out(vo),
              n(count), begin_bit(b), end_bit(e)
        {
        }
        void run() override
        {
            using U = typename key_bits<K>::U;
            using firn_emu::cub_operands::align256;
            memset(temp, 0xab, temp_bytes);
            if (n == 0)
                return;
            const size_t nk = (size_t)n * sizeof(K), nv = (size_t)n * sizeof(V);
            char *t = (char *)temp;
            U *key_alt = (U *)t;
            V *value_alt = (V *)(t + align256(nk));
            size_t *count = (size_t *)(t + align256(nk) + align256(nv));
            /* Keys as their ordered bits in keys_out, values in values_out. */
            U *key_cur = (U *)keys_out;
            V *value_cur = values_out;
            for (long long i = 0; i < n; i++)
                key_cur[i] = key_bits<K>::in(keys_in[i]);
            std::memcpy((void *)value_cur, (const void *)values_in, nv);
            for (int bit = begin_bit; bit < end_bit; bit += RADIX_BITS) {
                const int w = end_bit - bit < RADIX_BITS ? end_bit - bit : RADIX_BITS;
                const U mask = (U)((1u << w) - 1);
                for (int d = 0; d < 256; d++)
                    count[d] = 0;
                for (long long i = 0; i < n; i++)
                    count[(key_cur[i] >> bit) & mask]++;
                size_t at = 0;
                for (int d = 0; d < 256; d++) {
                    const size_t c = count[d];
                    count[d] = at;
                    at += c;
                }
                /* In input order: a stable counting sort. */
                for (long long i = 0; i < n; i++) {
                    const size_t to = count[(key_cur[i] >> bit) & mask]++;
                    key_alt[to] = key_cur[i];
                    std::memcpy((void *)&value_alt[to], (const void *)&value_cur[i], sizeof(V));
                }
                U *ks = key_cur;
                key_cur = key_alt;
                key_alt = ks;
                V *vs = value_cur;
                value_cur = value_alt;
                value_alt = vs;
            }
            if (key_cur != (U *)keys_out) {
                std::memcpy((void *)keys_out, (const void *)key_cur, nk);
                std::memcpy((void *)values_out, (const void *)value_cur, nv);
            }
            for (long long i = 0; i < n; i++)
                keys_out[i] = key_bits<K>::out(((U *)keys_out)[i]);
        }
    };

    template <typename KeyT, typename ValueT, typename NumItemsT>
    static cudaError_t SortPairs(void *d_temp_storage, size_t &temp_storage_bytes,
                                 const KeyT *d_keys_in, KeyT *d_keys_out, const ValueT *d_values_in,
                                 ValueT *d_values_out, NumItemsT num_items, int begin_bit = 0,
                                 int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0)
    {
        using namespace firn_emu::cub_operands;
        static const char call[] = "cub::DeviceRadixSort::SortPairs";
        (void)key_bits<KeyT>::flip; /* integer keys only */
        const long long n = (long long)num_items;
        if (n < 0 || begin_bit < 0 || end_bit > (int)sizeof(KeyT) * 8 || begin_bit > end_bit)
            return cudaErrorInvalidValue;
        const size_t need = sort_pairs_temp_bytes<KeyT, ValueT>(n, begin_bit, end_bit);
        if (!d_temp_storage) {
            temp_storage_bytes = need;
            return cudaSuccess;
        }
        if (temp_storage_bytes < need)
            return cudaErrorInvalidValue;
        check_temp(call, d_temp_storage, temp_storage_bytes);
        const size_t nk = (size_t)n * sizeof(KeyT), nv = (size_t)n * sizeof(ValueT);
        check_device_range(call, "d_keys_in", d_keys_in, n, nk);
        check_device_range(call, "d_keys_out", d_keys_out, n, nk);
        check_device_range(call, "d_values_in", d_values_in, n, nv);
        check_device_range(call, "d_values_out", d_values_out, n, nv);
        const void *range[4] = {d_keys_in, d_keys_out, d_values_in, d_values_out};
        const size_t bytes[4] = {nk, nk, nv, nv};
        static const char *const names[4] = {"d_keys_in", "d_keys_out", "d_values_in",
                                             "d_values_out"};
        for (int a = 0; a < 4; a++)
            for (int b = a + 1; b < 4; b++)
                if (overlap(range[a], bytes[a], range[b], bytes[b]))
                    firn_emu::fatal("%s: %s %p and %s %p overlap over num_items %lld; CUB sorts "
                                    "from and to separate ranges (no in-place sort)",
                                    call, names[a], range[a], names[b], range[b], n);
        auto *j = new sort_pairs_job<KeyT, ValueT>(d_temp_storage, temp_storage_bytes, d_keys_in,
                                                   d_keys_out, d_values_in, d_values_out, n,
                                                   begin_bit, end_bit);
        j->name = call;
        /* The operands' allocations join the job's, for the stream-ordering check. */
        const void *objects[] = {&j->temp,       (const void *)sizeof(void *),
                                 &j->keys_in,    (const void *)sizeof(void *),
                                 &j->keys_out,   (const void *)sizeof(void *),
                                 &j->values_in,  (const void *)sizeof(void *),
                                 &j->values_out, (const void *)sizeof(void *)};
        firn_emu::enqueue_host_job(j, stream, objects, 10);
        return cudaSuccess;
    }
};

} // namespace cub

#endif
