/* test_gpu_coupling.c - GPU twins of the coupling tests (test_coupling.c):
 * the CUDA path's rigid step and coupled grid update against the CPU path
 * on the same scene, Newton's third law on the device, CPIC (the thin
 * plate holds; CPU and GPU agree), and a mesh body (SDF grid in device
 * memory) with a keyframed one. The force sum
 * is a warp reduction plus double atomics there, so agreement is to
 * rounding, not bitwise. Every test skips, and only, without a usable GPU. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_skip.h"
#include "cuda_backend.h"
#include "firn_cpic.h"
#include "gpu_compare.h"
#include "world.h"

/* Sand bed, a dynamic tilted box falling into it and a kinematic spinning
 * cylinder ploughing it; no gravity when `free` (Newton's third law). */
static void coupled_scene(firn_scene_def *def, int free)
{
    firn_scene_default(def);
    def->dx = 1.0f / 32.0f;
    def->frame_dt = 0.01f;
    def->write_ply = def->write_preview = 0;
    if (free)
        def->gravity[1] = 0.0f;
    def->n_materials = 1;
    firn_material_default(&def->materials[0], free ? FIRN_MODEL_ELASTIC : FIRN_MODEL_SAND);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "m");
    def->n_bodies = 1;
    firn_body_def *b = &def->bodies[0];
    firn_body_default(b);
    b->shape.type = FIRN_SHAPE_BOX;
    const float c[3] = {0.5f, free ? 0.5f : 0.15f, 0.5f}, sz[3] = {0.4f, 0.15f, 0.4f};
    for (int a = 0; a < 3; a++)
        b->shape.center[a] = c[a], b->shape.size[a] = sz[a];
    b->seed = 3;
    def->n_rigids = 2;
    firn_rigid_def *r = &def->rigids[0];
    firn_rigid_default(r);
    r->shape.type = FIRN_RSHAPE_BOX;
    r->motion = FIRN_RIGID_DYNAMIC;
    r->shape.center[0] = 0.45f, r->shape.center[1] = c[1] + 0.18f, r->shape.center[2] = 0.5f;
    r->rotation[2] = 20.0f;
    r->velocity[1] = -2.0f;
    r->density = 1000.0f;
    firn_rigid_def *k = &def->rigids[1];
    firn_rigid_default(k);
    k->shape.type = FIRN_RSHAPE_CYLINDER;
    k->motion = FIRN_RIGID_KINEMATIC;
    k->shape.center[0] = 0.65f, k->shape.center[1] = c[1] + 0.1f, k->shape.center[2] = 0.5f;
    k->shape.axis = 2;
    k->angular_velocity[2] = -5.0f;
}

Test(gpu_coupling, rigid_state_and_particles_match_the_cpu_path, .timeout = 120)
{
    require_gpu();
    firn_scene_def def;
    coupled_scene(&def, 0);
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU),
               *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    firn_error err;
    /* The same substeps on both, so that only arithmetic differs. */
    for (int s = 0; s < 40; s++) {
        cr_assert_eq(firn_world_substep(cpu, 2.5e-4f, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_world_substep(gpu, 2.5e-4f, &err), 0, "%s", err.msg);
    }
    firn_frame_stats sc, sg;
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    cr_assert_eq(sg.n_rigids, 2);
    for (int k = 0; k < 2; k++)
        for (int a = 0; a < 3; a++) {
            cr_assert(fabsf(sc.rigids[k].position[a] - sg.rigids[k].position[a]) < 1e-5f,
                      "rigid %d position[%d]: cpu %g gpu %g", k, a, sc.rigids[k].position[a],
                      sg.rigids[k].position[a]);
            cr_assert(fabsf(sc.rigids[k].velocity[a] - sg.rigids[k].velocity[a]) <
                          1e-3f + 1e-3f * fabsf(sc.rigids[k].velocity[a]),
                      "rigid %d velocity[%d]: cpu %g gpu %g", k, a, sc.rigids[k].velocity[a],
                      sg.rigids[k].velocity[a]);
            cr_assert(fabsf(sc.rigids[k].force[a] - sg.rigids[k].force[a]) <
                          1e-2f + 1e-3f * fabsf(sc.rigids[k].force[a]),
                      "rigid %d force[%d]: cpu %g gpu %g", k, a, sc.rigids[k].force[a],
                      sg.rigids[k].force[a]);
        }
    cr_assert(sc.rigids[0].force[1] != 0.0f, "the box never touched the sand");
    for (int a = 0; a < 3; a++)
        cr_assert(fabs(sc.center_of_mass[a] - sg.center_of_mass[a]) < 1e-5,
                  "centre of mass[%d]: cpu %g gpu %g", a, sc.center_of_mass[a],
                  sg.center_of_mass[a]);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

Test(gpu_coupling, newtons_third_law_on_the_device, .timeout = 120)
{
    require_gpu();
    firn_scene_def def;
    coupled_scene(&def, 1);
    firn_world *w = make_world(&def, FIRN_BACKEND_CUDA);
    firn_frame_stats s0, s1;
    firn_error err;
    cr_assert_eq(firn_world_stats(w, &s0, &err), 0, "%s", err.msg);
    for (int f = 0; f < 8; f++)
        cr_assert_eq(firn_world_step_frame(w, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(w, &s1, &err), 0, "%s", err.msg); /* downloads the rigids */
    double scale = 0.0;
    for (int a = 0; a < 3; a++) {
        double body = 0.0;
        for (int k = 0; k < w->n_rigids; k++)
            body += w->rigids[k].impulse[a] + w->rigid_acc[FIRN_RIGID_ACC * k + a];
        scale += fabs(body);
        double dP = s1.momentum[a] - s0.momentum[a];
        cr_assert(fabs(dP + body) < 1e-4 * (fabs(body) + 1e-3), "axis %d: particles %g, rigids %g",
                  a, dP, body);
    }
    cr_assert(scale > 0.0, "no contact");
    firn_world_destroy(w);
}

/* Sand dropped on a static plate 0.3 dx thick spanning the domain, CPIC on
 * (test_coupling.c's thin-plate test). */
static void plate_scene(firn_scene_def *def)
{
    firn_scene_default(def);
    def->dx = 1.0f / 32.0f;
    def->write_ply = def->write_preview = 0;
    for (int a = 0; a < 3; a++)
        def->upper[a] = 0.5f;
    def->n_materials = 1;
    firn_material_default(&def->materials[0], FIRN_MODEL_SAND);
    snprintf(def->materials[0].name, FIRN_NAME_MAX, "sand");
    def->n_bodies = 1;
    firn_body_def *b = &def->bodies[0];
    firn_body_default(b);
    b->shape.center[0] = b->shape.center[2] = 0.25f;
    b->shape.center[1] = 0.35f;
    for (int a = 0; a < 3; a++)
        b->shape.size[a] = 0.16f;
    b->seed = 3;
    def->n_rigids = 1;
    firn_rigid_def *r = &def->rigids[0];
    firn_rigid_default(r);
    r->shape.type = FIRN_RSHAPE_BOX;
    r->shape.center[0] = r->shape.center[2] = 0.25f;
    r->shape.center[1] = 6.5f * def->dx;
    r->shape.size[0] = r->shape.size[2] = 0.6f;
    r->shape.size[1] = 0.3f * def->dx;
    def->coupling.cpic = 1;
}

Test(gpu_coupling, cpic_holds_a_thin_plate_and_matches_the_cpu_path, .timeout = 120)
{
    require_gpu();
    firn_scene_def def;
    plate_scene(&def);
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU),
               *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    firn_error err;
    /* Through the impact (the column lands after about 0.12 s). */
    for (int s = 0; s < 400; s++) {
        cr_assert_eq(firn_world_substep(cpu, 4e-4f, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_world_substep(gpu, 4e-4f, &err), 0, "%s", err.msg);
    }
    firn_frame_stats sc, sg;
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    for (int a = 0; a < 3; a++)
        cr_assert(fabs(sc.center_of_mass[a] - sg.center_of_mass[a]) < 2e-3,
                  "centre of mass[%d]: cpu %g gpu %g", a, sc.center_of_mass[a],
                  sg.center_of_mass[a]);
    cr_assert(fabs(sc.rigids[0].force[1] - sg.rigids[0].force[1]) <
                  0.05 * fabs(sc.rigids[0].force[1]) + 1e-3,
              "plate force: cpu %g gpu %g", sc.rigids[0].force[1], sg.rigids[0].force[1]);
    firn_particles_view p;
    cr_assert_eq(firn_world_particles(gpu, &p, &err), 0, "%s", err.msg);
    const float bottom = (6.5f - 0.15f) * def.dx;
    long long below = 0;
    for (long long i = 0; i < p.n; i++)
        below += p.x[p.n + i] < bottom;
    cr_assert_eq(below, 0, "%lld of %lld particles passed the plate on the GPU", below, p.n);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
}

Test(gpu_coupling, mesh_and_keyframed_bodies_match_the_cpu_path, .timeout = 120)
{
    require_gpu();
    /* A 0.12 m cube as an OBJ: the dynamic box of coupled_scene becomes a
     * mesh, the spinning cylinder follows keyframes. */
    char dir[] = "/tmp/firn_gpu_mesh_XXXXXX", obj[128], cmd[160];
    cr_assert(mkdtemp(dir));
    snprintf(obj, sizeof obj, "%s/cube.obj", dir);
    FILE *f = fopen(obj, "w");
    cr_assert(f);
    for (int i = 0; i < 8; i++)
        fprintf(f, "v %g %g %g\n", (i & 4) ? 0.06 : -0.06, (i & 2) ? 0.06 : -0.06,
                (i & 1) ? 0.06 : -0.06);
    fputs("f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n", f);
    fclose(f);
    firn_scene_def def;
    coupled_scene(&def, 0);
    def.rigids[0].shape.type = FIRN_RSHAPE_MESH;
    snprintf(def.rigids[0].shape.file, sizeof def.rigids[0].shape.file, "%s", obj);
    firn_rigid_def *k = &def.rigids[1];
    k->angular_velocity[2] = 0.0f;
    k->n_keyframes = 2;
    for (int j = 0; j < 2; j++)
        for (int a = 0; a < 3; a++)
            k->keyframes[j].position[a] = k->shape.center[a];
    k->keyframes[1].t = 0.1f;
    k->keyframes[1].position[0] -= 0.05f;
    k->keyframes[1].rotation[2] = -30.0f;
    firn_world *cpu = make_world(&def, FIRN_BACKEND_CPU),
               *gpu = make_world(&def, FIRN_BACKEND_CUDA);
    firn_error err;
    for (int s = 0; s < 40; s++) {
        cr_assert_eq(firn_world_substep(cpu, 2.5e-4f, &err), 0, "%s", err.msg);
        cr_assert_eq(firn_world_substep(gpu, 2.5e-4f, &err), 0, "%s", err.msg);
    }
    firn_frame_stats sc, sg;
    cr_assert_eq(firn_world_stats(cpu, &sc, &err), 0, "%s", err.msg);
    cr_assert_eq(firn_world_stats(gpu, &sg, &err), 0, "%s", err.msg);
    /* After the download the host mirror's mesh points at host memory. */
    cr_assert_eq(gpu->rigids[0].shape.grid, cpu->rigids[0].shape.grid);
    for (int r = 0; r < 2; r++)
        for (int a = 0; a < 3; a++) {
            cr_assert(fabsf(sc.rigids[r].position[a] - sg.rigids[r].position[a]) < 1e-5f,
                      "rigid %d position[%d]: cpu %g gpu %g", r, a, sc.rigids[r].position[a],
                      sg.rigids[r].position[a]);
            cr_assert(fabsf(sc.rigids[r].velocity[a] - sg.rigids[r].velocity[a]) <
                          1e-3f + 1e-3f * fabsf(sc.rigids[r].velocity[a]),
                      "rigid %d velocity[%d]: cpu %g gpu %g", r, a, sc.rigids[r].velocity[a],
                      sg.rigids[r].velocity[a]);
        }
    cr_assert(sc.rigids[0].force[1] != 0.0f, "the mesh never touched the sand");
    for (int a = 0; a < 3; a++)
        cr_assert(fabs(sc.center_of_mass[a] - sg.center_of_mass[a]) < 1e-5,
                  "centre of mass[%d]: cpu %g gpu %g", a, sc.center_of_mass[a],
                  sg.center_of_mass[a]);
    firn_world_destroy(cpu);
    firn_world_destroy(gpu);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
