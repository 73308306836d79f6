"""Genesis 1.4.5 SPH dam break, DFSPH pressure solver. Writes results/dam_break_dfsph.csv, *_options.json, *_pos_t*.npy."""
from dam_break_common import run

if __name__ == "__main__":
    run("DFSPH")
