/* fuzz_util.h - what the libFuzzer targets of test/fuzz/ share: a private
 * temporary folder (removed at exit) and whole-file writes into it. The
 * loaders read files by path, so each input is written to a file first. */
#ifndef FIRN_FUZZ_UTIL_H
#define FIRN_FUZZ_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir[PATH_MAX];

/* Removes the files of fuzz_dir and the folder (one level of folders below it). */
static inline void fuzz_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[PATH_MAX];
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (unlink(p))
                fuzz_remove_dir(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

static inline void fuzz_cleanup(void)
{
    if (fuzz_dir[0])
        fuzz_remove_dir(fuzz_dir);
}

/* Makes fuzz_dir under $TMPDIR (or /tmp); exits on failure. */
static inline void fuzz_make_dir(const char *name)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/firn-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(fuzz_dir)) {
        perror("fuzz: mkdtemp");
        exit(1);
    }
    atexit(fuzz_cleanup);
}

/* fuzz_dir/name into out. */
static inline void fuzz_path(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", fuzz_dir, name);
}

/* Writes n bytes to path (replacing it); aborts on failure, which is the
 * harness's fault, not the loader's. */
static inline void fuzz_write(const char *path, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const char *p = data;
    if (fd < 0) {
        perror(path);
        abort();
    }
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            perror(path);
            abort();
        }
        p += w, n -= (size_t)w;
    }
    close(fd);
}

/* Copies the file at from to to; 0 or -1. */
static inline int fuzz_copy(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb");
    if (!f)
        return -1;
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (cap - len < 65536) {
            char *g = realloc(buf, cap + 65536);
            if (!g) {
                free(buf), fclose(f);
                return -1;
            }
            buf = g, cap += 65536;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    fuzz_write(to, buf, len);
    free(buf);
    return 0;
}

/* One OpenMP thread: the loaders' parallel loops run alike, and a fuzzer
 * process does not spin a second core. Set before the first parallel region. */
static inline void fuzz_one_thread(void)
{
    setenv("OMP_NUM_THREADS", "1", 0);
    setenv("OMP_WAIT_POLICY", "passive", 0);
}

#endif
