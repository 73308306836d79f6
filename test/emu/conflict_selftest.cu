/* conflict_selftest.cu - checks the emulated runtime's model of shared
 * float atomics as a warp issues them (FIRN_EMU_PROFILE's warp_shared,
 * shared_rounds and shared_wavefronts columns, test/emu/runtime.cpp)
 * against what the model says by hand for four access patterns of one
 * warp of 32 lanes, one atomicAdd each on a shared array of floats:
 *
 *   lane l on word l          32 addresses in 32 banks: 1 pass, 1 wavefront
 *   every lane on word 0      one address: 32 passes of 1 wavefront
 *   lane l on word 4 l        32 addresses, 4 to a bank (l and l + 8 meet):
 *                             1 pass of 4 wavefronts (an array of 4 floats
 *                             a node, lanes on consecutive nodes)
 *   lane l on word l / 8      8 lanes on each of 4 addresses in 4 banks:
 *                             8 passes of 1 wavefront (the sorted cell's
 *                             lanes of binned P2G)
 *   lane l on word 32 (l % 2) 16 lanes on each of 2 addresses in bank 0:
 *                             16 passes of 2 wavefronts
 *
 * and that a lane's second atomic at the same call site is a second
 * instruction; the float adds are counted again as compare-and-swap loops
 * (cas_warp, cas_rounds), and an integer atomicAdd of every lane on one
 * int (the native instruction) is 1 instruction of 32 passes and 32
 * wavefronts with no loop. test/emu/check.sh builds and runs it against the emulated
 * runtime only (make emu-check).
 * Prints "conflict_selftest: N passed, M failed"; exits non-zero on a
 * failure. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

static __global__ void pattern(int which, float *out)
{
    __shared__ float s[256];
    __shared__ int si[32];
    if (which == 5) { /* an integer add, every lane on word 0: native, no loop */
        if (threadIdx.x == 0)
            si[0] = 0;
        __syncthreads();
        atomicAdd(si, 1);
        __syncthreads();
        if (threadIdx.x == 0)
            out[0] = (float)si[0];
        return;
    }
    for (int k = threadIdx.x; k < 256; k += blockDim.x)
        s[k] = 0.0f;
    __syncthreads();
    const int l = threadIdx.x;
    int w = 0;
    switch (which) {
    case 0:
        w = l;
        break;
    case 1:
        w = 0;
        break;
    case 2:
        w = 4 * l;
        break;
    case 3:
        w = l / 8;
        break;
    default:
        w = 32 * (l % 2);
        break;
    }
    atomicAdd(s + w, 1.0f);
    if (which == 0)
        atomicAdd(s + w, 1.0f); /* the same site again: a second instruction */
    __syncthreads();
    if (l == 0)
        out[0] = s[0];
}

static int failed, passed;
static void expect(bool ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    (ok ? passed : failed)++;
}

int main(int argc, char **argv)
{
    /* The profile is written at exit: run each pattern in a child. */
    if (argc == 3) {
        float *out;
        cudaMalloc((void **)&out, sizeof(float));
        FIRN_EMU_LAUNCH(pattern, dim3(1), dim3(32), 0, (cudaStream_t)0, atoi(argv[2]), out);
        cudaDeviceSynchronize();
        cudaFree(out);
        return 0;
    }
    /* warp instructions, passes, wavefronts; of them compare-and-swap loops
     * and their passes */
    static const unsigned long long want[6][5] = {{2, 2, 2, 2, 2},    {1, 32, 32, 1, 32},
                                                  {1, 1, 4, 1, 1},    {1, 8, 8, 1, 8},
                                                  {1, 16, 32, 1, 16}, {1, 32, 32, 0, 0}};
    static const char *names[6] = {"lane l on word l, twice",   "every lane on word 0",
                                   "lane l on word 4 l",        "lane l on word l / 8",
                                   "lane l on word 32 (l % 2)", "every lane on int 0"};
    for (int p = 0; p < 6; p++) {
        char path[64], cmd[512];
        snprintf(path, sizeof path, "/tmp/conflict_selftest.%d.%d.tsv", (int)getpid(), p);
        remove(path);
        snprintf(cmd, sizeof cmd, "FIRN_EMU_PROFILE=%s %s child %d", path, argv[0], p);
        if (system(cmd) != 0) {
            expect(false, "the child ran");
            continue;
        }
        FILE *f = fopen(path, "r");
        char line[512];
        unsigned long long c[11] = {0};
        bool found = false;
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, "pattern") &&
                sscanf(strchr(line, '\t'), "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
                       &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8], &c[9],
                       &c[10]) == 11)
                found = true;
        if (f)
            fclose(f);
        remove(path);
        char what[256];
        snprintf(what, sizeof what,
                 "%s: %llu warp instructions, %llu passes, %llu wavefronts, %llu loops of %llu "
                 "passes (want %llu, %llu, %llu, %llu, %llu)",
                 names[p], c[6], c[7], c[8], c[9], c[10], want[p][0], want[p][1], want[p][2],
                 want[p][3], want[p][4]);
        expect(found && c[6] == want[p][0] && c[7] == want[p][1] && c[8] == want[p][2] &&
                   c[9] == want[p][3] && c[10] == want[p][4],
               what);
    }
    printf("conflict_selftest: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
