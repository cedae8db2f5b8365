"""kubehpc: HPC and AI batch scheduling the Kubernetes way."""

from kubehpc import _native

__version__ = "0.1.0"

# Before any other kubehpc module is imported: compiled modules only while they match their
# sources (see _native.py). None when they are in use, else why not.
NATIVE_OFF_REASON = _native.select()
