/* test_gpu_checkpoint.c - checkpoints across backends: a run saved on the
 * GPU resumes on the CPU path, and the reverse. The loaded world's state
 * is the saved world's bitwise (the GPU downloads what it holds to save,
 * and uploads the file's state to resume); the frames after it follow the
 * uninterrupted CPU run within the tolerances of the GPU tests (the GPU's
 * atomics add in another order, so not bitwise): centre of mass within
 * 1e-3 of its norm, kinetic energy within 2 percent, rigid bodies and the
 * SPH particles' centre within 1e-3 of the domain size.
 *
 * Every test skips, and only, when no usable CUDA GPU is present. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checkpoint_scene.h"
#include "gpu_skip.h"
#include "test_util.h"
#include "world.h"

#define SAVED_AT 2 /* frames before the checkpoint */
#define AFTER    2 /* frames after it */

static void load_scene(firn_scene_def *def)
{
    firn_error err;
    cr_assert_eq(firn_scene_parse_json(scene_json, "checkpoint scene", def, &err), 0, "%s",
                 err.msg);
    def->write_ply = def->write_preview = 0;
}

static firn_world *make_world(const firn_scene_def *def, firn_backend backend, const char *path)
{
    firn_error err = {0};
    firn_world *w =
        path ? firn_world_load(def, backend, path, &err) : firn_world_create(def, backend, &err);
    cr_assert(w, "%s (%s): %s", path ? "firn_world_load" : "firn_world_create",
              backend == FIRN_BACKEND_CUDA ? "cuda" : "cpu", err.msg);
    return w;
}

static void run_frames(firn_world *w, int frames, firn_frame_stats *s)
{
    firn_error err;
    for (int f = 0; f < frames; f++)
        cr_assert_eq(firn_world_step_frame(w, s, &err), 0, "%s", err.msg);
}

static int same(const void *a, const void *b, size_t bytes) { return !memcmp(a, b, bytes); }

/* The state of b, just loaded from a's checkpoint, is a's bitwise:
 * particles, SPH particles, rigid bodies and their pending impulse,
 * clocks. */
static void assert_same_state(firn_world *a, firn_world *b)
{
    firn_error err;
    firn_particles_view p, q;
    firn_sph_particles_view sp, sq;
    cr_assert_eq(firn_world_particles(a, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_particles(b, &q, &err), 0, "%s", err.msg);
    const size_t n = (size_t)p.n, f = sizeof(float);
    cr_assert_eq(p.n, q.n);
    cr_assert(same(p.x, q.x, 3 * n * f) && same(p.v, q.v, 3 * n * f), "x or v differ");
    cr_assert(same(p.C, q.C, 9 * n * f) && same(p.F, q.F, 9 * n * f), "C or F differ");
    cr_assert(same(p.Jp, q.Jp, n * f) && same(p.damage, q.damage, n * f), "Jp or damage differ");
    cr_assert(same(p.vol, q.vol, n * f) && same(p.mat, q.mat, n), "volume or material differ");
    cr_assert_eq(firn_world_host_state(a, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_host_state(b, &err), 0, "%s", err.msg);
    cr_assert(same(a->p.cpic, b->p.cpic, (size_t)a->p.cpic_slots * n * 4), "CPIC records differ");
    cr_assert_eq(firn_world_sph_particles(a, &sp, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_sph_particles(b, &sq, &err), 0, "%s", err.msg);
    const size_t m = (size_t)sp.n;
    cr_assert(m > 0 && sq.n == sp.n);
    cr_assert(same(sp.x, sq.x, 3 * m * f) && same(sp.v, sq.v, 3 * m * f), "SPH x or v differ");
    cr_assert(same(sp.rho, sq.rho, m * f) && same(sp.p, sq.p, m * f), "SPH rho or p differ");
    for (int k = 0; k < a->n_rigids; k++) {
        const firn_rigid *r = &a->rigids[k], *s = &b->rigids[k];
        cr_assert(same(r->x, s->x, 12) && same(&r->q, &s->q, 16) && same(r->v, s->v, 12) &&
                      same(r->w, s->w, 12) && same(r->L, s->L, 12) && r->time == s->time,
                  "rigid %d differs", k);
    }
    cr_assert(same(a->rigid_acc, b->rigid_acc, (size_t)a->n_rigids * FIRN_RIGID_ACC * 8),
              "the pending coupling impulse differs");
    cr_assert(a->frame == b->frame && a->substeps == b->substeps && a->time == b->time);
}

/* s (the resumed run's last frame) against r (the uninterrupted CPU run's). */
static void assert_close(const firn_scene_def *def, const firn_frame_stats *s,
                         const firn_frame_stats *r)
{
    double L = 0.0, d2 = 0.0, c2 = 0.0;
    for (int a = 0; a < 3; a++) {
        L = fmax(L, def->upper[a] - def->lower[a]);
        d2 += pow(s->center_of_mass[a] - r->center_of_mass[a], 2);
        c2 += pow(r->center_of_mass[a], 2);
    }
    cr_assert_eq(s->frame, r->frame);
    cr_expect(sqrt(d2) <= 1e-3 * sqrt(c2), "centre of mass off by %.3g m", sqrt(d2));
    cr_expect(fabs(s->kinetic_energy - r->kinetic_energy) <=
                  0.02 * r->kinetic_energy + 1e-6 * r->mass,
              "kinetic energy %.6g J, uninterrupted CPU run %.6g J", s->kinetic_energy,
              r->kinetic_energy);
    for (int a = 0; a < 3; a++) {
        cr_expect(fabs(s->sph.center_of_mass[a] - r->sph.center_of_mass[a]) <= 1e-3 * L,
                  "SPH centre %c: %.6g m, uninterrupted %.6g m", "xyz"[a],
                  s -> sph.center_of_mass[a], r->sph.center_of_mass[a]);
        for (int k = 0; k < r->n_rigids; k++)
            cr_expect(fabs(s->rigids[k].position[a] - r->rigids[k].position[a]) <= 1e-3 * L,
                      "rigid %d position %c: %.6g m, uninterrupted %.6g m", k, "xyz"[a],
                      s -> rigids[k].position[a], r->rigids[k].position[a]);
    }
}

/* Saved by backend `from`, resumed on `to`. */
static void resume_across(firn_backend from, firn_backend to, const char *tag)
{
    char dir[64], path[128];
    test_mkdtemp(dir, sizeof dir, tag);
    snprintf(path, sizeof path, "%s/at.firn", dir);
    firn_scene_def def;
    load_scene(&def);
    firn_frame_stats s, r;
    firn_world *ref = make_world(&def, FIRN_BACKEND_CPU, NULL);
    run_frames(ref, SAVED_AT + AFTER, &r);
    firn_world *a = make_world(&def, from, NULL);
    run_frames(a, SAVED_AT, &s);
    firn_error err;
    cr_assert_eq(firn_world_save(a, path, &err), 0, "%s", err.msg);
    firn_world *b = make_world(&def, to, path);
    assert_same_state(a, b);
    run_frames(b, AFTER, &s);
    assert_close(&def, &s, &r);
    firn_world_destroy(ref);
    firn_world_destroy(a);
    firn_world_destroy(b);
    test_rmdir(dir);
}

Test(gpu_checkpoint, saved_on_the_gpu_resumes_on_the_cpu, .timeout = 600)
{
    require_gpu();
    resume_across(FIRN_BACKEND_CUDA, FIRN_BACKEND_CPU, "ckpt_gpu_cpu");
}

Test(gpu_checkpoint, saved_on_the_cpu_resumes_on_the_gpu, .timeout = 600)
{
    require_gpu();
    resume_across(FIRN_BACKEND_CPU, FIRN_BACKEND_CUDA, "ckpt_cpu_gpu");
}
