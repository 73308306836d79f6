/* fem_implicit.c - implicit backward Euler for FEM bodies on the CPU:
 * Newton on the step's energy (include/firn_fem_implicit.h), each Newton
 * system A du = -grad E solved by conjugate gradients, matrix-free (A p
 * element by element into slots, gathered per vertex) with the 3x3
 * block-Jacobi preconditioner. Every loop writes only its own element or
 * vertex, and every sum runs over fixed chunks in a fixed order, so a step
 * gives the same bits for any thread count. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fem_implicit.h"
#include "align.h"

/* Vertices (or elements) per partial sum of a dot product. */
#define CHUNK 256

firn_fem_implicit_params firn_fem_implicit_params_default(void)
{
    firn_fem_implicit_params p = {
        .newton_max = 8,
        .newton_tol = 1e-3f,
        .newton_dx = 0.0f,
        .pcg_max = 2000,
        .pcg_tol = 1e-4f,
        .linesearch_max = 8,
        .linesearch_c = 1e-4f,
        .linesearch_tau = 0.5f,
        .damping_alpha = 0.0f,
        .damping_beta = 0.0f,
        .walls = 0,
    };
    return p;
}

size_t firn_fem_implicit_device_bytes(int nv, int ne)
{
    const size_t v = nv > 0 ? (size_t)nv : 0, e = ne > 0 ? (size_t)ne : 0;
    /* The control block: 17 doubles (one pair of them), 8 floats, 6 ints. */
    const size_t control = 17 * 8 + 8 * 4 + 6 * 4;
    return 8 * firn_align256(3 * v * 4) + firn_align256(9 * v * 4) +
           firn_align256(FIRN_FEM_HESS_FLOATS * e * 4) + firn_align256(12 * e * 4) +
           firn_align256(v) + firn_align256(control);
}

void firn_fem_implicit_work_free(firn_fem_implicit_work *w)
{
    free(w->u), free(w->g), free(w->r), free(w->z), free(w->p), free(w->Ap), free(w->du);
    free(w->ut), free(w->Minv), free(w->H), free(w->slot), free(w->en), free(w->part);
    free(w->held);
    memset(w, 0, sizeof *w);
}

int firn_fem_implicit_work_init(firn_fem_implicit_work *w, const firn_fem *S, firn_error *err)
{
    memset(w, 0, sizeof *w);
    const size_t n = S->V.n > 0 ? (size_t)S->V.n : 1, ne = S->E.n > 0 ? (size_t)S->E.n : 1;
    w->nv = S->V.n, w->ne = S->E.n;
    float **vec[] = {&w->u, &w->g, &w->r, &w->z, &w->p, &w->Ap, &w->du, &w->ut};
    int ok = 1;
    for (size_t k = 0; k < sizeof vec / sizeof *vec; k++)
        ok &= (*vec[k] = calloc(3 * n, sizeof(float))) != NULL;
    w->Minv = calloc(9 * n, sizeof *w->Minv);
    w->H = calloc(FIRN_FEM_HESS_FLOATS * ne, sizeof *w->H);
    w->slot = calloc(12 * ne, sizeof *w->slot);
    w->en = calloc(ne, sizeof *w->en);
    w->part = calloc((n > ne ? n : ne) / CHUNK + 2, sizeof *w->part);
    w->held = calloc(n, sizeof *w->held);
    if (!ok || !w->Minv || !w->H || !w->slot || !w->en || !w->part || !w->held) {
        firn_fem_implicit_work_free(w);
        firn_set_error(err, FIRN_E_NOMEM, "FEM implicit: out of memory for %zu vertices", n);
        return -1;
    }
    return 0;
}

int firn_fem_implicit_attach(firn_fem *S, firn_error *err)
{
    int any_implicit = 0;
    for (int k = 0; k < S->bodies; k++)
        any_implicit |= S->implicit[k];
    if (!any_implicit)
        return 0;
    S->implicit_work = calloc(1, sizeof(firn_fem_implicit_work));
    if (!S->implicit_work || firn_fem_implicit_work_init(S->implicit_work, S, err)) {
        if (!S->implicit_work)
            firn_set_error(err, FIRN_E_NOMEM, "FEM: out of memory for the implicit solver");
        firn_fem_implicit_detach(S);
        return -1;
    }
    return 0;
}

void firn_fem_implicit_detach(firn_fem *S)
{
    if (S->implicit_work) {
        firn_fem_implicit_work_free(S->implicit_work);
        free(S->implicit_work);
        S->implicit_work = NULL;
    }
}

/* sum a_i . b_i over vertices [v0, v1) in double: chunk sums in parallel,
 * then added in chunk order. */
static double dot(const float *a, const float *b, int n, int v0, int v1, double *part)
{
    const int nc = (v1 - v0 + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < nc; c++) {
        const int i0 = v0 + c * CHUNK, i1 = i0 + CHUNK < v1 ? i0 + CHUNK : v1;
        double s = 0.0;
        for (int k = 0; k < 3; k++)
            for (int i = i0; i < i1; i++)
                s += (double)a[k * n + i] * b[k * n + i];
        part[c] = s;
    }
    double s = 0.0;
    for (int c = 0; c < nc; c++)
        s += part[c];
    return s;
}

/* sum of x[e0 .. e1) in double, in the same chunked order. */
static double sum(const float *x, int e0, int e1, double *part)
{
    const int nc = (e1 - e0 + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < nc; c++) {
        const int i0 = e0 + c * CHUNK, i1 = i0 + CHUNK < e1 ? i0 + CHUNK : e1;
        double s = 0.0;
        for (int i = i0; i < i1; i++)
            s += x[i];
        part[c] = s;
    }
    double s = 0.0;
    for (int c = 0; c < nc; c++)
        s += part[c];
    return s;
}

/* out = (cm M + ck K) in over body's vertices. */
static void apply(firn_fem *S, int body, float cm, float ck, firn_fem_implicit_work *w,
                  const float *in, float *out)
{
    const int n = S->V.n, ne = S->E.n;
#pragma omp parallel for schedule(static)
    for (int e = S->e_first[body]; e < S->e_first[body + 1]; e++)
        firn_fem_implicit_element_Ap(e, &S->E, w->H, in, n, w->slot);
#pragma omp parallel for schedule(static)
    for (int i = S->v_first[body]; i < S->v_first[body + 1]; i++)
        firn_store3(out, n, i, firn_fem_implicit_vertex_Ap(i, &S->V, w->slot, ne, in, cm, ck));
}

void firn_fem_implicit_apply(firn_fem *S, int body, const firn_fem_implicit_params *p, float dt,
                             firn_fem_implicit_work *w, const float *in, float *out)
{
    apply(S, body, (1.0f + p->damping_alpha * dt) / (dt * dt), 1.0f + p->damping_beta / dt, w, in,
          out);
}

double firn_fem_implicit_prepare(firn_fem *S, int body, const firn_fem_implicit_params *p,
                                 const float gravity[3], float dt, firn_fem_implicit_work *w)
{
    firn_fem_vertices *V = &S->V;
    const int n = V->n, ne = S->E.n, v0 = S->v_first[body], v1 = S->v_first[body + 1];
    const int e0 = S->e_first[body], e1 = S->e_first[body + 1];
#pragma omp parallel for schedule(static)
    for (int e = e0; e < e1; e++)
        w->en[e] = firn_fem_implicit_element(e, S->mats, &S->E, V->x0, w->u, n, w->slot, w->H);
    const float alpha = p->damping_alpha;
#pragma omp parallel for schedule(static)
    for (int i = v0; i < v1; i++)
        firn_store3(w->g, n, i,
                    firn_fem_implicit_vertex_gradient(i, V, w->slot, ne, w->u, gravity, dt, alpha));
    if (p->damping_beta > 0.0f) {
        /* Stiffness damping's gradient beta/dt K u (Genesis's, with K at the
         * current iterate). */
        apply(S, body, 0.0f, p->damping_beta / dt, w, w->u, w->Ap);
#pragma omp parallel for schedule(static)
        for (int i = v0; i < v1; i++)
            for (int c = 0; c < 3; c++)
                w->g[c * n + i] += w->Ap[c * n + i];
    }
    const float cm = (1.0f + alpha * dt) / (dt * dt), ck = 1.0f + p->damping_beta / dt;
    const firn_fem_params *P = p->walls ? &S->P : NULL;
#pragma omp parallel for schedule(static)
    for (int i = v0; i < v1; i++) {
        firn_vec3 gi = firn_load3(w->g, n, i);
        const int held = firn_fem_implicit_vertex_hold(i, V, P, w->u, &gi);
        w->held[i] = (uint8_t)held;
        firn_store3(w->g, n, i, gi);
        const firn_mat3 Mi = firn_fem_implicit_precond(i, V, &S->E, w->H, cm, ck, held);
        for (int k = 0; k < 9; k++)
            w->Minv[k * n + i] = Mi.m[k];
    }
    return sum(w->en, e0, e1, w->part);
}

/* z = Minv r over [v0, v1). */
static void precondition(const firn_fem_implicit_work *w, int n, int v0, int v1)
{
#pragma omp parallel for schedule(static)
    for (int i = v0; i < v1; i++) {
        firn_mat3 M;
        for (int k = 0; k < 9; k++)
            M.m[k] = w->Minv[k * n + i];
        firn_store3(w->z, n, i, firn_m3_apply(M, firn_load3(w->r, n, i)));
    }
}

int firn_fem_implicit_pcg(firn_fem *S, int body, const firn_fem_implicit_params *p, float dt,
                          firn_fem_implicit_work *w, float *res)
{
    const int n = S->V.n, v0 = S->v_first[body], v1 = S->v_first[body + 1];
    for (int c = 0; c < 3; c++)
        for (int i = v0; i < v1; i++)
            w->r[c * n + i] = -w->g[c * n + i], w->du[c * n + i] = 0.0f;
    precondition(w, n, v0, v1);
    for (int c = 0; c < 3; c++)
        memcpy(w->p + c * n + v0, w->z + c * n + v0, (size_t)(v1 - v0) * sizeof(float));
    double rz = dot(w->r, w->z, n, v0, v1, w->part);
    const double r0 = sqrt(dot(w->r, w->r, n, v0, v1, w->part));
    *res = 0.0f;
    if (r0 == 0.0)
        return 0;
    for (int it = 0; it < p->pcg_max; it++) {
        firn_fem_implicit_apply(S, body, p, dt, w, w->p, w->Ap);
        const double pAp = dot(w->p, w->Ap, n, v0, v1, w->part);
        if (!(pAp > 0.0) || !isfinite(pAp))
            return -1;
        const float a = (float)(rz / pAp);
        /* p is 0 on held components (so is Minv's row there); their rows
         * of A p are the wall's business, not the residual's. */
#pragma omp parallel for schedule(static)
        for (int i = v0; i < v1; i++)
            for (int c = 0; c < 3; c++) {
                w->du[c * n + i] += a * w->p[c * n + i];
                if (!(w->held[i] >> c & 1))
                    w->r[c * n + i] -= a * w->Ap[c * n + i];
            }
        const double rn = sqrt(dot(w->r, w->r, n, v0, v1, w->part));
        *res = (float)(rn / r0);
        if (rn <= p->pcg_tol * r0)
            return it + 1;
        precondition(w, n, v0, v1);
        const double rz1 = dot(w->r, w->z, n, v0, v1, w->part);
        const float b = (float)(rz1 / rz);
        rz = rz1;
#pragma omp parallel for schedule(static)
        for (int i = v0; i < v1; i++)
            for (int c = 0; c < 3; c++)
                w->p[c * n + i] = w->z[c * n + i] + b * w->p[c * n + i];
    }
    return p->pcg_max;
}

/* E(u) of the top of firn_fem_implicit.h, with K the Hessian of the last
 * prepare. Uses w->Ap and w->en. */
static double energy(firn_fem *S, int body, const firn_fem_implicit_params *p,
                     const float gravity[3], float dt, firn_fem_implicit_work *w, const float *u)
{
    firn_fem_vertices *V = &S->V;
    const int n = V->n, v0 = S->v_first[body], v1 = S->v_first[body + 1];
    const int e0 = S->e_first[body], e1 = S->e_first[body + 1];
#pragma omp parallel for schedule(static)
    for (int e = e0; e < e1; e++)
        w->en[e] = firn_fem_implicit_element_energy(e, S->mats, &S->E, V->x0, u, n);
    double E = sum(w->en, e0, e1, w->part);
    /* The inertia and mass-damping terms, per vertex into Ap's first
     * component (fixed vertices: u = 0, a constant left out). */
    const double a = p->damping_alpha * dt;
#pragma omp parallel for schedule(static)
    for (int i = v0; i < v1; i++) {
        double s = 0.0;
        if (!V->fixed[i])
            for (int c = 0; c < 3; c++) {
                const double ui = u[c * n + i];
                const double d = ui - dt * (double)V->v[c * n + i] - (double)dt * dt * gravity[c];
                s += d * d + a * ui * ui;
            }
        w->Ap[i] = (float)(0.5 * V->mass[i] / ((double)dt * dt) * s);
    }
    E += sum(w->Ap, v0, v1, w->part);
    if (p->damping_beta > 0.0f) {
        apply(S, body, 0.0f, p->damping_beta / dt, w, u, w->Ap);
        E += 0.5 * dot(u, w->Ap, n, v0, v1, w->part);
    }
    return E;
}

int firn_fem_implicit_step(firn_fem *S, int body, const firn_fem_implicit_params *p,
                           const float gravity[3], float dt, firn_fem_implicit_work *w,
                           firn_fem_implicit_stats *st, firn_error *err)
{
    firn_fem_implicit_stats dummy;
    if (!st)
        st = &dummy;
    memset(st, 0, sizeof *st);
    if (body < 0 || body >= S->bodies || !(dt > 0.0f) || w->nv != S->V.n || w->ne != S->E.n) {
        firn_set_error(err, FIRN_E_USAGE,
                       "FEM implicit: FEM body %d of %d (not a scene index), dt %g s, work for %d "
                       "vertices and %d elements (the FEM has %d and %d)",
                       body, S->bodies, dt, w->nv, w->ne, S->V.n, S->E.n);
        return -1;
    }
    firn_fem_vertices *V = &S->V;
    const int n = V->n, v0 = S->v_first[body], v1 = S->v_first[body + 1];
    float dx = p->newton_dx;
    if (!(dx > 0.0f)) {
        float xmax = 0.0f;
        for (int c = 0; c < 3; c++)
            for (int i = v0; i < v1; i++)
                xmax = firn_maxf(xmax, fabsf(V->x0[c * n + i]));
        dx = 4.0f * FLT_EPSILON * xmax;
    }
    const firn_fem_params *P = p->walls ? &S->P : NULL;
    for (int c = 0; c < 3; c++)
        memset(w->u + c * n + v0, 0, (size_t)(v1 - v0) * sizeof(float));
    /* A vertex that starts past a wall starts on it. */
    for (int i = v0; i < v1; i++)
        firn_fem_implicit_project(i, V, P, w->u);
    double e_round = 0.0;
    for (int e = S->e_first[body]; e < S->e_first[body + 1]; e++) {
        const firn_fem_material *m = &S->mats[S->E.mat[e]];
        e_round += S->E.vol[e] * (2.0 * m->mu + 3.0 * fabs(m->lambda));
    }
    e_round *= FLT_EPSILON;
    double g0 = 0.0, step = INFINITY;
    for (int it = 0;; it++) {
        firn_fem_implicit_prepare(S, body, p, gravity, dt, w);
        const double gn = sqrt(dot(w->g, w->g, n, v0, v1, w->part));
        if (!isfinite(gn)) {
            char who[48];
            firn_set_error(err, FIRN_E_NUMERIC,
                           "FEM implicit: %s: the energy gradient is not finite after %d Newton "
                           "iterations (dt %g s too large for the material, or inverted elements)",
                           firn_fem_body_name(S, body, who, sizeof who), it, dt);
            return -1;
        }
        if (it == 0) {
            /* The reference: the larger of the gradient at x_n and the
             * external and inertial load |m (v_n/dt + g)|, so that a body
             * that starts the step near equilibrium is not asked to reduce
             * float noise by newton_tol. */
            double load = 0.0;
            for (int i = v0; i < v1; i++)
                if (!V->fixed[i])
                    for (int c = 0; c < 3; c++) {
                        const double f = V->mass[i] * ((double)V->v[c * n + i] / dt + gravity[c]);
                        load += f * f;
                    }
            g0 = fmax(gn, sqrt(load));
        }
        st->grad0 = (float)g0;
        st->residual = g0 > 0.0 ? (float)(gn / g0) : 0.0f;
        st->held = 0;
        for (int i = v0; i < v1; i++)
            st->held += (w->held[i] & 1) + (w->held[i] >> 1 & 1) + (w->held[i] >> 2 & 1);
        if (gn <= p->newton_tol * g0) {
            st->converged = 1;
            break;
        }
        if (step <= dx) {
            st->converged = 2;
            break;
        }
        if (it >= p->newton_max)
            break;
        float res;
        const int k = firn_fem_implicit_pcg(S, body, p, dt, w, &res);
        if (k < 0) {
            char who[48];
            firn_set_error(err, FIRN_E_NUMERIC,
                           "FEM implicit: %s: the conjugate gradient broke down (p^T A p <= 0) "
                           "in Newton iteration %d",
                           firn_fem_body_name(S, body, who, sizeof who), it);
            return -1;
        }
        st->newton_iters++;
        st->pcg_iters += k;
        st->pcg_iters_max = k > st->pcg_iters_max ? k : st->pcg_iters_max;
        st->pcg_residual = res;
        float s = 1.0f;
        if (p->linesearch_max > 0) {
            /* Backtracking on E (Armijo), allowing E's float rounding:
             * near F = I each Psi is a difference of first-order terms
             * (I_C - 3, J - alpha) rounded to eps_f, so E carries an error
             * up to eps_f sum V (2 mu + 3 lambda), which near the solution
             * exceeds the decrease a Newton step can make. If every trial
             * fails, the trial of lowest energy is taken (Genesis keeps the
             * last one tried). */
            const double e_0 = energy(S, body, p, gravity, dt, w, w->u) + e_round;
            const double slope = dot(w->g, w->du, n, v0, v1, w->part);
            double best = INFINITY;
            float sbest = 1.0f, t = 1.0f;
            int ok = 0;
            for (int ls = 0; ls <= p->linesearch_max && !ok; ls++, t *= p->linesearch_tau) {
#pragma omp parallel for schedule(static)
                for (int i = v0; i < v1; i++) {
                    for (int c = 0; c < 3; c++)
                        w->ut[c * n + i] = w->u[c * n + i] + t * w->du[c * n + i];
                    firn_fem_implicit_project(i, V, P, w->ut);
                }
                const double e1 = energy(S, body, p, gravity, dt, w, w->ut);
                if (e1 < best)
                    best = e1, sbest = t;
                ok = e1 <= e_0 + p->linesearch_c * t * slope;
            }
            if (!ok)
                st->linesearch_fails++;
            s = sbest;
        }
        /* The stall test takes the full Newton step, projected onto the
         * walls (ut): a line search that cuts it short is no sign of
         * convergence, a wall that stops it is. */
        float m = 0.0f;
        for (int i = v0; i < v1; i++) {
            for (int c = 0; c < 3; c++)
                w->ut[c * n + i] = w->u[c * n + i] + w->du[c * n + i];
            firn_fem_implicit_project(i, V, P, w->ut);
            for (int c = 0; c < 3; c++) {
                m = firn_maxf(m, fabsf(w->ut[c * n + i] - w->u[c * n + i]));
                w->u[c * n + i] += s * w->du[c * n + i];
            }
            firn_fem_implicit_project(i, V, P, w->u);
        }
        step = m;
    }
    const float inv = 1.0f / dt;
    for (int c = 0; c < 3; c++)
        for (int i = v0; i < v1; i++)
            V->v[c * n + i] = V->fixed[i] ? 0.0f : w->u[c * n + i] * inv;
    return 0;
}
