/* test_scene.c - scene defaults, the JSON loader and validation (host/scene.c).
 *
 * JSON is written with single quotes to stay readable in C; parse() turns
 * them into double quotes. Every rejection must carry the right status and
 * name the key path, so that a user can find the mistake. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "firn.h"

static firn_scene_def def;
static firn_error err;

#define MAT "'m': {'model': 'elastic'}"
#define BODY                                                                                       \
    "{'material': 'm', 'shape': {'type': 'box', 'center': [0.5, 0.5, 0.5], "                       \
    "'size': [0.2, 0.2, 0.2]}}"

static int parse(const char *single_quoted)
{
    static char buf[16384];
    size_t n = strlen(single_quoted);
    cr_assert_lt(n, sizeof buf, "test JSON too long");
    for (size_t i = 0; i <= n; i++)
        buf[i] = single_quoted[i] == '\'' ? '"' : single_quoted[i];
    memset(&err, 0, sizeof err);
    return firn_scene_parse_json(buf, "t.json", &def, &err);
}

/* A scene of the given materials, bodies and extra top-level keys; NULL
 * picks the one elastic material and one box above. */
static int parse_parts(const char *mats, const char *bodies, const char *extra)
{
    static char buf[16384];
    int n = snprintf(buf, sizeof buf, "{'materials': {%s}, 'bodies': [%s]%s%s}", mats ? mats : MAT,
                     bodies ? bodies : BODY, extra ? ", " : "", extra ? extra : "");
    cr_assert_lt(n, (int)sizeof buf, "test JSON too long");
    return parse(buf);
}

static void expect_fail(int rc, firn_status code, const char *needle, const char *what)
{
    cr_assert_neq(rc, 0, "%s: accepted", what);
    cr_assert_eq(err.code, code, "%s: status %d, want %d: %s", what, err.code, code, err.msg);
    cr_assert(strstr(err.msg, needle), "%s: message '%s' lacks '%s'", what, err.msg, needle);
}

static void expect_ok(int rc, const char *what)
{
    cr_assert_eq(rc, 0, "%s: rejected: %s", what, err.msg);
}

/* ---- defaults ------------------------------------------------------------- */

Test(scene_defaults, material_defaults_match_genesis)
{
    firn_material_def m;
    firn_material_default(&m, FIRN_MODEL_SAND);
    cr_assert_eq(m.E, 1e6f);
    cr_assert_eq(m.nu, 0.2f);
    cr_assert_eq(m.density, 1000.0f);
    cr_assert_eq(m.law, FIRN_LAW_COROTATED);
    cr_assert_eq(m.friction_angle, 45.0f);
    firn_material_default(&m, FIRN_MODEL_LIQUID);
    cr_assert_eq(m.E, 1e6f);
    firn_material_default(&m, FIRN_MODEL_ELASTIC);
    cr_assert_eq(m.E, 3e5f, "Genesis's Elastic default E is 3e5, got %g", m.E);
    firn_material_default(&m, FIRN_MODEL_VON_MISES);
    cr_assert_eq(m.yield_stress, 1e4f);
    firn_material_default(&m, FIRN_MODEL_FRACTURE);
    cr_assert_eq(m.crit_strain, 0.05f);
    cr_assert_eq(m.damage_rate, 1000.0f);
}

Test(scene_defaults, snow_uses_genesis_thresholds_and_stomakhin_moduli)
{
    firn_material_def m;
    firn_material_default(&m, FIRN_MODEL_SNOW);
    cr_assert_eq(m.theta_c, 2.5e-2f);
    cr_assert_eq(m.theta_s, 4.5e-3f);
    cr_assert_eq(m.hardening, 10.0f);
    cr_assert_eq(m.E, 1.4e5f);
    cr_assert_eq(m.density, 400.0f);
}

Test(scene_defaults, scene_and_body_defaults_match_genesis)
{
    firn_scene_def d;
    firn_body_def b;
    firn_scene_default(&d);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(d.lower[k], 0.0f);
        cr_assert_eq(d.upper[k], 1.0f);
    }
    cr_assert_eq(d.dx, 1.0f / 64);
    for (int f = 0; f < 6; f++) {
        cr_assert_eq(d.walls[f].type, FIRN_WALL_SEPARATE);
        cr_assert_eq(d.walls[f].friction, 0.0f);
    }
    cr_assert_eq(d.gravity[1], -9.81f);
    cr_assert_eq(d.frame_dt, 1.0f / 60);
    cr_assert_eq(d.frames, 60);
    cr_assert_eq(d.cfl, 0.4f);
    cr_assert_eq(d.dt, 0.0f);
    cr_assert_str_eq(d.out_dir, "out");
    cr_assert(d.out_every == 1 && d.write_ply == 1 && d.write_preview == 1);
    firn_body_default(&b);
    cr_assert_eq(b.particles_per_cell, 8.0f);
    cr_assert_eq(b.shape.type, FIRN_SHAPE_BOX);
    cr_assert(b.shape.center[0] == 0.5f && b.shape.size[2] == 0.1f);
    cr_assert_eq(b.shape.axis, 1);
    cr_assert_eq(b.seed, 0);
    cr_assert_str_eq(firn_model_name(FIRN_MODEL_VON_MISES), "von_mises");
}

/* ---- valid scenes --------------------------------------------------------- */

Test(scene_parse, minimal_scene_parses_with_defaults)
{
    expect_ok(parse_parts(NULL, NULL, NULL), "minimal");
    cr_assert_str_eq(def.source, "t.json");
    cr_assert_eq(def.n_materials, 1);
    cr_assert_eq(def.n_bodies, 1);
    cr_assert_eq(def.materials[0].E, 3e5f);
    cr_assert_eq(def.bodies[0].seed, 1, "seed 0 becomes body index + 1");
    cr_assert_eq(def.frames, 60);
}

Test(scene_parse, materials_keep_file_order_and_bodies_refer_by_index)
{
    expect_ok(parse_parts("'b': {'model': 'snow'}, 'a': {'model': 'sand', 'nu': 0.3}",
                          "{'material': 'a', 'shape': {'type': 'sphere', 'center': [0.5, 0.5, "
                          "0.5], 'radius': 0.1}, 'seed': 7}",
                          NULL),
              "two materials");
    cr_assert_str_eq(def.materials[0].name, "b");
    cr_assert_str_eq(def.materials[1].name, "a");
    cr_assert_eq(def.materials[1].nu, 0.3f);
    cr_assert_eq(def.bodies[0].material, 1);
    cr_assert_eq(def.bodies[0].seed, 7);
}

Test(scene_parse, box_corners_and_cylinder_axis)
{
    expect_ok(parse_parts(NULL,
                          "{'material': 'm', 'shape': {'type': 'box', 'lower': [0.2, 0.1, 0.3], "
                          "'upper': [0.4, 0.5, 0.6]}}, {'material': 'm', 'shape': {'type': "
                          "'cylinder', 'center': [0.5, 0.5, 0.5], 'radius': 0.1, 'height': 0.3, "
                          "'axis': 'z'}}",
                          NULL),
              "corners and cylinder");
    cr_assert_float_eq(def.bodies[0].shape.center[1], 0.3f, 1e-6);
    cr_assert_float_eq(def.bodies[0].shape.size[2], 0.3f, 1e-6);
    cr_assert_eq(def.bodies[1].shape.axis, 2);
    cr_assert_eq(def.bodies[1].seed, 2);
}

Test(scene_parse, per_face_boundary_floor_sticky_others_separate)
{
    expect_ok(parse_parts(NULL, NULL, "'domain': {'boundary': {'y_lower': 'sticky'}}"), "floor");
    for (int f = 0; f < 6; f++)
        cr_assert_eq(def.walls[f].type, f == 2 ? FIRN_WALL_STICKY : FIRN_WALL_SEPARATE, "face %d",
                     f);
    expect_ok(parse_parts(NULL, NULL,
                          "'domain': {'boundary': {'all': 'slip', 'y_lower': {'type': "
                          "'separate', 'friction': 0.5}}}"),
              "all + face");
    cr_assert_eq(def.walls[0].type, FIRN_WALL_SLIP);
    cr_assert_eq(def.walls[2].type, FIRN_WALL_SEPARATE);
    cr_assert_eq(def.walls[2].friction, 0.5f);
    expect_ok(parse_parts(NULL, NULL, "'domain': {'boundary': 'sticky'}"), "uniform string");
    cr_assert_eq(def.walls[5].type, FIRN_WALL_STICKY);
    expect_ok(parse_parts(NULL, NULL, "'domain': {'boundary': {'friction': 0.2}}"), "uniform");
    cr_assert(def.walls[4].type == FIRN_WALL_SEPARATE && def.walls[4].friction == 0.2f);
}

Test(scene_parse, documented_example_loads_from_file)
{
    /* The full example in docs/SCENES.md must stay a valid scene. */
    FILE *f = fopen("docs/SCENES.md", "r");
    cr_assert(f, "run the tests from the repository root");
    static char md[65536];
    size_t n = fread(md, 1, sizeof md - 1, f);
    fclose(f);
    md[n] = '\0';
    char *start = strstr(md, "```json\n"), *end = start ? strstr(start + 8, "```") : NULL;
    cr_assert(start && end, "no ```json block in docs/SCENES.md");
    *end = '\0';
    char path[64];
    snprintf(path, sizeof path, "/tmp/firn_test_scene_%d.json", (int)getpid());
    f = fopen(path, "w");
    cr_assert(f);
    fputs(start + 8, f);
    fclose(f);
    int rc = firn_scene_load_json(path, &def, &err);
    remove(path);
    expect_ok(rc, "docs example");
    cr_assert_str_eq(def.source, path);
}

Test(scene_validate, code_built_scene_validates_and_messages_lack_a_file)
{
    firn_scene_def d;
    firn_scene_default(&d);
    d.n_materials = 1;
    d.n_bodies = 1;
    cr_assert_eq(firn_scene_validate(&d, &err), 0, "%s", err.msg);
    d.gravity[1] = NAN;
    cr_assert_eq(firn_scene_validate(&d, &err), FIRN_E_SCENE);
    cr_assert(!strncmp(err.msg, "gravity[1] = nan", 16), "got '%s'", err.msg);
    d.gravity[1] = -9.81f;
    d.materials[0].E = INFINITY;
    snprintf(d.source, sizeof d.source, "code.json");
    cr_assert_neq(firn_scene_validate(&d, &err), 0);
    cr_assert(strstr(err.msg, "code.json: materials[0].E = inf"), "got '%s'", err.msg);
    /* Later stages print the source: one with no terminating NUL is
     * refused here, not read past its end there. */
    d.materials[0].E = 1e6f;
    memset(d.source, 'S', sizeof d.source);
    cr_assert_eq(firn_scene_validate(&d, &err), FIRN_E_SCENE);
    cr_assert(strstr(err.msg, "source is not a terminated string"), "got '%s'", err.msg);
}

/* ---- rejections ----------------------------------------------------------- */

Test(scene_errors, malformed_json_names_line_and_column)
{
    expect_fail(parse("{\n  'time': {\n    'frames': 3,\n  }\n}"), FIRN_E_SCENE,
                "t.json:4:3: malformed JSON near '}'", "trailing comma");
    expect_fail(parse("{'time': "), FIRN_E_SCENE, "unexpected end of input", "truncated");
    expect_fail(parse("[1, 2]"), FIRN_E_SCENE, "top level", "array root");
}

Test(scene_errors, unknown_keys_are_named_at_every_level)
{
    static const struct {
        const char *extra, *mats, *bodies, *path;
    } cases[] = {
        {"'frame': 1", NULL, NULL, "t.json: frame: unknown key"},
        {"'time': {'framez': 1}", NULL, NULL, "time.framez: unknown key"},
        {"'domain': {'boundary': {'floor': 'sticky'}}", NULL, NULL, "domain.boundary.floor"},
        {NULL, "'m': {'model': 'elastic', 'Ee': 1}", NULL, "materials.m.Ee: unknown key"},
        {NULL, NULL, BODY ", " BODY ", {'material': 'm', 'shape': {'type': 'sphere', 'radus': 1}}",
         "bodies[2].shape.radus: unknown key for a sphere (allowed: type, center, radius, cells)"},
        {NULL, "'m': {'model': 'sand', 'theta_c': 0.1}", NULL, "materials.m.theta_c"},
        {"'output': {'dir': 'a', 'dir': 'b'}", NULL, NULL, "output.dir: duplicate key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_fail(parse_parts(cases[i].mats, cases[i].bodies, cases[i].extra), FIRN_E_SCENE,
                    cases[i].path, cases[i].path);
}

/* Sand's cone fit: compression unless named, each name to its value. */
Test(scene_defaults, sand_cone_fit_defaults_to_compression_and_parses_each_name)
{
    static const char *const names[4] = {"compression", "extension", "plane_strain", "inscribed"};
    const firn_cone_fit want[4] = {FIRN_CONE_COMPRESSION, FIRN_CONE_EXTENSION,
                                   FIRN_CONE_PLANE_STRAIN, FIRN_CONE_INSCRIBED};
    expect_ok(parse_parts("'m': {'model': 'sand'}", NULL, NULL), "sand without cone_fit");
    cr_assert_eq(def.materials[0].cone_fit, FIRN_CONE_COMPRESSION);
    for (int i = 0; i < 4; i++) {
        char mats[128];
        snprintf(mats, sizeof mats, "'m': {'model': 'sand', 'cone_fit': '%s'}", names[i]);
        expect_ok(parse_parts(mats, NULL, NULL), names[i]);
        cr_assert_eq(def.materials[0].cone_fit, want[i], "%s parsed as %d", names[i],
                     (int)def.materials[0].cone_fit);
    }
}

/* Sand's rheology: the cone unless named; mu_i takes Jop et al.'s glass
 * beads by default and each of its four keys as given. */
Test(scene_defaults, sand_rheology_defaults_to_the_cone_and_mu_i_takes_its_keys)
{
    expect_ok(parse_parts("'m': {'model': 'sand'}", NULL, NULL), "sand without rheology");
    const firn_material_def *m = &def.materials[0];
    cr_assert_eq(m->rheology, FIRN_RHEOLOGY_CONE);
    expect_ok(parse_parts("'m': {'model': 'sand', 'rheology': 'mu_i'}", NULL, NULL), "mu_i");
    cr_assert_eq(m->rheology, FIRN_RHEOLOGY_MU_I);
    cr_assert(m->friction_angle_2 == 0.0f && m->inertial_I0 == 0.279f &&
                  m->grain_diameter == 5e-4f && m->grain_density == 2450.0f,
              "mu_i defaults %g %g %g %g", m->friction_angle_2, m->inertial_I0, m->grain_diameter,
              m->grain_density);
    expect_ok(parse_parts("'m': {'model': 'sand', 'friction_angle': 30, 'rheology': 'mu_i', "
                          "'friction_angle_2': 40, 'I0': 0.3, 'grain_diameter': 0.001, "
                          "'grain_density': 2650}",
                          NULL, NULL),
              "mu_i with its keys");
    cr_assert(m->friction_angle_2 == 40.0f && m->inertial_I0 == 0.3f &&
                  m->grain_diameter == 0.001f && m->grain_density == 2650.0f,
              "mu_i keys %g %g %g %g", m->friction_angle_2, m->inertial_I0, m->grain_diameter,
              m->grain_density);
}

Test(scene_errors, wrong_types_and_array_lengths_are_named)
{
    static const struct {
        const char *extra, *needle;
    } cases[] = {
        {"'time': {'frames': 'ten'}", "time.frames: expected an integer, got string"},
        {"'time': {'frames': 1.5}", "time.frames: expected an integer, got 1.5"},
        {"'time': {'force_dt': 1}", "time.force_dt: expected true or false, got number"},
        {"'gravity': [0, -9.81]", "gravity: expected an array of 3 numbers, got 2"},
        {"'gravity': [0, '1', 0]", "gravity[1]: expected a number, got string"},
        {"'domain': {'lower': 0}", "domain.lower: expected an array of 3 numbers, got number"},
        {"'output': []", "output: expected an object, got array"},
        {"'domain': {'boundary': {'y_lower': 'glue'}}", "domain.boundary.y_lower: \"glue\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_fail(parse_parts(NULL, NULL, cases[i].extra), FIRN_E_SCENE, cases[i].needle,
                    cases[i].extra);
}

Test(scene_errors, out_of_range_values_name_key_and_value)
{
    static const struct {
        const char *mats, *extra, *needle;
    } cases[] = {
        {"'m': {'model': 'sand', 'nu': 0.6}", NULL, "materials.m.nu = 0.6: must be in [0, 0.5)"},
        {"'m': {'model': 'sand', 'E': 0}", NULL, "materials.m.E = 0"},
        {"'m': {'model': 'sand', 'density': -1}", NULL, "materials.m.density = -1"},
        {"'m': {'model': 'snow', 'theta_c': 1}", NULL, "materials.m.theta_c = 1"},
        {"'m': {'model': 'snow', 'theta_s': -0.1}", NULL, "materials.m.theta_s = -0.1"},
        {"'m': {'model': 'sand', 'friction_angle': 90}", NULL, "materials.m.friction_angle"},
        {"'m': {'model': 'sand', 'cone_fit': 'triaxial'}", NULL,
         "materials.m.cone_fit: \"triaxial\": unknown value (expected one of compression, "
         "extension, plane_strain, inscribed)"},
        {"'m': {'model': 'sand', 'cone_fit': 2}", NULL,
         "materials.m.cone_fit: expected a string, got number"},
        {"'m': {'model': 'snow', 'cone_fit': 'inscribed'}", NULL,
         "materials.m.cone_fit: does not apply to a snow material"},
        {"'m': {'model': 'sand', 'rheology': 'viscous'}", NULL,
         "materials.m.rheology: \"viscous\": unknown value (expected one of cone, mu_i)"},
        {"'m': {'model': 'snow', 'rheology': 'mu_i'}", NULL,
         "materials.m.rheology: does not apply to a snow material"},
        {"'m': {'model': 'liquid', 'grain_diameter': 0.001}", NULL,
         "materials.m.grain_diameter: does not apply to a liquid material"},
        {"'m': {'model': 'sand', 'I0': 0.3}", NULL,
         "materials.m.I0: applies only with rheology mu_i"},
        {"'m': {'model': 'sand', 'rheology': 'cone', 'friction_angle_2': 40}", NULL,
         "materials.m.friction_angle_2: applies only with rheology mu_i"},
        {"'m': {'model': 'sand', 'friction_angle': 35, 'rheology': 'mu_i', "
         "'friction_angle_2': 30}",
         NULL,
         "materials.m.friction_angle_2: 30 deg: must be above friction_angle (35) and below 90"},
        {"'m': {'model': 'sand', 'friction_angle': 80, 'rheology': 'mu_i'}", NULL,
         "materials.m.friction_angle_2: 91.86 deg (friction_angle + 11.86, the default): must "
         "be above friction_angle (80) and below 90"},
        {"'m': {'model': 'sand', 'rheology': 'mu_i', 'I0': 0}", NULL, "materials.m.I0 = 0"},
        {"'m': {'model': 'sand', 'rheology': 'mu_i', 'grain_diameter': -1}", NULL,
         "materials.m.grain_diameter = -1: must be > 0"},
        {"'m': {'model': 'sand', 'rheology': 'mu_i', 'grain_density': 0}", NULL,
         "materials.m.grain_density = 0: must be > 0"},
        {"'m': {'model': 'von_mises', 'yield_stress': 0}", NULL, "materials.m.yield_stress"},
        {"'m': {'model': 'fracture', 'crit_strain': 0}", NULL, "materials.m.crit_strain"},
        {"'m': {'model': 'fracture', 'damage_rate': 0}", NULL, "materials.m.damage_rate"},
        {"'m': {'model': 'elastic', 'E': 1e999}", NULL, "materials.m.E: must be a finite"},
        {NULL, "'domain': {'dx': 0}", "domain.dx = 0: must be > 0"},
        {NULL, "'domain': {'dx': 0.3}", "domain.dx: 0.3 gives only 3.33 cells along x"},
        {NULL, "'domain': {'upper': [1, 0, 1]}", "domain.upper[1]: 0 must be > domain.lower[1]"},
        {NULL, "'time': {'frame_dt': 0}", "time.frame_dt = 0"},
        {NULL, "'time': {'frames': 0}", "time.frames = 0"},
        {NULL, "'time': {'cfl': 1.5}", "time.cfl = 1.5: must be in (0, 1]"},
        {NULL, "'time': {'dt': -1e-4}", "time.dt = -0.0001"},
        {NULL, "'output': {'every': 0}", "output.every = 0"},
        {NULL, "'domain': {'boundary': {'x_upper': {'friction': -1}}}",
         "domain.boundary.x_upper.friction = -1: must be >= 0"},
        {NULL, "'domain': {'boundary': {'y_lower': {'type': 'sticky', 'friction': 0.3}}}",
         "domain.boundary.y_lower.friction: 0.3: only separate walls take friction"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_fail(parse_parts(cases[i].mats, NULL, cases[i].extra), FIRN_E_SCENE, cases[i].needle,
                    cases[i].needle);
}

Test(scene_errors, bad_bodies_name_the_body)
{
    static const struct {
        const char *bodies, *needle;
    } cases[] = {
        {"{'material': 'm', 'shape': {'type': 'box'}, 'particles_per_cell': 0}",
         "bodies[0].particles_per_cell = 0: must be in (0, 64]"},
        {"{'material': 'm', 'shape': {'type': 'box'}, 'particles_per_cell': 65}",
         "bodies[0].particles_per_cell = 65"},
        {"{'material': 'mm', 'shape': {'type': 'box'}}",
         "bodies[0].material: \"mm\": no such material (defined: m)"},
        {"{'material': 'm', 'shape': {'type': 'cone'}}", "bodies[0].shape.type: \"cone\""},
        {"{'material': 'm'}", "bodies[0].shape: missing"},
        {"{'material': 'm', 'shape': {'type': 'sphere', 'radius': 0}}",
         "bodies[0].shape.radius = 0: must be > 0"},
        {"{'material': 'm', 'shape': {'type': 'box', 'size': [0.1, 0, 0.1]}}",
         "bodies[0].shape.size[1] = 0"},
        {"{'material': 'm', 'shape': {'type': 'sphere', 'radius': 0.001}}",
         "bodies[0]: empty body: a sphere"},
        {"{'material': 'm', 'shape': {'type': 'box', 'center': [0.5, 0.5, 0.05]}}",
         "bodies[0]: box (material m) spans z in [0, 0.1], outside the allowed [0.03125, "
         "0.96875]"},
        {"{'material': 'm', 'shape': {'type': 'box', 'lower': [0.1, 0.1, 0.1]}}",
         "bodies[0].shape.upper: missing"},
        {"", "bodies: no bodies"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_fail(parse_parts(NULL, cases[i].bodies, NULL), FIRN_E_SCENE, cases[i].needle,
                    cases[i].needle);
}

Test(scene_errors, unknown_model_and_missing_model)
{
    expect_fail(parse_parts("'m': {'model': 'jelly'}", NULL, NULL), FIRN_E_SCENE,
                "materials.m.model: \"jelly\": unknown value (expected one of elastic", "model");
    expect_fail(parse_parts("'m': {'E': 1e5}", NULL, NULL), FIRN_E_SCENE,
                "materials.m.model: missing", "no model");
}

Test(scene_errors, limits_on_counts_and_names)
{
    static char mats[8192], bodies[16384];
    size_t n = 0;
    for (int i = 0; i <= FIRN_MAX_MATERIALS; i++)
        n += snprintf(mats + n, sizeof mats - n, "%s'm%d': {'model': 'sand'}", i ? ", " : "", i);
    expect_fail(parse_parts(mats, NULL, NULL), FIRN_E_SCENE, "materials: 17 materials",
                "too many materials");

    n = 0;
    for (int i = 0; i <= FIRN_MAX_BODIES; i++)
        n += snprintf(bodies + n, sizeof bodies - n, "%s" BODY, i ? ", " : "");
    expect_fail(parse_parts(NULL, bodies, NULL), FIRN_E_SCENE, "bodies: 65 bodies",
                "too many bodies");

    char name[FIRN_NAME_MAX + 1];
    memset(name, 'n', FIRN_NAME_MAX);
    name[FIRN_NAME_MAX] = '\0';
    snprintf(mats, sizeof mats, "'%s': {'model': 'sand'}", name);
    expect_fail(parse_parts(mats, NULL, NULL), FIRN_E_SCENE, "name longer than 63", "long name");

    expect_fail(parse_parts("'m': {'model': 'sand'}, 'a\\u0001b': {'model': 'sand'}", NULL, NULL),
                FIRN_E_SCENE, "materials[1]: name has a control character", "control character");
}

Test(scene_errors, grid_too_large_names_its_size)
{
    expect_fail(parse_parts(NULL, NULL, "'domain': {'dx': 0.0005}"), FIRN_E_SCENE,
                "domain.dx: 0.0005 gives a grid of 2001 x 2001 x 2001", "big grid");
    cr_assert(strstr(err.msg, "2^31"), "%s", err.msg);
}

/* dx = 1/320: 0.96^3 m^3 at 8 per cell is 2.3e8 particles, just under the
 * 32-bit index limit (9 n < 2^31); 0.98^3 m^3 is 2.47e8, just over. The
 * check runs on the definition, before anything is sampled. */
Test(scene_errors, particle_count_beyond_the_index_limit_names_it)
{
    const char *domain = "'domain': {'dx': 0.003125}";
    expect_ok(parse_parts(NULL,
                          "{'material': 'm', 'shape': {'type': 'box', 'center': [0.5, 0.5, 0.5], "
                          "'size': [0.96, 0.96, 0.96]}}",
                          domain),
              "under the limit");
    expect_fail(parse_parts(NULL,
                            "{'material': 'm', 'shape': {'type': 'box', 'center': [0.5, 0.5, "
                            "0.5], 'size': [0.98, 0.98, 0.98]}}",
                            domain),
                FIRN_E_SCENE, "bodies: about 2.467e+08 particles in all; at most 238609294",
                "over the limit");
    cr_assert_eq(9LL * FIRN_MAX_PARTICLES <= 2147483647LL, 1);
    cr_assert_gt(9LL * (FIRN_MAX_PARTICLES + 1LL), 2147483647LL);
}

Test(scene_errors, missing_file_is_an_io_error_naming_the_path)
{
    int rc = firn_scene_load_json("/nonexistent/firn/x.json", &def, &err);
    expect_fail(rc, FIRN_E_IO, "/nonexistent/firn/x.json: cannot open: No such file", "missing");
}

Test(scene_errors, nul_bytes_and_endless_or_huge_files_are_refused_early)
{
    /* A device that never ends: the first chunk's NUL stops the read. */
    expect_fail(firn_scene_load_json("/dev/zero", &def, &err), FIRN_E_SCENE,
                "/dev/zero: contains a NUL byte", "/dev/zero");
    /* 17 MiB of blanks (valid JSON whitespace around {}): refused by size
     * once 16 MiB have been read, not parsed. */
    char path[] = "/tmp/firn_big_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    static char blanks[1 << 20];
    memset(blanks, ' ', sizeof blanks);
    fputs("{", f);
    for (int k = 0; k < 17; k++)
        fwrite(blanks, 1, sizeof blanks, f);
    fputs("}", f);
    fclose(f);
    int rc = firn_scene_load_json(path, &def, &err);
    remove(path);
    expect_fail(rc, FIRN_E_SCENE, "longer than 16 MiB; not a scene file", "17 MiB");
}

Test(scene_errors, failed_parse_leaves_the_definition_alone)
{
    expect_ok(parse_parts(NULL, NULL, "'time': {'frames': 7}"), "first");
    expect_fail(parse_parts(NULL, NULL, "'time': {'frames': 0}"), FIRN_E_SCENE, "time.frames",
                "second");
    cr_assert_eq(def.frames, 7);
}

/* ---- keyframes ------------------------------------------------------------- */

/* A tool over the default body with the given keyframes (single quotes). */
static int parse_keyframes(const char *keyframes)
{
    static char extra[4096];
    snprintf(extra, sizeof extra,
             "'tools': [{'name': 'plate', 'shape': {'type': 'box', 'center': [0.5, 0.8, 0.5], "
             "'size': [0.1, 0.02, 0.1]}, 'keyframes': [%s]}]",
             keyframes);
    return parse_parts(NULL, NULL, extra);
}

/* Every keyframe is checked at load, not when the run reaches it: a gap
 * shorter than a substep (the pose would be reached in one substep, with a
 * velocity of inf or NaN at 1e-40 s), a segment whose velocity overflows
 * float or that the CFL step cannot follow within 100000 substeps a frame,
 * and a turn of 180 degrees or more. */
Test(scene_keyframes, every_segment_is_checked_at_load)
{
    expect_ok(parse_keyframes("{'t': 0, 'position': [0.5, 0.8, 0.5]}, "
                              "{'t': 0.3, 'position': [0.5, 0.7, 0.5], 'rotation': [0, 0, 30]}, "
                              "{'t': 0.5, 'position': [0.5, 0.7, 0.5], 'rotation': [0, 0, 170]}"),
              "a valid path");
    expect_fail(parse_keyframes("{'t': 0, 'position': [0.5, 0.8, 0.5]}, "
                                "{'t': 1e-40, 'position': [0.5, 0.72, 0.5]}"),
                FIRN_E_SCENE, "tools[0].keyframes[1].t: ", "a gap of 1e-40 s");
    cr_assert(strstr(err.msg, "less than a substep"), "%s", err.msg);
    expect_fail(parse_keyframes("{'t': 0, 'position': [0.5, 0.8, 0.5]}, "
                                "{'t': 1e-9, 'position': [0.5, 0.8, 0.5]}"),
                FIRN_E_SCENE, "less than a substep", "a gap of 1e-9 s");
    /* The same for a kinematic rigid body. */
    expect_fail(parse_parts(NULL, NULL,
                            "'rigids': [{'shape': {'type': 'sphere', 'radius': 0.05}, "
                            "'motion': 'kinematic', 'keyframes': [{'t': 0, 'position': [0.5, "
                            "0.8, 0.5]}, {'t': 1e-40, 'position': [0.5, 0.7, 0.5]}]}]"),
                FIRN_E_SCENE, "rigids[0].keyframes[1].t: ", "a rigid's gap of 1e-40 s");
    /* A late keyframe far away: its segment's velocity overflows float. */
    expect_fail(parse_keyframes("{'t': 0, 'position': [0.5, 0.8, 0.5]}, "
                                "{'t': 0.2, 'position': [0.5, 0.8, 0.5]}, "
                                "{'t': 0.25, 'position': [0.5, 1e38, 0.5]}"),
                FIRN_E_SCENE, "tools[0].keyframes[2]: the segment from keyframes[1]",
                "a keyframe at 1e38 m");
    cr_assert(strstr(err.msg, "not finite"), "%s", err.msg);
    /* Finite, but 4e30 m/s takes ~1e33 CFL substeps a frame. */
    expect_fail(parse_keyframes("{'t': 0, 'position': [0.5, 0.8, 0.5]}, "
                                "{'t': 0.2, 'position': [0.5, 0.8, 0.5]}, "
                                "{'t': 0.45, 'position': [0.5, 1e30, 0.5]}"),
                FIRN_E_SCENE, "tools[0].keyframes[2]: the segment from keyframes[1]",
                "a keyframe at 1e30 m");
    cr_assert(strstr(err.msg, "more than 100000"), "%s", err.msg);
    /* Not coupled: the CFL step does not follow it, so only finiteness holds. */
    expect_ok(parse_parts(NULL, NULL,
                          "'tools': [{'name': 'plate', 'shape': {'type': 'box', 'center': [0.5, "
                          "0.8, 0.5], 'size': [0.1, 0.02, 0.1]}, 'collision': false, "
                          "'keyframes': [{'t': 0, 'position': [0.5, 0.8, 0.5]}, {'t': 0.45, "
                          "'position': [0.5, 1e30, 0.5]}]}]"),
              "an uncoupled tool far away");
    /* Turns: per axis, and along the shortest arc. */
    expect_fail(parse_keyframes("{'t': 0, 'position': [0.5, 0.8, 0.5]}, "
                                "{'t': 0.5, 'position': [0.5, 0.8, 0.5], 'rotation': [0, 0, 200]}"),
                FIRN_E_SCENE, "tools[0].keyframes[1].rotation[2]: 200: turns 200 degrees about z",
                "a turn of 200 degrees");
    expect_fail(parse_keyframes("{'t': 0, 'position': [0.5, 0.8, 0.5]}, "
                                "{'t': 0.5, 'position': [0.5, 0.8, 0.5], 'rotation': [0, 180, 0]}"),
                FIRN_E_SCENE, "turns 180 degrees about y", "a turn of 180 degrees");
    expect_fail(parse_keyframes("{'t': 0, 'position': [0.5, 0.8, 0.5]}, "
                                "{'t': 0.5, 'position': [0.5, 0.8, 0.5], "
                                "'rotation': [0, 179.999, 0]}"),
                FIRN_E_SCENE, "tools[0].keyframes[1].rotation: turns the body 179.99",
                "a turn of 179.999 degrees");
    expect_fail(parse_keyframes("{'t': 0, 'position': [0.5, 0.8, 0.5], 'rotation': [0, 0, -170]}, "
                                "{'t': 0.5, 'position': [0.5, 0.8, 0.5], 'rotation': [0, 0, 170]}"),
                FIRN_E_SCENE, "turns 340 degrees about z", "-170 to 170 degrees");
}

/* ---- PBD bodies ------------------------------------------------------------ */

#define CLOTH_MAT "'c': {'model': 'pbd_cloth'}"

/* A cloth whose particles would have no usable mass, or whose triangles
 * are degenerate, is refused at load naming the body (it went NaN in the
 * first substep, blamed on compliance and density). */
Test(scene_pbd, cloth_without_mass_or_area_is_refused)
{
    expect_ok(parse_parts(CLOTH_MAT,
                          "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'cloth_rect', "
                          "'center': [0.5, 0.5, 0.5], 'size': [0.4, 0.4], 'resolution': [5, 5]}}",
                          NULL),
              "a cloth");
    expect_fail(parse_parts(CLOTH_MAT,
                            "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'cloth_rect', "
                            "'center': [0.5, 0.5, 0.5], 'size': [1e-30, 1e-30], 'resolution': "
                            "[5, 5]}}",
                            NULL),
                FIRN_E_SCENE, "bodies[0]: cloth triangle 0 (vertices 0 5 6) is degenerate",
                "size 1e-30");
    expect_fail(parse_parts("'c': {'model': 'pbd_cloth', 'density': 1e-40}",
                            "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'cloth_rect', "
                            "'center': [0.5, 0.5, 0.5], 'size': [0.4, 0.4], 'resolution': [5, "
                            "5]}}",
                            NULL),
                FIRN_E_SCENE, "bodies[0]: its particles would each carry", "density 1e-40");
    cr_assert(strstr(err.msg, "a denormal float"), "%s", err.msg);
    expect_fail(parse_parts("'c': {'model': 'pbd_particle', 'density': 1e-35}",
                            "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'box', "
                            "'center': [0.5, 0.5, 0.5], 'size': [0.1, 0.1, 0.1]}}",
                            NULL),
                FIRN_E_SCENE, "bodies[0]: its particles would each carry", "particles of 1e-41 kg");
    /* Three triangles, two of them with coincident vertices. */
    char path[64];
    snprintf(path, sizeof path, "/tmp/firn_test_cloth_%d.obj", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("v 0 0 0\nv 1 0 0\nv 0 0 1\nv 0 0 0\nv 1 0 0\nf 1 2 3\nf 1 4 5\nf 2 3 5\n", f);
    fclose(f);
    char bodies[256];
    snprintf(bodies, sizeof bodies,
             "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'mesh', 'file': '%s', "
             "'scale': 0.2, 'center': [0.5, 0.5, 0.5]}}",
             path);
    int rc = parse_parts(CLOTH_MAT, bodies, NULL);
    remove(path);
    expect_fail(rc, FIRN_E_SCENE, "bodies[0]: cloth triangle 1 (vertices 0 3 4", "coincident");
}

/* A pin or fixed box that holds no vertex is refused when the world is
 * made (where the vertices are placed), naming the body. */
Test(scene_pbd, pin_and_fixed_boxes_that_select_nothing_are_refused)
{
    expect_ok(parse_parts(CLOTH_MAT,
                          "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'cloth_rect', "
                          "'center': [0.5, 0.5, 0.5], 'size': [0.4, 0.4], 'resolution': [5, 5]}, "
                          "'pin': {'box': {'lower': [0, 0.6, 0], 'upper': [1, 0.7, 1]}}}",
                          NULL),
              "a pin box above the cloth");
    firn_world *w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    cr_assert_null(w, "a pin box that pins nothing was accepted");
    cr_assert_eq(err.code, FIRN_E_SCENE, "%s", err.msg);
    cr_assert(strstr(err.msg, "t.json: bodies[0].pin.box: ") && strstr(err.msg, "holds none"), "%s",
              err.msg);
    expect_ok(parse_parts("'s': {'model': 'sand'}, 'j': {'model': 'fem_linear'}",
                          "{'material': 's', 'shape': {'type': 'box', 'center': [0.5, 0.2, "
                          "0.5], 'size': [0.2, 0.1, 0.2]}}, {'material': 'j', 'solver': 'fem', "
                          "'shape': {'type': 'box', 'center': [0.5, 0.6, 0.5], 'size': [0.2, "
                          "0.2, 0.2], 'cells': [2, 2, 2]}, 'fixed': {'box': {'lower': [0, 0, "
                          "0], 'upper': [0.3, 1, 1]}}}",
                          NULL),
              "a fixed box beside the FEM block");
    w = firn_world_create(&def, FIRN_BACKEND_CPU, &err);
    cr_assert_null(w, "a fixed box that fixes nothing was accepted");
    cr_assert(strstr(err.msg, "t.json: bodies[1].fixed.box: ") && strstr(err.msg, "holds none"),
              "%s", err.msg);
}

/* ---- ranges and messages ---------------------------------------------------- */

/* Keys with a physical range refuse values outside it, and integer keys
 * print their own range, not int's. */
Test(scene_errors, ranges_are_the_keys_own)
{
    expect_fail(parse_parts("'w': {'model': 'sph_liquid', 'surface_tension': 1e38}",
                            "{'material': 'w', 'solver': 'sph', 'shape': {'type': 'box'}}", NULL),
                FIRN_E_SCENE, "materials.w.surface_tension = 1e+38: must be in [0, 1]",
                "surface tension 1e38");
    expect_fail(parse_parts("'c': {'model': 'pbd_cloth', 'stretch_compliance': 1e38}",
                            "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'cloth_rect'}}",
                            NULL),
                FIRN_E_SCENE, "materials.c.stretch_compliance = 1e+38: must be in [0, 1000]",
                "stretch compliance 1e38");
    expect_fail(parse_parts("'c': {'model': 'pbd_cloth', 'bending_compliance': 1e38}",
                            "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'cloth_rect'}}",
                            NULL),
                FIRN_E_SCENE, "materials.c.bending_compliance = 1e+38: must be in [0, 1000]",
                "bending compliance 1e38");
    expect_fail(parse_parts(CLOTH_MAT,
                            "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'cloth_rect', "
                            "'resolution': [5, 1e10]}}",
                            NULL),
                FIRN_E_SCENE, "bodies[0].shape.resolution[1] = 1e+10: must be in [2, 4096]",
                "resolution 1e10");
    expect_fail(parse_parts(NULL, NULL, "'time': {'frames': 1e10}"), FIRN_E_SCENE,
                "time.frames = 1e+10: must be in [1, 2147483647]", "frames 1e10");
    expect_fail(parse_parts("'j': {'model': 'fem_linear'}",
                            "{'material': 'j', 'solver': 'fem', 'shape': {'type': 'sphere', "
                            "'cells': 1e10}}",
                            NULL),
                FIRN_E_SCENE, "bodies[0].shape.cells = 1e+10: must be in [1, 400]", "cells 1e10");
    expect_fail(parse_parts(CLOTH_MAT,
                            "{'material': 'c', 'solver': 'pbd', 'shape': {'type': 'cloth_rect'}, "
                            "'pin': {'indices': [-1]}}",
                            NULL),
                FIRN_E_SCENE, "bodies[0].pin.indices[0]: -1: no such vertex", "pin -1");
}

/* The particle limit's advice names the keys of the bodies that hold the
 * most particles. */
Test(scene_errors, particle_limit_advice_names_the_solvers_keys)
{
    expect_fail(parse_parts("'g': {'model': 'pbd_particle'}",
                            "{'material': 'g', 'solver': 'pbd', 'shape': {'type': 'box', "
                            "'center': [0.5, 0.5, 0.5], 'size': [0.9, 0.9, 0.9]}}",
                            ", 'pbd': {'particle_size': 0.001}" + 2),
                FIRN_E_SCENE, "use a larger pbd.particle_size", "PBD particles");
    cr_assert(!strstr(err.msg, "particles_per_cell"), "%s", err.msg);
}
