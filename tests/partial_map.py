"""partial_map.py -- writes a partial-sky HEALPix map (INDXSCHM=EXPLICIT)
of nside NSIDE listing three pixels: `python3 tests/partial_map.py OUT NSIDE`.
The impossible-size tests (test_guarantees.sh, hostile/impossible.sh) use
it for maps far beyond any machine (nside 2^20) that fit in a few bytes.
Not a test itself."""
import sys

import numpy as np
from astropy.io import fits

out, nside = sys.argv[1], int(sys.argv[2])
h = fits.BinTableHDU.from_columns([
    fits.Column(name="PIXEL", format="K", array=np.array([0, 5, 1000], dtype=np.int64)),
    fits.Column(name="SIGNAL", format="D", array=np.array([1.0, 2.0, 3.0]))])
for k, v in [("PIXTYPE", "HEALPIX"), ("ORDERING", "RING"), ("NSIDE", nside), ("INDXSCHM", "EXPLICIT"),
             ("OBJECT", "PARTIAL"), ("FIRSTPIX", 0), ("LASTPIX", 12 * nside ** 2 - 1)]:
    h.header[k] = v
h.writeto(out)
