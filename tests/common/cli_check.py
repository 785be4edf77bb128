"""What the CLI check scripts share (tests/*/cli_*_check.py): their standard arguments and
running a command that must succeed, or must fail, with its output in the failure message."""
import argparse
import os
import subprocess
import sys

# mpirun's environment for the MPI checks: OpenMPI refuses to run as root (CI containers are
# root) unless told, and the checks start more ranks than this machine has cores.
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")


def parse_args():
    """--npuc (the binary), --root (the source tree), --work (a scratch directory)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--npuc", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", required=True)
    return ap.parse_args()


def run(args, ok=True, env=None, timeout=None):
    """Runs `args`; exits the check with the command and its output when it fails and `ok`, or
    succeeds and not `ok`. Returns the CompletedProcess (text stdout and stderr)."""
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    if ok and p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)}\n{p.stdout}\n{p.stderr}")
    if not ok and p.returncode == 0:
        sys.exit(f"expected failure: {' '.join(args)}\n{p.stdout}")
    return p
