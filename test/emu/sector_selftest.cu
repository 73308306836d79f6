/* sector_selftest.cu - checks the emulated runtime's count of 32-byte
 * global-memory sectors per warp access (FIRN_EMU_PROFILE's load_warp,
 * load_sectors, load_bytes, store_warp, store_sectors and store_bytes
 * columns, test/emu/runtime.cpp) against what coalescing gives by hand,
 * one kernel a pattern, the arrays cudaMalloc'ed (256-byte aligned):
 *
 *   coalesced   lane l loads a[l], stores o[l] (floats): 1 access of 128
 *               bytes in 4 sectors each way
 *   stride8     lane l loads a[8 l]: 1 access, 32 sectors
 *   soa3        lane l loads a[l], a[n + l], a[2 n + l] (firn_load3 of a
 *               float3 array of n = 256): 3 accesses of 4 sectors
 *   broadcast   every lane loads a[0]: 1 access, 1 sector, 128 bytes
 *   float4      lane l loads float4 b[l] (16 bytes): 1 access, 16 sectors
 *   offset      lane l loads a[l + 1]: 1 access, 5 sectors (straddles)
 *   twowarps    64 lanes load a[l]: 2 accesses (one a warp), 8 sectors
 *   loop        lane l loads a[l + 32 r], r = 0..3, at one instruction
 *               (not unrolled): 4 accesses of 4 sectors
 *   atomic      atomicAdd(o, 1) on global memory: no load, no store
 *               (atomics are counted in their own columns)
 *
 * Built by clang with -fsanitize-coverage=trace-loads,trace-stores (as make
 * emu-sectors builds the kernels) against the runtime; test/emu/check.sh
 * runs it (make emu-check). Prints "sector_selftest: N passed, M failed";
 * exits non-zero on a failure. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

static __global__ void coalesced(const float *a, float *o) { o[threadIdx.x] = a[threadIdx.x]; }
static __global__ void stride8(const float *a, float *o) { o[0] = a[8 * threadIdx.x]; }
static __global__ void soa3(const float *a, float *o)
{
    const int n = 256, l = (int)threadIdx.x;
    const float s = a[l] + a[n + l] + a[2 * n + l];
    if (s == 12345.0f) /* never: the loads stay, no store */
        o[0] = s;
}
static __global__ void broadcast(const float *a, float *o)
{
    if (a[0] == 12345.0f)
        o[0] = 1.0f;
}
static __global__ void vec4(const float4 *b, float *o)
{
    const float4 v = b[threadIdx.x];
    if (v.x + v.y + v.z + v.w == 12345.0f)
        o[0] = 1.0f;
}
static __global__ void offset(const float *a, float *o)
{
    if (a[threadIdx.x + 1] == 12345.0f)
        o[0] = 1.0f;
}
static __global__ void twowarps(const float *a, float *o)
{
    if (a[threadIdx.x] == 12345.0f)
        o[0] = 1.0f;
}
static __global__ void loop(const float *a, float *o, int rounds)
{
    float s = 0.0f;
#pragma clang loop unroll(disable)
    for (int r = 0; r < rounds; r++)
        s += a[threadIdx.x + 32 * r];
    if (s == 12345.0f)
        o[0] = 1.0f;
}
static __global__ void atomic(float *o) { atomicAdd(o, 1.0f); }

static int failed, passed;
static void expect(bool ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    (ok ? passed : failed)++;
}

int main(int argc, char **argv)
{
    /* The profile is written at exit: the kernels run in a child. */
    if (argc == 2) {
        float *a, *o;
        cudaMalloc((void **)&a, 4096 * sizeof(float));
        cudaMalloc((void **)&o, 64 * sizeof(float));
        cudaMemset(a, 0, 4096 * sizeof(float));
        const cudaStream_t s = (cudaStream_t)0;
        FIRN_EMU_LAUNCH(coalesced, dim3(1), dim3(32), 0, s, a, o);
        FIRN_EMU_LAUNCH(stride8, dim3(1), dim3(32), 0, s, a, o);
        FIRN_EMU_LAUNCH(soa3, dim3(1), dim3(32), 0, s, a, o);
        FIRN_EMU_LAUNCH(broadcast, dim3(1), dim3(32), 0, s, a, o);
        FIRN_EMU_LAUNCH(vec4, dim3(1), dim3(32), 0, s, (const float4 *)a, o);
        FIRN_EMU_LAUNCH(offset, dim3(1), dim3(32), 0, s, a, o);
        FIRN_EMU_LAUNCH(twowarps, dim3(1), dim3(64), 0, s, a, o);
        FIRN_EMU_LAUNCH(loop, dim3(1), dim3(32), 0, s, a, o, 4);
        FIRN_EMU_LAUNCH(atomic, dim3(1), dim3(32), 0, s, o);
        cudaDeviceSynchronize();
        cudaFree(a);
        cudaFree(o);
        return 0;
    }
    char path[64], cmd[512];
    snprintf(path, sizeof path, "/tmp/sector_selftest.%d.tsv", (int)getpid());
    remove(path);
    snprintf(cmd, sizeof cmd, "FIRN_EMU_PROFILE=%s %s child", path, argv[0]);
    if (system(cmd) != 0) {
        expect(false, "the child ran");
        printf("sector_selftest: %d passed, %d failed\n", passed, failed);
        return 1;
    }
    /* load accesses, sectors, bytes; store accesses, sectors, bytes */
    static const struct {
        const char *kernel;
        unsigned long long want[6];
    } cases[] = {
        {"coalesced", {1, 4, 128, 1, 4, 128}}, {"stride8", {1, 32, 128, 1, 1, 128}},
        {"soa3", {3, 12, 384, 0, 0, 0}},       {"broadcast", {1, 1, 128, 0, 0, 0}},
        {"vec4", {1, 16, 512, 0, 0, 0}},       {"offset", {1, 5, 128, 0, 0, 0}},
        {"twowarps", {2, 8, 256, 0, 0, 0}},    {"loop", {4, 16, 512, 0, 0, 0}},
        {"atomic", {0, 0, 0, 0, 0, 0}},
    };
    for (const auto &cs : cases) {
        FILE *f = fopen(path, "r");
        char line[1024];
        unsigned long long c[17] = {0};
        bool found = false;
        while (f && fgets(line, sizeof line, f)) {
            const char *tab = strchr(line, '\t');
            if (!tab || (size_t)(tab - line) != strlen(cs.kernel) ||
                strncmp(line, cs.kernel, strlen(cs.kernel)) != 0)
                continue;
            int got = 0;
            for (const char *q = tab; q && got < 17; q = strchr(q + 1, '\t'))
                c[got++] = strtoull(q + 1, NULL, 10);
            found = got == 17;
        }
        if (f)
            fclose(f);
        const unsigned long long *g = c + 11, *w = cs.want;
        char what[256];
        snprintf(what, sizeof what,
                 "%s: loads %llu accesses, %llu sectors, %llu bytes; stores %llu, %llu, %llu "
                 "(want %llu, %llu, %llu; %llu, %llu, %llu)",
                 cs.kernel, g[0], g[1], g[2], g[3], g[4], g[5], w[0], w[1], w[2], w[3], w[4], w[5]);
        expect(found && memcmp(g, w, sizeof cs.want) == 0, what);
    }
    remove(path);
    printf("sector_selftest: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
