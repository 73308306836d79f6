/* checkpoint_scene.h - the scene of the checkpoint tests (test_checkpoint.c,
 * test_gpu_checkpoint.c): every MPM model, an SPH (DFSPH) body, a dynamic
 * ball and a kinematic blade thinner than a cell (CPIC keeps the sand on
 * its side), 2932 MPM and 150 SPH particles. */
#ifndef FIRN_TEST_CHECKPOINT_SCENE_H
#define FIRN_TEST_CHECKPOINT_SCENE_H

static const char *const scene_json =
    "{\n"
    "  \"domain\": {\"lower\": [0, 0, 0], \"upper\": [0.48, 0.4, 0.32], \"dx\": 0.02,\n"
    "             \"boundary\": {\"y_lower\": {\"type\": \"separate\", \"friction\": 0.3}}},\n"
    "  \"time\": {\"frame_dt\": 0.01, \"frames\": 6},\n"
    "  \"sph\": {\"particle_size\": 0.02},\n"
    "  \"materials\": {\n"
    "    \"water\": {\"model\": \"liquid\", \"E\": 2e4, \"density\": 1000},\n"
    "    \"sand\": {\"model\": \"sand\", \"E\": 5e4, \"nu\": 0.3, \"density\": 1600},\n"
    "    \"snow\": {\"model\": \"snow\", \"E\": 3e4, \"density\": 400, \"max_hardening\": 5},\n"
    "    \"jelly\": {\"model\": \"elastic\", \"E\": 2e4, \"nu\": 0.3, \"density\": 1000},\n"
    "    \"metal\": {\"model\": \"von_mises\", \"E\": 5e4, \"density\": 2000, \"yield_stress\": "
    "500},\n"
    "    \"brittle\": {\"model\": \"fracture\", \"E\": 5e4, \"nu\": 0.2, \"density\": 1200,\n"
    "                \"crit_strain\": 0.01, \"damage_rate\": 0.2},\n"
    "    \"pool\": {\"model\": \"sph_liquid\", \"density\": 1000, \"pressure_solver\": \"dfsph\"}\n"
    "  },\n"
    "  \"bodies\": [\n"
    "    {\"material\": \"water\", \"shape\": {\"type\": \"box\", \"lower\": [0.04, 0.04, 0.04],\n"
    "     \"upper\": [0.12, 0.12, 0.12]}, \"velocity\": [1, 0, 0]},\n"
    "    {\"material\": \"sand\", \"shape\": {\"type\": \"box\", \"lower\": [0.16, 0.04, 0.04],\n"
    "     \"upper\": [0.26, 0.1, 0.28]}},\n"
    "    {\"material\": \"snow\", \"shape\": {\"type\": \"sphere\", \"center\": [0.21, 0.2, 0.2],\n"
    "     \"radius\": 0.04}, \"velocity\": [0, -1, 0]},\n"
    "    {\"material\": \"jelly\", \"shape\": {\"type\": \"box\", \"center\": [0.08, 0.25, 0.2],\n"
    "     \"size\": [0.06, 0.06, 0.06]}, \"velocity\": [0.5, -0.5, 0]},\n"
    "    {\"material\": \"metal\", \"shape\": {\"type\": \"box\", \"lower\": [0.3, 0.04, 0.04],\n"
    "     \"upper\": [0.44, 0.06, 0.16]}},\n"
    "    {\"material\": \"brittle\", \"shape\": {\"type\": \"box\", \"center\": [0.37, 0.14, "
    "0.1],\n"
    "     \"size\": [0.1, 0.02, 0.08]}, \"velocity\": [0, -2, 0]},\n"
    "    {\"material\": \"pool\", \"solver\": \"sph\", \"shape\": {\"type\": \"box\",\n"
    "     \"lower\": [0.32, 0.2, 0.18], \"upper\": [0.44, 0.3, 0.28]}}\n"
    "  ],\n"
    "  \"rigids\": [\n"
    "    {\"name\": \"ball\", \"shape\": {\"type\": \"sphere\", \"center\": [0.21, 0.3, 0.1],\n"
    "     \"radius\": 0.03}, \"motion\": \"dynamic\", \"density\": 1500, \"velocity\": [0, -1.5, "
    "0]},\n"
    "    {\"name\": \"blade\", \"shape\": {\"type\": \"box\", \"center\": [0.29, 0.08, 0.16],\n"
    "     \"size\": [0.005, 0.08, 0.2]}, \"motion\": \"kinematic\", \"velocity\": [-0.8, 0, 0]}\n"
    "  ],\n"
    "  \"coupling\": {\"cpic\": true},\n"
    "  \"output\": {\"dir\": \"out\"}\n"
    "}\n";

#endif
