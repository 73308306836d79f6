"""Genesis 1.4.5 SPH dam break, WCSPH pressure solver. Writes results/dam_break_wcsph.csv, *_options.json, *_pos_t*.npy."""
from dam_break_common import run

if __name__ == "__main__":
    run("WCSPH")
