# make_gmsh_ball.py - writes gmsh_ball_v41.msh and gmsh_ball_v22.msh, a unit
# ball meshed by Gmsh itself (the Python package gmsh 4.15.2: pip install
# gmsh), so that test/test_tet_io.c reads real Gmsh output, points, curves
# and surface triangles included. Run from this folder; not part of the
# build.
import gmsh

gmsh.initialize()
gmsh.option.setNumber("General.Terminal", 0)
gmsh.model.add("ball")
gmsh.model.occ.addSphere(0, 0, 0, 1.0)
gmsh.model.occ.synchronize()
gmsh.model.addPhysicalGroup(3, [1], 1, "ball")
gmsh.option.setNumber("Mesh.MeshSizeMax", 0.9)
gmsh.option.setNumber("Mesh.MeshSizeMin", 0.5)
gmsh.model.mesh.generate(3)
gmsh.option.setNumber("Mesh.SaveAll", 1)  # every element, points to tets
gmsh.option.setNumber("Mesh.Binary", 0)
gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
gmsh.write("gmsh_ball_v41.msh")
gmsh.option.setNumber("Mesh.MshFileVersion", 2.2)
gmsh.write("gmsh_ball_v22.msh")
gmsh.finalize()
