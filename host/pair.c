/* pair.c - the coupling pairs' scratch on the CPU path (host/pair.h): one
 * block per pair in firn_world.pair_scratch, made by the pair's
 * cpu_alloc, freed by the Coupler (host/coupler.c) with the world. */
#include <stdlib.h>

#include "coupler.h"
#include "error.h"
#include "pair.h"
#include "reduce.h"
#include "world.h"

void *firn_pair_scratch(const firn_world *w, int id)
{
    return id >= 0 && id < FIRN_PAIR_COUNT ? w->pair_scratch[id] : NULL;
}

void *firn_pair_scratch_alloc(firn_world *w, int id, const char *name, size_t bytes,
                              firn_error *err)
{
    free(w->pair_scratch[id]);
    w->pair_scratch[id] = calloc(1, bytes);
    if (!w->pair_scratch[id])
        firn_set_error(err, FIRN_E_NOMEM, "out of host memory for the %s pair (%zu bytes)", name,
                       bytes);
    return w->pair_scratch[id];
}

int firn_pair_chunks_alloc(firn_world *w, int id, const char *name, long long n, firn_error *err)
{
    const size_t head = firn_align256(sizeof(firn_pair_chunks));
    const size_t acc = (size_t)firn_reduce_chunks(n, FIRN_COUPLE_CHUNK) * (size_t)w->n_rigids *
                       FIRN_RIGID_ACC * sizeof(double);
    firn_pair_chunks *c = firn_pair_scratch_alloc(w, id, name, head + acc + 1, err);
    if (!c)
        return -1;
    c->chunk_acc = (double *)((char *)c + head);
    return 0;
}
