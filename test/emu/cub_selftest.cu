/* cub_selftest.cu - checks the CUB calls firn uses (SPH neighbour search,
 * MPM reductions) through the public CUB API only: cub::DeviceRadixSort::
 * SortPairs (stable, bit ranges, 0 and 1 items, int / unsigned / 64-bit
 * keys), cub::DeviceScan::ExclusiveSum and InclusiveSum against serial
 * loops, cub::DeviceReduce::Sum for float and double; and stream capture
 * into a CUDA graph, as firn's --graphs uses it.
 *
 * test/emu/check.sh builds it against the emulated runtime (make
 * emu-check), where it also checks the emulation's errors: a temporary
 * buffer below the size asked for (cudaErrorInvalidValue), and a host
 * pointer as d_keys_in, which stops the process naming it (checked in a
 * child process). With the CUDA toolkit it builds against the real CUB:
 *   nvcc -std=c++17 -o cub_selftest test/emu/cub_selftest.cu && ./cub_selftest
 * Prints "cub_selftest: N passed, M failed"; exits non-zero on a failure. */
#include <cub/cub.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#ifdef FIRN_EMU
#include <sys/wait.h>
#include <unistd.h>
#endif

static int g_passed, g_failed;

static void check(bool ok, const char *what)
{
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        printf("FAIL: %s\n", what);
    }
}

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* A device copy of a host vector (n + pad elements, the pad set to fill). */
template <typename T> static T *to_device(const std::vector<T> &h, cudaStream_t s, size_t pad = 0)
{
    T *d = nullptr;
    const size_t n = h.size() + pad;
    if (n == 0)
        return nullptr;
    CU(cudaMalloc(&d, n * sizeof(T)));
    CU(cudaMemsetAsync(d, 0x5a, n * sizeof(T), s));
    if (!h.empty())
        CU(cudaMemcpyAsync(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, s));
    return d;
}

template <typename T> static std::vector<T> to_host(const T *d, size_t n, cudaStream_t s)
{
    std::vector<T> h(n);
    if (n)
        CU(cudaMemcpyAsync(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost, s));
    CU(cudaStreamSynchronize(s));
    return h;
}

/* The key bits SortPairs orders by: a signed key's sign bit flipped, then
 * bits [begin, end). */
template <typename K> static unsigned long long sort_bits(K k, int begin, int end)
{
    using U = typename std::make_unsigned<K>::type;
    U u = (U)k;
    if (std::is_signed<K>::value)
        u ^= (U)((U)1 << (sizeof(K) * 8 - 1));
    const int w = end - begin;
    const unsigned long long mask = w >= 64 ? ~0ull : (1ull << w) - 1;
    return w == 0 ? 0 : ((unsigned long long)u >> begin) & mask;
}

/* SortPairs on the device; the results in ko, vo. */
template <typename K, typename V>
static void device_sort(const std::vector<K> &keys, const std::vector<V> &values,
                        std::vector<K> &ko, std::vector<V> &vo, int begin, int end, cudaStream_t s)
{
    const int n = (int)keys.size();
    K *dki = to_device(keys, s), *dko = to_device(std::vector<K>(n), s);
    V *dvi = to_device(values, s), *dvo = to_device(std::vector<V>(n), s);
    size_t tb = 0;
    CU(cub::DeviceRadixSort::SortPairs(nullptr, tb, dki, dko, dvi, dvo, n, begin, end, s));
    check(tb > 0, "SortPairs asks for a nonzero temporary size");
    void *temp = nullptr;
    CU(cudaMalloc(&temp, tb));
    CU(cub::DeviceRadixSort::SortPairs(temp, tb, dki, dko, dvi, dvo, n, begin, end, s));
    ko = to_host(dko, n, s);
    vo = to_host(dvo, n, s);
    CU(cudaFree(temp));
    CU(cudaFree(dki));
    CU(cudaFree(dko));
    CU(cudaFree(dvi));
    CU(cudaFree(dvo));
}

/* Sorts on the device and compares with std::stable_sort on the key bits. */
template <typename K, typename V>
static void check_sort(const char *what, const std::vector<K> &keys, const std::vector<V> &values,
                       int begin, int end, cudaStream_t s)
{
    std::vector<K> ko;
    std::vector<V> vo;
    device_sort(keys, values, ko, vo, begin, end, s);
    std::vector<size_t> order(keys.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return sort_bits(keys[a], begin, end) < sort_bits(keys[b], begin, end);
    });
    bool same = ko.size() == keys.size() && vo.size() == keys.size();
    for (size_t i = 0; same && i < order.size(); i++)
        same = ko[i] == keys[order[i]] && vo[i] == values[order[i]];
    char msg[256];
    snprintf(msg, sizeof msg, "SortPairs %s (%zu items, bits [%d, %d)) equals a stable sort", what,
             keys.size(), begin, end);
    check(same, msg);
}

static void test_sort_pairs(cudaStream_t s)
{
    srand(12345);
    /* Stability: 20000 pairs on 7 distinct keys, values in input order;
     * over 1, 3 and 4 passes of 8 bits (an unstable pass undone by another
     * shows in one of them). */
    {
        const int n = 20000;
        std::vector<unsigned> k(n);
        std::vector<int> v(n);
        for (int i = 0; i < n; i++) {
            k[i] = (unsigned)((i * 7919) % 7) * 0x01010101u;
            v[i] = i;
        }
        for (int end : {8, 24, 32}) {
            std::vector<unsigned> ko;
            std::vector<int> vo;
            device_sort(k, v, ko, vo, 0, end, s);
            bool ok = ko.size() == (size_t)n;
            for (int i = 1; ok && i < n; i++)
                ok = ko[i - 1] < ko[i] || (ko[i - 1] == ko[i] && vo[i - 1] < vo[i]);
            for (int i = 0; ok && i < n; i++)
                ok = k[vo[i]] == ko[i];
            char msg[160];
            snprintf(msg, sizeof msg,
                     "SortPairs bits [0, %d): equal keys keep their values in input order (20000 "
                     "pairs, 7 keys)",
                     end);
            check(ok, msg);
        }
        check_sort("unsigned keys, many equal", k, v, 0, 32, s);
    }
    /* int keys, negatives, duplicates; unsigned values. */
    {
        const int n = 9000;
        std::vector<int> k(n);
        std::vector<unsigned> v(n);
        for (int i = 0; i < n; i++) {
            k[i] = (rand() % 201 - 100) * 1000003;
            v[i] = (unsigned)i * 2654435761u;
        }
        check_sort("int keys with negatives", k, v, 0, 32, s);
    }
    /* 64-bit keys with high bits and duplicates. */
    {
        const int n = 7000;
        std::vector<unsigned long long> k(n);
        std::vector<int> v(n);
        for (int i = 0; i < n; i++) {
            k[i] = ((unsigned long long)(rand() % 50) << 40) | (unsigned long long)(rand() % 3) |
                   ((unsigned long long)(rand() & 1) << 63);
            v[i] = i;
        }
        check_sort("unsigned long long keys", k, v, 0, 64, s);
    }
    /* begin_bit / end_bit: only bits [4, 12) order, the rest are ignored
     * (pairs equal there keep their input order). */
    {
        const int n = 5000;
        std::vector<unsigned> k(n);
        std::vector<int> v(n);
        for (int i = 0; i < n; i++) {
            k[i] = ((unsigned)rand() << 16) ^ (unsigned)rand();
            v[i] = i;
        }
        check_sort("unsigned keys", k, v, 4, 12, s);
        check_sort("unsigned keys", k, v, 0, 5, s);
        check_sort("unsigned keys", k, v, 20, 32, s);
        std::vector<unsigned> ko;
        std::vector<int> vo;
        device_sort(k, v, ko, vo, 4, 12, s);
        bool bits_sorted = true, fully_sorted = true;
        for (int i = 1; i < n; i++) {
            bits_sorted &= ((ko[i - 1] >> 4) & 0xff) <= ((ko[i] >> 4) & 0xff);
            fully_sorted &= ko[i - 1] <= ko[i];
        }
        check(bits_sorted && !fully_sorted,
              "SortPairs bits [4, 12): ordered by those bits only, not by the whole key");
        /* An empty bit range copies the input. */
        device_sort(k, v, ko, vo, 7, 7, s);
        check(ko == k && vo == v, "SortPairs bits [7, 7) copies keys and values unchanged");
        std::vector<int> ki(n);
        for (int i = 0; i < n; i++)
            ki[i] = (int)k[i];
        check_sort("int keys", ki, v, 8, 16, s);
    }
    /* num_items 0: nothing written; 1: the pair copied. */
    {
        std::vector<unsigned> k = {42u};
        std::vector<int> v = {-7};
        unsigned *dki = to_device(k, s), *dko = to_device(std::vector<unsigned>{99u}, s);
        int *dvi = to_device(v, s), *dvo = to_device(std::vector<int>{99}, s);
        size_t tb = 0;
        CU(cub::DeviceRadixSort::SortPairs(nullptr, tb, dki, dko, dvi, dvo, 0, 0, 32, s));
        check(tb > 0, "SortPairs num_items 0 asks for a nonzero temporary size");
        void *temp = nullptr;
        CU(cudaMalloc(&temp, tb));
        CU(cub::DeviceRadixSort::SortPairs(temp, tb, dki, dko, dvi, dvo, 0, 0, 32, s));
        check(to_host(dko, 1, s)[0] == 99u && to_host(dvo, 1, s)[0] == 99,
              "SortPairs num_items 0 writes nothing");
        CU(cudaFree(temp));
        std::vector<unsigned> ko;
        std::vector<int> vo;
        device_sort(k, v, ko, vo, 0, 32, s);
        check(ko == k && vo == v, "SortPairs num_items 1 copies the pair");
        CU(cudaFree(dki));
        CU(cudaFree(dko));
        CU(cudaFree(dvi));
        CU(cudaFree(dvo));
    }
}

template <typename T> static void check_scans(const char *what, int n, cudaStream_t s)
{
    std::vector<T> in(n);
    for (int i = 0; i < n; i++)
        in[i] = (T)(rand() % 201 - 100);
    std::vector<T> ex(n), inc(n);
    T acc = 0;
    for (int i = 0; i < n; i++) {
        ex[i] = acc;
        acc = (T)(acc + in[i]);
        inc[i] = acc;
    }
    T *d_in = to_device(in, s, 1), *d_out = to_device(std::vector<T>(n), s, 1);
    void *temp = nullptr;
    size_t tb = 0, tb_inc = 0;
    CU(cub::DeviceScan::ExclusiveSum(nullptr, tb, d_in, d_out, n, s));
    CU(cub::DeviceScan::InclusiveSum(nullptr, tb_inc, d_in, d_out, n, s));
    check(tb > 0 && tb_inc > 0, "DeviceScan asks for a nonzero temporary size");
    tb = std::max(tb, tb_inc);
    CU(cudaMalloc(&temp, tb));
    char msg[256];
    CU(cub::DeviceScan::ExclusiveSum(temp, tb, d_in, d_out, n, s));
    snprintf(msg, sizeof msg, "ExclusiveSum of %d %s equals a serial loop", n, what);
    check(to_host(d_out, n, s) == ex, msg);
    CU(cub::DeviceScan::InclusiveSum(temp, tb, d_in, d_out, n, s));
    snprintf(msg, sizeof msg, "InclusiveSum of %d %s equals a serial loop", n, what);
    check(to_host(d_out, n, s) == inc, msg);
    /* The element past the end stays as it was. */
    T pad_before;
    std::vector<T> pad = to_host(d_in + n, 1, s);
    std::memcpy(&pad_before, pad.data(), sizeof(T));
    CU(cub::DeviceScan::ExclusiveSum(temp, tb, d_in, n, s)); /* in place */
    snprintf(msg, sizeof msg, "ExclusiveSum in place of %d %s equals a serial loop", n, what);
    check(to_host(d_in, n, s) == ex && to_host(d_in + n, 1, s)[0] == pad_before, msg);
    CU(cudaFree(temp));
    CU(cudaFree(d_in));
    CU(cudaFree(d_out));
}

template <typename T> static void check_sum(const char *what, int n, cudaStream_t s)
{
    std::vector<T> in(n);
    double exact = 0.0, mag = 0.0;
    for (int i = 0; i < n; i++) {
        in[i] = (T)((rand() % 20001 - 10000) * 1e-3);
        exact += (double)in[i];
        mag += std::fabs((double)in[i]);
    }
    T *d_in = to_device(in, s), *d_out = to_device(std::vector<T>{(T)-1}, s);
    size_t tb = 0;
    CU(cub::DeviceReduce::Sum(nullptr, tb, d_in, d_out, n, s));
    void *temp = nullptr;
    CU(cudaMalloc(&temp, tb));
    CU(cub::DeviceReduce::Sum(temp, tb, d_in, d_out, n, s));
    const double got = (double)to_host(d_out, 1, s)[0];
    const double eps = std::is_same<T, float>::value ? 1e-5 : 1e-14;
    char msg[256];
    snprintf(msg, sizeof msg, "DeviceReduce::Sum of %d %s: %.17g, exactly %.17g", n, what, got,
             exact);
    check(tb > 0 && std::fabs(got - exact) <= eps * (mag + 1.0), msg);
    CU(cudaFree(temp));
    CU(cudaFree(d_in));
    CU(cudaFree(d_out));
}

/* Stream capture, as firn's CUDA graphs use it: a captured ExclusiveSum
 * does not run at capture, runs at each launch on the input the device
 * holds then; a synchronisation inside a capture fails and invalidates it. */
static void test_graphs(cudaStream_t s)
{
    const int n = 1000;
    std::vector<int> a(n), b(n), want(n);
    for (int i = 0; i < n; i++) {
        a[i] = rand() % 7;
        b[i] = rand() % 5 - 2;
    }
    int *d_in = to_device(a, s), *d_out = to_device(std::vector<int>(n, -1), s);
    size_t tb = 0;
    CU(cub::DeviceScan::ExclusiveSum(nullptr, tb, d_in, d_out, n, s));
    void *temp = nullptr;
    CU(cudaMalloc(&temp, tb));
    CU(cudaStreamSynchronize(s));
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CU(cub::DeviceScan::ExclusiveSum(temp, tb, d_in, d_out, n, s));
    CU(cudaStreamEndCapture(s, &g));
    CU(cudaGraphInstantiate(&e, g, 0));
    CU(cudaGraphDestroy(g));
    check(to_host(d_out, n, s) == std::vector<int>(n, -1), "a captured scan does not run");
    for (const std::vector<int> *in : {&a, &b}) {
        CU(cudaMemcpyAsync(d_in, in->data(), n * sizeof(int), cudaMemcpyHostToDevice, s));
        CU(cudaGraphLaunch(e, s));
        std::exclusive_scan(in->begin(), in->end(), want.begin(), 0);
        check(to_host(d_out, n, s) == want,
              in == &a ? "a graph's launch runs the captured scan"
                       : "a second launch scans the input the device holds then");
    }
    CU(cudaGraphExecDestroy(e));
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CU(cub::DeviceScan::ExclusiveSum(temp, tb, d_in, d_out, n, s));
    const cudaError_t sync = cudaStreamSynchronize(s);
    g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(s, &g);
    (void)cudaGetLastError();
    check(sync == cudaErrorStreamCaptureUnsupported && end == cudaErrorStreamCaptureInvalidated &&
              g == nullptr,
          "a synchronisation in a capture fails and invalidates the capture");
    CU(cudaFree(temp));
    CU(cudaFree(d_in));
    CU(cudaFree(d_out));
}

#ifdef FIRN_EMU
/* The emulation's own errors. */
static void test_emulated_errors(cudaStream_t s, const char *self)
{
    /* A temporary size below what was asked: cudaErrorInvalidValue. */
    {
        std::vector<unsigned> k(1000, 3u);
        std::vector<int> v(1000, 1);
        unsigned *dki = to_device(k, s), *dko = to_device(k, s);
        int *dvi = to_device(v, s), *dvo = to_device(v, s);
        size_t tb = 0;
        CU(cub::DeviceRadixSort::SortPairs(nullptr, tb, dki, dko, dvi, dvo, 1000, 0, 32, s));
        void *temp = nullptr;
        CU(cudaMalloc(&temp, tb));
        size_t small = tb - 1;
        check(cub::DeviceRadixSort::SortPairs(temp, small, dki, dko, dvi, dvo, 1000, 0, 32, s) ==
                  cudaErrorInvalidValue,
              "SortPairs with temp_storage_bytes below the size asked: cudaErrorInvalidValue");
        size_t stb = 0;
        CU(cub::DeviceScan::ExclusiveSum(nullptr, stb, dvi, dvo, 1000, s));
        stb--;
        check(cub::DeviceScan::ExclusiveSum(temp, stb, dvi, dvo, 1000, s) == cudaErrorInvalidValue,
              "ExclusiveSum with temp_storage_bytes below the size asked: cudaErrorInvalidValue");
        check(cub::DeviceRadixSort::SortPairs(temp, tb, dki, dko, dvi, dvo, 1000, 0, 33, s) ==
                  cudaErrorInvalidValue,
              "SortPairs with end_bit past the key: cudaErrorInvalidValue");
        CU(cudaFree(temp));
        CU(cudaFree(dki));
        CU(cudaFree(dko));
        CU(cudaFree(dvi));
        CU(cudaFree(dvo));
    }
    /* A host pointer as d_keys_in stops the process, naming the operand: in
     * a child process (this program again, exec'd), its stderr read here. */
    {
        int fd[2];
        if (pipe(fd) != 0) {
            check(false, "pipe for the host-pointer child");
            return;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fd[1], 2);
            close(fd[0]);
            close(fd[1]);
            execl(self, self, "--host-pointer-child", (char *)nullptr);
            _exit(127);
        }
        close(fd[1]);
        std::string err;
        char buf[4096];
        ssize_t got;
        while ((got = read(fd[0], buf, sizeof buf)) > 0)
            err.append(buf, (size_t)got);
        close(fd[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        const bool stopped = !(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
                             !(WIFEXITED(status) && WEXITSTATUS(status) == 127);
        const bool named =
            err.find("cub::DeviceRadixSort::SortPairs: d_keys_in") != std::string::npos &&
            err.find("is not device memory") != std::string::npos;
        check(stopped && named, "SortPairs with a host d_keys_in stops, naming d_keys_in");
        if (!(stopped && named))
            printf("child status %#x, stderr:\n%s\n", status, err.c_str());
    }
}

/* The child: SortPairs with a host array as d_keys_in. Returns only if the
 * emulation let it pass. */
static int host_pointer_child(cudaStream_t s)
{
    std::vector<unsigned> host_keys(100, 1u);
    std::vector<int> v(100, 0);
    unsigned *dko = to_device(host_keys, s);
    int *dvi = to_device(v, s), *dvo = to_device(v, s);
    size_t tb = 0;
    CU(cub::DeviceRadixSort::SortPairs(nullptr, tb, host_keys.data(), dko, dvi, dvo, 100, 0, 32,
                                       s));
    void *temp = nullptr;
    CU(cudaMalloc(&temp, tb));
    cudaError_t e =
        cub::DeviceRadixSort::SortPairs(temp, tb, host_keys.data(), dko, dvi, dvo, 100, 0, 32, s);
    CU(cudaStreamSynchronize(s));
    fprintf(stderr, "the host d_keys_in passed (%s)\n", cudaGetErrorString(e));
    return 0;
}
#endif

int main(int argc, char **argv)
{
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
#ifdef FIRN_EMU
    if (argc > 1 && !strcmp(argv[1], "--host-pointer-child"))
        return host_pointer_child(s);
#else
    (void)argc, (void)argv;
#endif
    test_sort_pairs(s);
    srand(777);
    for (int n : {0, 1, 2, 1000, 10007}) {
        check_scans<int>("int", n, s);
        check_scans<unsigned>("unsigned", n, s);
    }
    for (int n : {0, 1, 100000}) {
        check_sum<float>("float", n, s);
        check_sum<double>("double", n, s);
    }
    test_graphs(s);
#ifdef FIRN_EMU
    test_emulated_errors(s, "/proc/self/exe");
#endif
    CU(cudaStreamDestroy(s));
    printf("cub_selftest: %d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
