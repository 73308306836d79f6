"""Shared by the buoyancy validations (test/validate_buoyancy*.py,
test/validate_pbf_buoyancy.py; docs/VALIDATION.md): the bodies' geometry
(volume, submerged volume below a level, upright or turned), the water
level a pool's cross-section gives, the rigid body and the run of a scene,
and a reader for firn's binary PLY frames.

The water level: the liquid of volume V in a pool of cross-section A with a
body in it stands at the level h where A h = V + V_sub(h), V_sub the body's
volume below h; `level` solves it by fixed-point iteration (V_sub grows by
less than A per unit of h, so the iteration contracts).
"""
import bisect, json, math, os, struct, subprocess, sys

RHO_W, G = 1000.0, 9.81


def cap(R, d):  # sphere cap of depth d
    d = max(0.0, min(2 * R, d))
    return math.pi * d * d * (3 * R - d) / 3


def segment(R, length, d):  # cylinder lying along z, submerged depth d
    d = max(0.0, min(2 * R, d))
    return length * (R * R * math.acos((R - d) / R) - (R - d) * math.sqrt(max(2 * R * d - d * d, 0.0)))


def sub_volume(shape, a, d):
    """Volume below depth d of an upright body a across: a box (cube of
    edge a), a sphere (diameter a) or a cylinder lying along z (diameter
    and length a)."""
    if shape in ('box', 'mesh'):
        return a * a * min(max(d, 0.0), a)
    if shape == 'sphere':
        return cap(a / 2, d)
    return segment(a / 2, a, d)


def volume(shape, a):
    return {'box': a ** 3, 'mesh': a ** 3, 'sphere': math.pi * a ** 3 / 6,
            'cylinder': math.pi * a ** 3 / 4}[shape]


def submerged_volume(shape, a, cy, q, n=48):
    """V_sub(level) of the body with centre height cy and orientation q
    (w, x, y, z): the sphere's cap in closed form; a box or a cylinder
    (which may tilt: a cube of density 0.5 is unstable face down) by the
    world heights of n^3 cell centres of its bounding cube in its own
    frame, those inside it each standing for its share of its volume as a
    slab of thickness a / n (exact for an upright box)."""
    if shape == 'sphere':
        return lambda level: sub_volume(shape, a, level - (cy - a / 2))
    w, x, y, z = q
    ry = (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x))
    ys = []
    for i in range(n):
        u = (i + 0.5) / n * a - a / 2
        for j in range(n):
            v = (j + 0.5) / n * a - a / 2
            if shape == 'cylinder' and u * u + v * v > a * a / 4:
                continue  # axis along z (k)
            base = cy + ry[0] * u + ry[1] * v
            ys.extend(base + ry[2] * ((k + 0.5) / n * a - a / 2) for k in range(n))
    ys.sort()
    dv, c = volume(shape, a) / len(ys), a / n

    def sub(level):  # each cell a slab of its edge c along the vertical
        lo, hi = bisect.bisect_left(ys, level - c / 2), bisect.bisect_left(ys, level + c / 2)
        return dv * (lo + sum((level + c / 2 - y) / c for y in ys[lo:hi]))
    return sub


def level(V, A, sub, iterations=60):
    """The water level h with A h = V + sub(h) (sub: the body's volume
    below a level), by fixed-point iteration from V / A."""
    h = V / A
    for _ in range(iterations):
        h = (V + sub(h)) / A
    return h


def cube_obj(path, a):
    """A closed cube of edge a, centred on the origin, as an OBJ triangle
    mesh (12 triangles, outward winding)."""
    v = [(x, y, z) for x in (-a / 2, a / 2) for y in (-a / 2, a / 2) for z in (-a / 2, a / 2)]
    quads = [(1, 2, 4, 3), (5, 7, 8, 6), (1, 5, 6, 2), (3, 4, 8, 7), (1, 3, 7, 5), (2, 6, 8, 4)]
    with open(path, 'w') as f:
        f.writelines('v %g %g %g\n' % p for p in v)
        for q in quads:
            f.write('f %d %d %d\nf %d %d %d\n' % (q[0], q[1], q[2], q[0], q[2], q[3]))


def rigid(shape, a, center, out=None, **kw):
    """A rigid body definition: shape a across (box, sphere, cylinder
    lying along z; mesh: the box as a closed OBJ mesh written into the
    folder out), no friction; kw adds keys (motion, density, ...)."""
    s = {'type': shape, 'center': center}
    if shape == 'mesh':
        os.makedirs(out, exist_ok=True)
        s['file'] = os.path.abspath(os.path.join(out, 'cube.obj'))
        cube_obj(s['file'], a)
    elif shape == 'box':
        s['size'] = [a] * 3
    else:
        s['radius'] = a / 2
    if shape == 'cylinder':
        s['height'], s['axis'] = a, 'z'
    return dict({'name': 'b', 'shape': s, 'friction': 0.0}, **kw)


def run_scene(firn, sc, out, tag):
    """Writes scene sc as out/tag.json, runs it (`firn run --quiet`) and
    returns the rows of its stats.jsonl; a failed run stops the script."""
    os.makedirs(out, exist_ok=True)
    fn = os.path.join(out, tag + '.json')
    with open(fn, 'w') as f:
        json.dump(sc, f)
    r = subprocess.run([firn, 'run', fn, '--quiet'], capture_output=True, text=True,
                       env=dict(os.environ, OMP_WAIT_POLICY='passive'))
    if r.returncode:
        sys.exit(r.stderr[-800:])
    with open(os.path.join(out, tag, 'stats.jsonl')) as f:
        return [json.loads(l) for l in f]


def read_ply(fn):
    """The vertices of a binary little-endian PLY file firn writes, as a
    list of tuples in the header's property order (faces are not read)."""
    with open(fn, 'rb') as f:
        data = f.read()
    head, body = data.split(b'end_header\n', 1)
    lines = head.split(b'\n')
    n = int([l for l in lines if l.startswith(b'element vertex')][0].split()[-1])
    props = []
    for l in lines:
        if l.startswith(b'element') and not l.startswith(b'element vertex'):
            break
        if l.startswith(b'property') and not l.startswith(b'property list'):
            props.append(l.split()[1])
    fmt = '<' + ''.join({b'float': 'f', b'int': 'i', b'uchar': 'B', b'int32': 'i', b'float32': 'f',
                         b'uint8': 'B'}[p] for p in props)
    size = struct.calcsize(fmt)
    return [struct.unpack_from(fmt, body, i * size) for i in range(n)]
