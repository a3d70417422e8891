"""peak_rss.py -- runs a command and writes its peak resident memory (kB,
getrusage of the child) to a file: `python3 tests/peak_rss.py FILE CMD ...`.
Under mpirun, %r in FILE becomes the rank (OMPI_COMM_WORLD_RANK). Exits
with the command's status. Used by test_dryrun.sh and test_mpi.sh to hold
`arkcos smooth --dry-run`'s prediction against what a run holds. Not a test
itself."""
import os
import resource
import subprocess
import sys

out = sys.argv[1].replace("%r", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
rc = subprocess.call(sys.argv[2:])
with open(out, "w") as f:
    f.write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)
