/* firn.h - public C API of the firn MPM engine.
 *
 * Usage:
 *     firn_scene_def def;
 *     firn_error err;
 *     if (firn_scene_load_json("scenes/sand_column.json", &def, &err)) { puts(err.msg); ... }
 *     firn_world *w = firn_world_create(&def, FIRN_BACKEND_AUTO, &err);
 *     for (int f = 0; f < def.frames; f++) firn_world_step_frame(w, &stats, &err);
 *     firn_world_destroy(w);
 *
 * Definitions are plain structs filled with defaults by firn_*_default();
 * the world is opaque. Units are SI: m, s, kg, Pa, kg/m^3. Nothing here
 * depends on CUDA.
 *
 * Pointer arguments may not be NULL unless a comment says so; the
 * firn_error pointer may be NULL everywhere (the message is then dropped),
 * and firn_world_destroy(NULL) does nothing. A call that fails returns
 * non-zero (or NULL) with err filled; a call refused for its arguments
 * changes nothing. */
#ifndef FIRN_H
#define FIRN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FIRN_VERSION       "0.1.0"
#define FIRN_MAX_MATERIALS 16
#define FIRN_MAX_BODIES    64
#define FIRN_MAX_RIGIDS    16
#define FIRN_MAX_KEYFRAMES 32
#define FIRN_MAX_TOOLS     8
#define FIRN_NAME_MAX      64
#define FIRN_PATH_MAX      512
#define FIRN_ERRMSG_MAX    1024
/* Largest scene file read (its counts are bounded, so a real one is far
 * smaller). */
#define FIRN_SCENE_MAX_BYTES (16 << 20)
/* Most particles one world holds. Particle arrays are component-major
 * (component c of particle i at c*n + i, c < 9); the shared per-particle
 * functions and the kernels index them in 64 bits (firn_soa_index), but
 * host code also indexes them with 32-bit ints, so 9 n must fit in an int. */
#define FIRN_MAX_PARTICLES 238609294 /* (2^31 - 1) / 9 */

/* Status codes; the command-line tool exits with these. */
typedef enum {
    FIRN_OK = 0,
    FIRN_E_USAGE = 2,     /* bad command line, or a bad argument to a call */
    FIRN_E_SCENE = 3,     /* malformed or invalid scene (JSON, keys, values) */
    FIRN_E_IO = 4,        /* missing file, unwritable output */
    FIRN_E_NUMERIC = 5,   /* NaN/Inf in the state, unsafe time step */
    FIRN_E_DEVICE = 6,    /* no usable GPU, CUDA error, out of device memory */
    FIRN_E_NOMEM = 7,     /* out of host memory */
    FIRN_E_COMPARE = 8,   /* firn compare: difference beyond tolerance */
    FIRN_E_CHECKPOINT = 9 /* a checkpoint of another scene or format version, truncated or
                             corrupted */
} firn_status;

typedef struct {
    firn_status code;
    char msg[FIRN_ERRMSG_MAX];
} firn_error;

/* ---- scene definition ---------------------------------------------------- */

typedef enum { FIRN_WALL_SEPARATE = 0, FIRN_WALL_STICKY, FIRN_WALL_SLIP } firn_wall_type;

/* Face order everywhere: x_lower, x_upper, y_lower, y_upper, z_lower, z_upper. */
typedef struct {
    firn_wall_type type; /* default separate (Genesis's default) */
    float friction;      /* Coulomb coefficient for `separate` walls [-], default 0 */
} firn_wall_def;

typedef enum {
    FIRN_MODEL_ELASTIC = 0,
    FIRN_MODEL_LIQUID,
    FIRN_MODEL_SNOW,
    FIRN_MODEL_SAND,
    FIRN_MODEL_VON_MISES,
    FIRN_MODEL_FRACTURE,
    FIRN_MODEL_SPH_LIQUID,   /* the SPH solver's liquid */
    FIRN_MODEL_PBD_CLOTH,    /* the PBD solver's cloth (a triangle mesh) */
    FIRN_MODEL_PBD_PARTICLE, /* the PBD solver's free particles */
    FIRN_MODEL_PBD_LIQUID,   /* the PBD solver's liquid (position based fluids); the models above
                                SPH's are MPM's */
    FIRN_MODEL_FEM_LINEAR, /* the FEM solver's small-strain linear elasticity (Genesis's default) */
    FIRN_MODEL_FEM_COROTATED,         /* FEM: linear elasticity in each element's rotated frame */
    FIRN_MODEL_FEM_STABLE_NEOHOOKEAN, /* FEM: Smith, de Goes and Kim 2018 */
    FIRN_MODEL_COUNT
} firn_model;

/* SPH pressure solvers: weakly compressible (Becker and Teschner 2007, Tait
 * equation of state) or divergence-free (Bender and Koschier 2015). */
typedef enum { FIRN_PRESSURE_WCSPH = 0, FIRN_PRESSURE_DFSPH } firn_pressure_solver;

typedef enum { FIRN_LAW_COROTATED = 0, FIRN_LAW_NEOHOOKEAN } firn_elastic_law;

/* Sand: where the Drucker-Prager cone meets the Mohr-Coulomb pyramid of the
 * same friction angle (docs/PHYSICS.md s3.6): on its compression corners
 * (circumscribed, the default), its extension corners, in plane strain under
 * the model's volume-preserving plastic flow, or inscribed. */
typedef enum {
    FIRN_CONE_COMPRESSION = 0,
    FIRN_CONE_EXTENSION,
    FIRN_CONE_PLANE_STRAIN,
    FIRN_CONE_INSCRIBED,
    FIRN_CONE_FIT_COUNT
} firn_cone_fit;

/* Sand: the friction of the cone, rate-independent (the default) or growing
 * with the inertial number I, mu(I) (Jop, Forterre and Pouliquen 2006;
 * docs/PHYSICS.md s3.6). */
typedef enum { FIRN_RHEOLOGY_CONE = 0, FIRN_RHEOLOGY_MU_I, FIRN_RHEOLOGY_COUNT } firn_rheology;

typedef struct {
    char name[FIRN_NAME_MAX];
    firn_model model;
    firn_elastic_law law; /* elastic, von_mises, fracture: stress law */
    float E;              /* Young's modulus [Pa] */
    float nu;             /* Poisson's ratio [-], in [0, 0.5); FEM materials: in (-1, 0.5) */
    float density;        /* [kg/m^3] */
    float theta_c;        /* snow: critical compression [-], default 2.5e-2 */
    float theta_s;        /* snow: critical stretch [-], default 4.5e-3 */
    float hardening;      /* snow: hardening coefficient xi [-], default 10 */
    float max_hardening;  /* snow: cap on exp(xi (1 - Jp)) [-]; 0 = none (Genesis), default 0 */
    float friction_angle; /* sand: friction angle [deg], default 45 */
    float yield_stress;   /* von_mises: yield stress [Pa], default 1e4 */
    float crit_strain;    /* fracture: critical principal strain [-], default 0.05 */
    float damage_rate;    /* fracture: damage per second past it [1/s], default 1000 */
    /* sph_liquid (defaults Genesis's SPH.Liquid; density default 1000): */
    float stiffness;                      /* Tait stiffness k [Pa], default 50000 */
    float exponent;                       /* Tait exponent gamma [-], default 7 */
    float viscosity;                      /* kinematic viscosity [m^2/s], default 0.005 */
    float surface_tension;                /* cohesion coefficient [-], default 0.01 */
    firn_pressure_solver pressure_solver; /* default WCSPH; one solver per scene */
    firn_cone_fit cone_fit; /* sand: the cone's fit to Mohr-Coulomb, default compression */
    /* sand, rheology mu_i only (defaults Jop et al. 2006's glass beads): */
    firn_rheology rheology; /* sand: cone (default) or mu_i */
    float friction_angle_2; /* friction angle as I -> infinity [deg], > friction_angle;
                               0 (default) = friction_angle + 11.86 */
    float inertial_I0;      /* I at which the friction is halfway [-], default 0.279 */
    float grain_diameter;   /* [m], default 5e-4 */
    float grain_density;    /* density of the grains themselves [kg/m^3], default 2450 */
    /* pbd_cloth (density is then per area [kg/m^2], default 4) and pbd_particle
     * (density [kg/m^3], default 1000); defaults Genesis's PBD.Cloth: */
    float stretch_compliance; /* XPBD compliance of an edge's length [m/N], default 1e-7 */
    float bending_compliance; /* XPBD compliance of an inner edge's angle [1/(N m)], default 1e-5 */
    float air_resistance;     /* cloth: quadratic drag c, a = -c |v| v / m [kg/m], default 1e-3 */
    float static_friction;    /* against rigid bodies and in particle contact [-], default 0.15
                                 (pbd_liquid: 0) */
    float kinetic_friction;   /* the same, kinetic [-], default 0.15 (pbd_liquid: 0) */
    /* pbd_liquid (density [kg/m^3], default 1000; defaults Genesis's PBD.Liquid): */
    float density_relaxation;   /* fraction of the density correction applied per iteration [-],
                                   default 0.2 */
    float viscosity_relaxation; /* XSPH coefficient on the substep's displacements [-],
                                   default 0.01 */
} firn_material_def;

typedef enum {
    FIRN_SHAPE_BOX = 0,
    FIRN_SHAPE_SPHERE,
    FIRN_SHAPE_CYLINDER,
    FIRN_SHAPE_MESH,
    FIRN_SHAPE_CLOTH_RECT, /* PBD cloth: a flat rectangle of resolution[0] x resolution[1] vertices
                            */
    FIRN_SHAPE_COUNT
} firn_shape_type;

/* A particle body's shape. A mesh is placed as a rigid mesh is: its
 * centroid (the centre of mass of the closed solid) at `center`, axes as in
 * the file; a PBD cloth's mesh is an open surface, placed with the mean of
 * its vertices at `center`. A cloth rectangle lies in the plane through
 * `center` normal to `axis`, size[0] x size[1] along the other two axes in
 * order (normal y: x then z). */
typedef struct {
    firn_shape_type type;
    float center[3];   /* [m] */
    float size[3];     /* box: full edge lengths [m] */
    float radius;      /* sphere, cylinder [m] */
    float height;      /* cylinder: length along its axis [m] */
    int axis;          /* cylinder, cloth_rect (its normal): 0 = x, 1 = y, 2 = z (default 1) */
    int resolution[2]; /* cloth_rect: vertices along its two sides, >= 2 (default 2) */
    char file[FIRN_PATH_MAX]; /* mesh: Wavefront OBJ file, closed and manifold; the JSON
                                 loader resolves it against the scene file's folder */
    float scale;              /* mesh: factor on the file's coordinates [m per unit], default 1 */
    int cells[3]; /* FEM box: cells along x, y, z, each cut into 6 tetrahedra (required; 0 =
                     not given); vertex (i, j, k) of the lattice is number
                     (k (cells[1] + 1) + j)(cells[0] + 1) + i */
} firn_shape_def;

/* The solver that simulates a body's particles. */
typedef enum {
    FIRN_SOLVER_KIND_MPM = 0,
    FIRN_SOLVER_KIND_SPH,
    FIRN_SOLVER_KIND_PBD,
    FIRN_SOLVER_KIND_FEM, /* linear tetrahedra; needs an fem_* material */
    FIRN_SOLVER_KIND_COUNT
} firn_solver_kind;

/* Most vertices a PBD cloth pins by index. */
#define FIRN_MAX_PINS 256

typedef struct {
    int material;            /* index into firn_scene_def.materials */
    firn_solver_kind solver; /* default MPM; SPH bodies need an sph_liquid material */
    firn_shape_def shape;
    float particles_per_cell; /* MPM: particles per grid cell (dx^3), default 8; SPH
                                 bodies are a lattice of spacing sph.particle_size */
    float velocity[3];        /* initial velocity [m/s] */
    uint64_t seed;            /* sampling jitter seed; default: body index + 1 */
    /* PBD cloth: vertices pinned in place (inverse mass 0), by index in the
     * body's vertex order and/or every vertex inside a box. FEM: the
     * vertices fixed (Dirichlet: they never move, v = 0), the same way (the
     * JSON key is then "fixed"; the box is tested at rest). */
    int n_pins;
    int pins[FIRN_MAX_PINS];
    int pin_box;                      /* 1: pin_lower/pin_upper pin too */
    float pin_lower[3], pin_upper[3]; /* [m] */
    int fem_implicit; /* FEM: 1 = backward Euler ("integrator": "implicit"), 0 = explicit
                         (default, Genesis's) */
} firn_body_def;

/* Rigid bodies (docs/PHYSICS.md s4). The shape's centre is the body's centre of
 * mass; a plane passes through `center` with outward unit `normal`; a mesh
 * is placed with its centroid (the centre of mass of the closed solid) at
 * `center`. */
typedef enum {
    FIRN_RSHAPE_PLANE = 0,
    FIRN_RSHAPE_SPHERE,
    FIRN_RSHAPE_BOX,
    FIRN_RSHAPE_CAPSULE,
    FIRN_RSHAPE_CYLINDER,
    FIRN_RSHAPE_MESH,
    FIRN_RSHAPE_COUNT
} firn_rigid_shape_type;

typedef enum { FIRN_RIGID_STATIC = 0, FIRN_RIGID_KINEMATIC, FIRN_RIGID_DYNAMIC } firn_motion;

typedef struct {
    firn_rigid_shape_type type;
    float center[3]; /* [m] */
    float size[3];   /* box: full edge lengths [m] */
    float radius;    /* sphere, capsule, cylinder [m] */
    float height;    /* cylinder: length along the axis; capsule: between cap centres [m] */
    int axis;        /* capsule, cylinder: 0 = x, 1 = y, 2 = z (default 1) */
    float normal[3]; /* plane: outward normal (normalised when loaded), default +y */
    char file[FIRN_PATH_MAX]; /* mesh: Wavefront OBJ file, closed and manifold; the JSON
                                 loader resolves it against the scene file's folder */
    float scale;              /* mesh: factor on the file's coordinates [m per unit], default 1 */
} firn_rigid_shape_def;

/* A pose of a kinematic body at time t; between keyframes the position is
 * interpolated linearly and the orientation by slerp. */
typedef struct {
    float t;           /* [s], increasing along the list */
    float position[3]; /* centre [m] */
    float rotation[3]; /* degrees about x, then y, then z (world axes), as `rotation` */
} firn_keyframe_def;

typedef struct {
    char name[FIRN_NAME_MAX];
    firn_rigid_shape_def shape;
    firn_motion motion; /* default static */
    float rotation[3];  /* initial orientation: degrees about x, then y, then z (world axes) */
    float density;      /* [kg/m^3], dynamic; default 200 (Genesis's Rigid to v0.4.3) */
    float velocity[3];  /* initial (dynamic) or prescribed (kinematic) [m/s] */
    float angular_velocity[3]; /* same, world frame [rad/s] */
    float friction;            /* Coulomb coefficient, default 0.1 */
    float softness;            /* contact softness [m], default 0.002 */
    float restitution;         /* [0, 1], default 0 */
    int couple;                /* takes part in coupling, default 1 */
    int n_keyframes;           /* kinematic: 0, or the poses it follows (velocities from them) */
    firn_keyframe_def keyframes[FIRN_MAX_KEYFRAMES];
} firn_rigid_def;

/* A tool (docs/PHYSICS.md s4.8): a kinematic body that a robot holds
 * (spatula, knife, gripper finger, rake). It moves as commanded - a
 * constant velocity and angular velocity, its keyframes, or what
 * firn_world_set_tool_velocity sets - and the material never changes that
 * motion. It acts on the MPM grid through its own collision law (Genesis's
 * Tool, one-way: no restitution, no reaction on the tool), and firn
 * reports the force the material exerts on it (firn_tool_state). The
 * shape is placed as a rigid's: its centre (a mesh's centroid) at
 * shape.center, which is the tool's origin; planes are not tools. */
typedef struct {
    char name[FIRN_NAME_MAX];
    firn_rigid_shape_def shape;
    float rotation[3];         /* initial orientation: degrees about x, then y, then z (world) */
    float velocity[3];         /* commanded velocity of its origin [m/s], default 0 */
    float angular_velocity[3]; /* commanded angular velocity, world frame [rad/s], default 0 */
    float friction;            /* Coulomb coefficient against the material [-], default 0 */
    float softness;            /* distance over which the contact fades, exp(-d / softness) [m],
                                  default 0.01 (Genesis's coup_softness, which Genesis applies in
                                  its mesh's normalised units; firn's are metres) */
    int collision;             /* acts on the material, default 1 */
    int n_keyframes;           /* 0, or the poses it follows (velocities from them) */
    firn_keyframe_def keyframes[FIRN_MAX_KEYFRAMES];
} firn_tool_def;

/* How the CUDA path scatters P2G (docs/BENCH.md): one global atomic per
 * particle, node and component, over particles in storage order; or over
 * particles sorted into bins of 4^3 cells (by cell within a bin), each
 * bin's scatter accumulated in its thread block's shared memory and added
 * to the grid once per node; or the same with each warp first summing the
 * values of its lanes that share a cell (they share all 27 nodes), so that
 * one lane per cell adds to shared memory (Gao et al. 2018's reduction);
 * or auto: binned from FIRN_P2G_BINNED_MIN MPM particles, where it was
 * measured faster (on an H200: 1.5x at 1M, 1.9-2.2x at 8M and 32M), atomic
 * below (2x faster at 100k, where a bin's block is mostly idle and the
 * sort's launches cost more than the scatter saves); or ordered, the
 * deterministic one: particles sorted as binned, each node gathering what
 * the particles of its 27 stencil-corner cells scatter to it in a fixed
 * order, without atomics, so that two runs give the same bits (docs/BENCH.md,
 * "GPU P2G"); or g2p2g: binned, with each substep's G2P fused into
 * the next substep's P2G within a call (one kernel per bin; docs/BENCH_LOG.md,
 * "G2P over bins, and G2P2G"). The CPU path has one P2G (coloured blocks). */
typedef enum {
    FIRN_P2G_ATOMIC = 0,
    FIRN_P2G_BINNED = 1,
    FIRN_P2G_AUTO = 2,
    FIRN_P2G_WARP = 3,
    FIRN_P2G_ORDERED = 4,
    FIRN_P2G_G2P2G = 5
} firn_p2g_variant;
#define FIRN_P2G_BINNED_MIN 300000

/* How the CUDA path clears and updates its grid (docs/BENCH.md, "Sparse
 * grid"): every node every substep (dense), or only the blocks of 4^3
 * nodes the particles' stencils can reach this substep, found from binned
 * P2G's bins (sparse: the cost follows the particles, not the domain's
 * volume); auto: sparse when binned P2G is on, no pair works on the whole
 * grid (rigid bodies, tools, SPH, PBD, FEM-MPM), and the grid has more than
 * FIRN_GRID_SPARSE_RATIO nodes per MPM particle. Both give the same bits. */
typedef enum { FIRN_GRID_AUTO = 0, FIRN_GRID_DENSE = 1, FIRN_GRID_SPARSE = 2 } firn_grid_mode;
#define FIRN_GRID_SPARSE_RATIO 4

/* Whether the CUDA path launches a call's substeps as CUDA graphs
 * (docs/BENCH.md, "CUDA graphs"): captured once per distinct call (the
 * substep count, the substep and every solver's parameters), then launched
 * whole, so the host's per-kernel launch cost does not limit small scenes.
 * The middle substep of each call is launched kernel by kernel, as it is
 * timed phase by phase (firn_world_profile). auto: graphs where the world
 * allows them (no implicit FEM body, whose Newton loop reads the device
 * between kernels), falling back to launches if a capture fails; on: the
 * same, a failed capture an error; off: launches. All give the same bits. */
typedef enum { FIRN_GRAPHS_AUTO = 0, FIRN_GRAPHS_OFF = 1, FIRN_GRAPHS_ON = 2 } firn_graph_mode;

/* Which coupling pairs act (a scene's "coupling" section; each pair also
 * needs both its solvers in the scene). firn_coupling_def_default: every
 * pair on, CPIC off. */
typedef struct {
    int rigid_mpm; /* rigid bodies on the MPM grid, default 1 */
    int cpic;      /* CPIC's particle contact for them, default 0 */
    int mpm_sph;   /* default 1 */
    int sph_rigid; /* default 1 */
    int pbd_rigid; /* default 1 */
    int mpm_pbd;   /* default 1 */
    int tool_mpm;  /* default 1: tools act on the MPM grid */
    int fem_rigid; /* default 1 */
    int fem_mpm;   /* default 1 */
    int fem_sph;   /* default 1 */
} firn_coupling_def;

/* The SPH solver's options (bodies with solver sph; a scene's "sph"
 * section). firn_sph_def_default: Genesis's SPHOptions, the box the
 * domain. */
typedef struct {
    float particle_size;       /* particle diameter p [m], default 0.02; support 2p */
    float lower[3];            /* box the SPH particles stay in [m]; default the domain */
    float upper[3];            /* (both 0: the domain box) */
    float divergence_error;    /* DFSPH: tolerated mean rate, % of rho0 per s, default 0.1 */
    float density_error;       /* DFSPH: tolerated mean density error [%], default 0.05 */
    int divergence_iterations; /* DFSPH: most per substep, default 100 */
    int density_iterations;    /* DFSPH: most per substep, default 100 */
    int lattice_genesis;       /* 1: bodies sampled at spacing p, as Genesis (80 % of the
                                  mass, at 0.8 rho0); default 0: spacing (0.8)^(1/3) p,
                                  at rest density */
    int walls_clamp;           /* 1: the SPH box's faces only clamp positions, as Genesis;
                                  0 (default): they bound the liquid (firn_sph_walls) */
} firn_sph_def;

/* The PBD solver's options (bodies with solver pbd; a scene's "pbd"
 * section). firn_pbd_def_default: Genesis's PBDOptions, the box the
 * domain. */
typedef struct {
    float particle_size;      /* p [m], default 0.01: contact distance p/2 from rigid surfaces,
                                 lattice spacing of pbd_particle bodies */
    int stretch_iterations;   /* per substep, default 4 */
    int bending_iterations;   /* per substep, default 1 */
    int density_iterations;   /* liquid: density (PBF) iterations per substep, default 1 */
    int viscosity_iterations; /* liquid: viscosity iterations per substep, default 1 */
    float lower[3];           /* box the PBD particles stay in [m]; default the domain */
    float upper[3];           /* (both 0: the domain box) */
} firn_pbd_def;

/* The FEM solver's options (bodies with solver fem; a scene's "fem"
 * section). firn_fem_def_default: Genesis's FEMOptions. */
typedef struct {
    float damping; /* explicit: v *= exp(-dt damping) each substep [1/s], default 0 */
} firn_fem_def;

firn_coupling_def firn_coupling_def_default(void);
firn_sph_def firn_sph_def_default(void);
firn_pbd_def firn_pbd_def_default(void);
firn_fem_def firn_fem_def_default(void);

typedef struct {
    float lower[3], upper[3]; /* domain box [m] */
    float dx;                 /* grid spacing [m] */
    firn_wall_def walls[6];
    float gravity[3]; /* [m/s^2], default (0, -9.81, 0) */
    float frame_dt;   /* [s], default 1/60 */
    int frames;       /* default 60 */
    float cfl;        /* Courant number, default 0.4 */
    float dt;         /* fixed substep [s]; 0 = from CFL each frame */
    int force_dt;     /* 1: accept a dt beyond the CFL limit */
    int n_materials;
    firn_material_def materials[FIRN_MAX_MATERIALS];
    int n_bodies;
    firn_body_def bodies[FIRN_MAX_BODIES];
    int n_rigids;
    firn_rigid_def rigids[FIRN_MAX_RIGIDS];
    int n_tools; /* tools */
    firn_tool_def tools[FIRN_MAX_TOOLS];
    firn_coupling_def coupling;  /* the scene's "coupling" section */
    firn_sph_def sph;            /* its "sph" section */
    firn_pbd_def pbd;            /* its "pbd" section */
    firn_fem_def fem;            /* its "fem" section */
    char out_dir[FIRN_PATH_MAX]; /* default "out" */
    int out_every;               /* write every Nth frame, default 1 */
    int write_ply;               /* default 1 */
    int write_preview;           /* PNG preview per written frame, default 1 */
    char source[FIRN_PATH_MAX];  /* file the scene came from ("" if built in code) */
} firn_scene_def;

void firn_scene_default(firn_scene_def *def);
void firn_material_default(firn_material_def *mat, firn_model model);
void firn_body_default(firn_body_def *body);
void firn_rigid_default(firn_rigid_def *rigid);
void firn_tool_default(firn_tool_def *tool);

/* Parses and validates a JSON scene file. On failure returns non-zero and
 * fills err with the file, line/column or key path, and the problem. */
int firn_scene_load_json(const char *path, firn_scene_def *def, firn_error *err);
/* The same from text in memory; name (may be NULL) stands for the file in
 * messages. */
int firn_scene_parse_json(const char *text, const char *name, firn_scene_def *def, firn_error *err);
/* Checks ranges and consistency of a definition built in code. */
int firn_scene_validate(const firn_scene_def *def, firn_error *err);
/* Whether the scene couples MPM and PBD bodies (coupling.mpm_pbd and
 * bodies of both solvers): the CUDA path has no kernel for that pair yet. */
int firn_scene_couples_mpm_pbd(const firn_scene_def *def);

/* ---- world --------------------------------------------------------------- */

typedef enum { FIRN_BACKEND_AUTO = 0, FIRN_BACKEND_CPU, FIRN_BACKEND_CUDA } firn_backend;

typedef struct firn_world firn_world;

/* Time spent per phase, accumulated since the world was created [s];
 * couple is the Coupler's preprocess (CPIC side marking). */
typedef struct {
    double clear, p2g, grid, couple, g2p, total;
    /* SPH: the neighbour sort, the density, the forces with the pressure
     * solve (and the velocity step), the position step. */
    double sph_sort, sph_density, sph_pressure, sph_integrate;
    /* PBD: prediction with the constraint iterations; the particle passes
     * (neighbour grid, density and viscosity iterations, contact); velocity
     * and box. */
    double pbd_constraints, pbd_particles, pbd_integrate;
    /* FEM: the element forces; the vertices' velocity step (gather, gravity,
     * damping); their position step (fixed vertices, walls). */
    double fem_elements, fem_velocity, fem_position;
} firn_profile;

/* One rigid body's state at the end of a frame. */
typedef struct {
    float position[3];         /* centre of mass [m] */
    float orientation[4];      /* unit quaternion (w, x, y, z), body to world */
    float velocity[3];         /* [m/s] */
    float angular_velocity[3]; /* [rad/s] */
    float force[3];            /* coupling force received in the last substep [N] */
    float torque[3];           /* coupling torque about the centre of mass [N m] */
} firn_rigid_stats;

/* A tool's state: its pose and commanded velocities now, and the force
 * and torque the MPM material exerts on it (minus the momentum the tool's
 * collision gives the grid nodes per unit time; the torque about the
 * tool's origin at the start of the substep). The tool's motion ignores
 * them: firn reports them for a controller to read. */
typedef struct {
    float position[3];         /* origin [m] */
    float orientation[4];      /* unit quaternion (w, x, y, z), tool to world */
    float velocity[3];         /* commanded [m/s]; a keyframed tool's current segment's */
    float angular_velocity[3]; /* commanded, world frame [rad/s] */
    float force[3];            /* in the last substep [N] */
    float torque[3];           /* in the last substep [N m] */
    float force_mean[3];       /* over the substeps since the last firn_world_step_frame began
                                  (impulse / time; substeps run alone add to it) [N] */
    float torque_mean[3];      /* [N m] */
    double impulse[3];         /* sum of force dt since the start [N s] */
    double angular_impulse[3]; /* sum of torque dt since the start [N m s] */
} firn_tool_state;

/* The SPH solver's particles at the end of a frame. */
typedef struct {
    long long particles;
    double mass;                        /* [kg] */
    double kinetic_energy;              /* [J] */
    double momentum[3];                 /* [kg m/s] */
    double center_of_mass[3];           /* [m] */
    float bbox_lower[3], bbox_upper[3]; /* [m] */
    double mean_density;                /* [kg/m^3] */
    double max_density_ratio;           /* largest rho / rho0 [-] */
    double mean_pressure;               /* [Pa] */
    int divergence_iterations;          /* DFSPH: in the last substep (0 for WCSPH) */
    int density_iterations;             /* DFSPH: in the last substep (0 for WCSPH) */
} firn_sph_frame_stats;

/* The PBD solver's particles at the end of a frame. */
typedef struct {
    long long particles;
    long long pinned;
    long long edges, bends;             /* stretch and bending constraints */
    double mass;                        /* [kg] */
    double kinetic_energy;              /* [J] */
    double momentum[3];                 /* [kg m/s] */
    double center_of_mass[3];           /* [m] */
    float bbox_lower[3], bbox_upper[3]; /* [m] */
    double max_strain;                  /* largest |length / rest length - 1| of an edge [-] */
    long long liquid;                   /* pbd_liquid particles */
    double density_error;               /* liquid: mean of max(rho / rho0 - 1, 0) over them at the
                                           last density iteration [-] (docs/PHYSICS.md s6.8) */
} firn_pbd_frame_stats;

/* The FEM solver's bodies at the end of a frame. */
typedef struct {
    long long vertices, elements, fixed;
    long long surface_triangles;
    double mass;                        /* [kg] */
    double kinetic_energy;              /* [J] */
    double elastic_energy;              /* sum of V Psi(F) over the elements [J] */
    double momentum[3];                 /* [kg m/s] */
    double center_of_mass[3];           /* [m] */
    float bbox_lower[3], bbox_upper[3]; /* [m] */
    double max_von_mises;               /* largest von Mises stress of an element [Pa] */
} firn_fem_frame_stats;

typedef struct {
    int frame;          /* frame index: 0 is the initial state, k is t = k frame_dt */
    double time;        /* simulated time at its end [s] */
    long long substeps; /* substeps since the start */
    int frame_substeps; /* substeps in this frame */
    float dt;           /* substep used in this frame [s] */
    long long particles;
    double kinetic_energy;    /* [J] */
    double momentum[3];       /* [kg m/s] */
    double center_of_mass[3]; /* [m] */
    float bbox_lower[3], bbox_upper[3];
    double mass; /* [kg] */
    long long material_count[FIRN_MAX_MATERIALS];
    double wall_seconds; /* wall time of this frame's substeps [s] */
    double throughput;   /* particle-substeps per second in this frame */
    int n_rigids;
    firn_rigid_stats rigids[FIRN_MAX_RIGIDS];
    firn_sph_frame_stats sph; /* the SPH solver's particles (particles = 0: none); the
                                 fields above are the MPM particles' */
    firn_pbd_frame_stats pbd; /* the PBD solver's particles (particles = 0: none) */
    firn_fem_frame_stats fem; /* the FEM solver's bodies (vertices = 0: none) */
    int n_tools;
    firn_tool_state tools[FIRN_MAX_TOOLS];
} firn_frame_stats;

/* How a world runs, apart from what it simulates: the backend and the
 * CUDA path's variants, which give the same physics (the same bits, or
 * the same within the GPU's rounding) and so are not part of the scene,
 * its hash or its checkpoints (the CLI's --backend, --p2g, --grid and
 * --graphs). Start from firn_run_options_default() (auto for each): a
 * zeroed struct asks for atomic P2G, FIRN_P2G_ATOMIC being 0. */
typedef struct {
    firn_backend backend; /* FIRN_BACKEND_AUTO: the GPU when one answers */
    int p2g;              /* the CUDA path's P2G, firn_p2g_variant */
    int grid;             /* the CUDA path's grid, firn_grid_mode */
    int graphs;           /* the CUDA path's graphs, firn_graph_mode */
} firn_run_options;

firn_run_options firn_run_options_default(void);

/* A world of def run as opt says (NULL: firn_run_options_default). An
 * option out of its enum's range is FIRN_E_USAGE, naming it. */
firn_world *firn_world_create_with(const firn_scene_def *def, const firn_run_options *opt,
                                   firn_error *err);
/* A world of def on backend (FIRN_BACKEND_AUTO: the GPU when one answers),
 * the other run options auto. */
firn_world *firn_world_create(const firn_scene_def *def, firn_backend backend, firn_error *err);
void firn_world_destroy(firn_world *world);
firn_backend firn_world_backend(const firn_world *world);
/* NULL when a run of world on the CUDA path gives the same bits every time
 * (--deterministic: MPM with --p2g ordered; SPH, PBD and explicit or
 * implicit FEM bodies on their own; kinematic and static rigid bodies);
 * otherwise the first phase whose float sums depend on the GPU threads'
 * timing, in words. The CPU path is deterministic for any world. */
const char *firn_world_gpu_nondeterminism(const firn_world *world);
const char *firn_world_device_name(const firn_world *world);
/* Particles of every particle solver (MPM, SPH and PBD). */
long long firn_world_particle_count(const firn_world *world);
const firn_scene_def *firn_world_scene(const firn_world *world);

/* Advances one frame (ceil(frame_dt / dt) substeps) and fills stats (which
 * may be NULL). */
int firn_world_step_frame(firn_world *world, firn_frame_stats *stats, firn_error *err);
/* Advances nsub substeps of length dt [s]; on the GPU they are queued in one
 * stream with a single synchronisation at the end. */
int firn_world_run_substeps(firn_world *world, int nsub, float dt, firn_error *err);
/* Advances exactly one substep of length dt [s] (tests, comparisons). */
int firn_world_substep(firn_world *world, float dt, firn_error *err);
/* Substep length the CFL condition allows for the current state [s]; NaN
 * when the GPU backend fails to reduce its state (firn_world_step_frame
 * reports that error). */
float firn_world_cfl_dt(firn_world *world);
/* The substep [s] and substep count of the next frame: time.dt when the scene
 * fixes it, else the CFL step, either shortened to divide the frame evenly
 * (frame_dt / ceil(frame_dt / dt)). It also sets what the solvers take from
 * their own step each frame (DFSPH's relaxation time), with a fixed
 * time.dt too; the stepping calls it before each frame. A CFL
 * step that would take more than 100000 substeps per frame is an error
 * (FIRN_E_NUMERIC) that names what limits it: a material's wave speed, the
 * particles' or a rigid body's speed, gravity over a frame, or time.cfl. */
int firn_world_next_frame_step(firn_world *world, float *dt, int *substeps, firn_error *err);
/* Statistics of the current state (frame fields left as they are). */
int firn_world_stats(firn_world *world, firn_frame_stats *stats, firn_error *err);
firn_profile firn_world_profile(const firn_world *world);

/* ---- tools ----------------------------------------------------------------- */

/* Tools are numbered as in firn_scene_def.tools. */
int firn_world_tool_count(const firn_world *world);
/* The index of the tool called name, or -1 if there is none. */
int firn_world_tool_index(const firn_world *world, const char *name);
/* Commands tool's velocity v [m/s] and angular velocity w [rad/s, world
 * frame] from the next substep on; they hold until set again (as Genesis's
 * set_velocity). A keyframed tool stops following its keyframes and moves
 * from its current pose. An unknown tool or a non-finite component is
 * refused (FIRN_E_USAGE) and nothing changes. */
int firn_world_set_tool_velocity(firn_world *world, int tool, const float v[3], const float w[3],
                                 firn_error *err);
/* Tool's current state; returns non-zero (and leaves out alone) for an
 * unknown tool. */
int firn_world_tool_state(const firn_world *world, int tool, firn_tool_state *out);

/* Memory a world holds [bytes]. */
typedef struct {
    /* Host memory: the particle state (the simulated state on the CPU path,
     * its mirror on the GPU), mesh SDF grids, and on the CPU path the grid,
     * the binning scratch and the coupling accumulators. */
    double host;
    /* Device memory: on the GPU, what the world allocated; on the CPU path,
     * what a GPU world of the same scene would allocate (less CUB's scratch
     * of a few KiB). */
    double device;
    /* The simulating side's memory per particle: host / particles on the CPU
     * path, device / particles on the GPU (MPM and SPH particles together). */
    double per_particle;
    /* CPU path: the grid's part of `host`, and how much of it is in memory
     * now. The grid is a mapping of zero pages that takes memory only where
     * material has been, so the second is what a large, mostly empty domain
     * really costs (-1 where the system cannot say; 0 and 0 on the GPU). */
    double host_grid, host_grid_resident;
} firn_memory;

void firn_world_memory(const firn_world *world, firn_memory *memory);

/* Host copy of the particle state, component-major (x[c*n + i]). Pointers
 * stay valid until the next call on the world. */
typedef struct {
    long long n;
    const float *x;      /* 3n positions [m] */
    const float *v;      /* 3n velocities [m/s] */
    const float *C;      /* 9n affine velocity field [1/s], row-major per particle */
    const float *F;      /* 9n deformation gradient [-] */
    const float *Jp;     /* n plastic state (snow: Jp; sand: volume correction) */
    const float *damage; /* n damage in [0,1] (fracture) */
    const float *vol;    /* n initial volume [m^3] */
    const uint8_t *mat;  /* n material index */
} firn_particles_view;

int firn_world_particles(firn_world *world, firn_particles_view *view, firn_error *err);

/* Host copy of the SPH particles (n = 0 when the scene has none), valid
 * until the next call on the world; particles keep the scene's order. */
typedef struct {
    long long n;
    const float *x;     /* 3n positions [m], component-major */
    const float *v;     /* 3n velocities [m/s] */
    const float *rho;   /* n density [kg/m^3] */
    const float *p;     /* n pressure [Pa] */
    const uint8_t *mat; /* n material index */
} firn_sph_particles_view;

int firn_world_sph_particles(firn_world *world, firn_sph_particles_view *view, firn_error *err);

/* Host copy of the PBD particles (n = 0 when the scene has none) and the
 * cloth triangles over them, valid until the next call on the world; the
 * bodies' vertices in scene order. */
typedef struct {
    long long n;
    const float *x;      /* 3n positions [m], component-major */
    const float *v;      /* 3n velocities [m/s] */
    const float *w;      /* n inverse mass [1/kg]; 0: pinned */
    const uint8_t *mat;  /* n material index */
    long long triangles; /* cloth triangles */
    const int *tri;      /* 3 per triangle: particle indices */
} firn_pbd_particles_view;

int firn_world_pbd_particles(firn_world *world, firn_pbd_particles_view *view, firn_error *err);

/* Host copy of the FEM bodies' volume mesh (n = 0 when the scene has none),
 * with per-element stress and strain computed from the current positions;
 * valid until the next call on the world. Vertices and elements are the
 * bodies' in scene order. Symmetric tensors are 6 components in VTK's
 * order: xx, yy, zz, xy, yz, xz. */
typedef struct {
    long long n;            /* vertices */
    const float *x;         /* 3n positions [m], component-major */
    const float *v;         /* 3n velocities [m/s] */
    const uint8_t *fixed;   /* n: 1 = fixed (Dirichlet) */
    long long elements;     /* tetrahedra */
    const int *tet;         /* 4 per element: vertex indices, positively oriented */
    const uint8_t *mat;     /* per element: material index */
    const float *stress;    /* 6 per element: Cauchy stress sigma = P F^T / J [Pa] */
    const float *strain;    /* 6 per element: Green strain (F^T F - I) / 2 [-] */
    const float *von_mises; /* per element: sqrt(3/2 s:s), s the deviator of sigma [Pa] */
    long long triangles;    /* surface triangles */
    const int *tri;         /* 3 per triangle: vertex indices, counter-clockwise from outside */
} firn_fem_mesh_view;

int firn_world_fem_mesh(firn_world *world, firn_fem_mesh_view *view, firn_error *err);

/* Any per-element array of a solver's state by name: the host copy
 * (downloaded first where stale; the MPM particles in the scene's order),
 * valid until the next call on the world. solver: "mpm", "sph", "pbd" or
 * "fem"; name: one of firn_world_field_name's. The array is
 * component-major: component c of element i at [c * count + i]. A world
 * without that solver's elements gives count 0 and data NULL. Returns 0,
 * or -1 with err set (FIRN_E_USAGE for a solver or field that does not
 * exist, naming the ones that do). */
enum { FIRN_FIELD_FLOAT32 = 0, FIRN_FIELD_UINT8 = 1 };

typedef struct {
    const void *data;
    int type;       /* FIRN_FIELD_FLOAT32 or FIRN_FIELD_UINT8 */
    int components; /* per element */
    long long count;
} firn_field_view;

int firn_world_field(firn_world *world, const char *solver, const char *name, firn_field_view *view,
                     firn_error *err);
/* The name of field k of the solver's table (0, 1, ...), NULL past the
 * last or for a solver that does not exist. */
const char *firn_world_field_name(firn_world *world, const char *solver, int k);

/* ---- direct access (language bindings) ----------------------------------- */

/* The world's clocks: frames stepped (firn_world_step_frame), simulated
 * time [s] and substeps since the start; any pointer may be NULL. */
void firn_world_clock(const firn_world *world, int *frame, double *time, long long *substeps);

/* Rigid bodies are numbered as in firn_scene_def.rigids. */
int firn_world_rigid_count(const firn_world *world);

/* Rigid body k's state in the world's host copy (the simulated state on the
 * CPU path, the host mirror brought up to date on the GPU), valid until the
 * next call on the world: pointers into it, not a copy. */
typedef struct {
    float *position;         /* 3: centre of mass [m] */
    float *orientation;      /* 4: unit quaternion (w, x, y, z), body to world */
    float *velocity;         /* 3 [m/s] */
    float *angular_velocity; /* 3, world frame [rad/s] */
    firn_motion motion;
} firn_rigid_view;

int firn_world_rigid_view(firn_world *world, int k, firn_rigid_view *view, firn_error *err);

/* Commands kinematic body k's velocity v [m/s] and angular velocity w
 * [rad/s, world frame] from the next substep on, as
 * firn_world_set_tool_velocity does for a tool: they hold until set again,
 * and a keyframed body stops following its keyframes. An unknown body, a
 * static or dynamic one, or a non-finite component is refused (FIRN_E_USAGE)
 * and nothing changes. */
int firn_world_set_rigid_velocity(firn_world *world, int k, const float v[3], const float w[3],
                                  firn_error *err);

/* Writes the world's current frame into the existing folder dir as
 * `firn run` writes a frame there (docs/CLI.md, "Output"), by the same
 * writer: frame_NNNNN.ply / .png, sph_, pbd_, fem_, rigids_ and tools_
 * files as the scene's output keys say (output.every does not apply: this
 * frame is written), the time series beside them, and last the frame's
 * statistics line appended to stats.jsonl. Files are written whole or not
 * at all. stats: the frame's statistics as firn_world_step_frame returned
 * them (their frame and substeps must be the world's), or NULL for
 * firn_world_stats of the current state (its substep, dt and wall-clock
 * fields 0). Refused, with nothing written: a missing dir, one that is
 * not a folder or a folder a `firn run` holds (its .firn.lock) (FIRN_E_IO);
 * one whose stats.jsonl already has this frame or a later one, or stats of
 * another frame (FIRN_E_USAGE). */
int firn_world_write_frame(firn_world *world, const char *dir, const firn_frame_stats *stats,
                           firn_error *err);

/* sizeof the public struct called name ("firn_scene_def",
 * "firn_frame_stats", "firn_tool_state", "firn_particles_view",
 * "firn_sph_particles_view", "firn_pbd_particles_view",
 * "firn_fem_mesh_view", "firn_rigid_view", "firn_error",
 * "firn_compare_entry", "firn_compare_report"), 0 for another
 * name: a binding that mirrors these structs checks its mirrors with it. */
size_t firn_struct_size(const char *name);

/* ---- checkpoints ---------------------------------------------------------- */

/* A checkpoint file holds the whole state a world needs to continue: every
 * solver's particles (plastic state, damage and CPIC records included), the
 * rigid bodies (pose, velocities, the coupling impulse pending for their
 * next step), the tools (pose, commanded velocities, keyframe clock, the
 * sums of their reaction), the clocks (frame, substeps, time) and a hash of
 * the scene. Format (versioned, with a CRC-32C): docs/CLI.md,
 * "Checkpoints". Version of the format this firn writes (it reads versions
 * 1, which has no tools, and 2, which has no FEM vertices, too): */
#define FIRN_CHECKPOINT_VERSION 3

/* Writes world's current state to path. The file is written whole or not at
 * all: into "<path>.tmp.<pid>", flushed, fsync'ed and renamed over path; on
 * a failure (a full disk: FIRN_E_IO) the temporary is removed and a file
 * already at path stays as it was. On the GPU the device state is
 * downloaded; either way what the world computes next is unchanged (the CPU
 * path continues bitwise as without the save). */
int firn_world_save(firn_world *world, const char *path, firn_error *err);

/* Creates a world of scene def at the state saved in checkpoint path, on
 * backend (either: a checkpoint of one backend resumes on the other). def
 * must be the scene the checkpoint was saved from, up to time.frames and
 * the output.* keys (so a run may go on for more frames, or into another
 * folder). Stepping it continues the saved run: on the CPU path bitwise as
 * if it had never stopped, given a checkpoint of the CPU path; across
 * backends within the GPU's rounding (docs/CLI.md). A checkpoint of another
 * scene or format version, truncated, or with a bad checksum is refused
 * with FIRN_E_CHECKPOINT and a message naming path and what is wrong; an
 * unreadable file is FIRN_E_IO. Returns NULL on failure (nothing is
 * changed: the file is only read). */
firn_world *firn_world_load(const firn_scene_def *def, firn_backend backend, const char *path,
                            firn_error *err);
/* The same, run as opt says (NULL: firn_run_options_default). */
firn_world *firn_world_load_with(const firn_scene_def *def, const firn_run_options *opt,
                                 const char *path, firn_error *err);

/* Output helpers (host/output.c). */
int firn_write_ply(const char *path, const firn_particles_view *p, firn_error *err);
/* What a preview (firn_write_preview) draws; any may be NULL (not drawn):
 * the MPM particles in their materials' colours, the SPH, PBD and FEM
 * points each in their solver's colour (the FEM bodies' vertices and
 * surface triangles' centres), the rigid bodies (grey) and tools (brown)
 * posed as stats holds them, and stats' time in the band below. */
typedef struct {
    const firn_particles_view *mpm;
    const firn_sph_particles_view *sph;
    const firn_pbd_particles_view *pbd;
    const firn_fem_mesh_view *fem;
    const firn_frame_stats *stats;
} firn_preview;

/* A PNG of def's domain seen from the front (x, y) and from above (x, z)
 * with what `what` holds (NULL: the empty domain). FIRN_E_IO for an empty
 * domain or a view whose points are missing, FIRN_E_NOMEM. */
int firn_write_preview(const char *path, const firn_scene_def *def, const firn_preview *what,
                       firn_error *err);
/* The SPH particles as a binary PLY: x y z vx vy vz density pressure material. */
int firn_write_sph_ply(const char *path, const firn_sph_particles_view *p, firn_error *err);
/* The PBD particles as a binary PLY mesh: vertices x y z vx vy vz pinned
 * material, and the cloth triangles as faces (free particles are vertices
 * no face uses). */
int firn_write_pbd_ply(const char *path, const firn_pbd_particles_view *p, firn_error *err);
/* The FEM bodies' surface as a binary PLY mesh: every vertex (x y z vx vy vz
 * fixed; interior vertices are used by no face) and the surface triangles. */
int firn_write_fem_ply(const char *path, const firn_fem_mesh_view *m, firn_error *err);
/* The surfaces of the rigid bodies (the tools) of def, posed as stats
 * holds them, as one binary PLY mesh: vertices x y z vx vy vz, a flag byte
 * ("couples": the body takes part in coupling; "collides": the tool acts
 * on the material) and the body's (tool's) index in def ("body", "tool"),
 * then the triangles, counter-clockwise seen from outside. Boxes are their
 * 12 triangles; spheres, capsules and cylinders polygons of 32 segments
 * (16 rings pole to pole) with every vertex on the exact surface; meshes
 * their OBJ's triangles; a plane the square of half side the domain's
 * largest extent about its point. */
int firn_write_rigids_ply(const char *path, const firn_scene_def *def,
                          const firn_frame_stats *stats, firn_error *err);
int firn_write_tools_ply(const char *path, const firn_scene_def *def, const firn_frame_stats *stats,
                         firn_error *err);
/* The FEM bodies' volume mesh as a VTK XML unstructured grid (.vtu, binary
 * appended, little-endian, UInt64 sizes),
 * for ParaView: points, tetrahedra (VTK cell type 10), per-point velocity
 * and fixed flag, per-cell Cauchy stress, Green strain, von Mises stress
 * and material. */
int firn_write_fem_vtu(const char *path, const firn_fem_mesh_view *m, firn_error *err);
int firn_append_stats_jsonl(const char *path, const firn_scene_def *def, const firn_frame_stats *s,
                            firn_error *err);

/* ---- comparing the backends (firn compare) -------------------------------- */

/* When an entry of a comparison was taken: after the first substep from
 * the scene's initial state, after one substep from a perturbed state (F,
 * C and the points moved off their lattice: docs/CLI.md, "compare"), or
 * after the frames. */
typedef enum {
    FIRN_COMPARE_SUBSTEP = 0,
    FIRN_COMPARE_PERTURBED = 1,
    FIRN_COMPARE_FRAMES = 2
} firn_compare_stage;

/* One line of a comparison. A field (statistic 0: "x", "sph rho", "grid
 * vel", ...) is compared element by element: max_abs the largest |gpu -
 * cpu| over its elements, at element `worst` (-1: none), scale its
 * largest CPU magnitude (or a floor, docs/CLI.md). A statistic (statistic
 * 1: "kinetic energy", "centre of mass x", a rigid body's or a tool's
 * pose, ...) has its two values cpu and gpu, max_abs |gpu - cpu|. Both:
 * rel = max_abs / scale, within tolerance when ok. */
typedef struct {
    char name[48];
    firn_compare_stage stage;
    int statistic;
    double cpu, gpu;
    double max_abs, scale, rel, tolerance;
    long long worst;
    int ok;
} firn_compare_entry;

typedef struct {
    int ok;                 /* every entry within its tolerance */
    long long particles;    /* firn_world_particle_count */
    float dt;               /* the substep compared [s] */
    int frames;             /* frames compared (0: no statistics) */
    double time;            /* simulated time after them [s] */
    double state_tolerance; /* of the fields (relative) */
    double stats_tolerance; /* of the statistics (relative) */
    char cpu_device[256], gpu_device[256];
    long long graph_captures, graph_launches; /* CUDA graphs of the GPU run */
    int graphs_fell_back;                     /* a capture failed: graphs_why */
    char graphs_why[FIRN_ERRMSG_MAX];
    int n_entries;
    firn_compare_entry *entries; /* free with firn_compare_report_free */
} firn_compare_report;

/* `firn compare`'s check (docs/CLI.md): scene def on the CPU path and on
 * the CUDA backend from the same initial state, every particle field and
 * the grid compared after one substep, the particle fields after one
 * substep from a perturbed state, and the scene statistics after `frames`
 * frames (0: none). Returns 0 with r filled (r->ok says whether every
 * entry is within its tolerance: a difference beyond it is not an error
 * here; `firn compare` exits FIRN_E_COMPARE), or -1 with err filled and r
 * holding no entries (ok 0): FIRN_E_DEVICE without a usable GPU or in a build
 * without CUDA, FIRN_E_SCENE, FIRN_E_NUMERIC, FIRN_E_NOMEM as from
 * firn_world_create and the steps, FIRN_E_USAGE for frames < 0. */
int firn_compare_backends(const firn_scene_def *def, int frames, firn_compare_report *r,
                          firn_error *err);
/* The same with the CUDA world run as opt says (its backend ignored; NULL:
 * firn_run_options_default). */
int firn_compare_backends_with(const firn_scene_def *def, const firn_run_options *opt, int frames,
                               firn_compare_report *r, firn_error *err);
void firn_compare_report_free(firn_compare_report *r);

/* Devices: number of usable CUDA devices (0 without a GPU or a CUDA build)
 * and a one-line description of each. */
int firn_cuda_device_count(void);
int firn_cuda_device_describe(int index, char *buf, size_t size);
int firn_cuda_available(void); /* 1 if the library was built with CUDA */

const char *firn_model_name(firn_model model);

/* Monotonic wall clock [s]. */
double firn_now(void);

#ifdef __cplusplus
}
#endif

#endif
