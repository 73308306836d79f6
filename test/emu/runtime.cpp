/* runtime.cpp - the emulated CUDA runtime (make CUDA=emu): the kernels of kernels/ run
 * on the CPU, under ASan and UBSan, with CUDA's rules enforced where a GPU
 * would fail silently or later. docs/EMULATION.md says what this proves and
 * what it cannot.
 *
 * - Device memory is one mapping of its own, inaccessible (PROT_NONE) while
 *   host code runs and opened only while queued work executes: the host
 *   touching device memory faults, and the fault is named. Allocations are
 *   filled with 0xff (NaN floats) like the garbage a GPU hands out, separated
 *   by poisoned red zones, and poisoned when freed.
 * - Work is queued per stream and runs when the host synchronises with it,
 *   in stream order. Work of two streams that use one allocation with no
 *   synchronisation between them stops the process. An asynchronous copy to
 *   the host leaves its destination poisoned until it has run, so reading it
 *   before synchronising is reported.
 * - A kernel runs with its grid and block shape: blocks in parallel on a pool
 *   of OS threads, the threads of a block as fibers (own stacks, switched at
 *   __syncthreads and warp collectives), atomics as real atomics.
 * - A kernel argument that holds a host address, a copy whose kind does not
 *   match its pointers, a copy or memset past an allocation's end, a launch
 *   on an unknown stream: each stops the process naming the call. */
#include "cuda_runtime.h"

#include <link.h>
#include <sanitizer/common_interface_defs.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define EMU_POISON(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define EMU_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define EMU_POISON(p, n)   ((void)(p), (void)(n))
#define EMU_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#if !defined(__x86_64__)
#error "the emulated CUDA runtime switches fibers with x86-64 code (test/emu/runtime.cpp)"
#endif

__thread firn_emu_thread *firn_emu_current;

namespace firn_emu
{

/* ---- reporting ------------------------------------------------------------- */

static thread_local const char *t_api; /* the runtime call in progress, if any */

static void describe_context(FILE *f);

void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "firn-emu: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    describe_context(stderr);
    __sanitizer_print_stack_trace();
    fflush(stderr);
    abort();
}

/* ---- device memory --------------------------------------------------------- */

/* An H200: 143771 MiB (FIRN_EMU_MEMORY_MIB sets a smaller device). Only
 * address space is reserved; pages are committed as allocations touch them. */
static const size_t H200_BYTES = 143771ull << 20;
static const size_t RED_ZONE = 512; /* and CUDA's 256-byte alignment */

struct allocation {
    size_t bytes, span; /* asked for; with alignment and red zone */
    bool live;
    unsigned long serial; /* the n-th cudaMalloc, for messages */
};

static std::mutex g_mem_lock;
static char *g_base;
static size_t g_size, g_top, g_in_use;
static std::map<uintptr_t, allocation> g_allocs; /* by start address */
static unsigned long g_serial;
static int g_open_depth; /* >0 while queued work executes */

static bool in_region(const void *p)
{
    return g_base && (const char *)p >= g_base && (const char *)p < g_base + g_size;
}

/* The allocation holding p (live or freed), or NULL. Under g_mem_lock. */
static allocation *find_alloc(const void *p, uintptr_t *start)
{
    if (!in_region(p) || g_allocs.empty())
        return NULL;
    auto it = g_allocs.upper_bound((uintptr_t)p);
    if (it == g_allocs.begin())
        return NULL;
    --it;
    if ((uintptr_t)p >= it->first + it->second.span)
        return NULL;
    *start = it->first;
    return &it->second;
}

static void set_region_access(int prot)
{
    if (g_base && mprotect(g_base, g_top, prot) != 0)
        fatal("mprotect of the device region failed");
}

/* Device memory is readable only while queued work runs. */
static void open_region()
{
    if (g_open_depth++ == 0)
        set_region_access(PROT_READ | PROT_WRITE);
}
static void close_region()
{
    if (--g_open_depth == 0)
        set_region_access(PROT_NONE);
}

static struct sigaction g_prev_segv;

/* Host code touched device memory: say so, then let the previous handler
 * (ASan's) report the access with its stack. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
    if (in_region(si->si_addr)) {
        char msg[256];
        int n = snprintf(msg, sizeof msg,
                         "firn-emu: host code touched device memory at %p (from cudaMalloc): "
                         "the host reaches device data only through cudaMemcpy; the access:\n",
                         si->si_addr);
        if (write(2, msg, (size_t)n) < 0) {
        }
    }
    sigaction(SIGSEGV, &g_prev_segv, NULL);
    (void)sig, (void)uc; /* returning re-runs the access under the previous handler */
}

static std::once_flag g_init_once;
static unsigned g_workers;
static void start_workers();

static void init()
{
    size_t mib = 0;
    if (const char *e = getenv("FIRN_EMU_MEMORY_MIB"))
        mib = strtoull(e, NULL, 10);
    g_size = mib > 0 ? mib << 20 : H200_BYTES;
    void *p = mmap(NULL, g_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        fatal("cannot reserve %zu bytes of address space for the emulated device", g_size);
    g_base = (char *)p;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_prev_segv);
    start_workers();
}
static void ensure_init() { std::call_once(g_init_once, init); }

size_t device_bytes_from(const void *p)
{
    std::lock_guard<std::mutex> lk(g_mem_lock);
    uintptr_t start;
    allocation *a = find_alloc(p, &start);
    if (!a || !a->live || (uintptr_t)p >= start + a->bytes)
        return 0;
    return start + a->bytes - (uintptr_t)p;
}

/* ---- errors ---------------------------------------------------------------- */

static cudaError_t g_last = cudaSuccess;   /* cleared by cudaGetLastError */
static cudaError_t g_sticky = cudaSuccess; /* a device fault: every later call returns it */

static cudaError_t ret(cudaError_t e)
{
    if (g_sticky != cudaSuccess)
        e = g_sticky;
    if (e != cudaSuccess)
        g_last = e;
    return e;
}

/* ---- jobs and streams ------------------------------------------------------ */

struct job {
    const char *name = "", *file = "";
    int line = 0;
    std::vector<uintptr_t> allocs; /* device allocations it uses */
    virtual ~job() {}
    virtual void execute() = 0;
    virtual void describe(char *buf, size_t n) const
    {
        if (*file)
            snprintf(buf, n, "%s (queued at %s:%d)", name, file, line);
        else
            snprintf(buf, n, "%s", name);
    }
};

} // namespace firn_emu

struct firn_emu_graph;
struct firn_emu_stream {
    bool nonblocking = false;
    std::deque<firn_emu::job *> queue;
    /* While capturing: the graph its work goes to, instead of queue. */
    firn_emu_graph *capture = nullptr;
    cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
    bool capture_invalid = false;
};
/* A captured graph and its instantiations share the recorded jobs, which
 * run again at each launch. Destroyed ones are kept, marked, so that a
 * later use is named. */
typedef std::vector<std::unique_ptr<firn_emu::job>> firn_emu_jobs;
struct firn_emu_graph {
    std::shared_ptr<firn_emu_jobs> jobs;
    bool live = true;
};
struct firn_emu_graph_exec {
    std::shared_ptr<firn_emu_jobs> jobs;
    bool live = true;
};
struct firn_emu_event {
    bool live = true, recorded = false, done = false;
    cudaStream_t stream = NULL;
    double t = 0.0; /* ms, when it ran */
};

namespace firn_emu
{

static std::recursive_mutex g_api; /* one runtime call at a time */
static firn_emu_stream g_legacy;   /* stream 0 */
/* The live streams, which flushes and the ordering check walk, and the
 * destroyed ones, kept so that a later use is named; with the events and
 * graphs, never destroyed (reachable at exit). */
static std::vector<firn_emu_stream *> &g_streams = *new std::vector<firn_emu_stream *>{&g_legacy};
static std::vector<firn_emu_stream *> &g_dead_streams = *new std::vector<firn_emu_stream *>;
static std::vector<firn_emu_event *> &g_events = *new std::vector<firn_emu_event *>;
static std::vector<firn_emu_graph *> &g_graphs = *new std::vector<firn_emu_graph *>;
static std::vector<firn_emu_graph_exec *> &g_graph_execs = *new std::vector<firn_emu_graph_exec *>;

static firn_emu_stream *stream_of(cudaStream_t s, const char *call)
{
    if (!s)
        return &g_legacy;
    for (firn_emu_stream *t : g_streams)
        if (t == s)
            return t;
    for (firn_emu_stream *t : g_dead_streams)
        if (t == s)
            fatal("%s on a destroyed stream %p", call, (void *)s);
    fatal("%s on %p, which is not a stream of this process (cudaStreamCreate)", call, (void *)s);
}

static double now_ms()
{
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

static void describe_alloc(uintptr_t start, char *buf, size_t n)
{
    auto it = g_allocs.find(start);
    if (it == g_allocs.end())
        snprintf(buf, n, "device memory at %#lx", (unsigned long)start);
    else
        snprintf(buf, n, "the %zu-byte allocation at %#lx (cudaMalloc number %lu)",
                 it->second.bytes, (unsigned long)start, it->second.serial);
}

/* Work of another stream still queued runs, on a GPU, at a time of its
 * own: if it uses an allocation this job uses, their order is undefined. */
static void check_ordered(const job *j, const firn_emu_stream *s)
{
    for (const firn_emu_stream *t : g_streams) {
        if (t == s)
            continue;
        for (const job *o : t->queue)
            for (uintptr_t a : j->allocs)
                for (uintptr_t b : o->allocs)
                    if (a == b) {
                        char dj[256], doo[256], da[128];
                        j->describe(dj, sizeof dj);
                        o->describe(doo, sizeof doo);
                        describe_alloc(a, da, sizeof da);
                        fatal("%s on stream %p and %s on stream %p both use %s, and nothing "
                              "orders the two streams (queue dependent work on one stream, or "
                              "synchronise between them)",
                              dj, (void *)(s == &g_legacy ? NULL : s), doo,
                              (void *)(t == &g_legacy ? NULL : t), da);
                    }
    }
}

static void run_queue(firn_emu_stream *s)
{
    if (s->queue.empty())
        return;
    open_region();
    while (!s->queue.empty()) {
        job *j = s->queue.front();
        check_ordered(j, s);
        s->queue.pop_front();
        if (g_sticky == cudaSuccess)
            j->execute(); /* after a fault, queued work does not run */
        delete j;
    }
    close_region();
}

/* Runs s's queued work, and what orders with it: the legacy stream waits
 * for the blocking streams and they for it. */
static void flush(firn_emu_stream *s)
{
    if (s == &g_legacy) {
        for (firn_emu_stream *t : g_streams)
            if (t != &g_legacy && !t->nonblocking)
                run_queue(t);
    } else if (!s->nonblocking) {
        run_queue(&g_legacy);
    }
    run_queue(s);
}

static void flush_all()
{
    for (firn_emu_stream *t : g_streams)
        run_queue(t);
}

static void enqueue(job *j, firn_emu_stream *s)
{
    if (!s->capture) {
        s->queue.push_back(j);
    } else if (s->capture_invalid) {
        delete j;
    } else {
        s->capture->jobs->emplace_back(j);
    }
}

/* A call that cannot be captured: with s, one on s (its capture, or every
 * capture when s is the legacy stream, which synchronises with them);
 * without, a device-wide call, which only a relaxed capture allows. Each
 * capture it meets is invalidated; true when there was one. */
static bool capture_refuses(const firn_emu_stream *s)
{
    bool any = false;
    for (firn_emu_stream *t : g_streams) {
        if (!t->capture)
            continue;
        if (s ? (t == s || s == &g_legacy) : t->capture_mode != cudaStreamCaptureModeRelaxed) {
            t->capture_invalid = true;
            any = true;
        }
    }
    return any;
}

/* ---- pointers in arguments ------------------------------------------------- */

/* What a word of an argument points at: 0 nothing known, 1 a live device
 * allocation (start in *start), 2 freed device memory, 3 device memory
 * outside any allocation, 4 host memory (heap, stack or globals). */
static int classify(uintptr_t w, uintptr_t *start)
{
    if (in_region((void *)w)) {
        allocation *a = find_alloc((void *)w, start);
        if (!a)
            return 3;
        return a->live ? 1 : 2;
    }
#if defined(__SANITIZE_ADDRESS__)
    if (w >= 0x10000 && w < 0x800000000000ull) {
        char name[8];
        void *region = NULL;
        size_t size = 0;
        const char *kind = __asan_locate_address((void *)w, name, sizeof name, &region, &size);
        if (kind && (!strcmp(kind, "heap") || !strcmp(kind, "stack") || !strcmp(kind, "global")))
            return 4;
    }
#endif
    return 0;
}

struct scan_ctx {
    job *j;
    const char *what; /* "argument" or "operand" */
};

static void scan_bytes(void *vctx, int index, const void *p, size_t bytes)
{
    scan_ctx *ctx = (scan_ctx *)vctx;
    for (size_t off = 0; off + 8 <= bytes; off += 8) {
        uintptr_t w;
        memcpy(&w, (const char *)p + off, 8);
        uintptr_t start = 0;
        int c = classify(w, &start);
        if (c == 0)
            continue;
        char d[256];
        ctx->j->describe(d, sizeof d);
        if (c == 4)
            fatal("%s: %s %d holds the host address %#lx (at byte %zu of it); a kernel reaches "
                  "only device memory (cudaMalloc), so copy the data there and pass that",
                  d, ctx->what, index, (unsigned long)w, off);
        if (c == 2)
            fatal("%s: %s %d holds %#lx (at byte %zu of it), inside device memory already "
                  "freed (cudaFree)",
                  d, ctx->what, index, (unsigned long)w, off);
        if (c == 3)
            fatal("%s: %s %d holds %#lx (at byte %zu of it), device memory outside any "
                  "allocation",
                  d, ctx->what, index, (unsigned long)w, off);
        bool seen = false;
        for (uintptr_t a : ctx->j->allocs)
            seen |= a == start;
        if (!seen)
            ctx->j->allocs.push_back(start);
    }
}

/* ---- fibers ---------------------------------------------------------------- */

extern "C" void firn_emu_ctx_switch(void **save_sp, void *new_sp);
extern "C" void firn_emu_ctx_entry(void);
asm(R"(
    .pushsection .text
    .globl firn_emu_ctx_switch
    .type firn_emu_ctx_switch, @function
firn_emu_ctx_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size firn_emu_ctx_switch, .-firn_emu_ctx_switch
    .globl firn_emu_ctx_entry
    .type firn_emu_ctx_entry, @function
firn_emu_ctx_entry:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size firn_emu_ctx_entry, .-firn_emu_ctx_entry
    .popsection
)");

/* ASan's fiber annotations tell it which stack is current; they cost about
 * a third of a warp collective's time. Without them (FIRN_EMU_FAST_FIBERS)
 * reports about addresses on a fiber's stack are less specific. */
#if defined(FIRN_EMU_FAST_FIBERS) || !defined(__SANITIZE_ADDRESS__)
#define EMU_START_SWITCH(save, bottom, size)  ((void)(save), (void)(bottom), (void)(size))
#define EMU_FINISH_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#else
#define EMU_START_SWITCH  __sanitizer_start_switch_fiber
#define EMU_FINISH_SWITCH __sanitizer_finish_switch_fiber
#endif

static const size_t FIBER_STACK = 512 << 10; /* ASan's red zones make frames large */

enum thread_state { T_UNSTARTED, T_RUNNING, T_WAIT_BLOCK, T_WAIT_WARP, T_RELEASED, T_DONE };

struct fiber {
    void *sp = NULL;
    char *stack = NULL; /* lowest usable byte; a guard page below */
    void *fake_stack = NULL;
#if defined(__SANITIZE_THREAD__)
    void *tsan = NULL;
#endif
};

/* FIRN_EMU_PROFILE: how many shared atomics a thread has issued at one
 * call site, and one such atomic as its block records it. */
struct site_count {
    const char *file;
    int line;
    unsigned count;
};
struct shared_event {
    const char *file;
    int line;
    unsigned k; /* the thread's k-th atomic at this site */
    int warp, lane;
    uintptr_t addr;
    int cas_loop; /* a float add: a compare-and-swap loop on shared memory */
};

/* FIRN_EMU_PROFILE under EMU_COVERAGE: one lane's load or store of global
 * memory, and the one before it that a contiguous access may extend (as a
 * vector load does) while both lie in one aligned 16-byte chunk. */
struct global_access {
    uintptr_t pc; /* the instruction: the hook's return address */
    unsigned k;   /* the thread's k-th access at pc */
    int warp, lane;
    uintptr_t addr;
    unsigned bytes;
    int store;
};

struct cuda_thread {
    firn_emu_thread ctx;
    thread_state state;
    fiber *f;
    std::vector<site_count> sites; /* FIRN_EMU_PROFILE only */
    /* FIRN_EMU_PROFILE under EMU_COVERAGE: accesses per instruction, and
     * the access not yet recorded (bytes 0: none) */
    std::unordered_map<uintptr_t, unsigned> global_sites;
    global_access pending;
    /* at a warp collective */
    unsigned mask;
    firn_emu_warp_op op;
    const char *what;
    uint64_t value, result;
    int arg, width;
};

struct kernel_exec;

/* One OS thread's block runner. */
struct scheduler {
    void *sp = NULL; /* the OS thread's own context while a fiber runs */
    void *fake_stack = NULL;
    const void *stack_bottom = NULL;
    size_t stack_size = 0;
#if defined(__SANITIZE_THREAD__)
    void *tsan = NULL;
#endif
    std::vector<fiber *> idle;
    std::vector<cuda_thread> threads;
    int next_unstarted = 0, n = 0;
    int done = 0, at_block = 0;       /* threads exited, waiting at __syncthreads */
    std::vector<int> warp_arrived;    /* lanes waiting at a warp collective, per warp */
    std::vector<int> warps_ready;     /* warps whose collective every lane of the mask reached */
    std::vector<int> run_queue;       /* released threads, to resume */
    std::vector<shared_event> events; /* this block's shared atomics (FIRN_EMU_PROFILE) */
    std::vector<global_access> global_events; /* its global loads and stores (EMU_COVERAGE) */
    const void *skip_load = NULL;             /* a global atomic's own read, not a load */
    kernel_exec *exec = NULL;
    fiber *returned = NULL; /* the fiber that just switched back */
    bool returned_idle = false;
};
static thread_local scheduler *t_sched;

/* FIRN_EMU_PROFILE=path: per kernel name, its runs, blocks, threads and
 * the atomics its threads issued (shared, global scalar, global vector),
 * appended to path as tab-separated lines when the process exits (make
 * gpu-rehearsal reads them: which kernels a run launched, and the atomics a
 * P2G variant issues per particle). An atomic is counted once however often
 * the emulator's compare-and-swap retried it: these count instructions
 * issued, not a GPU's replays.
 *
 * The shared-memory atomics are also modelled as a warp issues them
 * (shared_conflicts below): the lanes of one warp that issue their k-th
 * atomic at one call site (kernel file and line) form one warp
 * instruction. A float atomic on shared memory is a compare-and-swap loop
 * on sm_80 and sm_90, and of the lanes on one address one succeeds per
 * pass, so the instruction takes as many passes (rounds) as the most lanes
 * on one address; each pass's access of the lanes still pending costs as
 * many wavefronts as the most distinct addresses in one of the 32 four-byte
 * banks (a bank conflict; lanes on one address are a broadcast). Columns:
 * warp_shared (warp instructions), shared_rounds (passes, summed),
 * shared_wavefronts (summed over passes). An uncontended instruction is
 * one round and one wavefront. The last two columns count the float adds
 * among them (cas_warp: warp instructions; cas_rounds: their passes),
 * each pass of which is a loop iteration of several instructions; an
 * integer atomic is one native instruction, whose lanes on one address the
 * hardware serialises as passes too (shared_rounds).
 *
 * Global loads and stores, counted only in a build whose kernels call the
 * sanitizer-coverage hooks on every load and store (make emu-sectors:
 * clang, -fsanitize-coverage=trace-loads,trace-stores; elsewhere these
 * columns are 0), are modelled the same way: the lanes of one warp that
 * issue their k-th access at one instruction form one warp access, which
 * touches as many 32-byte sectors as the distinct aligned 32-byte blocks
 * its lanes' bytes lie in. A lane's access that continues its previous one
 * (same kind, the next bytes, both in one aligned 16-byte chunk) extends it,
 * as a vector load or store (ld.v2, ld.v4) does: the compiler may split a
 * float4 copy into two 8-byte loads. Only addresses in device memory count
 * (not shared memory, the stack or kernel parameters), and not an atomic's
 * own read. Columns: load_warp, load_sectors, load_bytes, store_warp,
 * store_sectors, store_bytes. */
struct kernel_counts {
    std::atomic<unsigned long long> runs{0}, blocks{0}, threads{0}, shared_atomics{0},
        global_atomics{0}, vector_atomics{0}, warp_shared{0}, shared_rounds{0},
        shared_wavefronts{0}, cas_warp{0}, cas_rounds{0}, load_warp{0}, load_sectors{0},
        load_bytes{0}, store_warp{0}, store_sectors{0}, store_bytes{0};
};
static std::mutex &g_profile_lock = *new std::mutex;
static std::map<std::string, kernel_counts *> &g_profile =
    *new std::map<std::string, kernel_counts *>;

static void write_profile()
{
    const char *path = getenv("FIRN_EMU_PROFILE");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    std::lock_guard<std::mutex> lk(g_profile_lock);
    for (const auto &kv : g_profile) {
        const kernel_counts *c = kv.second;
        /* A vector atomic's four components each passed the scalar count. */
        fprintf(
            f,
            "%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%"
            "llu\t%llu\t%llu\t%llu\n",
            kv.first.c_str(), c->runs.load(), c->blocks.load(), c->threads.load(),
            c->shared_atomics.load(), c->global_atomics.load() - 4 * c->vector_atomics.load(),
            c->vector_atomics.load(), c->warp_shared.load(), c->shared_rounds.load(),
            c->shared_wavefronts.load(), c->cas_warp.load(), c->cas_rounds.load(),
            c->load_warp.load(), c->load_sectors.load(), c->load_bytes.load(), c->store_warp.load(),
            c->store_sectors.load(), c->store_bytes.load());
    }
    fclose(f);
}

/* The counts of kernel `name`, or NULL when FIRN_EMU_PROFILE is not set. */
static kernel_counts *profile_counts(const char *name)
{
    static const bool on = [] {
        const bool set = getenv("FIRN_EMU_PROFILE") != NULL;
        if (set)
            atexit(write_profile);
        return set;
    }();
    if (!on)
        return NULL;
    std::lock_guard<std::mutex> lk(g_profile_lock);
    kernel_counts *&c = g_profile[name];
    if (!c)
        c = new kernel_counts;
    return c;
}

struct kernel_exec {
    kernel_job *k;
    dim3 grid, block;
    kernel_counts *counts; /* FIRN_EMU_PROFILE's, or NULL */
};

static void fiber_main(fiber *f);

static fiber *new_fiber()
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *m = (char *)mmap(NULL, FIBER_STACK + page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        fatal("out of memory for a fiber stack");
    mprotect(m, page, PROT_NONE); /* overflow faults */
    fiber *f = new fiber;
    f->stack = m + page;
    uint64_t *sp = (uint64_t *)(f->stack + FIBER_STACK - 72);
    sp[0] = 0;                            /* r15 */
    sp[1] = 0;                            /* r14 */
    sp[2] = (uint64_t)(void *)fiber_main; /* r13: called by the entry */
    sp[3] = (uint64_t)f;                  /* r12: its argument */
    sp[4] = 0;                            /* rbx */
    sp[5] = 0;                            /* rbp */
    sp[6] = (uint64_t)(void *)firn_emu_ctx_entry;
    f->sp = sp;
#if defined(__SANITIZE_THREAD__)
    f->tsan = __tsan_create_fiber(0);
#endif
    return f;
}

/* Scheduler -> fiber, returning when the fiber switches back. */
static void enter(scheduler *s, fiber *f)
{
#if defined(__SANITIZE_THREAD__)
    __tsan_switch_to_fiber(f->tsan, 0);
#endif
    EMU_START_SWITCH(&s->fake_stack, f->stack, FIBER_STACK);
    firn_emu_ctx_switch(&s->sp, f->sp);
    EMU_FINISH_SWITCH(s->fake_stack, NULL, NULL);
}

/* Fiber -> scheduler; returns when the scheduler enters it again. */
static void leave(scheduler *s, fiber *f, bool idle)
{
    s->returned = f;
    s->returned_idle = idle;
#if defined(__SANITIZE_THREAD__)
    __tsan_switch_to_fiber(s->tsan, 0);
#endif
    EMU_START_SWITCH(&f->fake_stack, s->stack_bottom, s->stack_size);
    firn_emu_ctx_switch(&f->sp, s->sp);
    EMU_FINISH_SWITCH(f->fake_stack, NULL, NULL);
}

/* A fiber runs the block's unstarted threads one after another; one that
 * waits keeps the fiber, and the scheduler starts the next in another. */
static void fiber_main(fiber *f)
{
    scheduler *s = t_sched;
    EMU_FINISH_SWITCH(NULL, &s->stack_bottom, &s->stack_size);
    for (;;) {
        while (s->next_unstarted < s->n) {
            cuda_thread *t = &s->threads[(size_t)s->next_unstarted++];
            t->state = T_RUNNING;
            t->f = f;
            firn_emu_current = &t->ctx;
            s->exec->k->run_thread();
            t->state = T_DONE;
            s->done++;
        }
        leave(s, f, true);
    }
}

static cuda_thread *current_thread()
{
    scheduler *s = t_sched;
    if (!s || !firn_emu_current)
        fatal("a barrier or warp collective called outside a kernel");
    return (cuda_thread *)((char *)firn_emu_current - offsetof(cuda_thread, ctx));
}

static void wait_here(cuda_thread *t)
{
    scheduler *s = t_sched;
    fiber *f = t->f;
    leave(s, f, false);
    firn_emu_current = &t->ctx;
}

} // namespace firn_emu

using namespace firn_emu;

void __syncthreads(void)
{
    cuda_thread *t = current_thread();
    t->state = T_WAIT_BLOCK;
    t_sched->at_block++;
    wait_here(t);
}

uint64_t firn_emu_warp_collective(unsigned mask, firn_emu_warp_op op, uint64_t lane_value, int arg,
                                  int width, const char *what)
{
    cuda_thread *t = current_thread();
    t->state = T_WAIT_WARP;
    t->mask = mask;
    t->op = op;
    t->what = what;
    t->value = lane_value;
    t->arg = arg;
    t->width = width;
    /* The warp is ready when the lanes of the mask have all arrived. */
    scheduler *s = t_sched;
    const int tid = (int)(t - s->threads.data()), w = tid / 32;
    if (++s->warp_arrived[(size_t)w] == __builtin_popcount(mask))
        s->warps_ready.push_back(w);
    wait_here(t);
    return t->result;
}

namespace firn_emu
{

/* Completes the collective of warp w if every lane of its mask waits at it.
 * Returns 1 when released. */
static int resolve_warp(scheduler *s, int w)
{
    const int base = 32 * w;
    const int lanes = s->n - base < 32 ? s->n - base : 32;
    cuda_thread *first = NULL;
    for (int l = 0; l < lanes && !first; l++)
        if (s->threads[(size_t)(base + l)].state == T_WAIT_WARP)
            first = &s->threads[(size_t)(base + l)];
    if (!first)
        return 0;
    const unsigned mask = first->mask;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1u))
            continue;
        if (l >= lanes)
            fatal("%s with mask %#x names lane %d, which this warp of %d threads does not have",
                  first->what, mask, l, lanes);
        cuda_thread *t = &s->threads[(size_t)(base + l)];
        if (t->state == T_DONE)
            fatal("%s with mask %#x waits for lane %d of warp %d, which has exited: every lane "
                  "of the mask must reach the same collective (thread %d of the block)",
                  first->what, mask, l, w, base + l);
        if (t->state == T_WAIT_BLOCK)
            fatal("deadlock: lanes of warp %d wait at %s (mask %#x) while lane %d waits at "
                  "__syncthreads",
                  w, first->what, mask, l);
        if (t->state != T_WAIT_WARP)
            return 0;
        if (t->op != first->op || t->mask != mask || t->arg != first->arg)
            fatal("lanes of warp %d meet at different collectives: lane %d at %s (mask %#x, "
                  "%d), lane %d at %s (mask %#x, %d)",
                  w, (int)(first - &s->threads[(size_t)base]), first->what, mask, first->arg, l,
                  t->what, t->mask, t->arg);
    }
    uint64_t ballot = 0;
    for (int l = 0; l < 32; l++)
        if (mask >> l & 1u)
            ballot |= (uint64_t)(s->threads[(size_t)(base + l)].value & 1u) << l;
    for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1u))
            continue;
        cuda_thread *t = &s->threads[(size_t)(base + l)];
        const int wd = t->width > 0 && t->width <= 32 ? t->width : 32;
        const int seg = l / wd * wd;
        int src = l;
        switch (t->op) {
        case FIRN_EMU_SHFL:
            src = seg + (t->arg & (wd - 1));
            break;
        case FIRN_EMU_SHFL_DOWN:
            src = (l - seg) + t->arg < wd ? l + t->arg : l;
            break;
        case FIRN_EMU_SHFL_UP:
            src = l - seg >= t->arg ? l - t->arg : l;
            break;
        case FIRN_EMU_SHFL_XOR:
            src = l ^ t->arg;
            src = src / wd > l / wd ? l : src;
            break;
        case FIRN_EMU_VOTE:
        case FIRN_EMU_SYNC:
            break;
        }
        if (t->op == FIRN_EMU_VOTE || t->op == FIRN_EMU_SYNC) {
            t->result = ballot;
        } else {
            if (src < 0 || src >= 32 || !(mask >> src & 1u))
                fatal("%s: lane %d of warp %d reads lane %d, which is not in the mask %#x", t->what,
                      l, w, src, mask);
            t->result = s->threads[(size_t)(base + src)].value;
        }
    }
    for (int l = 0; l < 32; l++)
        if (mask >> l & 1u) {
            s->threads[(size_t)(base + l)].state = T_RELEASED;
            s->run_queue.push_back(base + l);
        }
    s->warp_arrived[(size_t)w] = 0;
    return 1;
}

/* A block's shared atomics as warp instructions (kernel_counts): rounds
 * and wavefronts of each. */
static void count_shared_conflicts(std::vector<shared_event> &ev, kernel_counts *c)
{
    std::sort(ev.begin(), ev.end(), [](const shared_event &a, const shared_event &b) {
        if (a.warp != b.warp)
            return a.warp < b.warp;
        if (a.file != b.file)
            return std::less<const char *>()(a.file, b.file);
        if (a.line != b.line)
            return a.line < b.line;
        if (a.k != b.k)
            return a.k < b.k;
        return a.addr < b.addr;
    });
    unsigned long long warps = 0, rounds = 0, wavefronts = 0, cas_warps = 0, cas_rounds = 0;
    for (size_t i = 0; i < ev.size();) {
        size_t j = i;
        while (j < ev.size() && ev[j].warp == ev[i].warp && ev[j].file == ev[i].file &&
               ev[j].line == ev[i].line && ev[j].k == ev[i].k)
            j++;
        /* lanes i..j-1, sorted by address: each distinct address and its lanes */
        uintptr_t addr[32];
        int lanes[32], d = 0, most = 0;
        for (size_t k = i; k < j; k++) {
            if (d == 0 || ev[k].addr != addr[d - 1]) {
                if (d == 32)
                    fatal("more than 32 lanes in one warp instruction at %s:%d", ev[i].file,
                          ev[i].line);
                addr[d] = ev[k].addr, lanes[d++] = 0;
            }
            most = std::max(most, ++lanes[d - 1]);
        }
        for (int r = 0; r < most; r++) {
            int per_bank[32] = {0}, ways = 0;
            for (int a = 0; a < d; a++)
                if (lanes[a] > r)
                    ways = std::max(ways, ++per_bank[(addr[a] >> 2) & 31]);
            wavefronts += (unsigned long long)ways;
        }
        warps++, rounds += (unsigned long long)most;
        if (ev[i].cas_loop)
            cas_warps++, cas_rounds += (unsigned long long)most;
        i = j;
    }
    c->warp_shared.fetch_add(warps, std::memory_order_relaxed);
    c->shared_rounds.fetch_add(rounds, std::memory_order_relaxed);
    c->shared_wavefronts.fetch_add(wavefronts, std::memory_order_relaxed);
    c->cas_warp.fetch_add(cas_warps, std::memory_order_relaxed);
    c->cas_rounds.fetch_add(cas_rounds, std::memory_order_relaxed);
}

/* A block's global loads and stores as warp accesses (kernel_counts): the
 * distinct 32-byte sectors of each. */
static void count_global_sectors(scheduler *s, kernel_counts *c)
{
    std::vector<global_access> &ev = s->global_events;
    for (cuda_thread &t : s->threads)
        if (t.pending.bytes) {
            t.pending.k = t.global_sites[t.pending.pc]++;
            ev.push_back(t.pending);
            t.pending.bytes = 0;
        }
    std::sort(ev.begin(), ev.end(), [](const global_access &a, const global_access &b) {
        if (a.store != b.store)
            return a.store < b.store;
        if (a.warp != b.warp)
            return a.warp < b.warp;
        if (a.pc != b.pc)
            return a.pc < b.pc;
        return a.k < b.k;
    });
    unsigned long long warps[2] = {0, 0}, sectors[2] = {0, 0}, bytes[2] = {0, 0};
    std::vector<uintptr_t> sec;
    for (size_t i = 0; i < ev.size();) {
        size_t j = i;
        sec.clear();
        while (j < ev.size() && ev[j].store == ev[i].store && ev[j].warp == ev[i].warp &&
               ev[j].pc == ev[i].pc && ev[j].k == ev[i].k) {
            for (uintptr_t a = ev[j].addr >> 5; a <= (ev[j].addr + ev[j].bytes - 1) >> 5; a++)
                sec.push_back(a);
            bytes[ev[i].store] += ev[j].bytes;
            j++;
        }
        std::sort(sec.begin(), sec.end());
        warps[ev[i].store]++;
        sectors[ev[i].store] +=
            (unsigned long long)(std::unique(sec.begin(), sec.end()) - sec.begin());
        i = j;
    }
    c->load_warp.fetch_add(warps[0], std::memory_order_relaxed);
    c->load_sectors.fetch_add(sectors[0], std::memory_order_relaxed);
    c->load_bytes.fetch_add(bytes[0], std::memory_order_relaxed);
    c->store_warp.fetch_add(warps[1], std::memory_order_relaxed);
    c->store_sectors.fetch_add(sectors[1], std::memory_order_relaxed);
    c->store_bytes.fetch_add(bytes[1], std::memory_order_relaxed);
    ev.clear();
}

static void run_block(scheduler *s, kernel_exec *e, unsigned b)
{
    const dim3 g = e->grid, bd = e->block;
    s->exec = e;
    s->n = (int)(bd.x * bd.y * bd.z);
    s->next_unstarted = 0;
    s->done = s->at_block = 0;
    s->threads.resize((size_t)s->n);
    s->warp_arrived.assign((size_t)(s->n + 31) / 32, 0);
    s->warps_ready.clear();
    s->run_queue.clear();
    const uint3 bi = {b % g.x, b / g.x % g.y, b / (g.x * g.y)};
    for (int i = 0; i < s->n; i++) {
        cuda_thread &t = s->threads[(size_t)i];
        t.ctx.thread_idx =
            uint3{(unsigned)i % bd.x, (unsigned)i / bd.x % bd.y, (unsigned)i / (bd.x * bd.y)};
        t.ctx.block_idx = bi;
        t.ctx.block_dim = bd;
        t.ctx.grid_dim = g;
        t.state = T_UNSTARTED;
        t.f = NULL;
        t.sites.clear();
        t.global_sites.clear();
        t.pending.bytes = 0;
    }
    s->events.clear();
    s->global_events.clear();
    s->skip_load = NULL;
    for (;;) {
        /* Start the unstarted threads, in order; a fiber runs them one
         * after another until one waits. */
        while (s->next_unstarted < s->n) {
            fiber *f;
            if (s->idle.empty()) {
                f = new_fiber();
            } else {
                f = s->idle.back();
                s->idle.pop_back();
            }
            enter(s, f);
            if (s->returned_idle)
                s->idle.push_back(s->returned);
        }
        /* Complete the collectives every lane reached; resume their lanes. */
        for (size_t k = 0; k < s->warps_ready.size(); k++)
            resolve_warp(s, s->warps_ready[k]);
        s->warps_ready.clear();
        if (!s->run_queue.empty()) {
            std::vector<int> resume;
            resume.swap(s->run_queue);
            for (int i : resume) {
                cuda_thread &t = s->threads[(size_t)i];
                t.state = T_RUNNING;
                firn_emu_current = &t.ctx;
                enter(s, t.f);
                if (s->returned_idle)
                    s->idle.push_back(s->returned);
            }
            continue;
        }
        if (s->done == s->n)
            break;
        if (s->at_block + s->done == s->n) { /* exited threads count as arrived, as on sm_70+ */
            for (int i = 0; i < s->n; i++)
                if (s->threads[(size_t)i].state == T_WAIT_BLOCK) {
                    s->threads[(size_t)i].state = T_RELEASED;
                    s->run_queue.push_back(i);
                }
            s->at_block = 0;
            continue;
        }
        /* Stuck: name why (resolve_warp stops at a lane that exited or waits
         * at __syncthreads). */
        for (int w = 0; w * 32 < s->n; w++)
            if (s->warp_arrived[(size_t)w] > 0)
                resolve_warp(s, w);
        fatal("deadlock in block (%u, %u, %u): %d threads wait at __syncthreads, %d at warp "
              "collectives whose lanes never all arrive",
              bi.x, bi.y, bi.z, s->at_block, s->n - s->done - s->at_block);
    }
    if (e->counts && !s->events.empty())
        count_shared_conflicts(s->events, e->counts);
    if (e->counts)
        count_global_sectors(s, e->counts);
    firn_emu_current = NULL;
    s->exec = NULL;
}

/* ---- the block pool -------------------------------------------------------- */

/* Never destroyed: the detached workers wait on them until the process ends
 * (a destructor run at exit would wait for them for ever). */
static std::mutex &g_pool_lock = *new std::mutex;
static std::condition_variable &g_pool_cv = *new std::condition_variable;
static std::condition_variable &g_pool_done = *new std::condition_variable;
static kernel_exec *g_pool_exec;
static std::atomic<unsigned> g_next_block;
static unsigned g_blocks, g_pool_generation, g_pool_busy;

static scheduler *this_scheduler()
{
    if (!t_sched) {
        t_sched = new scheduler;
#if defined(__SANITIZE_THREAD__)
        t_sched->tsan = __tsan_get_current_fiber();
#endif
    }
    return t_sched;
}

static void run_blocks(kernel_exec *e)
{
    scheduler *s = this_scheduler();
    for (;;) {
        unsigned b = g_next_block.fetch_add(1);
        if (b >= g_blocks)
            break;
        run_block(s, e, b);
    }
}

static void worker()
{
    unsigned seen = 0;
    for (;;) {
        kernel_exec *e;
        {
            std::unique_lock<std::mutex> lk(g_pool_lock);
            g_pool_cv.wait(lk, [&] { return g_pool_generation != seen; });
            seen = g_pool_generation;
            e = g_pool_exec;
        }
        run_blocks(e);
        std::lock_guard<std::mutex> lk(g_pool_lock);
        if (--g_pool_busy == 0)
            g_pool_done.notify_all();
    }
}

static void start_workers()
{
    unsigned n = std::thread::hardware_concurrency();
    if (const char *v = getenv("FIRN_EMU_THREADS"))
        n = (unsigned)atoi(v);
    n = n < 1 ? 1 : (n > 64 ? 64 : n);
    g_workers = n - 1; /* the calling thread is one */
    for (unsigned k = 0; k < g_workers; k++)
        std::thread(worker).detach();
}

} // namespace firn_emu

/* ---- kernels --------------------------------------------------------------- */

namespace firn_emu
{

/* FIRN_EMU_FAULT=name:n makes the n-th run (from 1) of kernel `name` fault
 * as a GPU does on an illegal address: a sticky cudaErrorIllegalAddress,
 * returned by every later call. Tests use it for firn's error paths. */
static bool injected_fault(const char *name)
{
    static std::atomic<long> runs{0};
    const char *e = getenv("FIRN_EMU_FAULT");
    if (!e)
        return false;
    const char *colon = strchr(e, ':');
    const size_t len = colon ? (size_t)(colon - e) : strlen(e);
    if (strlen(name) != len || strncmp(name, e, len) != 0)
        return false;
    const long n = colon ? atol(colon + 1) : 1;
    return ++runs == n;
}

/* Runs of work by name (firn_emu_runs). */
static std::mutex &g_runs_lock = *new std::mutex;
static std::map<std::string, unsigned long long> &g_runs =
    *new std::map<std::string, unsigned long long>;

static void count_run(const char *name)
{
    std::lock_guard<std::mutex> lk(g_runs_lock);
    g_runs[name]++;
}

struct kernel_run : job {
    kernel_exec e;
    ~kernel_run() override { delete e.k; }
    void execute() override
    {
        const unsigned blocks = e.grid.x * e.grid.y * e.grid.z;
        if (injected_fault(name)) {
            g_sticky = cudaErrorIllegalAddress; /* the rest of the queue is dropped */
            return;
        }
        count_run(name);
        if ((e.counts = profile_counts(name))) {
            e.counts->runs++;
            e.counts->blocks += blocks;
            e.counts->threads += (unsigned long long)blocks * e.block.x * e.block.y * e.block.z;
        }
        {
            std::lock_guard<std::mutex> lk(g_pool_lock);
            g_pool_exec = &e;
            g_blocks = blocks;
            g_next_block = 0;
            g_pool_busy = g_workers;
            g_pool_generation++;
        }
        g_pool_cv.notify_all();
        run_blocks(&e);
        std::unique_lock<std::mutex> lk(g_pool_lock);
        g_pool_done.wait(lk, [] { return g_pool_busy == 0; });
    }
};

static void describe_context(FILE *f)
{
    scheduler *s = t_sched;
    if (s && s->exec && firn_emu_current) {
        const kernel_job *k = s->exec->k;
        const firn_emu_thread *c = firn_emu_current;
        fprintf(f,
                "firn-emu: in kernel %s (launched at %s:%d), block (%u, %u, %u) of (%u, %u, %u), "
                "thread (%u, %u, %u) of (%u, %u, %u)\n",
                k->name, k->file, k->line, c->block_idx.x, c->block_idx.y, c->block_idx.z,
                c->grid_dim.x, c->grid_dim.y, c->grid_dim.z, c->thread_idx.x, c->thread_idx.y,
                c->thread_idx.z, c->block_dim.x, c->block_dim.y, c->block_dim.z);
    } else if (t_api) {
        fprintf(f, "firn-emu: in %s\n", t_api);
    }
}

static void death_callback() { describe_context(stderr); }

void enqueue_kernel(kernel_job *k, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t st)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    static std::once_flag cb;
    std::call_once(cb, [] { __sanitizer_set_death_callback(death_callback); });
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
        grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
        grid.z > 65535 || shared_bytes > 48 * 1024) {
        delete k;
        firn_emu_stream *s = stream_of(st, "kernel launch");
        if (s->capture)
            s->capture_invalid = true;      /* a failed launch invalidates a capture */
        ret(cudaErrorInvalidConfiguration); /* reported by cudaGetLastError, as CUDA does */
        return;
    }
    kernel_run *j = new kernel_run;
    j->name = k->name;
    j->file = k->file;
    j->line = k->line;
    j->e.k = k;
    j->e.grid = grid;
    j->e.block = block;
    j->e.counts = NULL;
    {
        std::lock_guard<std::mutex> ml(g_mem_lock);
        scan_ctx ctx = {j, "argument"};
        k->each_param(scan_bytes, &ctx);
    }
    enqueue(j, stream_of(st, "kernel launch"));
}

} // namespace firn_emu

/* The executable's static TLS block (its PT_TLS segment's size, rounded to
 * its alignment), which on x86-64 ends at the thread pointer. __shared__ is
 * `static thread_local`, and the kernels are linked into the executable, so
 * a block's shared arrays lie in the running OS thread's copy of it. */
static int tls_segment(struct dl_phdr_info *info, size_t, void *data)
{
    for (int k = 0; k < info->dlpi_phnum; k++)
        if (info->dlpi_phdr[k].p_type == PT_TLS) {
            const size_t a = info->dlpi_phdr[k].p_align ? info->dlpi_phdr[k].p_align : 1;
            *(size_t *)data = (info->dlpi_phdr[k].p_memsz + a - 1) / a * a;
        }
    return 1; /* the first object is the executable */
}

static bool in_shared(const void *p, size_t bytes)
{
    static size_t tls_bytes = [] {
        size_t b = 0;
        dl_iterate_phdr(tls_segment, &b);
        return b;
    }();
    const char *tp = (const char *)__builtin_thread_pointer(), *c = (const char *)p;
    return c >= tp - tls_bytes && c + bytes <= tp;
}

/* The counts of the kernel this thread runs, under FIRN_EMU_PROFILE. */
static kernel_counts *running_counts()
{
    return t_sched && t_sched->exec ? t_sched->exec->counts : NULL;
}

void firn_emu_check_device_pointer(const void *p, size_t bytes, const char *what, const char *file,
                                   int line, int cas_loop)
{
    kernel_counts *c = running_counts();
    if (in_shared(p, bytes)) {
        if (c) {
            c->shared_atomics.fetch_add(1, std::memory_order_relaxed);
            cuda_thread *t = current_thread();
            unsigned k = 0;
            bool found = false;
            for (site_count &sc : t->sites)
                if (sc.file == file && sc.line == line) {
                    k = sc.count++;
                    found = true;
                    break;
                }
            if (!found)
                t->sites.push_back(site_count{file, line, 1u});
            const firn_emu_thread &x = t->ctx;
            const int flat =
                (int)(x.thread_idx.x +
                      x.block_dim.x * (x.thread_idx.y + x.block_dim.y * x.thread_idx.z));
            t_sched->events.push_back(
                shared_event{file, line, k, flat / 32, flat % 32, (uintptr_t)p, cas_loop});
        }
        return; /* an atomic on the block's shared memory */
    }
    if (c) {
        c->global_atomics.fetch_add(1, std::memory_order_relaxed);
        t_sched->skip_load = p; /* the atomic's read of the old value, next */
    }
    if (!in_region(p) || !in_region((const char *)p + bytes - 1))
        fatal("%s on %p, which is neither device memory nor the block's shared memory", what, p);
}

/* The sanitizer-coverage hooks (EMU_COVERAGE: the kernels' loads and
 * stores), which record a kernel thread's accesses of device memory under
 * FIRN_EMU_PROFILE. Anything else (host code, no profile) returns at the
 * first test. */
static void global_access_hook(const void *p, unsigned bytes, int store, uintptr_t pc)
{
    scheduler *s = t_sched;
    if (!s || !s->exec || !s->exec->counts || !firn_emu_current || !in_region(p))
        return;
    if (s->skip_load) { /* only the access right after the atomic's check */
        const bool atomic_read = !store && p == s->skip_load;
        s->skip_load = NULL;
        if (atomic_read)
            return;
    }
    cuda_thread *t = current_thread();
    global_access &a = t->pending;
    const uintptr_t x = (uintptr_t)p;
    if (a.bytes && a.store == store && x == a.addr + a.bytes &&
        a.addr >> 4 == (x + bytes - 1) >> 4) {
        a.bytes += bytes;
        return;
    }
    if (a.bytes) {
        a.k = t->global_sites[a.pc]++;
        s->global_events.push_back(a);
    }
    const firn_emu_thread &c = t->ctx;
    const int flat =
        (int)(c.thread_idx.x + c.block_dim.x * (c.thread_idx.y + c.block_dim.y * c.thread_idx.z));
    a = global_access{pc, 0, flat / 32, flat % 32, x, bytes, store};
}

#define EMU_COVERAGE_HOOKS(n)                                                                      \
    extern "C" void __sanitizer_cov_load##n(void *p)                                               \
    {                                                                                              \
        global_access_hook(p, n, 0, (uintptr_t)__builtin_return_address(0));                       \
    }                                                                                              \
    extern "C" void __sanitizer_cov_store##n(void *p)                                              \
    {                                                                                              \
        global_access_hook(p, n, 1, (uintptr_t)__builtin_return_address(0));                       \
    }
EMU_COVERAGE_HOOKS(1)
EMU_COVERAGE_HOOKS(2)
EMU_COVERAGE_HOOKS(4)
EMU_COVERAGE_HOOKS(8)
EMU_COVERAGE_HOOKS(16)

void firn_emu_check_global_vector(const void *p, size_t bytes, const char *what)
{
    if (kernel_counts *c = running_counts())
        c->vector_atomics.fetch_add(1, std::memory_order_relaxed);
    if (in_shared(p, bytes))
        fatal("%s on %p, in the block's shared memory: vector atomics take global memory only",
              what, p);
    if ((uintptr_t)p % bytes)
        fatal("%s on %p, which is not aligned to %zu bytes", what, p, bytes);
    if (!in_region(p) || !in_region((const char *)p + bytes - 1))
        fatal("%s on %p, which is not device memory", what, p);
}

void firn_emu_check_ldg(const void *p, size_t bytes, size_t align)
{
    if ((uintptr_t)p % align)
        fatal("__ldg of %zu bytes at %p, which is not aligned to %zu bytes", bytes, p, align);
    if (!in_region(p) || !in_region((const char *)p + bytes - 1))
        fatal("__ldg of %zu bytes at %p, which is not device memory", bytes, p);
}

/* ---- CUB stand-ins' jobs --------------------------------------------------- */

namespace firn_emu
{

struct host_run : job {
    host_job *h;
    ~host_run() override { delete h; }
    void execute() override
    {
        count_run(name);
        h->run();
    }
};

void enqueue_host_job(host_job *h, cudaStream_t st, const void *const *objects, int n)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    host_run *j = new host_run;
    j->name = h->name;
    j->h = h;
    {
        std::lock_guard<std::mutex> ml(g_mem_lock);
        scan_ctx ctx = {j, "operand"};
        for (int k = 0; k < n; k += 2)
            scan_bytes(&ctx, k / 2, objects[k], (size_t)(uintptr_t)objects[k + 1]);
    }
    enqueue(j, stream_of(st, h->name));
}

} // namespace firn_emu

/* ---- memory calls ---------------------------------------------------------- */

cudaError_t cudaMalloc(void **ptr, size_t bytes)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    if (!ptr)
        return ret(cudaErrorInvalidValue);
    *ptr = NULL;
    if (g_sticky)
        return ret(g_sticky);
    if (capture_refuses(NULL))
        return ret(cudaErrorStreamCaptureUnsupported);
    if (bytes == 0)
        return ret(cudaSuccess);
    size_t span = (bytes + RED_ZONE + 255) / 256 * 256 + RED_ZONE;
    std::lock_guard<std::mutex> ml(g_mem_lock);
    if (g_in_use + bytes > g_size)
        return ret(cudaErrorMemoryAllocation);
    /* First fit among freed spans, else at the top. */
    uintptr_t at = 0;
    for (auto it = g_allocs.begin(); it != g_allocs.end(); ++it)
        if (!it->second.live && it->second.span >= span) {
            at = it->first;
            allocation rest = it->second;
            g_allocs.erase(it);
            if (rest.span - span >= 4096)
                g_allocs[at + span] = allocation{0, rest.span - span, false, 0};
            else
                span = rest.span;
            break;
        }
    if (!at) {
        if (g_top + span > g_size)
            return ret(cudaErrorMemoryAllocation);
        at = (uintptr_t)g_base + g_top;
        g_top += span;
    }
    g_allocs[at] = allocation{bytes, span, true, ++g_serial};
    g_in_use += bytes;
    open_region();
    EMU_UNPOISON((void *)at, bytes);
    memset((void *)at, 0xff, bytes); /* what a GPU hands out is garbage: NaN here */
    EMU_POISON((char *)at + bytes, span - bytes);
    close_region();
    *ptr = (void *)at;
    return ret(cudaSuccess);
}

cudaError_t cudaFree(void *ptr)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    if (!ptr)
        return ret(cudaSuccess);
    if (capture_refuses(NULL))
        return ret(cudaErrorStreamCaptureUnsupported);
    flush_all(); /* cudaFree synchronises the device */
    std::lock_guard<std::mutex> ml(g_mem_lock);
    uintptr_t start;
    allocation *a = find_alloc(ptr, &start);
    if (!a || start != (uintptr_t)ptr)
        fatal("cudaFree(%p): not the start of a device allocation", ptr);
    if (!a->live)
        fatal("cudaFree(%p): freed twice", ptr);
    a->live = false;
    g_in_use -= a->bytes;
    EMU_POISON((void *)start, a->span);
    madvise((void *)start, a->span / 4096 * 4096, MADV_DONTNEED);
    return ret(cudaSuccess);
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    ensure_init();
    std::lock_guard<std::mutex> ml(g_mem_lock);
    *free_bytes = g_size - g_in_use;
    *total_bytes = g_size;
    return ret(cudaSuccess);
}

namespace firn_emu
{

static const char *kind_name(cudaMemcpyKind k)
{
    switch (k) {
    case cudaMemcpyHostToHost:
        return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice:
        return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost:
        return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice:
        return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault:
        return "cudaMemcpyDefault";
    }
    return "an unknown cudaMemcpyKind";
}

/* [p, p + bytes) must lie in one live allocation; its start is returned. */
static uintptr_t check_device_range(const char *call, const char *role, const void *p, size_t bytes)
{
    std::lock_guard<std::mutex> ml(g_mem_lock);
    uintptr_t start;
    allocation *a = find_alloc(p, &start);
    if (!a)
        fatal("%s: the %s %p is not device memory", call, role, p);
    if (!a->live)
        fatal("%s: the %s %p is device memory already freed", call, role, p);
    if ((uintptr_t)p + bytes > start + a->bytes)
        fatal("%s: %zu bytes at the %s %p run past the end of its %zu-byte allocation (which "
              "holds %zu bytes from there)",
              call, bytes, role, p, a->bytes, (size_t)(start + a->bytes - (uintptr_t)p));
    return start;
}

struct copy_job : job {
    void *dst;
    const void *src;
    size_t bytes;
    std::vector<char> staged; /* a host source, taken at the call */
    bool to_host = false;
    void execute() override
    {
        if (to_host)
            EMU_UNPOISON(dst, bytes);
        memcpy(dst, staged.empty() ? src : staged.data(), bytes);
    }
};

static cudaError_t copy(const char *call, void *dst, const void *src, size_t bytes,
                        cudaMemcpyKind kind, cudaStream_t st, bool sync)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    t_api = call;
    firn_emu_stream *s = stream_of(st, call);
    if (g_sticky) {
        t_api = NULL;
        return ret(g_sticky);
    }
    const bool dd = in_region(dst), sd = in_region(src);
    /* Synchronous, or host memory in a capture (firn-emu has no pinned
     * memory, and a captured copy would read or write it at each launch). */
    if ((sync || (s->capture && (!dd || !sd))) && capture_refuses(s)) {
        t_api = NULL;
        return ret(cudaErrorStreamCaptureUnsupported);
    }
    cudaMemcpyKind k = kind;
    if (k == cudaMemcpyDefault)
        k = (cudaMemcpyKind)((sd ? 2 : 0) + (dd ? 1 : 0));
    if ((int)k < 0 || (int)k > 3)
        fatal("%s: %s (%d)", call, kind_name(kind), (int)kind);
    const bool want_dst_dev = k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice;
    const bool want_src_dev = k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice;
    if (want_dst_dev != dd || want_src_dev != sd)
        fatal("%s(dst %p, src %p, %zu bytes, %s): the destination is %s memory and the source "
              "%s memory, which that kind does not copy",
              call, dst, src, bytes, kind_name(kind), dd ? "device" : "host",
              sd ? "device" : "host");
    copy_job *j = new copy_job;
    j->name = k == cudaMemcpyHostToDevice     ? "cudaMemcpy host to device"
              : k == cudaMemcpyDeviceToHost   ? "cudaMemcpy device to host"
              : k == cudaMemcpyDeviceToDevice ? "cudaMemcpy device to device"
                                              : "cudaMemcpy host to host";
    j->dst = dst;
    j->src = src;
    j->bytes = bytes;
    if (bytes > 0) {
        if (dd)
            j->allocs.push_back(check_device_range(call, "destination", dst, bytes));
        if (sd) {
            uintptr_t a = check_device_range(call, "source", src, bytes);
            if (!dd || a != j->allocs[0])
                j->allocs.push_back(a);
        }
        if (!sd) /* pageable host memory is staged at the call, as CUDA does */
            j->staged.assign((const char *)src, (const char *)src + bytes);
        if (!dd && !sync) {
            j->to_host = true;
            EMU_POISON(dst, bytes); /* read before the stream is synchronised: reported */
        }
    }
    enqueue(j, s);
    if (sync)
        flush(s);
    t_api = NULL;
    return ret(cudaSuccess);
}

struct memset_job : job {
    void *p;
    int value;
    size_t bytes;
    void execute() override { memset(p, value, bytes); }
};

static cudaError_t set(const char *call, void *p, int value, size_t bytes, cudaStream_t st,
                       bool sync)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    firn_emu_stream *s = stream_of(st, call);
    if (g_sticky)
        return ret(g_sticky);
    if (sync && capture_refuses(s))
        return ret(cudaErrorStreamCaptureUnsupported);
    memset_job *j = new memset_job;
    j->name = call;
    j->p = p;
    j->value = value;
    j->bytes = bytes;
    if (bytes > 0)
        j->allocs.push_back(check_device_range(call, "destination", p, bytes));
    enqueue(j, s);
    if (sync)
        flush(s);
    return ret(cudaSuccess);
}

} // namespace firn_emu

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    return copy("cudaMemcpy", dst, src, bytes, kind, NULL, true);
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    return copy("cudaMemcpyAsync", dst, src, bytes, kind, stream, false);
}
cudaError_t cudaMemset(void *ptr, int value, size_t bytes)
{
    return set("cudaMemset", ptr, value, bytes, NULL, true);
}
cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream)
{
    return set("cudaMemsetAsync", ptr, value, bytes, stream, false);
}

/* ---- streams and events ---------------------------------------------------- */

cudaError_t cudaStreamCreate(cudaStream_t *stream) { return cudaStreamCreateWithFlags(stream, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    firn_emu_stream *s = new firn_emu_stream;
    s->nonblocking = (flags & cudaStreamNonBlocking) != 0;
    g_streams.push_back(s);
    *stream = s;
    return ret(cudaSuccess);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    std::lock_guard<std::recursive_mutex> lk(g_api);
    firn_emu_stream *s = stream_of(stream, "cudaStreamDestroy");
    if (s == &g_legacy)
        return ret(cudaErrorInvalidResourceHandle);
    flush(s); /* queued work still completes on a GPU */
    g_streams.erase(std::find(g_streams.begin(), g_streams.end(), s));
    g_dead_streams.push_back(s);
    return ret(cudaSuccess);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    firn_emu_stream *s = stream_of(stream, "cudaStreamSynchronize");
    if (capture_refuses(s))
        return ret(cudaErrorStreamCaptureUnsupported);
    flush(s);
    return ret(cudaSuccess);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return cudaStreamSynchronize(stream); }

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags)
{
    /* Conservative: what the event marks is completed now, which orders it. */
    (void)flags;
    std::lock_guard<std::recursive_mutex> lk(g_api);
    stream_of(stream, "cudaStreamWaitEvent");
    if (!event || !event->live)
        return ret(cudaErrorInvalidResourceHandle);
    if (event->recorded && event->stream)
        flush(event->stream);
    return ret(cudaSuccess);
}

cudaError_t cudaDeviceSynchronize(void)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    if (capture_refuses(NULL))
        return ret(cudaErrorStreamCaptureUnsupported);
    flush_all();
    return ret(cudaSuccess);
}

namespace firn_emu
{
struct event_job : job {
    cudaEvent_t ev;
    void execute() override
    {
        ev->done = true;
        ev->t = now_ms();
    }
};
} // namespace firn_emu

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    *event = new firn_emu_event;
    g_events.push_back(*event);
    return ret(cudaSuccess);
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    std::lock_guard<std::recursive_mutex> lk(g_api);
    if (!event || !event->live)
        return ret(cudaErrorInvalidResourceHandle);
    if (event->recorded && !event->done && event->stream)
        flush(event->stream);
    event->live = false; /* kept, so that a later use is named */
    return ret(cudaSuccess);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    firn_emu_stream *s = stream_of(stream, "cudaEventRecord");
    if (!event || !event->live)
        return ret(cudaErrorInvalidResourceHandle);
    if (s->capture && capture_refuses(s)) /* firn times outside its graphs */
        return ret(cudaErrorStreamCaptureUnsupported);
    event->recorded = true;
    event->done = false;
    event->stream = s;
    event_job *j = new event_job;
    j->name = "cudaEventRecord";
    j->ev = event;
    enqueue(j, s);
    return ret(cudaSuccess);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    std::lock_guard<std::recursive_mutex> lk(g_api);
    if (!event || !event->live)
        return ret(cudaErrorInvalidResourceHandle);
    if (event->recorded && !event->done)
        flush(event->stream);
    return ret(cudaSuccess);
}

cudaError_t cudaEventQuery(cudaEvent_t event) { return cudaEventSynchronize(event); }

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    std::lock_guard<std::recursive_mutex> lk(g_api);
    if (!start || !end || !start->live || !end->live || !start->recorded || !end->recorded)
        return ret(cudaErrorInvalidResourceHandle);
    if (!start->done || !end->done)
        return ret(cudaErrorNotReady); /* not yet run: the host did not synchronise */
    *ms = (float)(end->t - start->t);
    return ret(cudaSuccess);
}

void __threadfence(void)
{
    static std::atomic<unsigned long long> word{0};
    word.fetch_add(1, std::memory_order_seq_cst);
}

extern "C" unsigned long long firn_emu_runs(const char *name)
{
    std::lock_guard<std::mutex> lk(firn_emu::g_runs_lock);
    const auto it = firn_emu::g_runs.find(name);
    return it == firn_emu::g_runs.end() ? 0 : it->second;
}

/* ---- stream capture and graphs --------------------------------------------- */

namespace firn_emu
{
/* A graph's launch: its jobs in capture order, as one job of the stream
 * (their allocations its own, for the ordering check between streams). */
struct graph_run : job {
    std::shared_ptr<firn_emu_jobs> jobs;
    void execute() override
    {
        for (const std::unique_ptr<job> &j : *jobs)
            if (g_sticky == cudaSuccess) /* after a fault, the rest does not run */
                j->execute();
    }
};
} // namespace firn_emu

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    firn_emu_stream *s = stream_of(stream, "cudaStreamBeginCapture");
    if (s == &g_legacy || s->capture) /* the legacy stream cannot be captured */
        return ret(cudaErrorStreamCaptureUnsupported);
    if (g_sticky)
        return ret(g_sticky);
    s->capture = new firn_emu_graph;
    g_graphs.push_back(s->capture);
    s->capture->jobs = std::make_shared<firn_emu_jobs>();
    s->capture_mode = mode;
    s->capture_invalid = false;
    return ret(cudaSuccess);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    std::lock_guard<std::recursive_mutex> lk(g_api);
    firn_emu_stream *s = stream_of(stream, "cudaStreamEndCapture");
    *graph = NULL;
    if (!s->capture)
        return ret(cudaErrorInvalidValue);
    firn_emu_graph *g = s->capture;
    s->capture = nullptr;
    if (s->capture_invalid) {
        g->live = false;
        g->jobs.reset();
        return ret(cudaErrorStreamCaptureInvalidated);
    }
    *graph = g;
    return ret(cudaSuccess);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status)
{
    std::lock_guard<std::recursive_mutex> lk(g_api);
    firn_emu_stream *s = stream_of(stream, "cudaStreamIsCapturing");
    *status = !s->capture          ? cudaStreamCaptureStatusNone
              : s->capture_invalid ? cudaStreamCaptureStatusInvalidated
                                   : cudaStreamCaptureStatusActive;
    return ret(cudaSuccess);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
    std::lock_guard<std::recursive_mutex> lk(g_api);
    *exec = NULL;
    if (!graph || !graph->live || flags != 0)
        return ret(cudaErrorInvalidValue);
    firn_emu_graph_exec *e = new firn_emu_graph_exec;
    g_graph_execs.push_back(e);
    e->jobs = graph->jobs;
    *exec = e;
    return ret(cudaSuccess);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    ensure_init();
    std::lock_guard<std::recursive_mutex> lk(g_api);
    if (!exec)
        return ret(cudaErrorInvalidValue);
    if (!exec->live)
        fatal("cudaGraphLaunch of a graph instantiation already destroyed");
    firn_emu_stream *s = stream_of(stream, "cudaGraphLaunch");
    if (g_sticky)
        return ret(g_sticky);
    if (s->capture) /* a graph in a graph: firn does not */
        return ret(cudaErrorStreamCaptureUnsupported);
    graph_run *r = new graph_run;
    r->name = "cudaGraphLaunch";
    r->jobs = exec->jobs;
    {
        std::lock_guard<std::mutex> ml(g_mem_lock);
        for (const std::unique_ptr<job> &j : *exec->jobs)
            for (uintptr_t a : j->allocs) {
                auto it = g_allocs.find(a);
                if (it == g_allocs.end() || !it->second.live) {
                    char dj[256], da[128];
                    j->describe(dj, sizeof dj);
                    describe_alloc(a, da, sizeof da);
                    fatal("cudaGraphLaunch: the graph's %s uses %s, freed since the capture", dj,
                          da);
                }
                if (std::find(r->allocs.begin(), r->allocs.end(), a) == r->allocs.end())
                    r->allocs.push_back(a);
            }
    }
    enqueue(r, s);
    return ret(cudaSuccess);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    std::lock_guard<std::recursive_mutex> lk(g_api);
    if (!graph || !graph->live)
        return ret(cudaErrorInvalidValue);
    graph->live = false;
    graph->jobs.reset();
    return ret(cudaSuccess);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    std::lock_guard<std::recursive_mutex> lk(g_api);
    if (!exec || !exec->live)
        return ret(cudaErrorInvalidValue);
    /* A launch still queued holds the jobs; they go with it. */
    exec->live = false;
    exec->jobs.reset();
    return ret(cudaSuccess);
}

/* ---- device and errors ----------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return ret(cudaSuccess);
}
cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return ret(cudaSuccess);
}
cudaError_t cudaSetDevice(int device)
{
    return ret(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device)
{
    ensure_init();
    if (device != 0)
        return ret(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "NVIDIA H200 (emulated on the CPU by firn-emu)");
    p->totalGlobalMem = g_size;
    p->sharedMemPerBlock = 48 * 1024;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 0x7fffffff;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->clockRate = 1980000;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 132;
    p->maxThreadsPerMultiProcessor = 2048;
    p->memoryClockRate = 2619000;
    p->memoryBusWidth = 6144;
    p->l2CacheSize = 60 << 20;
    return ret(cudaSuccess);
}

cudaError_t cudaDriverGetVersion(int *version)
{
    *version = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetLimit(size_t *value, cudaLimit limit)
{
    if (limit != cudaLimitStackSize)
        return ret(cudaErrorInvalidValue);
    *value = 1024;
    return ret(cudaSuccess);
}

/* Local memory per thread is the compiler's to know: none is claimed. */
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, const void *kernel)
{
    if (!kernel)
        return ret(cudaErrorInvalidValue);
    memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = 1024;
    return ret(cudaSuccess);
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = g_last;
    g_last = g_sticky; /* a device fault stays */
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return g_last; }

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError:
        return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration:
        return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer:
        return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection:
        return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver:
        return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice:
        return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
        return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
        return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
        return "cudaErrorNotReady";
    case cudaErrorIllegalAddress:
        return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure:
        return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported:
        return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated:
        return "cudaErrorStreamCaptureInvalidated";
    }
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInitializationError:
        return "initialization error";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer:
        return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection:
        return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver:
        return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case cudaErrorNotReady:
        return "device not ready";
    case cudaErrorIllegalAddress:
        return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure:
        return "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    }
    return "unknown error";
}
